package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pullpath/pullpath/internal/hoptrace"
	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/resolver"
	"github.com/pullpath/pullpath/internal/route"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// endpoint is one host:port of the pull path and what was observed on it.
type endpoint struct {
	hostport, host, port string
	role                 report.Role
	via                  string
	addrs                []netip.Addr
	routes               map[netip.Addr]string
	dialed               map[string]string
	layers               map[report.StepName]report.Verdict
	dns                  *resolver.Result
	ready                chan struct{} // closed once DNS and route were checked
	checkFail            *failure      // DNS or route failure, cached: the runtime would hit it every time
	privatelinkPublic    bool          // resolved through a privatelink CNAME to a public address
	viaProxy             string        // host:port of the proxy this endpoint is reached through
	dialAddrs            []netip.Addr  // addrs in the order the runtime dials them
	tcpSeen, tlsSeen     bool
	// internal, for a host reached through the proxy: the proxy, and what shows the host is internal
	// ("" for nothing); it waits for proxiedInternal's lookup
	internal func() (proxy, why string)
}

func (e *endpoint) set(l report.StepName, v report.Verdict) {
	// a failure or warning is never downgraded to pass by a later success on the same layer
	if old, ok := e.layers[l]; ok && (old == report.Fail || (old == report.Warn && v == report.Pass)) {
		return
	}
	e.layers[l] = v
}

// failure is where the path broke.
type failure struct {
	ep       *endpoint
	step     report.StepName
	code     report.Code
	summary  string
	evidence []string
	ev       report.Evidence
	class    report.Class // derived from role/layer/code unless set
	// status is the HTTP status the registry or mirror answered, as the runtime's resolver sees
	// it; 0 for a failure the runtime gets as an error (transport, token realm, its authorizer)
	status int
	alt    string
	// cancelled marks a request stopped because a sibling download failed: not a finding.
	cancelled bool
	// cut marks a failure caused by the end of the whole run (--timeout, a signal): not a diagnosis.
	cut bool
}

// fail records f as the failed step of its endpoint, with ev as the step's evidence, and returns
// it: a failure is made and recorded in one place.
func (w *walk) fail(f *failure, ev report.Evidence, d report.Duration) *failure {
	w.step(f.ep, f.step, report.Fail, f.code, f.summary, ev, d)
	return f
}

// lines is the failure's evidence lines as a step's evidence.
func (f *failure) lines() report.Evidence { return report.Evidence{Lines: f.evidence} }

// visit resolves and routes a new endpoint once. A failure is remembered on the endpoint.
//
// A proxy is never asked for itself (Go's HTTP_PROXY rules would send the proxy's own http:// URL
// to the proxy), and an endpoint met again while it is still being visited on the same chain is a
// cycle: a finding, never a wait on itself.
func (w *walk) visit(ctx context.Context, u *url.URL, role report.Role, via string) (*endpoint, *failure) {
	hp := hoptrace.HostPort(u)
	if err := registry.CheckHost(u.Hostname()); err != nil {
		return w.nameInvalid(hp, u, role, via, err)
	}
	w.mu.Lock()
	if ep, ok := w.endpoints[hp]; ok {
		w.mu.Unlock()
		if onChain(ctx, hp) {
			return ep, w.cycle(ep, ctx)
		}
		select {
		case <-ep.ready: // concurrent blob downloads meet the same new host
		case <-ctx.Done():
			return ep, &failure{ep: ep, step: report.StepDNS, code: report.CodeCanceled, cut: true,
				summary: "cut while waiting for the name resolution of " + hp}
		}
		return ep, ep.checkFail
	}
	ctx = withChain(ctx, hp)
	host, port, _ := net.SplitHostPort(hp)
	ep := &endpoint{hostport: hp, host: host, port: port, role: role, via: via, ready: make(chan struct{}),
		routes: map[netip.Addr]string{}, dialed: map[string]string{}, layers: map[report.StepName]report.Verdict{}}
	defer close(ep.ready)
	w.endpoints[hp] = ep
	w.order = append(w.order, ep)
	w.mu.Unlock()

	if p := w.proxyFor(u); p != nil && role != report.RoleProxy {
		w.proxiedInternal(ctx, ep, hoptrace.HostPort(p))
		// The proxy resolves and reaches the host; the node only needs to reach the proxy.
		if _, f := w.visit(ctx, p, report.RoleProxy, "the runtime's proxy for "+hp); f != nil {
			ep.checkFail = f
			return ep, f
		}
		ep.via = "proxy " + hoptrace.HostPort(p) + "; " + via
		ep.viaProxy = hoptrace.HostPort(p)
		w.step(ep, report.StepDNS, report.Skip, "", "resolved by the proxy "+ep.viaProxy+", not by the node", report.Evidence{}, 0)
		w.step(ep, report.StepRoute, report.Skip, "", "reached through the proxy "+ep.viaProxy, report.Evidence{}, 0)
		return ep, nil
	}
	ep.checkFail = w.resolve(ctx, ep)
	if ep.checkFail == nil {
		ep.checkFail = w.routeCheck(ep)
	}
	ep.dialAddrs = dialOrder(ep.addrs, ep.routes)
	return ep, ep.checkFail
}

// nameInvalid records a host that is no DNS name (registry.CheckHost), handed out by a Location, a
// token realm or a mirror: a DNS failure with no resolver asked, as the runtime's resolver fails it
// ("no such host"). The endpoint is named cut (registry.ShownHost), whatever its length.
func (w *walk) nameInvalid(hp string, u *url.URL, role report.Role, via string, err error) (*endpoint, *failure) {
	w.mu.Lock()
	ep, seen := w.endpoints[hp]
	if !seen {
		host := registry.ShownHost(u.Hostname())
		_, port, _ := net.SplitHostPort(hp)
		ep = &endpoint{hostport: net.JoinHostPort(host, port), host: host, port: port, role: role, via: redact.Untrusted(via, 200),
			ready: make(chan struct{}), routes: map[netip.Addr]string{}, dialed: map[string]string{}, layers: map[report.StepName]report.Verdict{}}
		close(ep.ready)
		w.endpoints[hp] = ep
		w.order = append(w.order, ep)
	}
	w.mu.Unlock()
	if seen {
		return ep, ep.checkFail
	}
	f := &failure{ep: ep, step: report.StepDNS, code: report.CodeDNSNameInvalid,
		summary:  fmt.Sprintf("the %s host %s (%s) is no DNS name: %v; no resolver was asked, and the runtime's fails it as \"no such host\"", role, ep.hostport, ep.via, err),
		evidence: []string{fmt.Sprintf("host of %d characters, handed out by %s", len(u.Hostname()), ep.via)}}
	ep.checkFail = f
	return ep, w.fail(f, f.lines(), 0)
}

// proxiedInternal looks, beside the walk, for what shows that a host the runtime reaches through
// its proxy belongs to the node's internal network, where a corporate proxy usually cannot reach:
// runtimeconfig.InternalEvidence (an address literal, a name under the node's search domains or
// an internal-only suffix), or, probed here, the name resolving on the node to a private, CGNAT,
// loopback or link-local address. The lookup is evidence only (the proxy resolves the name for the
// pull) and runs beside the walk, bounded by the connect timeout: the report waits for it at most
// that long once the walk ended, all lookups together. A name the node cannot resolve says nothing. proxiedWarnings turns what was found into warnings.
func (w *walk) proxiedInternal(ctx context.Context, ep *endpoint, proxy string) {
	if why := runtimeconfig.InternalEvidence(ep.host, w.opts.Resolver.Search); why != "" {
		ep.internal = func() (string, string) { return proxy, why }
		return
	}
	done := make(chan string, 1)
	ep.internal = func() (string, string) { return proxy, <-done }
	go func() {
		lctx, cancel := context.WithTimeout(ctx, w.opts.ConnectTimeout)
		defer cancel()
		res := w.opts.Resolver.Lookup(lctx, ep.host)
		var internal []string
		for _, a := range res.Addrs {
			if s := resolver.Scope(a); s != "public" && s != "unspecified" {
				internal = append(internal, a.String()+" ("+s+")")
			}
		}
		if len(internal) == 0 {
			done <- ""
			return
		}
		done <- fmt.Sprintf("the node resolves it to %s (%s)", strings.Join(internal, ", "), res.Source)
	}()
}

// proxiedWarnings waits for the lookups of proxiedInternal and warns PROXY_WITHOUT_NO_PROXY on each
// proxied host found internal, in the order the walk met them.
func (w *walk) proxiedWarnings() {
	w.mu.Lock()
	order := append([]*endpoint(nil), w.order...)
	w.mu.Unlock()
	for _, ep := range order {
		if ep.internal == nil {
			continue
		}
		proxy, why := ep.internal()
		if why == "" {
			continue
		}
		w.warn(report.CodeProxyWithoutNoProxy, ep.hostport, fmt.Sprintf("%s (%s) is reached through the runtime's proxy %s, and %s: a corporate proxy often cannot reach an internal host, and a failure at the proxy is then most likely this; add %s to NO_PROXY in the runtime's unit", ep.hostport, ep.role, proxy, why, ep.host))
	}
}

func (w *walk) resolve(ctx context.Context, ep *endpoint) *failure {
	start := time.Now()
	res := w.opts.Resolver.Lookup(ctx, ep.host)
	ep.dns = &res
	ev := report.Evidence{DNS: dnsEvidence(res)}
	if res.Err != nil && w.ctx.Err() != nil {
		return &failure{ep: ep, step: report.StepDNS, code: report.CodeCanceled, cut: true, ev: ev,
			summary: "cut during the name resolution of " + ep.host}
	}
	if res.Err != nil {
		code := map[resolver.Kind]report.Code{
			resolver.KindNXDomain: report.CodeDNSNXDomain, resolver.KindNoData: report.CodeDNSNoData,
			resolver.KindServFail: report.CodeDNSServFail, resolver.KindRefused: report.CodeDNSRefused,
			resolver.KindTimeout: report.CodeDNSTimeout, resolver.KindUnreachable: report.CodeDNSUnreachable,
			resolver.KindNoServers: report.CodeDNSNoResolver,
		}[res.Err.Kind]
		f := &failure{ep: ep, step: report.StepDNS, code: code, ev: ev,
			summary:  fmt.Sprintf("%s does not resolve through the node's resolver: %s", ep.host, res.Err.Detail),
			evidence: append([]string{res.Err.Error()}, queryLines(res)...)}
		switch res.Err.Kind {
		case resolver.KindTimeout, resolver.KindUnreachable:
			f.summary = fmt.Sprintf("the node's resolver %s did not answer for %s: %s", res.Err.Server, ep.host, res.Err.Detail)
		case resolver.KindNoServers:
			f.summary = fmt.Sprintf("no nameserver is configured in %s", w.opts.Resolver.Source)
		}
		return w.fail(f, ev, since(start))
	}
	ep.addrs = res.Addrs
	var public []string
	for _, a := range res.Addrs {
		if resolver.Scope(a) == "public" {
			public = append(public, a.String())
		}
	}
	sum := fmt.Sprintf("%s → %s", ep.host, joinAddrs(res.Addrs))
	if len(res.CNAMEs) > 0 {
		sum = fmt.Sprintf("%s → %s → %s", ep.host, strings.Join(res.CNAMEs, " → "), joinAddrs(res.Addrs))
	}
	if res.Source == "dns" {
		sum += " (answered by " + res.Server + ")"
	} else {
		sum += " (" + res.Source + ")"
	}
	verdict := report.Pass
	if len(public) > 0 && ep.role == report.RoleRegistry {
		for _, c := range res.CNAMEs {
			if strings.Contains(c, ".privatelink.") {
				ep.privatelinkPublic = true
			}
		}
		if ep.privatelinkPublic || w.opts.ExpectPrivate {
			verdict = report.Warn
			msg := fmt.Sprintf("%s resolves to public address %s", ep.host, strings.Join(public, ", "))
			if ep.privatelinkPublic {
				msg += fmt.Sprintf(" through CNAME %s: the private zone is not visible to this node's resolver %s", strings.Join(res.CNAMEs, " → "), res.Server)
			}
			w.warn(report.CodeDNSPublicForPrivate, ep.hostport, msg)
			if w.opts.ExpectPrivate {
				f := &failure{ep: ep, step: report.StepDNS, code: report.CodeDNSPublicForPrivate, ev: ev, summary: msg,
					evidence: append([]string{sum}, queryLines(res)...)}
				w.step(ep, report.StepDNS, report.Fail, f.code, msg, ev, since(start))
				return f
			}
		}
	}
	w.step(ep, report.StepDNS, verdict, "", sum, ev, since(start))
	return nil
}

func (w *walk) routeCheck(ep *endpoint) *failure {
	start := time.Now()
	var lines []string
	ok := 0
	for _, a := range ep.addrs {
		r, err := route.Get(a)
		switch {
		case errors.Is(err, route.ErrUnsupported):
			ep.set(report.StepRoute, report.Skip)
			return nil
		case err != nil:
			ep.routes[a] = "no route: " + err.Error()
			lines = append(lines, err.Error())
		default:
			ep.routes[a] = r.String()
			lines = append(lines, "route "+r.String())
			ok++
		}
	}
	ev := report.Evidence{Lines: lines}
	if ok == 0 {
		f := &failure{ep: ep, step: report.StepRoute, code: report.CodeRouteNone, ev: ev, evidence: lines,
			summary: fmt.Sprintf("this node has no route to %s (%s)", ep.host, joinAddrs(ep.addrs))}
		return w.fail(f, ev, since(start))
	}
	w.step(ep, report.StepRoute, report.Pass, "", strings.Join(lines, "; "), ev, since(start))
	return nil
}

// dial connects to the endpoint's resolved addresses in dial order, as the runtime's dialer would, and
// records every attempt on the hop. It never resolves again: the probe's own DNS step is the
// evidence, and a second lookup could disagree with it.
func (w *walk) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	w.mu.Lock()
	ep := w.endpoints[addr]
	w.mu.Unlock()
	if ep == nil {
		return nil, fmt.Errorf("internal error: %s was not visited before dialing", addr)
	}
	hop := hoptrace.FromContext(ctx)
	var errs []error
	for _, a := range ep.dialAddrs {
		target := net.JoinHostPort(a.String(), ep.port)
		d := net.Dialer{Timeout: w.opts.ConnectTimeout}
		start := time.Now()
		conn, err := d.DialContext(ctx, "tcp", target)
		rec := report.Dial{Addr: target, Route: ep.routes[a], Duration: report.Duration(time.Since(start))}
		w.mu.Lock()
		if err != nil {
			rec.Error = err.Error()
			ep.dialed[target] = dialWord(err)
		} else {
			ep.dialed[target] = "ok"
		}
		w.mu.Unlock()
		if hop != nil {
			hop.AddDial(rec)
		}
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%s has no address to dial", ep.host)
	}
	return nil, errs[len(errs)-1]
}

// dialOrder sorts addresses as Go's resolver does for the runtime (RFC 6724 rules 1 and 6):
// addresses this node has a route to first, then by precedence, so global IPv6 comes before
// IPv4 and IPv4 before ULA. The sort is stable: ties keep the resolver's answer order.
func dialOrder(addrs []netip.Addr, routes map[netip.Addr]string) []netip.Addr {
	out := append([]netip.Addr(nil), addrs...)
	usable := func(a netip.Addr) bool {
		r, ok := routes[a]
		return !ok || !strings.HasPrefix(r, "no route")
	}
	sort.SliceStable(out, func(i, j int) bool {
		if ui, uj := usable(out[i]), usable(out[j]); ui != uj {
			return ui
		}
		return precedence(out[i]) > precedence(out[j])
	})
	return out
}

// precedence is RFC 6724's default policy table.
func precedence(a netip.Addr) int {
	a = a.Unmap()
	switch {
	case a.Is4():
		return 35
	case a == netip.IPv6Loopback():
		return 50
	}
	for _, p := range []struct {
		pfx  netip.Prefix
		prec int
	}{
		{netip.MustParsePrefix("2002::/16"), 30},
		{netip.MustParsePrefix("2001::/32"), 5},
		{netip.MustParsePrefix("fc00::/7"), 3},
		{netip.MustParsePrefix("::/96"), 1},
		{netip.MustParsePrefix("fec0::/10"), 1},
		{netip.MustParsePrefix("3ffe::/16"), 1},
	} {
		if p.pfx.Contains(a) {
			return p.prec
		}
	}
	return 40
}

func joinAddrs(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

func dnsEvidence(r resolver.Result) *report.DNS {
	d := &report.DNS{Name: r.Name, Source: r.Source, Server: r.Server, CNAMEs: r.CNAMEs}
	for _, a := range r.Addrs {
		d.Addrs = append(d.Addrs, a.String())
	}
	for _, q := range r.Queries {
		d.Queries = append(d.Queries, report.DNSQuery{Server: q.Server, Name: q.Name, Type: q.Type, Rcode: q.Rcode, Error: q.Err, RTT: report.Duration(q.RTT)})
	}
	return d
}

func queryLines(r resolver.Result) []string {
	var out []string
	for _, q := range r.Queries {
		s := fmt.Sprintf("query %s %s @%s: ", q.Type, q.Name, q.Server)
		if q.Err != "" {
			s += q.Err
		} else {
			s += q.Rcode
		}
		out = append(out, s+fmt.Sprintf(" (%s)", q.RTT.Round(time.Microsecond)))
		if len(out) == 8 {
			out = append(out, fmt.Sprintf("… %d more queries in -o json", len(r.Queries)-8))
			break
		}
	}
	return out
}

type chainKey struct{}

// withChain records hp as being visited on this chain of visits (an endpoint, then its proxy, …).
func withChain(ctx context.Context, hp string) context.Context {
	prev, _ := ctx.Value(chainKey{}).([]string)
	return context.WithValue(ctx, chainKey{}, append(slices.Clip(prev), hp))
}

func onChain(ctx context.Context, hp string) bool {
	chain, _ := ctx.Value(chainKey{}).([]string)
	return slices.Contains(chain, hp)
}

// cycle is the finding for an endpoint that leads back to itself (a proxy for itself, a proxy
// that is the registry it should tunnel to).
func (w *walk) cycle(ep *endpoint, ctx context.Context) *failure {
	chain, _ := ctx.Value(chainKey{}).([]string)
	path := strings.Join(append(slices.Clip(chain), ep.hostport), " → ")
	f := &failure{ep: ep, step: report.StepConfig, code: report.CodeProxyLoop, class: report.ClassProxy,
		summary:  "the runtime's proxy settings lead back to " + ep.hostport + " itself: " + path,
		evidence: []string{"visit chain: " + path, "HTTP_PROXY/HTTPS_PROXY must name a proxy that is reached directly; add the proxy (and the registry) to NO_PROXY as needed"}}
	return w.fail(f, f.lines(), 0)
}
