package runtimeconfig

import (
	"encoding/json"
	"fmt"
	"net"
	"path"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/pullpath/pullpath/internal/registry"
)

type regEntry struct {
	Prefix   string `toml:"prefix"`
	Location string `toml:"location"`
	Insecure bool   `toml:"insecure"`
	Blocked  bool   `toml:"blocked"`
	Mirror   []struct {
		Location       string `toml:"location"`
		Insecure       bool   `toml:"insecure"`
		PullFromMirror string `toml:"pull-from-mirror"`
	} `toml:"mirror"`
	source string
}

type registriesConf struct {
	Registry   []regEntry `toml:"registry"`
	Registries struct {
		Insecure struct{ Registries []string } `toml:"insecure"`
		Block    struct{ Registries []string } `toml:"block"`
	} `toml:"registries"`
}

// crioHosts applies containers-registries.conf(5): the [[registry]] with the longest matching
// prefix, its mirrors (respecting pull-from-mirror) before its location; drop-ins override by prefix.
func (l *loader) crioHosts(ref registry.Reference) ([]Host, error) {
	files := []string{"/etc/containers/registries.conf"}
	drops, _ := l.root.Glob("/etc/containers/registries.conf.d/*.conf")
	sort.Strings(drops)
	files = append(files, drops...)
	byPrefix := map[string]regEntry{}
	var insecure, blocked []string
	for _, f := range files {
		b, err := l.root.ReadFile(f)
		if err != nil {
			if l.root.Exists(f) {
				return nil, err
			}
			continue
		}
		l.read(f)
		var rc registriesConf
		if _, err := toml.Decode(string(b), &rc); err != nil {
			return nil, fmt.Errorf("%s: %v", l.root.show(f), err)
		}
		for _, r := range rc.Registry {
			key := r.Prefix
			if key == "" {
				key = r.Location
			}
			r.source = fmt.Sprintf("%s:%d", f, lineOf(b, func(s string) bool { return strings.Contains(s, `"`+key+`"`) }))
			byPrefix[key] = r
		}
		insecure = append(insecure, rc.Registries.Insecure.Registries...)
		blocked = append(blocked, rc.Registries.Block.Registries...)
	}
	name := ref.Registry + "/" + ref.Repository
	if ref.Registry == "docker.io" {
		name = "docker.io/" + ref.Repository
	}
	var best *regEntry
	bestLen := -1
	for p, r := range byPrefix {
		if prefixMatch(p, name) && len(p) > bestLen {
			rr := r
			best, bestLen = &rr, len(p)
		}
	}
	reg := ref.Registry
	for _, b := range blocked {
		if b == reg {
			best = &regEntry{Blocked: true, source: "registries.block"}
		}
	}
	if best == nil {
		h := defaultHost(defaultServer(reg))
		for _, in := range insecure {
			if in == reg {
				h.SkipVerify = true
				l.warn(WarnInsecureRegistry, reg+" is listed as insecure: TLS is not verified and plain HTTP is allowed", "trust the registry's CA in /etc/containers/certs.d instead", "registries.insecure")
			}
		}
		return l.crioCerts([]Host{h}), nil
	}
	if best.Blocked {
		l.warn(WarnRegistryBlocked, fmt.Sprintf("%s is blocked in registries.conf: CRI-O refuses every pull from it", reg), "remove blocked = true for this prefix", best.source)
		return []Host{}, nil
	}
	var hosts []Host
	for _, m := range best.Mirror {
		if (m.PullFromMirror == "digest-only" && ref.Digest == "") || (m.PullFromMirror == "tag-only" && ref.Digest != "") {
			continue
		}
		h := defaultHost("https://" + firstComponent(m.Location))
		h.Role, h.Capabilities, h.Source, h.SkipVerify = "mirror", []string{"pull", "resolve"}, best.source, m.Insecure
		hosts = append(hosts, h)
	}
	loc := best.Location
	if loc == "" {
		loc = reg
	}
	h := defaultHost(defaultServer(firstComponent(loc)))
	h.Source, h.SkipVerify = best.source, best.Insecure
	if best.Insecure {
		l.warn(WarnInsecureRegistry, loc+" is marked insecure: TLS is not verified and plain HTTP is allowed", "trust the registry's CA in /etc/containers/certs.d instead", best.source)
	}
	return l.crioCerts(append(hosts, h)), nil
}

func firstComponent(loc string) string {
	h, _, _ := strings.Cut(loc, "/")
	return h
}

// prefixMatch implements the registries.conf prefix rule: whole path components, or *.domain.
func prefixMatch(prefix, name string) bool {
	if strings.HasPrefix(prefix, "*.") {
		host := firstComponent(name)
		return strings.HasSuffix(host, prefix[1:])
	}
	return name == prefix || strings.HasPrefix(name, prefix+"/") || strings.HasPrefix(name, prefix+":") || strings.HasPrefix(name, prefix+"@")
}

// crioCerts attaches /etc/containers/certs.d (then /etc/docker/certs.d) CAs and client pairs.
func (l *loader) crioCerts(hosts []Host) []Host {
	for i := range hosts {
		dirName := strings.TrimSuffix(hosts[i].Host, ":443")
		for _, base := range []string{"/etc/containers/certs.d", "/etc/docker/certs.d"} {
			l.attachCertsDir(&hosts[i], path.Join(base, dirName))
		}
	}
	return hosts
}

// attachCertsDir reads a docker-style certs.d/<host> directory: *.crt are CAs, *.cert+*.key pairs.
func (l *loader) attachCertsDir(h *Host, dir string) {
	es, _ := l.root.ReadDir(dir)
	for _, e := range es {
		n := e.Name()
		switch {
		case strings.HasSuffix(n, ".crt"):
			h.CA = append(h.CA, path.Join(dir, n))
		case strings.HasSuffix(n, ".cert"):
			h.Client = append(h.Client, [2]string{path.Join(dir, n), path.Join(dir, strings.TrimSuffix(n, ".cert")+".key")})
		}
	}
	if len(es) > 0 {
		h.Source += " + " + dir
	}
}

const dockerDaemonJSON = "/etc/docker/daemon.json"

// daemonJSON is the part of docker's daemon.json that decides pulls.
type daemonJSON struct {
	Mirrors  []string `json:"registry-mirrors"`
	Insecure []string `json:"insecure-registries"`
	// Proxies (Docker 23+) win over the unit's environment.
	Proxies struct {
		HTTP  string `json:"http-proxy"`
		HTTPS string `json:"https-proxy"`
		No    string `json:"no-proxy"`
	} `json:"proxies"`
}

// dockerHosts applies daemon.json: registry-mirrors (Docker Hub only), insecure-registries, certs.d.
// It keeps the parsed file for loadProxy.
func (l *loader) dockerHosts(reg string) ([]Host, error) {
	const f = dockerDaemonJSON
	var dj daemonJSON
	if b, err := l.root.ReadFile(f); err == nil {
		l.read(f)
		if err := json.Unmarshal(b, &dj); err != nil {
			return nil, fmt.Errorf("%s: %v", l.root.show(f), err)
		}
	} else if l.root.Exists(f) {
		return nil, err
	}
	l.docker = &dj
	var hosts []Host
	if reg == "docker.io" {
		for _, m := range dj.Mirrors {
			h := defaultHost(m)
			h.Role, h.Capabilities, h.Source = "mirror", []string{"pull", "resolve"}, f
			hosts = append(hosts, h)
		}
	} else if len(dj.Mirrors) > 0 {
		l.warn(WarnDockerMirrorHubOnly, "daemon.json registry-mirrors apply to Docker Hub only: pulls from "+reg+" never use them", "pull through the mirror's own name, or use containerd hosts.toml for per-registry mirrors", f)
	}
	hosts = append(hosts, defaultHost(defaultServer(reg)))
	for i := range hosts {
		if insecureMatch(dj.Insecure, hosts[i].Host) {
			hosts[i].SkipVerify = true
			l.warn(WarnInsecureRegistry, hosts[i].Host+" matches insecure-registries: TLS is not verified and plain HTTP is tried", "trust the registry's CA in /etc/docker/certs.d/<host>/ca.crt instead", f)
		}
		l.attachCertsDir(&hosts[i], path.Join("/etc/docker/certs.d", strings.TrimSuffix(hosts[i].Host, ":443")))
	}
	return hosts, nil
}

func insecureMatch(list []string, hostport string) bool {
	host, _, _ := net.SplitHostPort(hostport)
	for _, e := range list {
		if e == hostport || e == host || strings.TrimSuffix(hostport, ":443") == e {
			return true
		}
		if _, n, err := net.ParseCIDR(e); err == nil {
			if ip := net.ParseIP(host); ip != nil && n.Contains(ip) {
				return true
			}
		}
	}
	return false
}
