package runtimeconfig

import (
	"encoding/base64"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/pullpath/pullpath/internal/registry"
)

const (
	containerdConfig = "/etc/containerd/config.toml"
	// k3s and rke2 run their own containerd with a generated config here.
	k3sConfig  = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"
	rke2Config = "/var/lib/rancher/rke2/agent/etc/containerd/config.toml"
)

// configFile returns the containerd config this node runs with: the standard one, else k3s's or
// rke2's.
func (l *loader) configFile() string {
	if !l.root.Exists(containerdConfig) {
		for _, f := range []string{k3sConfig, rke2Config} {
			if l.root.Exists(f) {
				return f
			}
		}
	}
	return containerdConfig
}

// embeddedUnits names the systemd units whose environment an embedded containerd inherits.
func embeddedUnits(configFile string) (svc string, units []string) {
	switch configFile {
	case k3sConfig:
		return "k3s", []string{"k3s", "k3s-agent"}
	case rke2Config:
		return "rke2", []string{"rke2-server", "rke2-agent"}
	}
	return "", nil
}

// ctrdConfig is the part of containerd's config.toml (and its imports) that decides pulls.
type ctrdConfig struct {
	version    int
	configPath string // CRI registry config_path, possibly a ':'-separated list
	pathSource string
	mirrors    map[string][]string // legacy registry.mirrors: host → endpoints
	tls        map[string]legacyTLS
	auth       map[string]legacyAuth // registry.configs."host".auth: still honoured with config_path
	legacySrc  string
}

type legacyAuth struct {
	username, password, identityToken string
	source                            string
}

type legacyTLS struct {
	caFile, certFile, keyFile string
	skipVerify                bool
}

// tomlDoc is one decoded containerd config file, with its bytes for line numbers.
type tomlDoc struct {
	file string
	m    map[string]any
	b    []byte
}

// loadContainerd reads config.toml and its imports, later files overriding earlier keys as
// containerd merges them.
func (l *loader) loadContainerd() (*ctrdConfig, error) {
	c := &ctrdConfig{version: 1, mirrors: map[string][]string{}, tls: map[string]legacyTLS{}, auth: map[string]legacyAuth{}}
	containerdConfig := l.configFile()
	b, err := l.root.ReadFile(containerdConfig)
	if err != nil {
		if !l.root.Exists(containerdConfig) {
			c.version = 2 // containerd's built-in default config
			return c, nil
		}
		return nil, err
	}
	files := []string{containerdConfig}
	var main map[string]any
	if _, err := toml.Decode(string(b), &main); err != nil {
		return nil, fmt.Errorf("%s: %v", l.root.show(containerdConfig), err)
	}
	l.read(containerdConfig)
	if v, ok := main["version"].(int64); ok {
		c.version = int(v)
	}
	docs := []tomlDoc{{containerdConfig, main, b}}
	if imps, ok := main["imports"]; ok {
		pats, err := strings1(imps)
		if err != nil {
			return nil, fmt.Errorf("%s: imports: %v", l.root.show(containerdConfig), err)
		}
		for _, pat := range pats {
			if !path.IsAbs(pat) {
				pat = path.Join(path.Dir(containerdConfig), pat)
			}
			matches, err := l.root.Glob(pat)
			if err != nil {
				return nil, err
			}
			for _, f := range matches {
				ib, err := l.root.ReadFile(f)
				if err != nil {
					return nil, err
				}
				var m map[string]any
				if _, err := toml.Decode(string(ib), &m); err != nil {
					return nil, fmt.Errorf("%s: %v", l.root.show(f), err)
				}
				l.read(f)
				files = append(files, f)
				docs = append(docs, tomlDoc{f, m, ib})
			}
		}
	}
	for _, d := range docs {
		reg := registrySection(d.m, c.version)
		if reg == nil {
			continue
		}
		if cp, ok := reg["config_path"].(string); ok {
			c.configPath = cp
			c.pathSource = fmt.Sprintf("%s:%d", d.file, lineOf(d.b, func(s string) bool { return strings.HasPrefix(s, "config_path") }))
		}
		if ms, ok := reg["mirrors"].(map[string]any); ok && len(ms) > 0 {
			for host, v := range ms {
				mt, _ := v.(map[string]any)
				eps, err := strings1(mt["endpoint"])
				if err != nil {
					return nil, fmt.Errorf("%s: registry.mirrors.%q.endpoint: %v", d.file, host, err)
				}
				c.mirrors[host] = eps
			}
			c.legacySrc = fmt.Sprintf("%s:%d", d.file, lineOf(d.b, func(s string) bool { return strings.Contains(s, ".mirrors") }))
		}
		if cs, ok := reg["configs"].(map[string]any); ok {
			for host, v := range cs {
				ct, _ := v.(map[string]any)
				if a, ok := ct["auth"].(map[string]any); ok {
					la := legacyAuth{source: fmt.Sprintf("%s:%d", d.file, lineOf(d.b, func(s string) bool { return strings.Contains(s, ".auth") }))}
					la.username, _ = a["username"].(string)
					la.password, _ = a["password"].(string)
					la.identityToken, _ = a["identitytoken"].(string)
					if enc, _ := a["auth"].(string); enc != "" && la.username == "" {
						if raw, err := base64.StdEncoding.DecodeString(enc); err == nil {
							la.username, la.password, _ = strings.Cut(string(raw), ":")
						}
					}
					c.auth[host] = la
				}
				t, _ := ct["tls"].(map[string]any)
				if t == nil {
					continue
				}
				var lt legacyTLS
				lt.caFile, _ = t["ca_file"].(string)
				lt.certFile, _ = t["cert_file"].(string)
				lt.keyFile, _ = t["key_file"].(string)
				lt.skipVerify, _ = t["insecure_skip_verify"].(bool)
				c.tls[host] = lt
				if c.legacySrc == "" {
					c.legacySrc = fmt.Sprintf("%s:%d", d.file, lineOf(d.b, func(s string) bool { return strings.Contains(s, ".configs") }))
				}
			}
		}
	}
	return c, nil
}

// registrySection returns the CRI registry table for the config version.
func registrySection(m map[string]any, version int) map[string]any {
	plugins, _ := m["plugins"].(map[string]any)
	if plugins == nil {
		return nil
	}
	var cri map[string]any
	switch version {
	case 3:
		cri, _ = plugins["io.containerd.cri.v1.images"].(map[string]any)
	case 2:
		cri, _ = plugins["io.containerd.grpc.v1.cri"].(map[string]any)
	default:
		cri, _ = plugins["cri"].(map[string]any)
	}
	reg, _ := cri["registry"].(map[string]any)
	return reg
}

// containerdHosts returns the hosts containerd's CRI tries for registry reg, with the credentials
// of registry.configs."host".auth attached (containerd still sends those with config_path set).
func (l *loader) containerdHosts(c *ctrdConfig, reg string) []Host {
	hosts := l.containerdHostList(c, reg)
	for i := range hosts {
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
	server := defaultServer(reg)
	if c.configPath != "" {
		if len(c.mirrors) > 0 || len(c.tls) > 0 {
			l.warn(WarnLegacyWithPath, "config_path is set together with the legacy registry.mirrors/configs: containerd refuses this combination and its CRI plugin does not load, so no image can be pulled",
				"move the mirrors and TLS settings into certs.d/<host>/hosts.toml and delete registry.mirrors/configs", c.legacySrc)
		}
		for _, root := range filepath.SplitList(c.configPath) {
			for _, d := range hostDirs(reg) {
				f := path.Join(root, d, "hosts.toml")
				b, err := l.root.ReadFile(f)
				if err != nil {
					continue
				}
				l.read(f)
				hf, err := parseHostsToml(f, b, server)
				if err != nil {
					l.warn(WarnHostsTomlInvalid, "containerd cannot parse "+f+" and ignores it: "+err.Error(), "fix the TOML; until then containerd pulls from "+server+" with default trust", f)
					return []Host{defaultHost(server)}
				}
				// containerd 1.6 parses every file with getSortedHosts, which fails without a host tree
				if !hf.hasHosts {
					older := l.versionBefore(1, 7)
					msg := f + " has no [host] table: containerd 1.6 rejects it (\"invalid `host` tree\") and silently drops its settings, ca included"
					if older {
						l.warn(WarnHostsTomlRejected, msg+"; this node runs containerd "+l.cfg.Version+", so the pull uses default trust and fails TLS against a private CA",
							"add an empty [host] table, or write [host.\""+hf.hosts[len(hf.hosts)-1].URL+"\"] with the ca", f)
						return []Host{defaultHost(server)}
					}
					if l.cfg.Version == "" {
						l.warn(WarnHostsTomlRejected, msg+" (the containerd version is unknown here)", "add an empty [host] table so every containerd version reads the file", f)
					}
				}
				return hf.hosts
			}
		}
		return []Host{defaultHost(server)}
	}
	// No config_path: certs.d is not read by the CRI plugin at all.
	if es, _ := l.root.ReadDir("/etc/containerd/certs.d"); len(es) > 0 {
		l.warn(WarnConfigPathUnset, "/etc/containerd/certs.d has host directories, but the CRI registry config_path is not set: containerd ignores them",
			`set config_path = "/etc/containerd/certs.d" under the CRI plugin's registry section and restart containerd`, l.configFile())
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
			h := defaultHost(ep)
			h.Role, h.Capabilities, h.Source = "mirror", []string{"pull", "resolve"}, c.legacySrc
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 || hosts[len(hosts)-1].URL != defaultHost(server).URL {
		hosts = append(hosts, defaultHost(server))
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
// read up to 2.3; containerd 2.4 removes them (pkg/deprecation, as of containerd main in 2026-12),
// so there the settings are gone.
func (l *loader) legacyWarning(what, src string) {
	fix := "migrate to config_path and certs.d/<host>/hosts.toml"
	if l.cfg.Version != "" && !l.versionBefore(2, 4) {
		l.warn(WarnLegacyRegistry, what+" is not read by containerd "+l.cfg.Version+" (removed in 2.4): its mirrors and TLS settings are ignored", fix, src)
		return
	}
	l.note(WarnLegacyRegistry, what+" is deprecated (since containerd 1.5, removed in 2.4): it still works here, but hides which CA applies", fix, src)
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

var reDebVersion = regexp.MustCompile(`^(\d+)\.(\d+)`)

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

// packageVersion reads a package's version from the dpkg database (Debian, Ubuntu: AKS, kind images).
func (l *loader) packageVersion(names ...string) string {
	b, err := l.root.ReadFile("/var/lib/dpkg/status")
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
