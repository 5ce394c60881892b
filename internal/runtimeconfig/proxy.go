package runtimeconfig

import (
	"path"
	"strings"
)

// unitDirs are where systemd looks for units and drop-ins, in override order (later wins).
var unitDirs = []string{"/lib/systemd/system", "/usr/lib/systemd/system", "/etc/systemd/system", "/run/systemd/system"}

func (l *loader) unitExists(svc string) bool {
	for _, d := range unitDirs {
		if l.root.Exists(path.Join(d, svc+".service")) {
			return true
		}
	}
	return false
}

// unitEnv returns the environment a service gets from its unit and drop-ins (Environment= and
// EnvironmentFile=), and the files it came from.
func (l *loader) unitEnv(svc string) (map[string]string, []string) {
	env := map[string]string{}
	var files []string
	var units []string
	for _, d := range unitDirs {
		units = append(units, path.Join(d, svc+".service"))
	}
	for _, d := range unitDirs {
		drops, _ := l.root.Glob(path.Join(d, svc+".service.d", "*.conf"))
		units = append(units, drops...)
	}
	for _, u := range units {
		b, err := l.root.ReadFile(u)
		if err != nil {
			continue
		}
		l.read(u)
		used := false
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "Environment="):
				for k, v := range parseEnvAssignments(strings.TrimPrefix(line, "Environment=")) {
					env[k] = v
					used = true
				}
			case strings.HasPrefix(line, "EnvironmentFile="):
				f := strings.TrimPrefix(strings.TrimPrefix(line, "EnvironmentFile="), "-")
				if eb, err := l.root.ReadFile(f); err == nil {
					l.read(f)
					for _, el := range strings.Split(string(eb), "\n") {
						for k, v := range parseEnvAssignments(strings.TrimPrefix(strings.TrimSpace(el), "export ")) {
							env[k] = v
							used = true
						}
					}
					if used {
						files = append(files, f)
					}
				}
			}
		}
		if used {
			files = append(files, u)
		}
	}
	return env, files
}

// parseEnvAssignments parses `"A=1" B=2 "C=x y"` as systemd does (quotes around whole assignments).
func parseEnvAssignments(s string) map[string]string {
	out := map[string]string{}
	var cur strings.Builder
	inQuote := byte(0)
	flush := func() {
		kv := cur.String()
		cur.Reset()
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" && !strings.HasPrefix(k, "#") {
			out[k] = strings.Trim(v, `"'`)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote != 0 && c == inQuote:
			inQuote = 0
		case inQuote == 0 && (c == '"' || c == '\''):
			inQuote = c
		case inQuote == 0 && (c == ' ' || c == '\t'):
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

func proxyVars(env map[string]string) (httpP, httpsP, noP string) {
	get := func(k string) string {
		if v := env[k]; v != "" {
			return v
		}
		return env[strings.ToLower(k)]
	}
	return get("HTTP_PROXY"), get("HTTPS_PROXY"), get("NO_PROXY")
}

// loadProxy reads the runtime's proxy environment from its unit, and flags proxies that the shell
// or the kubelet have but the runtime does not.
func (l *loader) loadProxy(rt Runtime) {
	svc := map[Runtime]string{Containerd: "containerd", CRIO: "crio", Docker: "docker"}[rt]
	env, files := l.unitEnv(svc)
	if esvc, units := embeddedUnits(l.configFile()); rt == Containerd && esvc != "" {
		// k3s and rke2 run containerd as their child: their unit's environment applies, and
		// CONTAINERD_HTTP(S)_PROXY / CONTAINERD_NO_PROXY override the plain ones for containerd only.
		svc = esvc
		for _, unit := range units {
			kenv, kfiles := l.unitEnv(unit)
			for k, v := range kenv {
				env[k] = v
			}
			files = append(files, kfiles...)
		}
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
			if v, ok := env["CONTAINERD_"+k]; ok {
				env[k] = v
			}
		}
	}
	p := Proxy{}
	p.HTTPProxy, p.HTTPSProxy, p.NoProxy = proxyVars(env)
	if dj := l.docker; rt == Docker && dj != nil && (dj.Proxies.HTTP != "" || dj.Proxies.HTTPS != "") {
		// Docker 23+ takes "proxies" from daemon.json, over the unit's environment.
		p.HTTPProxy, p.HTTPSProxy, p.NoProxy = dj.Proxies.HTTP, dj.Proxies.HTTPS, dj.Proxies.No
		files = append(files, dockerDaemonJSON)
	}
	p.Source = strings.Join(files, ", ")
	l.cfg.rawProxy = p
	l.cfg.Proxy = Proxy{HTTPProxy: redactProxyURL(p.HTTPProxy), HTTPSProxy: redactProxyURL(p.HTTPSProxy), NoProxy: p.NoProxy, Source: p.Source}
	if p.HTTPProxy != "" || p.HTTPSProxy != "" {
		return
	}
	// The runtime has no proxy. Does anything else on the node?
	if b, err := l.root.ReadFile("/etc/environment"); err == nil {
		env := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			for k, v := range parseEnvAssignments(strings.TrimSpace(line)) {
				env[k] = v
			}
		}
		if hp, hsp, _ := proxyVars(env); hp != "" || hsp != "" {
			l.read("/etc/environment")
			l.warn(WarnProxyNotForRuntime, "/etc/environment sets a proxy for login shells, but "+svc+"'s unit does not: curl from a shell goes through the proxy, the runtime goes direct",
				"if the node needs the proxy, set HTTP(S)_PROXY and NO_PROXY in a "+svc+".service.d drop-in and restart "+svc, "/etc/environment")
		}
	}
	if kenv, kfiles := l.unitEnv("kubelet"); len(kfiles) > 0 {
		if hp, hsp, _ := proxyVars(kenv); hp != "" || hsp != "" {
			l.warn(WarnProxyNotForRuntime, "the kubelet's unit sets a proxy but "+svc+"'s does not: image pulls are done by "+svc+", so they go direct",
				"set the same HTTP(S)_PROXY and NO_PROXY in a "+svc+".service.d drop-in", strings.Join(kfiles, ", "))
		}
	}
}
