package probe

import (
	"encoding/base64"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/resolver"
)

// report assembles the verdict, the failing row with its evidence and the endpoint inventory.
func (w *walk) report(f *failure, start time.Time) *report.Probe {
	rep := w.assemble(f, start)
	w.scrub(rep)
	return rep
}

// scrub removes every credential the probe handled from all text of the report. Secrets are never
// put there on purpose; this catches a server that echoes a request header into an error body.
func (w *walk) scrub(r *report.Probe) {
	sr := w.secretReplacer()
	if sr == nil {
		return
	}
	fix := func(s *string) { *s = sr.Replace(*s) }
	fix(&r.Summary)
	fix(&r.Alternative)
	fix(&r.WhereToLook)
	for i := range r.Evidence {
		fix(&r.Evidence[i])
	}
	for i := range r.Warnings {
		fix(&r.Warnings[i].Message)
	}
	for i := range r.Steps {
		st := &r.Steps[i]
		fix(&st.Summary)
		for j := range st.Evidence.Lines {
			fix(&st.Evidence.Lines[j])
		}
		if h := st.Evidence.HTTP; h != nil {
			fix(&h.Message)
			fix(&h.URL)
			fix(&h.Location)
			fix(&h.Challenge)
		}
		for j := range st.Evidence.Dials {
			fix(&st.Evidence.Dials[j].Error)
		}
	}
	for i := range r.Hops {
		fix(&r.Hops[i].URL)
		fix(&r.Hops[i].Error)
	}
}

// secretReplacer replaces every credential value the walk handled with REDACTED; nil when there is none.
func (w *walk) secretReplacer() *strings.Replacer {
	w.mu.Lock()
	secrets := append([]string(nil), w.secrets...)
	w.mu.Unlock()
	for _, c := range []creds.Credential{w.opts.Credential, w.cred} {
		secrets = append(secrets, credentialSecrets(c)...)
	}
	var rep []string
	for _, s := range secrets {
		if len(s) >= 4 { // a one-letter "password" would redact half the report
			rep = append(rep, s, "REDACTED")
		}
	}
	if len(rep) == 0 {
		return nil
	}
	return strings.NewReplacer(rep...)
}

// credentialSecrets are the values of c that must not appear in a report: its secrets and the
// basic auth header value made of them.
func credentialSecrets(c creds.Credential) []string {
	out := []string{c.Password, c.IdentityToken, c.RegistryToken}
	if c.Username != "" || c.Password != "" {
		out = append(out, base64.StdEncoding.EncodeToString([]byte(c.Username+":"+c.Password)))
	}
	return out
}

// assemble builds the report from what the walk recorded.
func (w *walk) assemble(f *failure, start time.Time) *report.Probe {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := &report.Probe{
		APIVersion: report.APIVersion, Kind: "ProbeReport", Node: w.opts.Node, Image: w.opts.Image,
		Reference: report.Ref{Registry: w.image.Registry, Host: w.image.Host, Repository: w.image.Repository, Tag: w.image.Tag, Digest: w.image.Digest},
		Platform:  w.platform.String(),
		Download:  w.download,
		Resolver: report.Resolver{Source: w.opts.Resolver.Source, Nameservers: w.opts.Resolver.Nameservers,
			Search: w.opts.Resolver.Search, Ndots: w.opts.Resolver.Ndots, HostsFile: w.opts.Resolver.HostsFile},
		Trust:       report.Trust{SystemRoots: true, Source: w.roots.source, Node: w.roots.node, CAFiles: w.opts.CAFiles, Insecure: w.opts.Insecure},
		Warnings:    w.warnings,
		Interrupted: w.cut,
		Steps:       w.steps,
		Hops:        w.rec.Hops(),
		Started:     start.UTC(),
		Duration:    since(start),
	}
	if r.Resolver.Nameservers == nil {
		r.Resolver.Nameservers = []string{}
	}
	for _, ep := range w.order {
		e := report.Endpoint{Host: ep.hostport, Role: ep.role, Via: ep.via, Steps: map[report.StepName]report.Verdict{}, Addresses: []report.Address{}}
		for k, v := range ep.layers {
			e.Steps[k] = v
		}
		for _, a := range ep.addrs {
			ad := report.Address{IP: a.String(), Scope: resolver.Scope(a), Route: ep.routes[a]}
			ad.Dialed = ep.dialed[net.JoinHostPort(a.String(), ep.port)]
			e.Addresses = append(e.Addresses, ad)
		}
		r.Endpoints = append(r.Endpoints, e)
	}
	if f == nil {
		r.Class, r.Code = report.ClassOK, report.CodeOK
		d := w.download
		r.Summary = fmt.Sprintf("the pull path holds: %d blobs (%d layers + config), %s downloaded and digest-verified in %.2fs (%.1f MB/s) over %d endpoints",
			d.Blobs, d.Layers, report.HumanBytes(d.Bytes), d.Duration.Std().Seconds(), d.MBps, len(w.order))
		if d.Partial == "sample" {
			r.Summary = fmt.Sprintf("the pull path is reachable (a quick round): the manifest and the config blob through every redirect over %d endpoints; %d layers not read, not a full pull", len(w.order), w.download.Expected-1)
		}
		if d.Partial == "no-download" {
			r.Summary = fmt.Sprintf("the pull path is reachable, not downloaded (--no-download): the manifest and the first byte of each of %d layers over %d endpoints; not a full pull, digests not checked", d.Layers, len(w.order))
		}
		if w.opts.Insecure {
			r.Summary += "; but certificates were NOT verified (--insecure)"
		}
		return r
	}
	class := w.classOf(f)
	// A private endpoint the node resolves publicly fails later, at route or as a 403 network rule;
	// the broken layer is DNS, and the network symptom is the alternative.
	if f.ep.privatelinkPublic && (class == report.ClassRoute || (class == report.ClassForbidden && f.step == report.StepHTTP)) {
		f.alt = fmt.Sprintf("%s at %s: %s", class, f.step, f.summary)
		f.summary = fmt.Sprintf("%s resolves to a public address through a privatelink CNAME, and the pull then fails (%s): the private DNS zone is not visible to this node's resolver", f.ep.host, f.code)
		class, f.code, f.step = report.ClassDNS, report.CodeDNSPublicForPrivate, report.StepDNS
		f.evidence = append(f.evidence, w.ep0DNSLine(f.ep))
	}
	r.Class, r.Owner, r.OwnerText, r.Code, r.Summary = class, class.Owner(), class.OwnerText(), f.code, f.summary
	r.Failing = &report.Failing{Host: f.ep.hostport, Role: f.ep.role, Step: f.step, Code: f.code}
	r.Evidence = f.evidence
	r.Alternative = f.alt
	r.WhereToLook = w.whereToLook(class, f)
	// Mark what the failure kept the probe from reaching.
	for i := range r.Endpoints {
		if r.Endpoints[i].Host != f.ep.hostport {
			continue
		}
		for _, l := range report.EndpointSteps {
			if _, ok := r.Endpoints[i].Steps[l]; !ok && l > f.step {
				r.Endpoints[i].Steps[l] = report.Skip
			}
		}
		if !f.cut { // a cut step did not fail: it did not finish
			r.Endpoints[i].Steps[f.step] = report.Fail
		}
	}
	return r
}

func (w *walk) ep0DNSLine(ep *endpoint) string {
	if ep.dns == nil {
		return ""
	}
	return fmt.Sprintf("%s → %s → %s (answered by %s)", ep.host, strings.Join(ep.dns.CNAMEs, " → "), joinAddrs(ep.addrs), ep.dns.Server)
}

// whereToLook fills the class's "where to look" with what was observed.
func (w *walk) whereToLook(c report.Class, f *failure) string {
	ep := f.ep
	if f.cut && w.cut != nil && w.cut.Reason == "canceled" {
		return fmt.Sprintf("nothing on the path yet: the run was interrupted (Ctrl-C, a signal or the caller) during the %s step on %s, before a verdict; run it again to finish the walk", f.step, ep.hostport)
	}
	if f.cut {
		return fmt.Sprintf("the %s step on %s, which had not finished: run again with a longer --timeout (now %s), and -v to follow each step", f.step, ep.hostport, w.opts.Timeout)
	}
	res := strings.Join(w.opts.Resolver.Nameservers, ", ") + ", from " + w.opts.Resolver.Source
	if len(w.opts.Resolver.Nameservers) == 0 {
		res = "no nameserver in " + w.opts.Resolver.Source
	}
	switch c {
	case report.ClassDNS:
		return fmt.Sprintf("the resolver this node uses (%s): it must resolve %s to the registry's reachable (private) address; check private zone links to the node's VNet/VPC, conditional forwarders, and the node's DNS settings", res, ep.host)
	case report.ClassRoute:
		var rts []string
		for _, a := range ep.addrs {
			rts = append(rts, a.String()+": "+ep.routes[a])
		}
		return fmt.Sprintf("the effective routes from this node to %s (%s), gateway/peering transit, security rules (NSG, security groups, firewalls) at both ends for TCP %s, and the return path", ep.hostport, strings.Join(rts, "; "), ep.port)
	case report.ClassEndpoint:
		return fmt.Sprintf("%s is a %s endpoint (%s): it must be reachable from the node just like the registry API; add it to the firewall/proxy allowlist, private DNS and routes (the full list: pullpath probe --allowlist)", ep.hostport, ep.role, ep.via)
	case report.ClassTLS:
		if f.code == report.CodeTLSPlainHTTP {
			return fmt.Sprintf("either serve TLS on %s, or declare the registry as plain HTTP for the runtime: certs.d/%s/hosts.toml with server = \"http://%s\"", ep.hostport, ep.hostport, ep.hostport)
		}
		return fmt.Sprintf("the certificate served on %s (names, issuer, validity above) and the runtime's trust for it: certs.d/%s/hosts.toml ca = \"/path/ca.pem\", or the node's CA bundle; probe with --ca-file to test a CA", ep.hostport, hostsDir(ep))
	case report.ClassAuth:
		if (f.code == report.CodeCredentialProviderFailed || f.code == report.CodeCredentialProviderNoAuth) && w.provider != nil {
			return w.provider.Hint()
		}
		return fmt.Sprintf("the pull credentials for %s: the pod's imagePullSecrets, the kubelet credential provider, or the node's identity (here: %s)", w.image.Registry, w.cred)
	case report.ClassForbidden:
		return fmt.Sprintf("the rights of %s on repository %s (it needs pull), and the registry's network rules for this node's address", w.cred, w.image.Repository)
	case report.ClassNotFound:
		return fmt.Sprintf("the image reference %s in the pod spec, and the pipeline that should have pushed it", w.image)
	case report.ClassPlatform:
		return fmt.Sprintf("the image build: publish a manifest for %s (a multi-arch build), or schedule the pod on matching nodes", w.platform)
	case report.ClassRateLimit:
		return fmt.Sprintf("the quota of %s for this identity or address: authenticate the pull, or use a pull-through mirror", w.image.Registry)
	}
	return c.LookAt()
}

func hostsDir(ep *endpoint) string {
	if ep.port == "443" {
		return ep.host
	}
	return ep.host + ":" + ep.port
}

// Allowlist is the sorted host:port list a firewall, proxy or private DNS must cover. When the
// walk stopped early it also says which hosts it could not discover: the token realm is named by
// the registry's challenge, and blob hosts by the redirects of layer downloads.
func Allowlist(r *report.Probe) report.Allowlist {
	a := report.Allowlist{APIVersion: report.APIVersion, Kind: "Allowlist", Image: r.Image, Complete: r.Class == report.ClassOK,
		Hosts: []report.AllowHost{}}
	roles := map[report.Role]bool{}
	for _, e := range r.Endpoints {
		a.Hosts = append(a.Hosts, report.AllowHost{Host: e.Host, Role: e.Role, Via: e.Via})
		roles[e.Role] = true
	}
	sort.Slice(a.Hosts, func(i, j int) bool { return a.Hosts[i].Host < a.Hosts[j].Host })
	if a.Complete {
		return a
	}
	a.StoppedAt = r.Failing
	authHeld := false
	for _, s := range r.Steps {
		if s.Step == report.StepAuth && s.Verdict == report.Pass && (s.Role == report.RoleRegistry || s.Role == report.RoleMirror) {
			authHeld = true
		}
	}
	if !authHeld && !roles[report.RoleToken] {
		a.Undiscovered = append(a.Undiscovered, "the token realm, named by the registry's 401 challenge (if it asks for a bearer token)")
	}
	d := r.Download
	switch {
	case d.Expected == 0:
		a.Undiscovered = append(a.Undiscovered, "blob hosts: the hosts the registry redirects layer downloads to (object storage, a CDN, a data endpoint), if any")
	case d.Blobs < d.Expected:
		a.Undiscovered = append(a.Undiscovered, fmt.Sprintf("blob hosts of the %d of %d blobs not downloaded, if they redirect elsewhere", d.Expected-d.Blobs, d.Expected))
	}
	return a
}
