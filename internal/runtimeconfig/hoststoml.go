package runtimeconfig

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/pullpath/pullpath/internal/redact"
)

// hostFile is one parsed certs.d/<dir>/hosts.toml.
type hostFile struct {
	file     string
	hosts    []Host // [host."…"] entries in file order, then server
	hasHosts bool   // at least one [host] table
}

var reHostHeader = regexp.MustCompile(`^\[host\."([^"]+)"\]`)

// parseHostsToml parses hosts.toml with containerd's semantics (core/remotes/docker/config/hosts.go):
// [host."URL"] tables in file order, then `server`; each host's ca/client paths relative to the file's
// directory; "/v2" appended to the path unless override_path.
func parseHostsToml(file string, b []byte, defaultServer string) (*hostFile, error) {
	var raw map[string]any
	md, err := toml.Decode(string(b), &raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	hf := &hostFile{file: file}
	dir := path.Dir(file)
	// file order of [host."…"] tables
	var order []string
	seen := map[string]bool{}
	for _, key := range md.Keys() {
		if len(key) >= 2 && key[0] == "host" && !seen[key[1]] {
			seen[key[1]] = true
			order = append(order, key[1])
		}
	}
	hostTables, _ := raw["host"].(map[string]any)
	if raw["host"] != nil && hostTables == nil {
		return nil, fmt.Errorf("%s: `host` must be a table of [host.\"URL\"] entries", file)
	}
	hf.hasHosts = raw["host"] != nil
	for _, u := range order {
		t, ok := hostTables[u].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: [host.%q] is not a table", file, u)
		}
		h, err := hostEntry(u, t, dir, file)
		if err != nil {
			return nil, err
		}
		h.Role = "mirror"
		h.Source = fmt.Sprintf("%s:%d", file, lineOf(b, func(l string) bool { m := reHostHeader.FindStringSubmatch(l); return m != nil && m[1] == u }))
		hf.hosts = append(hf.hosts, h)
	}
	server, _ := raw["server"].(string)
	if raw["server"] != nil && server == "" {
		return nil, fmt.Errorf("%s: server must be a URL string", file)
	}
	src := "default"
	if server != "" {
		src = fmt.Sprintf("%s:%d", file, lineOf(b, func(l string) bool { return strings.HasPrefix(l, "server") }))
	} else {
		server = defaultServer
	}
	h, err := hostEntry(server, raw, dir, file)
	if err != nil {
		return nil, err
	}
	h.Role, h.Source = "registry", src
	// A [host] that is the server itself is how containerd's docs give a registry its CA
	// (docs/cri/config.md:742-750) and what kubespray writes (hosts.toml.j2:1-8): the registry, not
	// a mirror. containerd tries both, the [host] first, then the server again with no dedup
	// (core/remotes/docker/config/hosts.go:403-419 at containerd 301026e5; the same in v1.6.20).
	own := hostKey(h)
	for i := range hf.hosts {
		if hostKey(hf.hosts[i]) == own {
			hf.hosts[i].Role = "registry"
		}
	}
	hf.hosts = append(hf.hosts, h)
	return hf, nil
}

// hostKey is a host's scheme, name and port (the default port made explicit), with Docker Hub's
// two names as one: containerd's server for docker.io is registry-1.docker.io (config/hosts.go:101-104),
// and its documented default for docker.io, as kubespray's, names one as the server and the other
// as the [host] (docs/hosts.md:182-187).
func hostKey(h Host) string {
	name, port, err := net.SplitHostPort(h.Host)
	if err != nil {
		name, port = h.Host, ""
	}
	name = strings.ToLower(name)
	if name == "docker.io" {
		name = "registry-1.docker.io"
	}
	scheme := "https"
	if h.PlainHTTP {
		scheme = "http"
	}
	return scheme + "://" + net.JoinHostPort(name, port)
}

// hostEntry builds one host from its keys (a [host] table, or the top level for the server).
func hostEntry(server string, t map[string]any, dir, file string) (Host, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		// containerd accepts a bare host as https://host
		u, err = url.Parse("https://" + server)
		if err != nil || u.Host == "" {
			return Host{}, fmt.Errorf("%s: %q is not a registry URL", file, server)
		}
	}
	h := Host{Capabilities: []string{"pull", "resolve", "push"}, CA: []string{}, PlainHTTP: u.Scheme == "http"}
	port := u.Port()
	if port == "" {
		port = map[bool]string{true: "80", false: "443"}[h.PlainHTTP]
	}
	h.Host = net.JoinHostPort(u.Hostname(), port)
	if b, ok := t["override_path"].(bool); ok {
		h.OverridePath = b
	}
	p := strings.TrimSuffix(u.Path, "/")
	if !h.OverridePath && !strings.HasSuffix(p, "/v2") {
		p += "/v2"
	}
	h.URL = u.Scheme + "://" + u.Host + p
	if v, ok := t["capabilities"]; ok {
		caps, err := strings1(v)
		if err != nil {
			return Host{}, fmt.Errorf("%s: capabilities of %s: %v", file, server, err)
		}
		h.Capabilities = caps
	}
	if v, ok := t["ca"]; ok {
		cas, err := strings1(v)
		if err != nil {
			return Host{}, fmt.Errorf("%s: ca of %s: %v", file, server, err)
		}
		for _, c := range cas {
			h.CA = append(h.CA, rel(dir, c))
		}
	}
	if v, ok := t["client"]; ok {
		pairs, err := clientPairs(v)
		if err != nil {
			return Host{}, fmt.Errorf("%s: client of %s: %v", file, server, err)
		}
		for _, pr := range pairs {
			h.Client = append(h.Client, [2]string{rel(dir, pr[0]), rel(dir, pr[1])})
		}
	}
	if v, ok := t["skip_verify"]; ok {
		b, ok := v.(bool)
		if !ok {
			return Host{}, fmt.Errorf("%s: skip_verify of %s must be true or false", file, server)
		}
		h.SkipVerify = b
	}
	if v, ok := t["dial_timeout"].(string); ok {
		h.DialTimeout = v
	}
	if hv, ok := t["header"].(map[string]any); ok {
		h.headerRaw = map[string][]string{}
		h.Header = map[string][]string{}
		for k, v := range hv {
			vals, err := strings1(v)
			if err != nil {
				return Host{}, fmt.Errorf("%s: header %s of %s: %v", file, k, server, err)
			}
			h.headerRaw[k] = vals
			h.Header[k] = redact.Header(k, vals)
		}
	}
	return h, nil
}

// strings1 accepts a string or a list of strings.
func strings1(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("want strings, got %T", e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a string or a list of strings, got %T", v)
}

// clientPairs accepts "cert.pem" (cert and key in one file), ["cert","key"], or [["c","k"], …].
func clientPairs(v any) ([][2]string, error) {
	switch x := v.(type) {
	case string:
		return [][2]string{{x, x}}, nil
	case []any:
		if len(x) == 2 {
			a, ok1 := x[0].(string)
			b, ok2 := x[1].(string)
			if ok1 && ok2 {
				return [][2]string{{a, b}}, nil
			}
		}
		var out [][2]string
		for _, e := range x {
			switch p := e.(type) {
			case string:
				out = append(out, [2]string{p, p})
			case []any:
				if len(p) != 2 {
					return nil, fmt.Errorf("a client pair needs a cert and a key")
				}
				a, ok1 := p[0].(string)
				b, ok2 := p[1].(string)
				if !ok1 || !ok2 {
					return nil, fmt.Errorf("client pair entries must be strings")
				}
				out = append(out, [2]string{a, b})
			default:
				return nil, fmt.Errorf("unexpected client entry %T", e)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a path, a [cert, key] pair or a list of pairs, got %T", v)
}

func rel(dir, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(dir, p)
}

// hostDirs lists the certs.d directories containerd tries for host (host:port written as host_port_,
// then the name as given, then _default).
func hostDirs(host string) []string {
	var out []string
	if i := strings.LastIndex(host, ":"); i > 0 && !strings.HasSuffix(host, "]") {
		out = append(out, host[:i]+"_"+host[i+1:]+"_")
	}
	return append(out, host, "_default")
}
