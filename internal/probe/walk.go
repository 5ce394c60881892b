package probe

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/pullpath/pullpath/internal/capped"
	"github.com/pullpath/pullpath/internal/credprovider"
	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/hoptrace"
	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// walk is one walk of the pull path with one credential: the hosts in the runtime's order, each
// walked (attempt) until one holds. What it observes on the way (endpoints, steps, warnings, hops)
// is the walk's; the state of the host being walked is its current hostAttempt, made new for each.
type walk struct {
	opts      Options // the run's, with the credential this walk presents
	policy    policy  // the runtime's (the run's)
	roots     systemRoots
	ctx       context.Context
	image     registry.Reference // the image as named
	platform  registry.Platform
	rec       *hoptrace.Recorder
	proxyFunc func(*url.URL) (*url.URL, error)

	mu        sync.Mutex
	endpoints map[string]*endpoint
	order     []*endpoint
	steps     []report.Step
	warnings  []report.Warning

	secrets  []string             // every credential value seen, scrubbed from the report
	skipped  []report.RuntimeHost // runtime hosts the pull does not use (capabilities)
	provider *credprovider.Plan   // the kubelet credential provider whose credential (or failure) the walk took
	cut      *report.Interruption // the run ended before a verdict

	*hostAttempt // the host being walked; after the walk, the one whose credential and download are reported
}

// hostAttempt is the state of walking one host, made new for each attempt.
type hostAttempt struct {
	tgt        target
	ref        registry.Reference // the image, with the repository this host is asked for
	regEp      *endpoint          // the host's endpoint, once visited
	client     *registry.Client
	authz      string           // Authorization for the registry; never logged or reported
	cred       creds.Credential // what the attempt presents
	anonymous  bool
	fromIndex  bool // the platform manifest was chosen from an index
	challenged bool // a challenge after the ping was answered (once per attempt)
	download   report.Download
	resolved   bool   // the manifest HEAD succeeded: the runtime's resolve ended on this host
	withheld   string // the token host credentials were withheld from (localRefusal)
}

// classOf is the class a failure will be reported with.
func (w *walk) classOf(f *failure) report.Class {
	if f.class != "" {
		return f.class
	}
	return report.ClassFor(f.ep.role, f.step, f.code)
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

// attempt walks the whole path against one target.
func (w *walk) attempt(t target) *failure {
	a := &hostAttempt{tgt: t, ref: w.image, cred: w.opts.Credential}
	a.ref.Repository = t.repo // every manifest, blob and token scope asks for the host's repository
	// as containerd: credentials given to the pull (the kubelet's) win; else the runtime's own config
	if a.cred.Anonymous() && t.cred != nil {
		a.cred = *t.cred
	}
	a.anonymous = a.cred.Anonymous()
	w.hostAttempt = a
	tr := w.transport(t)
	defer tr.CloseIdleConnections()
	w.client = &registry.Client{
		Transport: &hoptrace.Transport{Inner: tr, Rec: w.rec},
		Visit: func(ctx context.Context, u *url.URL, role report.Role, via string) error {
			if _, f := w.visit(ctx, u, role, via); f != nil {
				return &visitFailure{f}
			}
			return nil
		},
	}
	return w.run()
}

func runtimeWarnings(c *runtimeconfig.Config) []runtimeconfig.Warning {
	if c == nil {
		return nil
	}
	return c.Warnings
}

// attemptFallback walks a host the runtime tries over HTTPS first and, when the handshake is
// answered in plain HTTP, over HTTP (containerd's HTTP fallback for a host with TLS settings and an
// http:// server, containers/image's insecure registries).
func (w *walk) attemptFallback(t target) *failure {
	if !t.fallback {
		return w.attempt(t)
	}
	secure, plain := *t.base, *t.base
	secure.Scheme, plain.Scheme = "https", "http"
	first := t
	first.base = &secure
	f := w.attempt(first)
	if f == nil || f.code != report.CodeTLSPlainHTTP {
		return f
	}
	w.warn(report.CodeTLSPlainHTTP, f.ep.hostport, fmt.Sprintf("%s answered the TLS handshake in plain HTTP: the runtime falls back to plain HTTP for it (%s)", f.ep.hostport, t.source))
	t.base = &plain
	return w.attempt(t)
}

type visitFailure struct{ f *failure }

func (v *visitFailure) Error() string { return v.f.summary }

// systemRoots are the roots every host is verified against, before a host's own ca files.
type systemRoots struct {
	pool   *x509.CertPool
	source string // whose they are, for the report
	node   bool   // the node's bundle, read under the host root
}

// trustRoots are the system roots of the probe: in a node probe (a runtime configuration read
// under a host root) the node's bundle as its runtime loads it, never the probe's own filesystem or
// environment (the probe may run on a borrowed image with no CA store, or one a tenant planted);
// without one, this machine's. --ca-file adds to either.
func trustRoots(opts Options) (systemRoots, error) {
	var r systemRoots
	if opts.Runtime != nil {
		r = systemRoots{pool: opts.Runtime.Trust.Pool(), source: opts.Runtime.Trust.String(), node: true}
	} else {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		r = systemRoots{pool: pool, source: "this machine's system roots (no host root: not a node's trust)"}
	}
	for _, f := range opts.CAFiles {
		b, err := capped.ReadFile(f, capped.Max)
		if err != nil {
			return r, fmt.Errorf("--ca-file: %w", err)
		}
		if !r.pool.AppendCertsFromPEM(b) {
			return r, fmt.Errorf("--ca-file %s: no PEM certificate found", f)
		}
	}
	if len(opts.CAFiles) > 0 {
		r.source += " + --ca-file " + strings.Join(opts.CAFiles, ", ")
	}
	return r, nil
}

func (w *walk) step(ep *endpoint, l report.StepName, v report.Verdict, code report.Code, summary string, ev report.Evidence, d report.Duration) {
	w.opts.Logger.Debug("step", "layer", l.String(), "endpoint", ep.hostport, "role", string(ep.role), "verdict", string(v), "code", string(code), "summary", summary)
	w.mu.Lock()
	defer w.mu.Unlock()
	ep.set(l, v)
	w.steps = append(w.steps, report.Step{Step: l, Endpoint: ep.hostport, Role: ep.role, Verdict: v, Code: code,
		Summary: summary, Evidence: ev, Duration: d})
}

func (w *walk) warn(code report.Code, host, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, x := range w.warnings {
		if x.Code == code && x.Host == host {
			return
		}
	}
	w.warnings = append(w.warnings, report.Warning{Code: code, Host: host, Message: msg})
}

// run walks the path and returns the first failure, or nil.
func (w *walk) run() *failure {
	// 1-2. DNS and route of the registry API host (through its proxy, when the runtime has one).
	reg, f := w.visit(w.ctx, w.tgt.base, w.tgt.role, w.tgt.source)
	if f != nil {
		return f
	}
	w.regEp = reg
	if w.opts.Insecure {
		w.warn(report.CodeTLSInsecure, "", "--insecure: certificates are NOT verified; a pass here does not mean the runtime trusts the registry")
	}
	// 3-6. TCP, TLS and the API version check: GET /v2/.
	ping := w.apiURL("/") // GET /v2/
	resp, f := w.request(w.ctx, reg, http.MethodGet, ping, nil, report.RoleRegistry)
	if f != nil {
		return f
	}
	body, _, _ := registry.ReadCapped(resp.Body, registry.MaxErrorBody)
	resp.Body.Close()
	pingSummary := fmt.Sprintf("GET /v2/ → %d", resp.StatusCode)
	switch resp.StatusCode {
	case http.StatusOK:
		w.step(reg, report.StepHTTP, report.Pass, "", pingSummary+": the registry API answers", report.Evidence{HTTP: w.httpEvidence(resp, body)}, lastHop(resp).Duration)
		w.step(reg, report.StepAuth, report.Pass, "", "the registry needs no authentication", report.Evidence{}, 0)
	case http.StatusUnauthorized:
		w.step(reg, report.StepHTTP, report.Pass, "", pingSummary+": the registry API answers and asks for authentication", report.Evidence{HTTP: w.httpEvidence(resp, body)}, lastHop(resp).Duration)
		if f := w.authenticate(reg, resp); f != nil {
			return f
		}
	default:
		return w.statusFailure(reg, resp, body, report.StepHTTP, "the API version check GET /v2/")
	}
	// 7. Manifest (and index → platform manifest).
	m, f := w.manifests(reg)
	if f != nil {
		return f
	}
	// 8. Every blob, fully downloaded and verified.
	return w.blobs(reg, m)
}

// request sends one request with the registry's Authorization and maps transport failures.
func (w *walk) request(ctx context.Context, ep *endpoint, method string, u *url.URL, hdr http.Header, redirectRole report.Role) (*registry.Response, *failure) {
	if hdr == nil {
		hdr = http.Header{}
	}
	if ep == w.regEp {
		for k, vs := range w.tgt.header {
			hdr[k] = vs
		}
		if w.authz != "" {
			hdr.Set("Authorization", w.authz)
		}
	}
	resp, err := w.client.Do(ctx, method, u, hdr, ep.role, redirectRole)
	if resp != nil {
		w.observe(resp.Hops)
	}
	if err == nil {
		return resp, nil
	}
	if ctx.Err() != nil && w.ctx.Err() == nil {
		return nil, &failure{ep: ep, cancelled: true}
	}
	switch e := err.(type) {
	case *registry.VisitError:
		if vf, ok := e.Err.(*visitFailure); ok {
			return nil, vf.f
		}
		if errors.Is(e.Err, registry.ErrHostName) { // refused where the Location was read
			_, f := w.visit(ctx, e.URL, e.Role, "a redirect from "+ep.hostport)
			return nil, f
		}
	case *registry.HopError:
		target := w.endpoints[hoptrace.HostPort(e.URL)]
		if target == nil {
			target = ep
		}
		if f := w.proxyFailure(target, e.Hop, e.Err); f != nil {
			return nil, f
		}
		f := w.hopFailure(target, e.Hop, e.Err)
		if !f.cut { // a cut step did not fail, it did not finish: it stays unmarked
			w.step(target, f.step, report.Fail, f.code, f.summary, f.ev, e.Hop.Snapshot().Duration)
		}
		return nil, f
	case *registry.RedirectError:
		target := w.endpoints[e.Host]
		if target == nil {
			target = ep
		}
		f := &failure{ep: target, step: report.StepHTTP, code: report.CodeHTTPRedirectLoop, summary: e.Error()}
		for _, h := range e.Hops {
			s := h.Snapshot()
			f.evidence = append(f.evidence, fmt.Sprintf("%s %s → %d", s.Method, s.URL, s.Status))
		}
		w.step(target, report.StepHTTP, report.Fail, f.code, f.summary, report.Evidence{Lines: f.evidence}, 0)
		return nil, f
	}
	return nil, &failure{ep: ep, step: report.StepHTTP, code: report.CodeHTTPFailed, summary: err.Error()}
}

// proxyFailure blames the proxy for a hop that went through it and broke before the tunnel
// carried TLS: the proxy could not be reached, or refused the CONNECT.
func (w *walk) proxyFailure(target *endpoint, hop *hoptrace.Hop, err error) *failure {
	if target.viaProxy == "" {
		return nil
	}
	w.mu.Lock()
	pe := w.endpoints[target.viaProxy]
	w.mu.Unlock()
	if pe == nil {
		return nil
	}
	var oe *net.OpError
	snap := hop.Snapshot()
	if st, tlsErr := hop.TLS(); st != nil || tlsErr != nil || snap.Phase >= report.StepTLS {
		return nil // the tunnel was up: the failure belongs to the target
	}
	var f *failure
	switch {
	case errors.As(err, &oe) && oe.Op == "proxyconnect":
		f = w.hopFailure(pe, hop, err)
		f.summary = "the runtime's proxy " + pe.hostport + " cannot be reached: " + dialWord(err)
	case snap.Addr != "":
		f = &failure{ep: pe, step: report.StepHTTP, code: report.CodeProxyFailed,
			summary:  fmt.Sprintf("the proxy %s refused to open a tunnel to %s: %v", pe.hostport, target.hostport, err),
			evidence: []string{"CONNECT " + target.hostport + " via " + pe.hostport + " (" + snap.Addr + "): " + err.Error()}}
	default:
		return nil
	}
	w.step(pe, f.step, report.Fail, f.code, f.summary, f.ev, snap.Duration)
	return f
}

// observe marks TCP, TLS and HTTP as passed on every endpoint a hop reached. Concurrent blob
// downloads observe the same endpoints, so the first-seen decisions are taken under w.mu.
func (w *walk) observe(hops []*hoptrace.Hop) {
	for _, h := range hops {
		s := h.Snapshot()
		w.mu.Lock()
		ep := w.endpoints[s.Host]
		if ep == nil || s.Addr == "" {
			w.mu.Unlock()
			continue
		}
		if s.Status > 0 {
			ep.set(report.StepHTTP, report.Pass)
		}
		firstTCP := !ep.tcpSeen
		ep.tcpSeen = true
		st, tlsErr := h.TLS()
		tlsOK := st != nil && tlsErr == nil
		plain := st == nil && s.Phase >= report.StepHTTP && strings.HasPrefix(s.URL, "http:")
		firstTLS := !ep.tlsSeen && (tlsOK || plain)
		if firstTLS {
			ep.tlsSeen = true
		}
		w.mu.Unlock()

		if firstTCP {
			w.step(ep, report.StepTCP, report.Pass, "", "connected to "+s.Addr, report.Evidence{Dials: h.Dials()}, 0)
		}
		switch {
		case firstTLS && tlsOK:
			ev := tlsEvidence(ep.host, h, nil)
			sum := fmt.Sprintf("%s, certificate verified for %s", ev.Version, ep.host)
			v := report.Pass
			if w.opts.Insecure {
				v, sum = report.Warn, fmt.Sprintf("%s, certificate NOT verified (--insecure)", ev.Version)
			}
			if len(ev.Chain) > 0 {
				sum += fmt.Sprintf(" (issuer %q, expires %s)", ev.Chain[0].Issuer, ev.Chain[0].NotAfter.Format("2006-01-02"))
			}
			w.step(ep, report.StepTLS, v, "", sum, report.Evidence{TLS: ev}, 0)
		case firstTLS && plain:
			w.step(ep, report.StepTLS, report.Warn, report.CodeHTTPDowngrade, "plain HTTP: no TLS on this hop", report.Evidence{}, 0)
		}
	}
}

func lastHop(r *registry.Response) report.Hop {
	if len(r.Hops) == 0 {
		return report.Hop{}
	}
	return r.Hops[len(r.Hops)-1].Snapshot()
}

// maxErrorCodes bounds the registry error codes kept from one body; real bodies carry one or two.
const maxErrorCodes = 8

func (w *walk) httpEvidence(r *registry.Response, body []byte) *report.HTTP {
	h := lastHop(r)
	e := &report.HTTP{Method: h.Method, URL: h.URL, Status: r.StatusCode, Challenge: w.untrusted(r.Header.Get("WWW-Authenticate"), 512)}
	for _, ae := range registry.ParseErrors(body) {
		if len(e.ErrorCodes) == maxErrorCodes {
			break
		}
		e.ErrorCodes = append(e.ErrorCodes, w.untrusted(ae.Code, 64))
		if e.Message == "" {
			e.Message = w.untrusted(ae.Message, 200)
		}
	}
	if e.Message == "" && len(body) > 0 && r.StatusCode >= 400 {
		e.Message = w.untrusted(strings.TrimSpace(string(body)), 200)
	}
	return e
}

// untrusted is how text a registry sent enters the report: the credentials this walk handled go
// first (a server may echo them, and a cut must not leave part of one), then redact.Untrusted
// cleans, scrubs and clips it to n bytes.
func (w *walk) untrusted(s string, n int) string {
	if sr := w.secretReplacer(); sr != nil {
		s = sr.Replace(s)
	}
	return redact.Untrusted(s, n)
}

// authenticate answers the /v2/ challenge: Basic with the credential, or a token from the realm.
func (w *walk) authenticate(reg *endpoint, ping *registry.Response) *failure {
	hdr := ping.Header.Get("WWW-Authenticate")
	ch, err := registry.ParseChallenge(hdr)
	if err != nil {
		f := &failure{ep: reg, step: report.StepAuth, code: report.CodeAuthChallengeInvalid, class: report.ClassOther,
			summary:  "the registry's authentication challenge cannot be used: " + err.Error(),
			evidence: []string{fmt.Sprintf("GET /v2/ → 401, WWW-Authenticate: %q", w.untrusted(hdr, 300))}}
		w.step(reg, report.StepAuth, report.Fail, f.code, f.summary, report.Evidence{Lines: f.evidence}, 0)
		return f
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
		return nil
	case "bearer":
	default:
		f := &failure{ep: reg, step: report.StepAuth, code: report.CodeAuthChallengeInvalid, class: report.ClassOther,
			summary: fmt.Sprintf("the registry asks for the %q auth scheme, which container runtimes do not speak", ch.Scheme)}
		w.step(reg, report.StepAuth, report.Fail, f.code, f.summary, report.Evidence{}, 0)
		return f
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
		w.step(reg, report.StepAuth, report.Fail, f.code, f.summary, report.Evidence{}, 0)
		return f
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
	token, err := registry.ParseToken(body)
	if err != nil {
		f := &failure{ep: tok, step: report.StepAuth, code: report.CodeAuthTokenInvalid, summary: "the token realm answered 200 but " + err.Error()}
		w.step(tok, report.StepAuth, report.Fail, f.code, f.summary, ev, 0)
		return f
	}
	w.setAuthz("Bearer " + token)
	w.step(tok, report.StepAuth, report.Pass, "", fmt.Sprintf("token issued for scope repository:%s:pull to %s", w.ref.Repository, cred.String()), report.Evidence{}, 0)
	w.step(reg, report.StepAuth, report.Pass, "", "bearer token from "+tok.hostport, report.Evidence{}, 0)
	return nil
}

// tlsOnlyPort is a web server's answer to plain HTTP on its TLS port (Go's net/http, nginx).
var tlsOnlyPort = regexp.MustCompile(report.TLSOnlyPortAnswer)

// statusFailure maps an unexpected HTTP status on ep to a failure, reading registry error codes.
func (w *walk) statusFailure(ep *endpoint, resp *registry.Response, body []byte, layer report.StepName, what string) *failure {
	ev := report.Evidence{HTTP: w.httpEvidence(resp, body)}
	codes := strings.Join(ev.HTTP.ErrorCodes, ", ")
	st := fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if codes != "" {
		st += " (" + codes + ")"
	}
	f := &failure{ep: ep, step: layer, ev: ev}
	if ep.role == report.RoleRegistry || ep.role == report.RoleMirror {
		f.status = resp.StatusCode
	}
	f.evidence = []string{fmt.Sprintf("%s %s → %s", ev.HTTP.Method, ev.HTTP.URL, st)}
	if ev.HTTP.Message != "" {
		f.evidence = append(f.evidence, "message: "+ev.HTTP.Message)
	}
	if ev.HTTP.Challenge != "" {
		f.evidence = append(f.evidence, "WWW-Authenticate: "+ev.HTTP.Challenge)
	}
	if resp.StatusCode == http.StatusBadRequest && tlsOnlyPort.Match(body) {
		// the runtime spoke plain HTTP (as this host is configured for it) to a port that speaks TLS
		f.step, f.code = report.StepTLS, report.CodeTLSRequired
		f.summary = fmt.Sprintf("%s speaks only TLS, and the runtime sends it plain HTTP: %s answered %s", ep.hostport, what, st)
		f.evidence = append(f.evidence, "the answer is a web server's to plain HTTP on its TLS port; containerd before 1.6.25 and 1.7.8 speaks plain HTTP to a localhost registry with no server configured")
		w.step(ep, report.StepTLS, report.Fail, f.code, f.summary, ev, lastHop(resp).Duration)
		return f
	}
	has := func(c string) bool { return strings.Contains(codes, c) }
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		f.code = report.CodeAuth401
		ch, chErr := registry.ParseChallenge(ev.HTTP.Challenge)
		if chErr == nil && ((ch.Scheme == "basic" && w.anonymous) || (ch.Scheme == "bearer" && ch.Params["error"] != "")) {
			// containerd's authorizer turns these into an error, not a status: no basic auth
			// credentials, or the token refused again ("server message: …")
			f.status = 0
		}
		if chErr == nil && ch.Params["error"] == "insufficient_scope" {
			f.code = report.CodeAuthInsufficientScope
			f.summary = fmt.Sprintf("%s: the identity (%s) may not pull repository %s (insufficient_scope)", what, w.cred, w.ref.Repository)
			break
		}
		if w.withheld != "" {
			f.summary = fmt.Sprintf("%s was refused (401): pullpath withheld the credentials from the token host %s, on a local address (see the warning)", what, w.withheld)
		} else if w.anonymous {
			f.summary = fmt.Sprintf("%s was refused (401): the registry requires credentials and none were presented", what)
			f.alt = "some registries (Docker Hub among them) answer an anonymous pull of a repository that does not exist with 401: check the name too"
		} else {
			f.summary = fmt.Sprintf("%s was refused (401): the credentials (%s) were not accepted", what, w.cred)
		}
	case http.StatusForbidden:
		f.code = report.CodeAuth403
		f.summary = fmt.Sprintf("%s was denied (403) for %s", what, w.cred)
		if ep.role == report.RoleBlob {
			f.code = report.CodeBlobForbidden
			f.summary = fmt.Sprintf("the blob host %s refused the download (403): an expired or rejected signed URL, or a storage firewall / private endpoint rule", ep.hostport)
		} else if layer == report.StepHTTP && ep.role == report.RoleRegistry {
			f.summary = fmt.Sprintf("%s was denied (403) before any credential was presented: a registry network rule (firewall, private-endpoint-only) rejects this node's address", what)
		}
	case http.StatusNotFound:
		switch {
		case layer == report.StepHTTP && ep.role == report.RoleRegistry:
			f.code = report.CodeHTTPNotRegistry
			f.summary = fmt.Sprintf("%s answered 404: %s does not serve the registry API (a web server, a wrong port or path)", what, ep.hostport)
		case has("NAME_UNKNOWN"):
			f.code = report.CodeNameUnknown
			f.summary = fmt.Sprintf("repository %s does not exist on %s", w.ref.Repository, w.ref.Registry)
		case layer == report.StepBlob:
			f.code = report.CodeBlobUnknown
			f.summary = fmt.Sprintf("%s: %s answered 404 for a blob the manifest lists", what, ep.hostport)
		default:
			f.code = report.CodeManifestUnknown
			f.summary = fmt.Sprintf("%s:%s is not in the registry (manifest unknown)", w.ref.Repository, w.ref.Identifier())
		}
	case http.StatusTooManyRequests:
		f.code = report.CodeRateLimited
		f.summary = fmt.Sprintf("%s was throttled (429) by %s", what, ep.hostport)
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			f.evidence = append(f.evidence, "Retry-After: "+w.untrusted(ra, 40))
		}
	default:
		f.code = report.CodeHTTPStatus
		f.summary = fmt.Sprintf("%s answered %s on %s", what, st, ep.hostport)
	}
	w.step(ep, layer, report.Fail, f.code, f.summary, ev, lastHop(resp).Duration)
	return f
}

// requestAuth sends a manifest request and, like containerd's authorizer, answers a first challenge
// there: some registries let GET /v2/ through and only challenge on the repository.
func (w *walk) requestAuth(reg *endpoint, method string, u *url.URL, hdr http.Header) (*registry.Response, *failure) {
	resp, f := w.request(w.ctx, reg, method, u, hdr.Clone(), report.RoleBlob)
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

// manifests fetches the manifest for the reference and, for an index, the one for the platform.
func (w *walk) manifests(reg *endpoint) (*registry.Manifest, *failure) {
	u := w.apiURL(w.ref.Repository, "manifests", w.ref.Identifier())
	hdr := http.Header{"Accept": {registry.AcceptManifests}}
	// containerd resolves with HEAD; the body of a HEAD 4xx is empty, so a GET reads the reason.
	head, f := w.requestAuth(reg, http.MethodHead, u, hdr)
	if f != nil {
		return nil, f
	}
	head.Body.Close()
	w.resolved = head.StatusCode >= 200 && head.StatusCode < 300
	digest := head.Header.Get("Docker-Content-Digest")
	if w.ref.Digest != "" {
		digest = w.ref.Digest
	}
	if head.StatusCode == http.StatusOK && registry.ValidDigest(digest) {
		u = w.apiURL(w.ref.Repository, "manifests", digest)
	} else {
		digest = w.ref.Digest
	}
	m, f := w.fetchManifest(reg, u, digest, -1, w.ref.Identifier())
	if f != nil || !m.Index {
		return m, f
	}
	var avail []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			continue
		}
		if w.platform.Match(*d.Platform) {
			cu := w.apiURL(w.ref.Repository, "manifests", d.Digest)
			w.fromIndex = true
			return w.fetchManifest(reg, cu, d.Digest, d.Size, d.Platform.String()+" manifest "+short(d.Digest))
		}
		avail = append(avail, d.Platform.String())
	}
	f = &failure{ep: reg, step: report.StepManifest, code: report.CodePlatformMismatch,
		summary:  fmt.Sprintf("the image index has no manifest for this node's platform %s (it has: %s)", w.platform, strings.Join(avail, ", ")),
		evidence: []string{"index " + short(digest) + " lists " + strings.Join(avail, ", "), "node platform: " + w.platform.String()}}
	w.step(reg, report.StepManifest, report.Fail, f.code, f.summary, report.Evidence{Lines: f.evidence}, 0)
	return nil, f
}

func (w *walk) fetchManifest(reg *endpoint, u *url.URL, wantDigest string, wantSize int64, what string) (*registry.Manifest, *failure) {
	resp, f := w.requestAuth(reg, http.MethodGet, u, http.Header{"Accept": {registry.AcceptManifests}})
	if f != nil {
		return nil, f
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _, _ := registry.ReadCapped(resp.Body, registry.MaxErrorBody)
		return nil, w.statusFailure(w.endpointOf(resp, reg), resp, body, report.StepManifest, "the manifest request for "+what)
	}
	body, more, err := registry.ReadCapped(resp.Body, registry.MaxManifestBytes)
	fail := func(code report.Code, summary string, lines ...string) (*registry.Manifest, *failure) {
		f := &failure{ep: w.endpointOf(resp, reg), step: report.StepManifest, code: code, summary: summary, evidence: lines}
		w.step(f.ep, report.StepManifest, report.Fail, code, summary, report.Evidence{Lines: lines}, lastHop(resp).Duration)
		return nil, f
	}
	if err != nil {
		return fail(report.CodeHTTPFailed, "reading the manifest failed: "+err.Error())
	}
	if more {
		return fail(report.CodeManifestTooLarge, fmt.Sprintf("the manifest for %s is larger than %d bytes; the runtime refuses it", what, registry.MaxManifestBytes))
	}
	sum := sha256.Sum256(body)
	got := "sha256:" + hex.EncodeToString(sum[:])
	if strings.HasPrefix(wantDigest, "sha256:") && got != wantDigest {
		return fail(report.CodeManifestDigest, fmt.Sprintf("the manifest for %s does not match its digest", what),
			"expected "+wantDigest, "received "+got+fmt.Sprintf(" (%d bytes)", len(body)))
	}
	if wantSize >= 0 && int64(len(body)) != wantSize {
		return fail(report.CodeSizeMismatch, fmt.Sprintf("the manifest for %s has %d bytes, the index says %d", what, len(body), wantSize))
	}
	m, err := registry.ParseManifest(resp.Header.Get("Content-Type"), body)
	if err != nil {
		code := report.CodeManifestInvalid
		if strings.Contains(err.Error(), "schema 1") || strings.Contains(err.Error(), "unsupported") {
			code = report.CodeManifestUnsupported
		}
		return fail(code, fmt.Sprintf("the manifest for %s cannot be used: %v", what, err))
	}
	kind := "image manifest"
	if m.Index {
		kind = fmt.Sprintf("index of %d manifests", len(m.Manifests))
	} else {
		var total int64
		for _, l := range m.Layers {
			total += l.Size
		}
		kind += fmt.Sprintf(", %d layers, %s", len(m.Layers), report.HumanBytes(total))
	}
	w.step(reg, report.StepManifest, report.Pass, "", fmt.Sprintf("%s: %s %s (%s)", what, short(got), kind, shortMedia(m.MediaType)), report.Evidence{}, lastHop(resp).Duration)
	return m, nil
}

func (w *walk) endpointOf(resp *registry.Response, def *endpoint) *endpoint {
	h := lastHop(resp)
	w.mu.Lock()
	defer w.mu.Unlock()
	if ep := w.endpoints[h.Host]; ep != nil {
		return ep
	}
	return def
}

// checkConfigPlatform verifies a single-manifest image's config platform, as containerd does.
func (w *walk) checkConfigPlatform(reg *endpoint, cfg []byte) *failure {
	var c registry.ImageConfig
	if err := json.Unmarshal(cfg, &c); err != nil || c.OS == "" {
		return nil // not an image config containerd can match on; it would not reject it either
	}
	p := registry.Platform{OS: c.OS, Architecture: c.Architecture, Variant: c.Variant}
	if w.platform.Match(p) {
		return nil
	}
	f := &failure{ep: reg, step: report.StepManifest, code: report.CodePlatformMismatch,
		summary:  fmt.Sprintf("the image is built for %s, this node is %s", p, w.platform),
		evidence: []string{"image config: os=" + c.OS + " architecture=" + c.Architecture + " variant=" + c.Variant}}
	w.step(reg, report.StepManifest, report.Fail, f.code, f.summary, report.Evidence{Lines: f.evidence}, 0)
	return f
}

func short(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

func shortMedia(mt string) string {
	switch mt {
	case registry.MediaOCIIndex:
		return "OCI index"
	case registry.MediaDockerList:
		return "Docker manifest list"
	case registry.MediaOCIManifest:
		return "OCI manifest"
	case registry.MediaDockerManifest:
		return "Docker v2 manifest"
	}
	return mt
}

func since(t time.Time) report.Duration { return report.Duration(time.Since(t)) }

// interrupted turns the failure at which the run was cut into the report's verdict: class other,
// code TIMEOUT (--timeout ran out) or CANCELED (a signal or the caller), and where it was cut.
func (w *walk) interrupted(parent context.Context, f *failure) {
	reason, code := "timeout", report.CodeTimeout
	f.summary = fmt.Sprintf("the probe was cut by --timeout %s during %s on %s (%s): no verdict on the path from there; what was established before is below", w.opts.Timeout, f.step, f.ep.hostport, f.ep.role)
	if parent.Err() != nil {
		reason, code = "canceled", report.CodeCanceled
		f.summary = fmt.Sprintf("the probe was interrupted during %s on %s (%s): no verdict on the path from there; what was established before is below", f.step, f.ep.hostport, f.ep.role)
	}
	f.code, f.class, f.alt = code, report.ClassOther, ""
	w.cut = &report.Interruption{Reason: reason, Step: f.step, Host: f.ep.hostport, Role: f.ep.role}
}
