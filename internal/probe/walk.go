package probe

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pullpath/pullpath/internal/capped"
	"github.com/pullpath/pullpath/internal/credprovider"
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
	tgt    target
	ref    registry.Reference // the image, with the repository this host is asked for
	regEp  *endpoint          // the host's endpoint, once visited
	client *registry.Client
	authorizer
	fromIndex bool // the platform manifest was chosen from an index
	// memoKey names this host's authorization in Options.Memo; fromMemo: the round uses the
	// one kept there, and skipped GET /v2/ (a quick round)
	memoKey  string
	fromMemo bool
	noPing   bool // GET /v2/ skipped: the manifest HEAD proves the API answers
	download report.Download
	resolved bool // the manifest HEAD succeeded: the runtime's resolve ended on this host
}

// classOf is the class a failure will be reported with.
func (w *walk) classOf(f *failure) report.Class {
	if f.class != "" {
		return f.class
	}
	return report.ClassFor(f.ep.role, f.step, f.code)
}

// attempt walks the whole path against one target.
func (w *walk) attempt(t target) *failure {
	a := &hostAttempt{tgt: t, ref: w.image, authorizer: authorizer{cred: w.opts.Credential}}
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
	if w.kept(reg) {
		// a quick round with a kept authorization: the manifest HEAD is the first request
		m, f := w.manifests(reg)
		if f != nil {
			return f
		}
		return w.blobs(reg, m)
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
		w.keep(reg, "", keptLife)
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
		if f.cut { // a cut step did not fail, it did not finish: it stays unmarked
			return nil, f
		}
		return nil, w.fail(f, f.ev, e.Hop.Snapshot().Duration)
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
		return nil, w.fail(f, f.lines(), 0)
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
	return w.fail(f, f.ev, snap.Duration)
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

func (w *walk) endpointOf(resp *registry.Response, def *endpoint) *endpoint {
	h := lastHop(resp)
	w.mu.Lock()
	defer w.mu.Unlock()
	if ep := w.endpoints[h.Host]; ep != nil {
		return ep
	}
	return def
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
