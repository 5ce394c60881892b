package runtimeconfig

import (
	"fmt"
	"net"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

const (
	containerdConfig = "/etc/containerd/config.toml"
	// k3s and rke2 run their own containerd with a generated config here.
	k3sConfig  = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"
	rke2Config = "/var/lib/rancher/rke2/agent/etc/containerd/config.toml"
)

// embeddedUnits names the systemd units whose environment an embedded containerd inherits.
func embeddedUnits(configFile string) (svc string, units []string) {
	switch configFile {
	case k3sConfig:
		return "k3s", []string{"k3s", "k3s-agent"}
	case rke2Config:
		return "rke2", []string{"rke2-server", "rke2-agent"}
	case k0sConfig: // k0s's supervisor passes its environment on, CONTAINERD_* proxies first (pkg/supervisor getEnv)
		return "k0s", []string{"k0scontroller", "k0sworker"}
	}
	return "", nil
}

// ctrdConfig is the part of containerd's config.toml (and its imports) that decides pulls.
type ctrdConfig struct {
	major      int    // containerd's major version whose reading applies: 1 or 2
	proven2    bool   // a file has version 3+: only containerd 2.x starts with it, whatever the version source says
	configPath string // CRI registry config_path, possibly a ':'-separated list
	pathSource string
	pathDflt   bool // config_path is containerd 2.2+'s built-in default
	// ignoredPath is file:line of a config_path 2.x ignores: under the 1.x CRI table of a file
	// at the current version, which is not migrated
	ignoredPath string
	mirrors     map[string][]string // legacy registry.mirrors: host → endpoints
	tls         map[string]legacyTLS
	auth        map[string]legacyAuth // registry.configs."host".auth: still honoured with config_path
	legacySrc   string
	headers     map[string][]string // registry.headers: sent to every host
	images      map[string]any      // the CRI image service's merged table (2.x: io.containerd.cri.v1.images)
	table       string              // where a registry setting must be written to take effect
}

type legacyAuth struct {
	username, password, identityToken string
	source                            string
}

type legacyTLS struct {
	caFile, certFile, keyFile string
	skipVerify                bool
}

// containerdHosts returns the hosts containerd's CRI tries for registry reg, with the credentials
// of registry.configs."host".auth attached (containerd still sends those with config_path set).
func (l *loader) containerdHosts(c *ctrdConfig, reg string) []Host {
	hosts := l.containerdHostList(c, reg)
	for i := range hosts {
		// the resolver's headers (ResolverOptions.Headers) go on every request, the host's are appended
		if len(c.headers) > 0 {
			raw := map[string][]string{}
			for k, v := range c.headers {
				raw[k] = append(raw[k], v...)
			}
			for k, v := range hosts[i].headerRaw {
				raw[k] = append(raw[k], v...)
			}
			hosts[i].headerRaw, hosts[i].Header = raw, map[string][]string{}
			for k, v := range raw {
				hosts[i].Header[k] = redact.Header(k, v)
			}
		}
		for _, key := range legacyKeys(hosts[i].Host, reg) {
			a, ok := c.auth[key]
			if !ok {
				continue
			}
			hosts[i].authUser, hosts[i].authPass, hosts[i].authToken = a.username, a.password, a.identityToken
			switch {
			case a.username != "":
				hosts[i].Auth = fmt.Sprintf("user %q from %s", a.username, a.source)
			case a.identityToken != "":
				hosts[i].Auth = "identity token from " + a.source
			}
			break
		}
	}
	return hosts
}

func (l *loader) containerdHostList(c *ctrdConfig, reg string) []Host {
	hosts := l.configuredHosts(c, reg)
	if last := &hosts[len(hosts)-1]; last.Source == "default" && isLoopbackHost(reg) {
		l.localhostDefault(last, reg)
	}
	return hosts
}

// localhostDefault applies containerd's default for a localhost registry with no server configured
// (core/remotes/docker/config/hosts.go ConfigureHosts): up to 1.6.24 and in 1.7.0–1.7.7 plain HTTP
// without verification; from 1.6.25, 1.7.8 and in 2.x HTTPS without verification on port 443 (or
// none), plain HTTP on port 80, and on any other port HTTPS without verification falling back to
// plain HTTP when the server answers in HTTP.
func (l *loader) localhostDefault(h *Host, reg string) {
	_, port, _ := net.SplitHostPort(reg) // "" without a port
	old := l.cfg.Version != "" && (l.versionBefore(1, 6) || (!l.versionBefore(1, 6) && l.versionBefore(1, 7) && l.patchBefore(25)) ||
		(!l.versionBefore(1, 7) && l.versionBefore(1, 8) && l.patchBefore(8)))
	scheme, skip := "https", true
	switch {
	case old:
		scheme = "http"
	case port == "80":
		scheme, skip = "http", false
	case port == "" || port == "443":
	default:
		// containerd lists it as http and, since TLS is configured (skip verify), tries HTTPS
		// first with its HTTP fallback; the probe does the same (the lab shows both with 2.4.2)
		scheme, h.HTTPFallback = "http", true
		l.note(WarnPlainHTTP, fmt.Sprintf("%s is on this node's loopback and has no server configured: containerd tries HTTPS without verifying the certificate, then falls back to plain HTTP", reg), "", "default")
	}
	d := defaultHost(scheme + "://" + reg)
	h.Host, h.URL, h.PlainHTTP, h.SkipVerify = d.Host, d.URL, d.PlainHTTP, skip
	h.Source = "default (containerd's localhost rule)"
}

// configuredHosts is the hosts list from config_path, or from the legacy mirrors, or the default.
func (l *loader) configuredHosts(c *ctrdConfig, reg string) []Host {
	server := defaultServer(reg)
	if c.configPath != "" {
		if dirs := filepath.SplitList(c.configPath); len(dirs) > 1 {
			if why, ok := l.transferPull(c); ok {
				// containerd 2.1+ (internal/cri/server/images/image_pull.go pullImageWithTransferService,
				// through at least 2.4.0-beta as of 2026-12; containerd issues 12415, 12808, fix
				// proposed in PR 14168): the whole list is one directory, so no hosts.toml is found
				for _, root := range dirs {
					for _, d := range hostDirs(reg) {
						if f := path.Join(root, d, "hosts.toml"); l.root.Exists(f) {
							l.read(f)
							what := fmt.Sprintf("config_path %q lists several directories, and containerd %s", c.configPath, l.cfg.Version)
							if c.pathDflt {
								what = fmt.Sprintf("config_path is not set, so containerd %s uses its default %q, a list of two directories, and", l.cfg.Version, c.configPath)
							}
							l.warn(WarnTransferPathList, fmt.Sprintf("%s pulls through its transfer service (%s), which reads the list as one directory named %q: %s is ignored and the pull goes to %s with default trust",
								what, why, c.configPath, f, server),
								fmt.Sprintf("set config_path to the one directory that holds the hosts.toml files (%q) in %s, or use_local_image_pull = true", root, c.table), c.pathSource)
							return []Host{defaultHost(server)}
						}
					}
				}
				return []Host{defaultHost(server)}
			}
		}
		// 1.x refuses mirrors or configs.tls beside config_path; 2.x refuses mirrors only and
		// ignores configs.tls (internal/cri/config ValidateImageConfig, v1.7.24 and v2.0.0)
		switch {
		case len(c.mirrors) > 0 || (c.major == 1 && len(c.tls) > 0):
			l.warn(WarnLegacyWithPath, "config_path is set together with the legacy registry.mirrors/configs: containerd refuses this combination and its CRI plugin does not load, so no image can be pulled",
				"move the mirrors and TLS settings into certs.d/<host>/hosts.toml and delete registry.mirrors/configs", c.legacySrc)
		case len(c.tls) > 0:
			why := "config_path is set"
			if c.pathDflt {
				why = "containerd " + l.cfg.Version + " sets its default config_path when none is given"
			}
			l.warn(WarnLegacyTLSIgnored, "registry.configs.*.tls is ignored: "+why+", and containerd 2.x then reads TLS settings from certs.d/<host>/hosts.toml only",
				"write the ca, client and skip_verify settings into certs.d/<host>/hosts.toml", c.legacySrc)
		}
		// the first directory that exists decides (config.HostDirFromRoot); without a hosts.toml, or
		// with one containerd rejects, its docker-style certificate files apply (loadCertFiles)
		for _, root := range filepath.SplitList(c.configPath) {
			for _, d := range hostDirs(reg) {
				dir := path.Join(root, d)
				if !l.root.Exists(dir) {
					continue
				}
				f := path.Join(dir, "hosts.toml")
				b, err := l.readFile(f)
				if err != nil && l.root.Exists(f) {
					// a directory, a FIFO, a device or a huge file where hosts.toml should be
					l.warn(WarnConfigInvalid, "cannot read "+f+": "+err.Error()+"; the hosts it would configure are not shown", "make "+f+" a regular hosts.toml file", f)
				}
				if err != nil || len(b) == 0 {
					return []Host{l.certFilesHost(server, dir)}
				}
				l.read(f)
				hf, err := parseHostsToml(f, b, server)
				if err != nil {
					l.warn(WarnHostsTomlInvalid, "containerd cannot parse "+f+" and ignores it: "+err.Error(), "fix the TOML; until then containerd pulls from "+server+" with default trust", f)
					return []Host{l.certFilesHost(server, dir)}
				}
				// containerd before 1.7.32 parses every file with getSortedHosts, which fails without a host tree
				if !hf.hasHosts {
					msg := f + " has no [host] table: containerd 1.6 and 1.7 before 1.7.32 reject it (\"invalid `host` tree\") and silently drop its settings, ca included"
					if l.rejectsHostlessToml() {
						l.warn(WarnHostsTomlRejected, msg+"; this node runs containerd "+l.cfg.Version+", so the pull uses default trust and fails TLS against a private CA",
							"add an empty [host] table, or write [host.\""+hf.hosts[len(hf.hosts)-1].URL+"\"] with the ca", f)
						return []Host{l.certFilesHost(server, dir)}
					}
					if l.cfg.Version == "" && !c.proven2 {
						l.warn(WarnHostsTomlRejected, msg+" (the containerd version is unknown here)", "add an empty [host] table so every containerd version reads the file", f)
					}
				}
				return hf.hosts
			}
		}
		return []Host{defaultHost(server)}
	}
	// No config_path: certs.d is not read by the CRI plugin at all.
	if es, _ := l.readDir("/etc/containerd/certs.d"); len(es) > 0 && len(c.mirrors) == 0 {
		why := "containerd ignores them"
		if l.cfg.Version == "" && c.major == 2 {
			why += " (containerd 2.2 and later would read them by default; the version is unknown here)"
		}
		l.warn(WarnConfigPathUnset, "/etc/containerd/certs.d has host directories, but the CRI registry config_path is not set: "+why,
			`set config_path = "/etc/containerd/certs.d" in `+c.table+` and restart containerd`, l.configFile())
	}
	var hosts []Host
	if eps, ok := c.mirrors[reg]; ok || len(c.mirrors) > 0 {
		if !ok {
			eps = c.mirrors["*"]
		}
		if len(c.mirrors) > 0 {
			l.legacyWarning("registry.mirrors", c.legacySrc)
		}
		for _, ep := range eps {
			h := legacyEndpointHost(ep)
			h.Role, h.Capabilities, h.Source = "mirror", []string{"pull", "resolve"}, c.legacySrc
			hosts = append(hosts, h)
		}
	}
	if !legacyListsRegistry(hosts, reg) {
		hosts = append(hosts, defaultHost(server))
	}
	// containerd 2.x's RegistryConfig holds auth only (internal/cri/config, v2.0.0 to v2.4.2): the
	// tls tables are dropped without a word, and the lab's 2.4.2 fails TLS to such a host
	if c.major == 2 && len(c.tls) > 0 {
		l.warn(WarnLegacyTLSIgnored, "registry.configs.*.tls is ignored: containerd 2.x reads only auth from registry.configs, so its hosts get default trust",
			"write the ca, client and skip_verify settings into certs.d/<host>/hosts.toml and set config_path", c.legacySrc)
		return hosts
	}
	for i := range hosts {
		for _, key := range legacyKeys(hosts[i].Host, reg) {
			if t, ok := c.tls[key]; ok {
				if t.caFile != "" {
					hosts[i].CA = append(hosts[i].CA, t.caFile)
				}
				if t.certFile != "" {
					hosts[i].Client = append(hosts[i].Client, [2]string{t.certFile, t.keyFile})
				}
				hosts[i].SkipVerify = hosts[i].SkipVerify || t.skipVerify
				hosts[i].Source += " + registry.configs." + key + ".tls"
				if len(c.mirrors) == 0 {
					l.legacyWarning("registry.configs", c.legacySrc)
				}
				break
			}
		}
	}
	return hosts
}

// legacyWarning reports the CRI's registry.mirrors/configs: deprecated since containerd 1.5 and still
// read by 2.4.2, whose notice (pkg/deprecation) announces their removal in 2.7; the lab's 2.4.2
// pulls through a legacy mirror.
func (l *loader) legacyWarning(what, src string) {
	l.note(WarnLegacyRegistry, what+" is deprecated (since containerd 1.5; 2.4.2 still reads it and announces its removal in 2.7): it still works here, but hides which hosts and CA apply",
		"migrate to config_path and certs.d/<host>/hosts.toml", src)
}

// certFilesHost is containerd's host for a directory without a usable hosts.toml: the default
// server with the directory's *.crt CAs and *.cert/*.key client pairs.
func (l *loader) certFilesHost(server, dir string) Host {
	h := defaultHost(server)
	l.attachCertsDir(&h, dir)
	return h
}

// rejectsHostlessToml reports whether the node's containerd drops a hosts.toml without [host]:
// every 1.6 and 1.7 before 1.7.32 (getSortedHosts; gone in 1.7.32 and 2.0).
func (l *loader) rejectsHostlessToml() bool {
	if l.cfg.Version == "" {
		return false
	}
	return l.versionBefore(1, 7) || (l.versionBefore(1, 8) && l.patchBefore(32))
}

// configPathView says which config_path the CRI runs with and why; without one, why none applies.
func (l *loader) configPathView(c *ctrdConfig) *ConfigPath {
	if c.configPath != "" {
		cp := &ConfigPath{Path: c.configPath, Default: c.pathDflt, Source: c.pathSource}
		if c.pathDflt {
			cp.Why = l.configFile() + " sets none"
			if c.ignoredPath != "" {
				cp.Why += "; " + ignoredWhy(c.ignoredPath)
			}
		}
		return cp
	}
	cp := &ConfigPath{Source: l.configFile()}
	switch {
	case c.ignoredPath != "":
		cp.Source = c.ignoredPath
		cp.Why = ignoredWhy(c.ignoredPath)
	case len(c.mirrors) > 0:
		cp.Why = "registry.mirrors apply instead, from " + c.legacySrc
	case l.cfg.Version == "":
		cp.Why = `containerd 2.2 and later default to "/etc/containerd/certs.d:/etc/docker/certs.d", earlier versions read no hosts.toml; the version is unknown here`
	case c.major == 1:
		cp.Why = "containerd " + l.cfg.Version + " has no default: no hosts.toml is read"
	default: // 2.0, 2.1
		cp.Why = "containerd " + l.cfg.Version + " has no default (2.2 added one): no hosts.toml is read"
	}
	return cp
}

// transferPull reports whether containerd pulls through its transfer service: 2.1 and later, unless
// use_local_image_pull or a setting the transfer service does not support forces the CRI's own
// pull (internal/cri/config CheckLocalImagePullConfigs, the same list in 2.1.0 and 2.4.0-beta).
func (l *loader) transferPull(c *ctrdConfig) (string, bool) {
	if c.major != 2 || l.cfg.Version == "" || l.versionBefore(2, 1) {
		return "", false
	}
	im := c.images
	if b, _ := im["use_local_image_pull"].(bool); b {
		return "", false
	}
	if b, ok := im["disable_snapshot_annotations"].(bool); ok && !b {
		return "", false
	}
	if b, _ := im["discard_unpacked_layers"].(bool); b {
		return "", false
	}
	if b, _ := im["image_pull_with_sync_fs"].(bool); b {
		return "", false
	}
	if n, ok := im["max_concurrent_downloads"].(int64); ok && n != 3 {
		return "", false
	}
	if len(c.mirrors) > 0 || len(c.tls) > 0 || len(c.auth) > 0 {
		return "", false
	}
	return "the default since 2.1; nothing in the CRI image config forces the local pull", true
}

// legacyKeys are the registry.configs keys that may hold a host's settings, most specific first:
// host:port, the bare host name, then the image's registry.
func legacyKeys(hostport, reg string) []string {
	return []string{hostport, strings.TrimSuffix(strings.TrimSuffix(hostport, ":443"), ":80"), reg}
}

// defaultServer is the URL a runtime pulls from when nothing configures the registry.
func defaultServer(reg string) string { return "https://" + registry.APIHost(reg) }

func defaultHost(server string) Host {
	h, err := hostEntry(server, map[string]any{}, "/", "default")
	if err != nil {
		h = Host{Host: server, URL: server}
	}
	h.Role, h.Source = "registry", "default"
	return h
}

var reDebVersion = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?`)

var reMajor = regexp.MustCompile(`^v?(\d+)\.`)

// ContainerdMajor is the containerd major version whose reading a version string names ("1.6.20~ds1",
// "v2.4.2", "2.0.2-k3s2"): 1 for 1.x, else 2 (the current releases' rule). ok is false when the
// string names none, e.g. "" when nothing on the node said it.
func ContainerdMajor(version string) (major int, ok bool) {
	m := reMajor.FindStringSubmatch(version)
	if m == nil {
		return 0, false
	}
	if n, _ := strconv.Atoi(m[1]); n == 1 {
		return 1, true
	}
	return 2, true
}

// patchBefore reports whether the detected version's patch number is known and below p.
func (l *loader) patchBefore(p int) bool {
	m := reDebVersion.FindStringSubmatch(l.cfg.Version)
	if m == nil || m[3] == "" {
		return false
	}
	n, _ := strconv.Atoi(m[3])
	return n < p
}

// versionBefore reports whether the detected runtime version is known and older than major.minor.
func (l *loader) versionBefore(major, minor int) bool {
	m := reDebVersion.FindStringSubmatch(l.cfg.Version)
	if m == nil {
		return false
	}
	ma, _ := strconv.Atoi(m[1])
	mi, _ := strconv.Atoi(m[2])
	return ma < major || (ma == major && mi < minor)
}

// dpkgVersion reads a package's version from the dpkg database (Debian, Ubuntu: AKS, kind images).
func (l *loader) dpkgVersion(names ...string) string {
	b, err := l.readFile("/var/lib/dpkg/status")
	if err != nil {
		return ""
	}
	for _, para := range strings.Split(string(b), "\n\n") {
		var pkg, ver, status string
		for _, line := range strings.Split(para, "\n") {
			switch {
			case strings.HasPrefix(line, "Package: "):
				pkg = strings.TrimPrefix(line, "Package: ")
			case strings.HasPrefix(line, "Version: "):
				ver = strings.TrimPrefix(line, "Version: ")
			case strings.HasPrefix(line, "Status: "):
				status = line
			}
		}
		for _, n := range names {
			if pkg == n && strings.Contains(status, "installed") && !strings.Contains(status, "not-installed") {
				if i := strings.IndexAny(ver, ":"); i >= 0 && i < 3 {
					ver = ver[i+1:] // drop an epoch
				}
				return ver
			}
		}
	}
	return ""
}

// ignoredWhy says why a config_path is ignored; it starts with report.ConfigPathIgnoredPrefix.
func ignoredWhy(at string) string {
	return fmt.Sprintf(`%s%s is under [plugins.%q.registry], the containerd 1.x table, which containerd 2.x ignores in a version 3 config: move it to [plugins.%q.registry]`, report.ConfigPathIgnoredPrefix, at, criV1, criImages)
}
