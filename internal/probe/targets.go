package probe

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/pullpath/pullpath/internal/capped"
	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/report"
)

// target is one host the runtime tries for the image, with the trust, headers and proxy it uses.
type target struct {
	base   *url.URL // the API root, ending in /v2 unless override_path
	repo   string   // the repository asked of this host (CRI-O rewrites it for a location with a path)
	role   report.Role
	ns     string // containerd's ?ns=<registry> on requests to a host not named as the registry
	header http.Header
	tls    *tls.Config
	desc   string // for messages: the URL and where it was configured
	source string
	cred   *creds.Credential // the runtime's own credentials for this host, if any
	trust  string            // what it is verified against: the system roots, its ca files, skip_verify
	// fallback: the runtime speaks plain HTTP to this host when its TLS handshake is answered in
	// HTTP (containerd's localhost rule, containers/image's insecure registries)
	fallback bool
}

// targets lists the hosts to walk: the runtime's, in its order, when Options.Runtime is set; else
// the registry itself with the system roots and --ca-file.
func (w *walk) targets(roots systemRoots) ([]target, error) {
	if w.opts.Runtime == nil {
		base := &url.URL{Scheme: "https", Host: w.image.Host, Path: "/v2"}
		return []target{{base: base, repo: w.image.Repository, role: report.RoleRegistry, desc: base.String(), source: "image reference", trust: roots.source,
			tls: &tls.Config{RootCAs: roots.pool, InsecureSkipVerify: w.opts.Insecure, MinVersion: tls.VersionTLS12}}}, nil //nolint:gosec // --insecure is reported
	}
	var out []target
	for _, h := range w.opts.Runtime.Hosts {
		if !slices.Contains(h.Capabilities, "pull") || (w.image.Digest == "" && !slices.Contains(h.Capabilities, "resolve")) {
			w.warn(report.CodeHostSkipped, h.Host, fmt.Sprintf("the runtime skips %s for this pull: capabilities %v (%s)", h.URL, h.Capabilities, h.Source))
			role := report.RoleRegistry
			if h.Role == "mirror" {
				role = report.RoleMirror
			}
			w.skipped = append(w.skipped, report.RuntimeHost{URL: h.URL, Role: role, Source: h.Source, Result: fmt.Sprintf("skipped: capabilities %v", h.Capabilities)})
			continue
		}
		base, err := url.Parse(h.APIRoot())
		if err != nil {
			return nil, fmt.Errorf("runtime host %q: %v", h.URL, err)
		}
		t := target{base: base, repo: w.image.Repository, role: report.RoleRegistry, header: http.Header{}, desc: h.URL, source: h.Source, fallback: h.HTTPFallback}
		if h.Repository != "" {
			t.repo = h.Repository
		}
		if u, p, tok := h.RawAuth(); u != "" || tok != "" {
			t.cred = &creds.Credential{Username: u, Password: p, IdentityToken: tok, Source: "the runtime's registry.configs auth"}
		}
		if h.Role == "mirror" {
			t.role = report.RoleMirror
		}
		if w.policy.sendsNS && isProxy(h.URL, w.opts.Runtime.Registry) {
			t.ns = w.opts.Runtime.Registry
		}
		for k, vs := range h.RawHeader() {
			for _, v := range vs {
				t.header.Add(k, v)
			}
		}
		pool := roots.pool.Clone()
		t.trust = roots.source
		var cas []string
		for _, ca := range h.CA {
			b, err := w.readHostFile(ca)
			if err != nil {
				w.warn(report.CodeCAFileMissing, h.Host, fmt.Sprintf("CA file %s of %s cannot be read (%v): the runtime trusts only the system roots for it", ca, h.URL, err))
				continue
			}
			if !pool.AppendCertsFromPEM(b) {
				w.warn(report.CodeCAFileUnparsable, h.Host, fmt.Sprintf("CA file %s of %s holds no PEM certificate", ca, h.URL))
				continue
			}
			cas = append(cas, ca)
		}
		if len(cas) > 0 {
			t.trust += " + ca " + strings.Join(cas, ", ") + " (" + h.Source + ")"
		}
		if h.SkipVerify {
			t.trust = "none: skip_verify (" + h.Source + ")"
		}
		t.tls = &tls.Config{RootCAs: pool, InsecureSkipVerify: h.SkipVerify || w.opts.Insecure, MinVersion: tls.VersionTLS12} //nolint:gosec // configured by the node, reported
		if h.SkipVerify {
			w.warn(report.CodeTLSInsecure, h.Host, fmt.Sprintf("skip_verify is on for %s (%s): its certificate is not verified, by the runtime or by this probe", h.URL, h.Source))
		}
		for _, pair := range h.Client {
			cert, err := w.readHostFile(pair[0])
			key, err2 := w.readHostFile(pair[1])
			if err != nil || err2 != nil {
				w.warn(report.CodeClientCertMissing, h.Host, fmt.Sprintf("client certificate %s / %s of %s cannot be read", pair[0], pair[1], h.URL))
				continue
			}
			kp, err := tls.X509KeyPair(cert, key)
			if err != nil {
				w.warn(report.CodeClientCertInvalid, h.Host, fmt.Sprintf("client certificate %s of %s: %v", pair[0], h.URL, err))
				continue
			}
			t.tls.Certificates = append(t.tls.Certificates, kp)
		}
		out = append(out, t)
	}
	return out, nil
}

// isProxy is containerd's test for sending ?ns=<registry> to a host: its name as written differs
// from the image's registry, Docker Hub's API host aside (core/remotes/docker/registry.go:85-92,
// resolver.go:647-652 at containerd 301026e5; the same in v1.6.20). A [host] that repeats the
// server's URL gets none, one written with the default port (https://R:443 for R) gets it.
func isProxy(hostURL, registry string) bool {
	u, err := url.Parse(hostURL)
	if err != nil {
		return true
	}
	return u.Host != registry && (registry != "docker.io" || u.Host != "registry-1.docker.io")
}

// proxyFor returns the proxy the runtime would use for u (Go's HTTPS_PROXY/NO_PROXY rules, which
// are containerd's), or nil.
func (w *walk) proxyFor(u *url.URL) *url.URL {
	if w.proxyFunc == nil {
		return nil
	}
	p, err := w.proxyFunc(u)
	if err != nil {
		return nil
	}
	return p
}

func (w *walk) readHostFile(p string) ([]byte, error) {
	if w.opts.HostFile != nil {
		return w.opts.HostFile(p)
	}
	return capped.ReadFile(p, capped.Max)
}

// apiURL builds a URL under the target's API root, with containerd's ns parameter on mirrors.
func (w *walk) apiURL(parts ...string) *url.URL {
	u := w.tgt.base.JoinPath(parts...)
	if w.tgt.ns != "" {
		q := u.Query()
		q.Set("ns", w.tgt.ns)
		u.RawQuery = q.Encode()
	}
	return u
}

// transport builds the HTTP transport for one target, with containerd-like budgets. Connections are
// reused as containerd reuses them; a hop on a reused connection is marked so and claims no TCP or
// TLS evidence, which comes from the first dial and handshake of each endpoint.
func (w *walk) transport(t target) *http.Transport {
	tr := &http.Transport{
		DialContext:            w.dial,
		TLSClientConfig:        t.tls,
		TLSHandshakeTimeout:    w.opts.TLSTimeout,
		ResponseHeaderTimeout:  w.opts.HeaderTimeout,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 1 << 20,
	}
	if w.proxyFunc != nil {
		tr.Proxy = func(r *http.Request) (*url.URL, error) { return w.proxyFunc(r.URL) }
	}
	return tr
}
