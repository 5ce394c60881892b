package probe

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

// authorizer is what one host attempt presents and what its registry made of it, as containerd's
// dockerAuthorizer keeps it per host: the credential, the Authorization header made from it,
// whether a challenge was answered, and the token host the credentials were withheld from.
type authorizer struct {
	authz      string           // Authorization for the registry; never logged or reported
	cred       creds.Credential // what the attempt presents
	anonymous  bool
	challenged bool   // a challenge after the ping was answered (once per attempt)
	withheld   string // the token host credentials were withheld from (localRefusal)
	// tokenExpiry is when the realm's bearer token dies, where its answer shows it
	tokenExpiry *report.Expiry
}

// setAuthz sets the registry's Authorization and remembers its secret part for scrubbing.
func (w *walk) setAuthz(v string) {
	w.authz = v
	if _, secret, ok := strings.Cut(v, " "); ok {
		w.mu.Lock()
		w.secrets = append(w.secrets, secret)
		w.mu.Unlock()
	}
}

// authenticate answers the /v2/ challenge: Basic with the credential, or a token from the realm.
func (w *walk) authenticate(reg *endpoint, ping *registry.Response) *failure {
	hdr := ping.Header.Get("WWW-Authenticate")
	ch, err := registry.ParseChallenge(hdr)
	if err != nil {
		f := &failure{ep: reg, step: report.StepAuth, code: report.CodeAuthChallengeInvalid, class: report.ClassOther,
			summary:  "the registry's authentication challenge cannot be used: " + err.Error(),
			evidence: []string{fmt.Sprintf("GET /v2/ → 401, WWW-Authenticate: %q", w.untrusted(hdr, 300))}}
		return w.fail(f, f.lines(), 0)
	}
	cred := w.cred
	switch ch.Scheme {
	case "basic":
		if cred.Username == "" && cred.Password == "" {
			// the manifest request will show the 401 exactly as the runtime gets it
			w.step(reg, report.StepAuth, report.Warn, "", "the registry asks for Basic credentials and none are configured ("+cred.String()+")", report.Evidence{}, 0)
			return nil
		}
		w.setAuthz("Basic " + base64.StdEncoding.EncodeToString([]byte(cred.Username+":"+cred.Password)))
		w.step(reg, report.StepAuth, report.Pass, "", "Basic authentication with "+cred.String(), report.Evidence{}, 0)
		w.keep(reg, w.authz, keptLife)
		return nil
	case "bearer":
	default:
		f := &failure{ep: reg, step: report.StepAuth, code: report.CodeAuthChallengeInvalid, class: report.ClassOther,
			summary: fmt.Sprintf("the registry asks for the %q auth scheme, which container runtimes do not speak", ch.Scheme)}
		return w.fail(f, report.Evidence{}, 0)
	}
	if cred.RegistryToken != "" {
		w.setAuthz("Bearer " + cred.RegistryToken)
		w.step(reg, report.StepAuth, report.Pass, "", "registry token from "+cred.Source, report.Evidence{}, 0)
		return nil
	}
	realm, err := url.Parse(ch.Params["realm"])
	if err != nil || (realm.Scheme != "https" && realm.Scheme != "http") || realm.Host == "" {
		f := &failure{ep: reg, step: report.StepAuth, code: report.CodeAuthChallengeInvalid, class: report.ClassOther,
			summary: fmt.Sprintf("the token realm %q in the challenge is not an http(s) URL", w.untrusted(ch.Params["realm"], 200))}
		return w.fail(f, report.Evidence{}, 0)
	}
	q := realm.Query()
	if s := ch.Params["service"]; s != "" {
		q.Set("service", s)
	}
	q.Set("scope", "repository:"+w.ref.Repository+":pull")
	realm.RawQuery = q.Encode()

	tok, f := w.visit(w.ctx, realm, report.RoleToken, "WWW-Authenticate realm of "+reg.hostport)
	if f != nil {
		return f
	}
	if why := localRefusal(endpointAddrs(tok), endpointAddrs(reg)); why != "" {
		// not even asked: a metadata service answers a GET with its own credentials
		w.challenged = true
		w.refuseLocal(tok, why, "did not contact it, and walks on without a token")
		return nil
	}
	hdr2 := http.Header{}
	if cred.Username != "" || cred.Password != "" {
		hdr2.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred.Username+":"+cred.Password)))
	} else if cred.IdentityToken != "" {
		// an OAuth2 refresh token is exchanged by POST; a GET with it as the password is what
		// docker does for registries that accept it (ACR does)
		hdr2.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("00000000-0000-0000-0000-000000000000:"+cred.IdentityToken)))
	}
	resp, f := w.request(w.ctx, tok, http.MethodGet, realm, hdr2, report.RoleToken)
	if f != nil {
		return f
	}
	body, _, _ := registry.ReadCapped(resp.Body, 1<<20)
	resp.Body.Close()
	ev := report.Evidence{HTTP: w.httpEvidence(resp, body)}
	w.step(tok, report.StepHTTP, report.Pass, "", fmt.Sprintf("GET token → %d", resp.StatusCode), ev, lastHop(resp).Duration)
	if resp.StatusCode != http.StatusOK {
		return w.statusFailure(tok, resp, body, report.StepAuth, "the token request")
	}
	if last := w.endpointOf(resp, tok); last != tok {
		if why := localRefusal(endpointAddrs(last), endpointAddrs(reg)); why != "" {
			// the realm redirected the token request to a local host: its answer is not a token
			w.challenged = true
			w.refuseLocal(last, why, "did not use what it answered to the token request redirected there")
			return nil
		}
	}
	token, err := registry.ParseTokenResponse(body)
	if err != nil {
		return w.fail(&failure{ep: tok, step: report.StepAuth, code: report.CodeAuthTokenInvalid, summary: "the token realm answered 200 but " + err.Error()}, ev, 0)
	}
	w.setAuthz("Bearer " + token.Token)
	w.tokenExpiry = tokenExpiry(token, time.Now())
	w.keep(reg, w.authz, w.tokenLife())
	w.step(tok, report.StepAuth, report.Pass, "", fmt.Sprintf("token issued for scope repository:%s:pull to %s", w.ref.Repository, cred.String()), report.Evidence{}, 0)
	w.step(reg, report.StepAuth, report.Pass, "", "bearer token from "+tok.hostport, report.Evidence{}, 0)
	return nil
}

// requestAuth sends a manifest request and, like containerd's authorizer, answers a first challenge
// there: some registries let GET /v2/ through and only challenge on the repository.
func (w *walk) requestAuth(reg *endpoint, method string, u *url.URL, hdr http.Header) (*registry.Response, *failure) {
	resp, f := w.request(w.ctx, reg, method, u, hdr.Clone(), report.RoleBlob)
	if f == nil && resp.StatusCode == http.StatusUnauthorized && w.fromMemo {
		w.keptRefused() // the kept token expired early, or was revoked: as the runtime, ask again
	}
	if f != nil || resp.StatusCode != http.StatusUnauthorized || w.authz != "" || w.challenged || resp.Header.Get("WWW-Authenticate") == "" {
		return resp, f
	}
	w.challenged = true
	resp.Body.Close()
	w.step(reg, report.StepAuth, report.Pass, "", fmt.Sprintf("%s answered %s %s with a challenge; authenticating as the runtime would", reg.hostport, method, u.Path), report.Evidence{}, 0)
	if f := w.authenticate(reg, resp); f != nil {
		return nil, f
	}
	return w.request(w.ctx, reg, method, u, hdr.Clone(), report.RoleBlob)
}

// tokenExpiry is when the realm's token dies: expires_in counted from issued_at (else from its
// arrival, now), as the distribution token spec says; else the exp of a JWT token; nil when the
// answer shows neither (the spec's default of 60 s is an assumption, not evidence).
func tokenExpiry(t registry.Token, now time.Time) *report.Expiry {
	if t.ExpiresIn > 0 {
		from := now
		if !t.IssuedAt.IsZero() {
			from = t.IssuedAt
		}
		x := report.NewExpiry(report.ExpiryRegistryToken, from.Add(time.Duration(t.ExpiresIn)*time.Second), report.SourceExpiresIn, now)
		return &x
	}
	if exp, ok := creds.JWTExpiry(t.Token); ok {
		x := report.NewExpiry(report.ExpiryRegistryToken, exp, report.SourceJWTExp, now)
		return &x
	}
	return nil
}

// expiries is what the report says of when the walk's credential and token die.
func (w *walk) expiries(now time.Time) []report.Expiry {
	var out []report.Expiry
	if exp, ok := w.cred.Expiry(); ok {
		out = append(out, report.NewExpiry(report.ExpiryCredential, exp, report.SourceJWTExp, now))
	}
	if c := w.cred; !c.CacheUntil.IsZero() {
		out = append(out, report.NewExpiry(report.ExpiryProviderCache, c.CacheUntil, report.ExpirySource(c.CacheFrom), now))
	}
	if e := w.tokenExpiry; e != nil {
		out = append(out, *e)
	}
	return out
}
