package probe

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

// Memo is what a resident agent's quick rounds reuse from its earlier rounds, so that a round
// costs the registry three requests (the manifest HEAD, the config blob and its redirect):
//   - the registry token, per registry host, repository and identity, until it expires, as the
//     runtime keeps it between pulls; the full rounds fetch it anew from the realm;
//   - the manifests under a digest the HEAD still answers: a digest names its bytes, so reusing
//     them is exact.
//
// A token the registry refuses is forgotten and the round authenticates as usual.
type Memo struct {
	mu        sync.Mutex
	now       func() time.Time
	tokens    map[string]memoToken
	manifests map[string]*registry.Manifest // host/repo@digest platform → the platform's manifest
}

type memoToken struct {
	token   string // the Authorization header; "" when the registry needs none
	expires time.Time
	expiry  *report.Expiry // the registry token's, as its full round read it
}

// tokenMargin is how long before its expiry a kept token is no longer used.
const tokenMargin = 10 * time.Second

// defaultTokenLife is a token's life when the realm does not say (the distribution spec's 60 s).
const defaultTokenLife = 60 * time.Second

// NewMemo returns an empty memo.
func NewMemo() *Memo {
	return &Memo{now: time.Now, tokens: map[string]memoToken{}, manifests: map[string]*registry.Manifest{}}
}

// tokenKey names a token by host, repository and identity; the identity is a digest of the
// credential, never the credential.
func tokenKey(host, repo string, c creds.Credential) string {
	h := sha256.New()
	for _, s := range []string{host, repo, c.Username, c.Password, c.IdentityToken, c.RegistryToken} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (m *Memo) token(key string) (memoToken, bool) {
	if m == nil {
		return memoToken{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[key]
	if !ok || m.now().After(t.expires.Add(-tokenMargin)) {
		delete(m.tokens, key)
		return memoToken{}, false
	}
	return t, true
}

func (m *Memo) keepToken(key, token string, life time.Duration, expiry *report.Expiry) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens[key] = memoToken{token: token, expires: m.now().Add(life), expiry: expiry}
}

func (m *Memo) forgetToken(key string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tokens, key)
}

func (m *Memo) manifest(key string) *registry.Manifest {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.manifests[key]
}

func (m *Memo) keepManifest(key string, man *registry.Manifest) {
	if m == nil || man == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.manifests) > 64 {
		clear(m.manifests) // an agent probes a few images: this only bounds a registry that moves tags in a loop
	}
	m.manifests[key] = man
}

// keptLife is how long an authorization that is not a token (none, or Basic) is kept.
const keptLife = time.Hour

// kept sets the round's authorization from the memo when the round is quick and the memo has one
// for this host, repository and identity; it reports whether it did.
func (w *walk) kept(reg *endpoint) bool {
	if w.opts.Memo == nil {
		return false
	}
	w.memoKey = tokenKey(reg.hostport, w.ref.Repository, w.cred)
	if !w.opts.NoDownload || !w.opts.Sample {
		return false // a full round proves GET /v2/ and the token realm anew
	}
	t, ok := w.opts.Memo.token(w.memoKey)
	if !ok {
		return false
	}
	w.fromMemo, w.noPing = true, true
	if t.token != "" {
		w.setAuthz(t.token)
	}
	if e := t.expiry; e != nil {
		// the kept token's death, as its full round read it, seen now
		x := report.NewExpiry(e.What, e.Expires, e.Source, time.Now())
		w.tokenExpiry = &x
	}
	return true
}

// keep stores the round's authorization for the next quick rounds.
func (w *walk) keep(reg *endpoint, authz string, life time.Duration) {
	if w.opts.Memo != nil && w.memoKey != "" && !w.fromMemo {
		w.opts.Memo.keepToken(w.memoKey, authz, life, w.tokenExpiry)
	}
}

// tokenLife is how long the round's bearer token may be kept: until its expiry where its answer
// shows it, else the distribution spec's 60 s.
func (w *walk) tokenLife() time.Duration {
	if e := w.tokenExpiry; e != nil {
		return min(time.Duration(e.Remaining), 24*time.Hour)
	}
	return defaultTokenLife
}

// keptRefused forgets a kept authorization the registry refused, so that the round authenticates
// as the runtime would.
func (w *walk) keptRefused() {
	w.opts.Memo.forgetToken(w.memoKey)
	w.fromMemo, w.authz = false, ""
}
