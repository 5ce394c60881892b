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
	// MirrorByDigestOnly restricts every mirror of the entry to digest pulls.
	MirrorByDigestOnly bool `toml:"mirror-by-digest-only"`
	Mirror             []struct {
		Location       string `toml:"location"`
		Insecure       bool   `toml:"insecure"`
		PullFromMirror string `toml:"pull-from-mirror"`
		source         string
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
	insecure, blocked := map[string]string{}, map[string]string{} // v1 lists: registry → file:line
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
		regLines, mirrorLines := entryLines(b)
		for i, r := range rc.Registry {
			key := r.Prefix
			if key == "" {
				key = r.Location
			}
			r.source = fmt.Sprintf("%s:%d", f, lineOf(b, func(s string) bool { return strings.Contains(s, `"`+key+`"`) }))
			if i < len(regLines) {
				r.source = fmt.Sprintf("%s:%d", f, regLines[i])
			}
			for j := range r.Mirror {
				r.Mirror[j].source = r.source
				if i < len(mirrorLines) && j < len(mirrorLines[i]) {
					r.Mirror[j].source = fmt.Sprintf("%s:%d", f, mirrorLines[i][j])
				}
			}
			byPrefix[key] = r
		}
		for _, r := range rc.Registries.Insecure.Registries {
			insecure[r] = fmt.Sprintf("%s:%d", f, lineOf(b, func(s string) bool { return strings.Contains(s, `"`+r+`"`) }))
		}
		for _, r := range rc.Registries.Block.Registries {
			blocked[r] = fmt.Sprintf("%s:%d", f, lineOf(b, func(s string) bool { return strings.Contains(s, `"`+r+`"`) }))
		}
	}
	// the reference as containers/image writes it (reference.Named.String()), which prefixes match
	full := ref.Registry + "/" + ref.Repository + ":" + ref.Tag
	if ref.Digest != "" {
		full = ref.Registry + "/" + ref.Repository + "@" + ref.Digest
	}
	var best *regEntry
	bestLen := -1
	for p, r := range byPrefix {
		if prefixMatch(p, full) && len(p) > bestLen {
			rr := r
			best, bestLen = &rr, len(p)
		}
	}
	reg := ref.Registry
	if src, ok := blocked[reg]; ok {
		best = &regEntry{Blocked: true, source: src}
	}
	if best == nil {
		h := defaultHost(defaultServer(reg))
		if src, ok := insecure[reg]; ok {
			h.SkipVerify, h.HTTPFallback, h.Source = true, true, src
		}
		return l.crioCerts([]Host{h}), nil
	}
	var hosts []Host
	for _, m := range best.Mirror {
		// containers/image PullSourcesFromReference: mirror-by-digest-only, else each pull-from-mirror
		digestOnly := best.MirrorByDigestOnly || m.PullFromMirror == "digest-only"
		if (digestOnly && ref.Digest == "") || (m.PullFromMirror == "tag-only" && ref.Digest != "") {
			why := "digest-only: CRI-O uses it for pulls by digest, and this pull is by tag"
			if !digestOnly {
				why = "tag-only: CRI-O uses it for pulls by tag, and this pull is by digest"
			}
			l.note(WarnMirrorSkipped, fmt.Sprintf("mirror %s is skipped for %s (%s)", m.Location, l.cfg.Image, why), "", best.source)
			continue
		}
		h, err := crioSource(m.Location, best, full)
		if err != nil {
			return nil, err
		}
		h.Role, h.Source, h.SkipVerify, h.HTTPFallback = "mirror", m.source, m.Insecure, m.Insecure
		hosts = append(hosts, h)
	}
	// blocked refuses the entry's own location only (containers/image newDockerClient looks the physical
	// reference up): mirrors are still tried, which is how OpenShift's NeverContactSource works
	if best.Blocked {
		if len(hosts) == 0 {
			l.warn(WarnRegistryBlocked, fmt.Sprintf("%s is blocked in registries.conf and no mirror serves this pull: CRI-O refuses it", reg), "remove blocked = true for this prefix, or add a mirror", best.source)
			return []Host{}, nil
		}
		l.note(WarnRegistryBlocked, fmt.Sprintf("%s is blocked in registries.conf: CRI-O pulls from its mirrors only and never contacts it", reg), "", best.source)
		return l.crioCerts(hosts), nil
	}
	h, err := crioSource(best.Location, best, full)
	if err != nil {
		return nil, err
	}
	// insecure: containers/image pings over HTTPS unverified, then over plain HTTP
	// (docker_client.go detectPropertiesHelper, v5.23 as in Debian's skopeo 1.9.3, and main)
	h.Source, h.SkipVerify, h.HTTPFallback = best.source, best.Insecure, best.Insecure
	return l.crioCerts(append(hosts, h)), nil
}

// crioSource is one pull source of a [[registry]] entry, as containers/image rewrites the reference
// for it (sysregistriesv2 Endpoint.rewriteReference, containers/image main as of 2026-12): the
// location replaces the part of the reference the prefix matched, so with prefix "docker.io" and
// location "mirror.corp/dockerhub", docker.io/library/nginx is asked of mirror.corp as
// dockerhub/library/nginx: GET https://mirror.corp/v2/dockerhub/library/nginx/manifests/<tag>.
// The ping and the token scope use the host root and that repository.
func crioSource(location string, e *regEntry, full string) (Host, error) {
	prefix := e.Prefix
	if prefix == "" {
		prefix = e.Location
	}
	rewritten := full
	if location != "" { // an empty location is only valid for a *.domain prefix: the reference is kept
		n := len(prefix)
		if strings.HasPrefix(prefix, "*.") {
			n = len(firstComponent(full))
		}
		rewritten = location + full[n:]
	}
	r, err := registry.ParseReference(rewritten)
	if err != nil {
		return Host{}, fmt.Errorf("registries.conf %s: the reference rewritten for location %q, %q, is not valid: %v", e.source, location, rewritten, err)
	}
	h := defaultHost(defaultServer(r.Registry))
	h.Capabilities = []string{"pull", "resolve"}
	// a rewritten reference is asked as the mirror names it: its repository under the host's /v2
	// root, shown with the location's path
	if orig, _ := registry.ParseReference(full); r.Registry != orig.Registry || r.Repository != orig.Repository {
		h.Repository = r.Repository
		if _, p, ok := strings.Cut(location, "/"); ok {
			h.URL += "/" + p
		}
	}
	return h, nil
}

// entryLines returns the 1-based line of each [[registry]] header of a registries.conf, and for each
// registry the lines of its [[registry.mirror]] headers, so that a source points at its own entry.
func entryLines(b []byte) (regs []int, mirrors [][]int) {
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.ReplaceAll(strings.TrimSpace(l), " ", "")
		switch {
		case strings.HasPrefix(l, "[[registry]]"):
			regs = append(regs, i+1)
			mirrors = append(mirrors, nil)
		case strings.HasPrefix(l, "[[registry.mirror]]") && len(mirrors) > 0:
			mirrors[len(mirrors)-1] = append(mirrors[len(mirrors)-1], i+1)
		}
	}
	return regs, mirrors
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
	found := false
	for _, e := range es {
		n := e.Name()
		switch {
		case strings.HasSuffix(n, ".crt"):
			h.CA = append(h.CA, path.Join(dir, n))
			found = true
		case strings.HasSuffix(n, ".cert"):
			h.Client = append(h.Client, [2]string{path.Join(dir, n), path.Join(dir, strings.TrimSuffix(n, ".cert")+".key")})
			found = true
		}
	}
	if found {
		h.Source += " + " + dir
	}
}

const dockerDaemonJSON = "/etc/docker/daemon.json"

// daemonJSON is the part of docker's daemon.json that decides pulls.
type daemonJSON struct {
	Mirrors  []string `json:"registry-mirrors"`
	Insecure []string `json:"insecure-registries"`
	// What decides dockerd's image store, hence its puller (imageStore).
	Features      map[string]bool `json:"features"`
	StorageDriver string          `json:"storage-driver"`
	DataRoot      string          `json:"data-root"`
	Graph         string          `json:"graph"` // data-root's name before docker 17.05
	UsernsRemap   string          `json:"userns-remap"`
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
	b, err := l.root.ReadFile(f)
	if err == nil {
		l.read(f)
		if err := json.Unmarshal(b, &dj); err != nil {
			return nil, fmt.Errorf("%s: %v", l.root.show(f), err)
		}
	} else if l.root.Exists(f) {
		return nil, err
	}
	l.docker = &dj
	l.cfg.ImageStore = l.dockerImageStore(&dj, b)
	var hosts []Host
	if reg == "docker.io" {
		for _, m := range dj.Mirrors {
			h := defaultHost(m)
			h.Role, h.Capabilities, h.Source = "mirror", []string{"pull", "resolve"}, jsonEntry(f, b, m)
			hosts = append(hosts, h)
		}
	} else if len(dj.Mirrors) > 0 {
		l.note(WarnDockerMirrorHubOnly, "daemon.json registry-mirrors apply to Docker Hub only: this pull goes to "+reg+" directly", "", f)
	}
	hosts = append(hosts, defaultHost(defaultServer(reg)))
	for i := range hosts {
		if e, ok := insecureMatch(dj.Insecure, hosts[i].Host); ok {
			hosts[i].SkipVerify = true
			if hosts[i].Source == "default" {
				hosts[i].Source = jsonEntry(f, b, e)
			}
		}
		l.attachCertsDir(&hosts[i], path.Join("/etc/docker/certs.d", strings.TrimSuffix(hosts[i].Host, ":443")))
	}
	return hosts, nil
}

// jsonEntry is file:line of the first line holding the JSON string s.
func jsonEntry(f string, b []byte, s string) string {
	if n := lineOf(b, func(l string) bool { return strings.Contains(l, `"`+s+`"`) }); n > 0 {
		return fmt.Sprintf("%s:%d", f, n)
	}
	return f
}

// insecureMatch returns the insecure-registries entry that covers hostport: the name, name:port, or
// a CIDR holding its address.
func insecureMatch(list []string, hostport string) (string, bool) {
	host, _, _ := net.SplitHostPort(hostport)
	for _, e := range list {
		if e == hostport || e == host || strings.TrimSuffix(hostport, ":443") == e {
			return e, true
		}
		if _, n, err := net.ParseCIDR(e); err == nil {
			if ip := net.ParseIP(host); ip != nil && n.Contains(ip) {
				return e, true
			}
		}
	}
	return "", false
}
