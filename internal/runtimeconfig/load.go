package runtimeconfig

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"strings"

	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/resolver"
)

// Options select what to read.
type Options struct {
	Root    fs.FS   // the host root, e.g. os.DirFS("/") or os.DirFS("/host")
	Name    string  // the host root as given, for messages
	Runtime Runtime // "" detects
	Image   string
}

type loader struct {
	root   Root
	cfg    *Config
	docker *daemonJSON // daemon.json, parsed once by dockerHosts
}

func (l *loader) read(f string) {
	for _, x := range l.cfg.Files {
		if x == f {
			return
		}
	}
	l.cfg.Files = append(l.cfg.Files, f)
}

func (l *loader) warn(code, msg, fix, src string) {
	for _, w := range l.cfg.Warnings {
		if w.Code == code && w.Source == src && w.Message == msg {
			return
		}
	}
	l.cfg.Warnings = append(l.cfg.Warnings, Warning{Code: code, Message: msg, Fix: fix, Source: src})
}

// Load reads the runtime's configuration for opts.Image. An unreadable or malformed main config
// file is an error naming the file; problems the runtime itself tolerates are warnings.
func Load(opts Options) (*Config, error) {
	ref, err := registry.ParseReference(opts.Image)
	if err != nil {
		return nil, err
	}
	l := &loader{root: Root{FS: opts.Root, Name: opts.Name}, cfg: &Config{APIVersion: report.APIVersion, Kind: "RuntimeReport", Image: opts.Image, Registry: ref.Registry, HostRoot: opts.Name,
		Files: []string{}, Warnings: []Warning{}}}
	rt := opts.Runtime
	if rt == "" {
		rt = l.detect()
	}
	l.cfg.Runtime = rt
	switch rt {
	case Containerd:
		l.cfg.Version = l.packageVersion("containerd", "containerd.io", "moby-containerd")
		c, err := l.loadContainerd()
		if err != nil {
			return nil, err
		}
		l.cfg.Hosts = l.containerdHosts(c, ref.Registry)
	case CRIO:
		l.cfg.Version = l.packageVersion("cri-o", "crio")
		hosts, err := l.crioHosts(ref)
		if err != nil {
			return nil, err
		}
		l.cfg.Hosts = hosts
	case Docker:
		l.cfg.Version = l.packageVersion("docker-ce", "docker.io", "moby-engine")
		hosts, err := l.dockerHosts(ref.Registry)
		if err != nil {
			return nil, err
		}
		l.cfg.Hosts = hosts
	default:
		return nil, fmt.Errorf("unknown runtime %q: want containerd, crio or docker", rt)
	}
	l.loadProxy(rt)
	l.loadResolver()
	l.checkHosts()
	return l.cfg, nil
}

// detect picks the runtime from what is installed: containerd (the Kubernetes default since
// dockershim's removal) before CRI-O before docker.
func (l *loader) detect() Runtime {
	switch {
	case l.root.Exists(containerdConfig) || l.root.IsDir("/etc/containerd") || l.unitExists("containerd") || l.root.Exists(k3sConfig) || l.root.Exists(rke2Config):
		return Containerd
	case l.root.Exists("/etc/crio/crio.conf") || l.root.IsDir("/etc/crio") || l.unitExists("crio"):
		return CRIO
	case l.root.Exists("/etc/docker/daemon.json") || l.unitExists("docker"):
		return Docker
	}
	return Containerd
}

// checkHosts applies the per-host checks: CA files, skip_verify, capabilities, proxy.
func (l *loader) checkHosts() {
	pf := l.cfg.ProxyFunc()
	for i := range l.cfg.Hosts {
		h := &l.cfg.Hosts[i]
		for _, ca := range h.CA {
			b, err := l.root.ReadFile(ca)
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
			l.warn(WarnSkipVerify, fmt.Sprintf("skip_verify is on for %s: any certificate is accepted, a man in the middle included", h.Host),
				"trust the registry's CA with ca = \"…\" instead", h.Source)
		}
		if h.PlainHTTP {
			l.warn(WarnPlainHTTP, fmt.Sprintf("%s is reached over plain HTTP: image bytes and credentials are not protected", h.URL), "serve TLS and trust its CA", h.Source)
		}
		if h.Role == "mirror" && (!slices.Contains(h.Capabilities, "pull") || !slices.Contains(h.Capabilities, "resolve")) {
			l.warn(WarnMirrorNoPull, fmt.Sprintf("mirror %s has capabilities %v: without pull it is never used for pulls, without resolve it cannot resolve tags", h.URL, h.Capabilities),
				`set capabilities = ["pull", "resolve"]`, h.Source)
		}
		u, err := url.Parse(h.URL)
		if err != nil || pf == nil {
			continue
		}
		if p, err := pf(u); err == nil && p != nil {
			h.Proxy = redactUserinfo(p)
			if l.cfg.Proxy.NoProxy == "" || isPrivateName(u.Hostname()) {
				l.warn(WarnProxyNoNoProxy, fmt.Sprintf("%s is reached through the proxy %s: a private registry behind a corporate proxy is the classic cause of timeouts and TLS errors", h.Host, h.Proxy),
					"add "+u.Hostname()+" (and the blob and token hosts of the pull) to NO_PROXY in the runtime's unit, then restart it", l.cfg.Proxy.Source)
			}
		}
	}
}

// redactProxyURL hides credentials in a proxy URL given as text.
func redactProxyURL(s string) string {
	if s == "" {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return redactUserinfo(u)
}

func redactUserinfo(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User("REDACTED")
	}
	return c.String()
}

// isPrivateName guesses that a registry is internal: no public suffix registries use.
func isPrivateName(h string) bool {
	h = strings.ToLower(h)
	for _, pub := range []string{"docker.io", "gcr.io", "pkg.dev", "quay.io", "ghcr.io", "k8s.io", "mcr.microsoft.com", "amazonaws.com", "public.ecr.aws"} {
		if strings.HasSuffix(h, pub) {
			return false
		}
	}
	return true
}

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
	b, err := l.root.ReadFile(f)
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
		if ub, err := l.root.ReadFile(up); err == nil {
			uc, _ := resolver.ParseConf(bytes.NewReader(ub))
			l.cfg.Resolver.Upstream = uc.Nameservers
			l.read(up)
		}
		l.warn(WarnResolverStub, fmt.Sprintf("the runtime resolves through systemd-resolved's stub 127.0.0.53 (upstreams: %s); pods get %s instead: a laptop-style check from a pod does not test the node's path",
			strings.Join(l.cfg.Resolver.Upstream, ", "), up), "probe on the node, or in a hostNetwork pod with dnsPolicy: Default and --host-root", f)
	}
}
