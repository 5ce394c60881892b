package registrytest

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// CertMode selects the certificate the registry host presents.
type CertMode int

// Certificate modes.
const (
	CertGood      CertMode = iota
	CertRogue              // signed by a CA nobody trusts
	CertWrongName          // valid, but for another name
	CertExpired            // expired yesterday
)

// Faults is the set of faults in force. The zero value is a healthy path.
type Faults struct {
	Cert              CertMode
	Forbid            bool   // 403 DENIED on manifests and blobs of the registry
	InsufficientScope bool   // 401 insufficient_scope on manifests (a token without pull rights)
	RateLimit         bool   // 429 TOOMANYREQUESTS on manifests
	NoRedirect        bool   // serve blobs from the registry itself instead of redirecting
	BlobHost          string // redirect blobs to this host:port instead of the blob host
	BlobStall         bool   // the blob host sends half of each blob, then nothing
	BlobCorrupt       bool   // the blob host flips a byte of each blob
	BlobEndless       bool   // the blob host sends more bytes than the blob has, forever
	BlobForbidden     bool   // the blob host answers 403 (an expired signature)
	RedirectLoop      bool   // the registry redirects blob requests to itself, forever
	Realm             string // token realm URL override (e.g. an unreachable host)
	Challenge         string // WWW-Authenticate override for the /v2/ 401
	HugeManifest      bool   // manifests are served padded beyond 4 MiB
	ErrorBodyBytes    int    // pad 4xx error bodies with this many bytes
	RequireClientCert bool   // the registry host demands a client certificate signed by the lab CA (mTLS)
	OpenPing          bool   // GET /v2/ answers 200 without credentials; the challenge comes on the repository
	EchoAuth          bool   // a misbehaving server: echo the request's Authorization in 4xx error messages
	ErrorBody         string // a hostile server: this raw text/plain body instead of the JSON on manifest 4xx
	Stall             bool   // the registry accepts requests but never answers
	TokenNoExpiry     bool   // the token realm's answer has no expires_in
	TokenJWTExp       int64  // the token realm issues an unsigned JWT with this exp claim (Unix time)
}

// Options configure a lab.
type Options struct {
	Domain string            // zone for the hostnames; default "pullpath.test"
	Users  map[string]string // nil: no auth at all; empty: bearer tokens for anyone; else token realm requires one of these user → password
	Dir    string            // where to write ca.pem; default a new temp dir (removed by Close)
	Logf   func(format string, args ...any)
}

// Lab is a running registry lab on loopback.
type Lab struct {
	Domain       string
	RegistryHost string // registry.<domain>
	AuthHost     string // auth.<domain>
	BlobHost     string // blobs.<domain>
	CA, Rogue    *CA
	CAFile       string // PEM of CA, for --ca-file
	RogueCAFile  string
	DNS          *DNSServer

	registry, auth, blobs, plain *httptest.Server
	inner                        http.Handler
	pushSrv                      *httptest.Server
	users                        map[string]string
	certs                        map[CertMode]tls.Certificate
	faults                       atomic.Pointer[Faults]
	sigSecret                    string

	mu      sync.Mutex
	tokens  map[string]bool
	ownDir  string
	closeCh chan struct{}
	// Requests counts requests per host role ("registry", "auth", "blobs").
	Requests sync.Map
	// Authorizations keeps every Authorization value the lab accepted, to prove none leaks.
	Authorizations []string
	headers        map[string][]string // X-* request headers the registry saw
}

// SeenHeader returns the values of an X-* header the registry host received.
func (l *Lab) SeenHeader(name string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.headers[http.CanonicalHeaderKey(name)]...)
}

// Start brings a lab up: CA and certificates, the DNS server, three TLS hosts and a plain-HTTP one.
func Start(opts Options) (*Lab, error) {
	if opts.Domain == "" {
		opts.Domain = "pullpath.test"
	}
	l := &Lab{Domain: opts.Domain, RegistryHost: "registry." + opts.Domain, AuthHost: "auth." + opts.Domain,
		BlobHost: "blobs." + opts.Domain, users: opts.Users, tokens: map[string]bool{},
		certs: map[CertMode]tls.Certificate{}, closeCh: make(chan struct{}), sigSecret: randHex(16)}
	l.faults.Store(&Faults{})
	ok := false
	defer func() {
		if !ok {
			l.Close()
		}
	}()
	var err error
	if l.CA, err = NewCA("pullpath lab CA"); err != nil {
		return nil, err
	}
	if l.Rogue, err = NewCA("pullpath rogue CA"); err != nil {
		return nil, err
	}
	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "pullpath-lab-"); err != nil {
			return nil, err
		}
		l.ownDir = dir
	}
	l.CAFile = filepath.Join(dir, "ca.pem")
	l.RogueCAFile = filepath.Join(dir, "rogue-ca.pem")
	if err := os.WriteFile(l.CAFile, l.CA.PEM, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(l.RogueCAFile, l.Rogue.PEM, 0o644); err != nil {
		return nil, err
	}
	now := time.Now()
	year := now.Add(365 * 24 * time.Hour)
	leaf := func(ca *CA, names []string, nb, na time.Time) tls.Certificate {
		c, e := ca.Leaf(names, nb, na)
		if e != nil && err == nil {
			err = e
		}
		return c
	}
	l.certs[CertGood] = leaf(l.CA, []string{l.RegistryHost}, now.Add(-time.Hour), year)
	l.certs[CertRogue] = leaf(l.Rogue, []string{l.RegistryHost}, now.Add(-time.Hour), year)
	l.certs[CertWrongName] = leaf(l.CA, []string{"wrong." + opts.Domain}, now.Add(-time.Hour), year)
	l.certs[CertExpired] = leaf(l.CA, []string{l.RegistryHost}, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	authCert := leaf(l.CA, []string{l.AuthHost}, now.Add(-time.Hour), year)
	blobCert := leaf(l.CA, []string{l.BlobHost}, now.Add(-time.Hour), year)
	if err != nil {
		return nil, err
	}

	logger := log.New(io.Discard, "", 0)
	l.inner = ggcrregistry.New(ggcrregistry.Logger(logger))

	errLog := log.New(io.Discard, "", 0)
	newTLS := func(h http.Handler, cfg *tls.Config) *httptest.Server {
		s := httptest.NewUnstartedServer(h)
		s.TLS = cfg
		s.Config.ErrorLog = errLog
		s.StartTLS()
		return s
	}
	l.registry = newTLS(http.HandlerFunc(l.serveRegistry), &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		f := l.faults.Load()
		c := l.certs[f.Cert]
		cfg := &tls.Config{Certificates: []tls.Certificate{c}}
		if f.RequireClientCert {
			cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, l.CA.Pool()
		}
		return cfg, nil
	}})
	l.auth = newTLS(http.HandlerFunc(l.serveToken), &tls.Config{Certificates: []tls.Certificate{authCert}})
	l.blobs = newTLS(http.HandlerFunc(l.serveBlob), &tls.Config{Certificates: []tls.Certificate{blobCert}})
	l.plain = httptest.NewUnstartedServer(http.HandlerFunc(l.serveRegistry))
	l.plain.Config.ErrorLog = errLog
	l.plain.Start()
	l.pushSrv = httptest.NewServer(l.inner)

	if l.DNS, err = StartDNS(opts.Domain); err != nil {
		return nil, err
	}
	lo := netip.MustParseAddr("127.0.0.1")
	for _, h := range []string{l.RegistryHost, l.AuthHost, l.BlobHost} {
		l.DNS.SetA(h, lo)
	}
	ok = true
	return l, nil
}

// Close stops every server and removes the lab's temp dir.
func (l *Lab) Close() {
	select {
	case <-l.closeCh:
		return
	default:
		close(l.closeCh)
	}
	for _, s := range []*httptest.Server{l.registry, l.auth, l.blobs, l.plain, l.pushSrv} {
		if s != nil {
			s.CloseClientConnections()
			s.Close()
		}
	}
	if l.DNS != nil {
		l.DNS.Close()
	}
	if l.ownDir != "" {
		_ = os.RemoveAll(l.ownDir)
	}
}

// SetFaults replaces the faults in force.
func (l *Lab) SetFaults(f Faults) { l.faults.Store(&f) }

// Faults returns the faults in force.
func (l *Lab) Faults() Faults { return *l.faults.Load() }

func port(s *httptest.Server) string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

// RegistryAddr is registry.<domain>:port (TLS).
func (l *Lab) RegistryAddr() string { return l.RegistryHost + ":" + port(l.registry) }

// PlainAddr is registry.<domain>:port of the plain-HTTP listener.
func (l *Lab) PlainAddr() string { return l.RegistryHost + ":" + port(l.plain) }

// AuthAddr is auth.<domain>:port.
func (l *Lab) AuthAddr() string { return l.AuthHost + ":" + port(l.auth) }

// BlobAddr is blobs.<domain>:port.
func (l *Lab) BlobAddr() string { return l.BlobHost + ":" + port(l.blobs) }

// Ref returns the reference of repo:tag on the TLS registry.
func (l *Lab) Ref(repoTag string) string { return l.RegistryAddr() + "/" + repoTag }

// ClosedPort returns a loopback port where nothing listens (bound, then released).
func ClosedPort() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "1"
	}
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	return p
}

// Push writes img under repoTag ("team/app:1.4"), bypassing auth and faults.
func (l *Lab) Push(ctx context.Context, repoTag string, img v1.Image) error {
	ref, err := name.ParseReference(l.pushSrv.Listener.Addr().String() + "/" + repoTag)
	if err != nil {
		return err
	}
	return remote.Write(ref, img, remote.WithContext(ctx))
}

// PushIndex writes an index (and its images) under repoTag.
func (l *Lab) PushIndex(ctx context.Context, repoTag string, idx v1.ImageIndex) error {
	ref, err := name.ParseReference(l.pushSrv.Listener.Addr().String() + "/" + repoTag)
	if err != nil {
		return err
	}
	return remote.WriteIndex(ref, idx, remote.WithContext(ctx))
}

func (l *Lab) count(role string) {
	v, _ := l.Requests.LoadOrStore(role, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// Count returns how many requests a host role ("registry", "auth", "blobs") received.
func (l *Lab) Count(role string) int64 {
	v, ok := l.Requests.Load(role)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

var blobPath = regexp.MustCompile(`^/v2/(.+)/blobs/(sha256:[a-f0-9]{64})$`)
var manifestPath = regexp.MustCompile(`^/v2/(.+)/manifests/([^/]+)$`)

func (l *Lab) writeErr(w http.ResponseWriter, r *http.Request, status int, code, msg string, pad int) {
	if l.faults.Load().EchoAuth {
		msg += " (you sent: " + r.Header.Get("Authorization") + ")"
	}
	writeErr(w, status, code, msg, pad)
}

func writeErr(w http.ResponseWriter, status int, code, msg string, pad int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body := map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}}
	if pad > 0 {
		body["padding"] = strings.Repeat("x", pad)
	}
	_ = json.NewEncoder(w).Encode(body)
}

func (l *Lab) serveRegistry(w http.ResponseWriter, r *http.Request) {
	l.count("registry")
	l.mu.Lock()
	for k, v := range r.Header {
		if strings.HasPrefix(k, "X-") {
			if l.headers == nil {
				l.headers = map[string][]string{}
			}
			l.headers[k] = append(l.headers[k], v...)
		}
	}
	l.mu.Unlock()
	f := l.faults.Load()
	if f.Stall {
		select {
		case <-r.Context().Done():
		case <-l.closeCh:
		}
		return
	}
	if (len(l.users) > 0 || l.requireToken()) && !(f.OpenPing && r.URL.Path == "/v2/") {
		if !l.authorized(r) {
			ch := fmt.Sprintf(`Bearer realm="%s",service="%s"`, l.realm(), l.RegistryHost)
			if m := manifestPath.FindStringSubmatch(r.URL.Path); m != nil {
				ch += fmt.Sprintf(`,scope="repository:%s:pull"`, m[1])
			}
			if f.Challenge != "" && r.URL.Path == "/v2/" {
				ch = f.Challenge
			}
			w.Header().Set("WWW-Authenticate", ch)
			writeErr(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required", f.ErrorBodyBytes)
			return
		}
	}
	if m := manifestPath.FindStringSubmatch(r.URL.Path); m != nil {
		switch {
		case f.Forbid:
			writeErr(w, http.StatusForbidden, "DENIED", "requested access to the resource is denied", f.ErrorBodyBytes)
			return
		case f.InsufficientScope:
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s",service="%s",scope="repository:%s:pull",error="insufficient_scope"`, l.realm(), l.RegistryHost, m[1]))
			writeErr(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required", f.ErrorBodyBytes)
			return
		case f.RateLimit:
			w.Header().Set("Retry-After", "60")
			writeErr(w, http.StatusTooManyRequests, "TOOMANYREQUESTS", "You have reached your pull rate limit.", f.ErrorBodyBytes)
			return
		case f.HugeManifest && r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			_, _ = w.Write([]byte(`{"schemaVersion":2,"pad":"`))
			chunk := []byte(strings.Repeat("x", 64<<10))
			for range 70 { // 4.4 MiB
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			_, _ = w.Write([]byte(`"}`))
			return
		}
		if f.ErrorBodyBytes > 0 || f.EchoAuth || f.ErrorBody != "" {
			rec := httptest.NewRecorder()
			l.inner.ServeHTTP(rec, r)
			if rec.Code >= 400 && f.ErrorBody != "" {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(rec.Code)
				_, _ = io.WriteString(w, f.ErrorBody)
				return
			}
			if rec.Code >= 400 {
				l.writeErr(w, r, rec.Code, "MANIFEST_UNKNOWN", "manifest unknown", f.ErrorBodyBytes)
				return
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
	}
	if m := blobPath.FindStringSubmatch(r.URL.Path); m != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		switch {
		case f.Forbid:
			writeErr(w, http.StatusForbidden, "DENIED", "requested access to the resource is denied", 0)
			return
		case f.RedirectLoop:
			http.Redirect(w, r, r.URL.Path+"?hop="+randHex(2), http.StatusTemporaryRedirect)
			return
		case !f.NoRedirect:
			host := l.BlobAddr()
			if f.BlobHost != "" {
				host = f.BlobHost
			}
			loc := fmt.Sprintf("https://%s/data/%s/%s?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=300&X-Amz-Signature=%s&sig=%s",
				host, m[1], m[2], l.sigSecret, l.sigSecret)
			http.Redirect(w, r, loc, http.StatusTemporaryRedirect)
			return
		}
	}
	l.inner.ServeHTTP(w, r)
}

func (l *Lab) requireToken() bool { return l.users != nil }

func (l *Lab) realm() string {
	if f := l.faults.Load(); f.Realm != "" {
		return f.Realm
	}
	return "https://" + l.AuthAddr() + "/token"
}

func (l *Lab) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tokens[tok]
}

// serveToken is the token realm (distribution token spec): Basic credentials in, a bearer token out.
func (l *Lab) serveToken(w http.ResponseWriter, r *http.Request) {
	l.count("auth")
	if r.URL.Path != "/token" {
		http.NotFound(w, r)
		return
	}
	u, p, hasCreds := r.BasicAuth()
	l.mu.Lock()
	want, known := l.users[u]
	users := len(l.users)
	l.mu.Unlock()
	if users > 0 {
		if !hasCreds || !known || subtle.ConstantTimeCompare([]byte(want), []byte(p)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="pullpath lab"`)
			writeErr(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required", 0)
			return
		}
		l.mu.Lock()
		l.Authorizations = append(l.Authorizations, r.Header.Get("Authorization"))
		l.mu.Unlock()
	}
	f := l.faults.Load()
	tok := "lab-token-" + randHex(24)
	if f.TokenJWTExp != 0 {
		tok = FakeJWT(f.TokenJWTExp, tok)
	}
	l.mu.Lock()
	l.tokens[tok] = true
	l.Authorizations = append(l.Authorizations, "Bearer "+tok)
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	ans := map[string]any{"token": tok, "access_token": tok, "expires_in": 300}
	if f.TokenNoExpiry {
		delete(ans, "expires_in")
	}
	_ = json.NewEncoder(w).Encode(ans)
}

// AddUser lets user in at the token realm of a lab with users, with password (a JWT can stand
// for a refresh token).
func (l *Lab) AddUser(user, password string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.users[user] = password
}

// FakeJWT is an unsigned JWT whose claims are exp and a jti of id: the shape of a registry's or an
// identity provider's token, with nothing to verify.
func FakeJWT(exp int64, id string) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]any{"exp": exp, "jti": id})
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(claims) + "." + enc([]byte(id))
}

// Token returns the last bearer token issued, to prove it never appears in output.
func (l *Lab) Token() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.Authorizations) - 1; i >= 0; i-- {
		if t, ok := strings.CutPrefix(l.Authorizations[i], "Bearer "); ok {
			return t
		}
	}
	return ""
}

// Signature is the secret in the blob host's signed URLs, to prove it never appears in output.
func (l *Lab) Signature() string { return l.sigSecret }

var dataPath = regexp.MustCompile(`^/data/(.+)/(sha256:[a-f0-9]{64})$`)

// serveBlob is the blob host: it accepts only signed URLs and, like S3, rejects a second credential.
func (l *Lab) serveBlob(w http.ResponseWriter, r *http.Request) {
	l.count("blobs")
	f := l.faults.Load()
	m := dataPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Authorization") != "" {
		http.Error(w, "InvalidArgument: Only one auth mechanism allowed", http.StatusBadRequest)
		return
	}
	if r.URL.Query().Get("X-Amz-Signature") != l.sigSecret || f.BlobForbidden {
		http.Error(w, "AccessDenied: Request has expired", http.StatusForbidden)
		return
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/v2/"+m[1]+"/blobs/"+m[2], nil)
	l.inner.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	body := rec.Body.Bytes()
	w.Header().Set("Content-Type", "application/octet-stream")
	switch {
	case f.BlobEndless:
		w.WriteHeader(http.StatusOK)
		chunk := make([]byte, 32<<10)
		for {
			select {
			case <-r.Context().Done():
				return
			case <-l.closeCh:
				return
			default:
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	case f.BlobStall:
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:len(body)/2])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
		case <-l.closeCh:
		}
		return
	case f.BlobCorrupt:
		c := append([]byte(nil), body...)
		c[len(c)/2] ^= 0xff
		body = c
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// SignedURLExample shows the shape of the blob host's redirects (for docs and tests).
func (l *Lab) SignedURLExample() *url.URL {
	u, _ := url.Parse("https://" + l.BlobAddr() + "/data/x/sha256:0?X-Amz-Signature=" + l.sigSecret)
	return u
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// PushRaw writes a manifest as given, with its media type, under repoTag: formats the registry
// library does not build, such as schema 1.
func (l *Lab) PushRaw(ctx context.Context, repoTag string, manifest []byte, mediaType string) error {
	ref, err := name.ParseReference(l.pushSrv.Listener.Addr().String() + "/" + repoTag)
	if err != nil {
		return err
	}
	return remote.Put(ref, rawManifest{manifest, types.MediaType(mediaType)}, remote.WithContext(ctx))
}

type rawManifest struct {
	b  []byte
	mt types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.b, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }
