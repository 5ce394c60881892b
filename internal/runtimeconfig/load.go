package runtimeconfig

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/resolver"
)

// Options select what to read.
type Options struct {
	Root    fs.FS   // the host root, e.g. os.DirFS("/") or os.DirFS("/host")
	Name    string  // the host root as given, for messages
	Runtime Runtime // "" detects
	// Ref is the image, parsed once by the caller (registry.ParseReference); when it is zero,
	// Image is parsed.
	Ref   registry.Reference
	Image string
}

type loader struct {
	ref     registry.Reference
	root    Root
	cfg     *Config
	docker  *daemonJSON // daemon.json, parsed once by dockerHosts
	located string      // the containerd config the CRI runs with, found once by configFile

	// what this load has read, so that each file is opened once: locating containerd's config,
	// detecting the runtime and loading it all read config.toml, and several steps read a unit
	fileCache map[string]cached[[]byte]
	dirCache  map[string]cached[[]fs.DirEntry]
	units     map[string]*unitRead
	manager   *unitRead // DefaultEnvironment=
	record    *[]string // while set, read notes files here instead of in cfg.Files
}

// cached is one read's result, kept for the rest of the load.
type cached[T any] struct {
	v   T
	err error
}

// readOnce returns read(p) from cache, reading it the first time.
func readOnce[T any](cache *map[string]cached[T], p string, read func(string) (T, error)) (T, error) {
	if r, ok := (*cache)[p]; ok {
		return r.v, r.err
	}
	v, err := read(p)
	if *cache == nil {
		*cache = map[string]cached[T]{}
	}
	(*cache)[p] = cached[T]{v, err}
	return v, err
}

// readFile is Root.ReadFile, once per load.
func (l *loader) readFile(p string) ([]byte, error) {
	return readOnce(&l.fileCache, p, l.root.ReadFile)
}

// readDir is Root.ReadDir, once per load.
func (l *loader) readDir(p string) ([]fs.DirEntry, error) {
	return readOnce(&l.dirCache, p, l.root.ReadDir)
}

// glob is Root.Glob over readDir.
func (l *loader) glob(pattern string) ([]string, error) { return globWith(l.readDir, pattern) }

func (l *loader) read(f string) {
	if l.record != nil {
		*l.record = append(*l.record, f)
		return
	}
	for _, x := range l.cfg.Files {
		if x == f {
			return
		}
	}
	l.cfg.Files = append(l.cfg.Files, f)
}

// warn records a trap that breaks or silently changes the pull.
func (l *loader) warn(code, msg, fix, src string) { l.add(SeverityError, code, msg, fix, src) }

// note records information that does not change the pull.
func (l *loader) note(code, msg, fix, src string) { l.add(SeverityInfo, code, msg, fix, src) }

func (l *loader) add(sev Severity, code, msg, fix, src string) {
	for _, w := range l.cfg.Warnings {
		if w.Code == code && w.Source == src && w.Message == msg {
			return
		}
	}
	l.cfg.Warnings = append(l.cfg.Warnings, Warning{Code: code, Severity: sev, Message: msg, Fix: fix, Source: src})
}

// Load reads the runtime's configuration for opts.Image. An unreadable or malformed main config
// file is an error naming the file; problems the runtime itself tolerates are warnings.
func Load(opts Options) (*Config, error) {
	ref := opts.Ref
	if ref.Registry == "" {
		var err error
		if ref, err = registry.ParseReference(opts.Image); err != nil {
			return nil, err
		}
	}
	l := &loader{ref: ref, root: Root{FS: opts.Root, Name: opts.Name}, cfg: &Config{Image: ref.Original, Registry: ref.Registry, HostRoot: opts.Name,
		Files: []string{}, Warnings: []Warning{}}}
	rt := opts.Runtime
	if rt == "" {
		rt = l.detect()
	}
	l.cfg.Runtime = rt
	l.cfg.Version, l.cfg.VersionSource = l.version(rt)
	switch rt {
	case Containerd:
		c, err := l.loadContainerd()
		if err != nil {
			return nil, err
		}
		l.cfg.ConfigPath = l.configPathView(c)
		l.cfg.Hosts = l.containerdHosts(c, ref.Registry)
	case CRIO:
		hosts, err := l.crioHosts(ref)
		if err != nil {
			return nil, err
		}
		l.cfg.Hosts = hosts
	case Docker:
		hosts, err := l.dockerHosts(ref.Registry)
		if err != nil {
			return nil, err
		}
		l.cfg.Hosts = hosts
	default:
		return nil, fmt.Errorf("unknown runtime %q: want containerd, crio or docker", rt)
	}
	l.loadProxy(rt)
	_, env := l.runtimeEnv(rt)
	l.cfg.Trust = ReadTrust(l.root, settings(env))
	l.loadResolver()
	l.checkHosts()
	l.checkPullHosts()
	return l.cfg, nil
}

// checkHosts applies the per-host checks: CA files, skip_verify, capabilities, proxy.
func (l *loader) checkHosts() {
	pf := l.cfg.ProxyFunc()
	for i := range l.cfg.Hosts {
		h := &l.cfg.Hosts[i]
		for _, ca := range h.CA {
			b, err := l.readFile(ca)
			if err != nil {
				l.warn(WarnCAMissing, fmt.Sprintf("%s names CA file %s, which cannot be read (%v): the runtime fails TLS to %s", h.Source, ca, err, h.Host),
					"create the file on every node of the pool, or fix the path", h.Source)
				continue
			}
			if !hasCert(b) {
				l.warn(WarnCAUnparsable, fmt.Sprintf("CA file %s holds no PEM certificate", ca), "put the CA certificate in PEM form (-----BEGIN CERTIFICATE-----)", h.Source)
			}
		}
		if h.SkipVerify {
			l.warnInsecure(h)
		}
		if h.PlainHTTP {
			msg := fmt.Sprintf("%s is reached over plain HTTP: image bytes and credentials are not protected", h.URL)
			if isLoopbackHost(h.Host) {
				l.note(WarnPlainHTTP, msg+" (a registry on this node's loopback: nothing leaves the node)", "", h.Source)
			} else {
				l.warn(WarnPlainHTTP, msg, "serve TLS and trust its CA", h.Source)
			}
		}
		l.checkCapabilities(h)
		u, err := url.Parse(h.URL)
		if err != nil || pf == nil {
			continue
		}
		if p, err := pf(u); err == nil && p != nil {
			h.Proxy = redact.ProxyURL(p.String())
			if why := InternalEvidence(u.Hostname(), l.cfg.Resolver.Search); why != "" {
				l.warn(WarnProxyNoNoProxy, fmt.Sprintf("%s is reached through the proxy %s, and %s: a corporate proxy often cannot reach an internal registry, the classic cause of timeouts and TLS errors", h.Host, h.Proxy, why),
					"add "+u.Hostname()+" (and the blob and token hosts of the pull) to NO_PROXY in the runtime's unit, then restart it", l.cfg.Proxy.Source)
			} else {
				l.note(WarnProxyRoute, fmt.Sprintf("%s is reached through the proxy %s (the runtime's NO_PROXY does not cover it): the proxy must allow it and the hosts it redirects to", h.Host, h.Proxy),
					"", l.cfg.Proxy.Source)
			}
		}
	}
}

// checkCapabilities applies containerd's host filter (core/remotes/docker/resolver.go Resolve,
// fetcher.go): a tag is resolved only on hosts with pull and resolve; a digest, and the manifests and
// blobs fetched by digest after the tag is resolved, on every host with pull. Neither case changes
// the pull on its own; checkPullHosts reports when no host is left.
func (l *loader) checkCapabilities(h *Host) {
	pull, resolve := slices.Contains(h.Capabilities, "pull"), slices.Contains(h.Capabilities, "resolve")
	switch {
	case !pull:
		l.note(WarnMirrorNoPull, fmt.Sprintf("%s has capabilities %v: without pull the runtime never uses it for pulls", h.URL, h.Capabilities),
			`add "pull" (and "resolve" for tags) to its capabilities if pulls should use it`, h.Source)
	case !resolve && l.ref.Digest == "":
		l.note(WarnMirrorNoResolve, fmt.Sprintf("%s has capabilities %v: the runtime resolves the tag %s at the next host with resolve, then fetches the manifests and blobs by digest from this one", h.URL, h.Capabilities, l.ref.Tag),
			`add "resolve" if this host should also answer tags (needed when the upstream cannot be reached)`, h.Source)
	}
}

// checkPullHosts reports a configuration that leaves no host for this reference: containerd then
// fails with "no resolve hosts" (tags) or finds nothing to fetch from.
func (l *loader) checkPullHosts() {
	if len(l.cfg.Hosts) == 0 {
		return // blocked: said where it was decided
	}
	for _, h := range l.cfg.Hosts {
		if slices.Contains(h.Capabilities, "pull") && (l.ref.Digest != "" || slices.Contains(h.Capabilities, "resolve")) {
			return
		}
	}
	what := "pull"
	if l.ref.Digest == "" {
		what = "pull and resolve (needed for a tag)"
	}
	l.warn(WarnNoPullHost, fmt.Sprintf("no host for %s has capabilities %s: the runtime cannot pull %s (containerd: \"no resolve hosts\")", l.ref.Registry, what, l.cfg.Image),
		`give the server or a mirror capabilities = ["pull", "resolve"]`, l.cfg.Hosts[len(l.cfg.Hosts)-1].Source)
}

// InternalEvidence says what, in the node's own configuration, shows that host (a name or an
// address literal, no port) belongs to the node's internal network, where a corporate proxy
// usually cannot reach: a private, CGNAT, loopback or link-local address literal; a name under one
// of the node's resolv.conf search domains (search); a single-label name, or a name under a suffix
// no public DNS serves. "" when nothing does: a public name through the proxy is the usual design
// (AKS's and EKS's proxy setups send their registries through it). The probe adds a third piece
// of evidence the configuration cannot give: the name resolves, on the node, to such an address.
func InternalEvidence(host string, search []string) string {
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if a, err := netip.ParseAddr(h); err == nil {
		if scope := resolver.Scope(a); scope != "public" && scope != "unspecified" {
			return "it is a " + scope + " address"
		}
		return ""
	}
	for _, d := range search {
		d = strings.Trim(strings.ToLower(d), ".")
		if d != "" && (h == d || strings.HasSuffix(h, "."+d)) {
			return "it is under the node's DNS search domain " + d + " (resolv.conf)"
		}
	}
	if !strings.Contains(h, ".") {
		return "it is a single-label name"
	}
	for _, suf := range []string{".local", ".localdomain", ".internal", ".lan", ".intranet", ".corp", ".home.arpa", ".svc", ".cluster.local", ".test", ".example", ".invalid", ".localhost"} {
		if strings.HasSuffix(h, suf) {
			return "its name ends in " + suf + ", which no public DNS serves"
		}
	}
	return ""
}

// isLoopbackHost reports whether host:port names this node's loopback.
func isLoopbackHost(hostport string) bool {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		h = hostport
	}
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// warnInsecure reports an unverified host once, in the runtime's own words.
func (l *loader) warnInsecure(h *Host) {
	if isLoopbackHost(h.Host) {
		l.note(WarnSkipVerify, fmt.Sprintf("%s is on this node's loopback: the runtime does not verify its certificate (nothing leaves the node)", h.Host), "", h.Source)
		return
	}
	switch l.cfg.Runtime {
	case CRIO:
		l.warn(WarnInsecureRegistry, fmt.Sprintf("registries.conf marks %s insecure: CRI-O does not verify its certificate and falls back to plain HTTP", h.Host),
			"remove insecure = true and trust the registry's CA in /etc/containers/certs.d/"+certsDirName(h.Host)+"/ca.crt", h.Source)
	case Docker:
		l.warn(WarnInsecureRegistry, fmt.Sprintf("%s matches daemon.json insecure-registries: dockerd does not verify its certificate and falls back to plain HTTP", h.Host),
			"remove it from insecure-registries and trust its CA in /etc/docker/certs.d/"+certsDirName(h.Host)+"/ca.crt", h.Source)
	default:
		l.warn(WarnSkipVerify, fmt.Sprintf("skip_verify is on for %s: any certificate is accepted, a man in the middle included", h.Host),
			"trust the registry's CA with ca = \"…\" instead", h.Source)
	}
}

// certsDirName is a docker-style certs.d directory name: host:port, without :443.
func certsDirName(hostport string) string { return strings.TrimSuffix(hostport, ":443") }

func hasCert(b []byte) bool {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return false
		}
		if blk.Type == "CERTIFICATE" {
			if _, err := x509.ParseCertificate(blk.Bytes); err == nil {
				return true
			}
		}
	}
}

// loadResolver reads /etc/resolv.conf as the runtime sees it, and systemd-resolved's upstreams.
func (l *loader) loadResolver() {
	const f = "/etc/resolv.conf"
	l.cfg.Resolver = Resolver{File: f, Nameservers: []string{}}
	b, err := l.readFile(f)
	if err != nil {
		l.warn(WarnConfigInvalid, "cannot read "+f+": "+err.Error(), "", f)
		return
	}
	l.read(f)
	c, _ := resolver.ParseConf(bytes.NewReader(b))
	l.cfg.Resolver.Nameservers, l.cfg.Resolver.Search = c.Nameservers, c.Search
	for _, ns := range c.Nameservers {
		if strings.HasPrefix(ns, "127.0.0.53:") {
			l.cfg.Resolver.Stub = true
		}
	}
	if l.cfg.Resolver.Stub {
		const up = "/run/systemd/resolve/resolv.conf"
		if ub, err := l.readFile(up); err == nil {
			uc, _ := resolver.ParseConf(bytes.NewReader(ub))
			l.cfg.Resolver.Upstream = uc.Nameservers
			l.read(up)
		}
		l.note(WarnResolverStub, fmt.Sprintf("the runtime resolves through systemd-resolved's stub 127.0.0.53 (upstreams: %s); pods get %s instead: a laptop-style check from a pod does not test the node's path",
			strings.Join(l.cfg.Resolver.Upstream, ", "), up), "probe on the node, or in a hostNetwork pod with dnsPolicy: Default and --host-root", f)
	}
}
