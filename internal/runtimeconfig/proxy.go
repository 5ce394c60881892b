package runtimeconfig

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/pullpath/pullpath/internal/redact"
)

// unitDirs are systemd's system unit search path, highest priority first (systemd.unit(5)); /lib is
// /usr/lib's twin on systems without merged /usr.
var unitDirs = []string{"/etc/systemd/system.control", "/run/systemd/system.control", "/run/systemd/transient",
	"/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"}

// managerConfDirs hold system.conf drop-ins, highest priority first (systemd-system.conf(5)).
var managerConfDirs = []string{"/etc/systemd/system.conf.d", "/run/systemd/system.conf.d", "/usr/local/lib/systemd/system.conf.d", "/usr/lib/systemd/system.conf.d", "/lib/systemd/system.conf.d"}

func (l *loader) unitExists(svc string) bool {
	return l.unitFile(svc) != ""
}

// unitFile is the one file systemd loads for svc: the first in the search path (a unit in /etc
// replaces the packaged one entirely; drop-ins extend it). A unit linked to /dev/null is masked.
func (l *loader) unitFile(svc string) string {
	for _, d := range unitDirs {
		f := path.Join(d, svc+".service")
		if l.root.Exists(f) {
			if rp, err := l.root.resolve(f); err == nil && rp == "dev/null" {
				return ""
			}
			return f
		}
	}
	return ""
}

// envVal is one environment variable and where it was set.
type envVal struct{ value, origin string }

// iniAssignments returns the values of key= in section of an INI-style systemd file, in order,
// with their lines; an empty assignment is returned as "" (it resets a list).
func iniAssignments(b []byte, section, key string) (vals []string, lines []int) {
	cur := ""
	text := strings.ReplaceAll(string(b), "\\\n", " ") // continuation lines
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			cur = strings.Trim(line, "[]")
		case cur == section:
			k, v, ok := strings.Cut(line, "=")
			if ok && strings.TrimSpace(k) == key {
				vals = append(vals, strings.TrimSpace(v))
				lines = append(lines, i+1)
			}
		}
	}
	return vals, lines
}

// managerEnv is DefaultEnvironment= of the service manager: /etc/systemd/system.conf, then the
// system.conf.d drop-ins in file-name order. It reaches every unit (AKS writes its proxy here).
func (l *loader) managerEnv() map[string]envVal {
	if l.manager == nil {
		l.manager = &unitRead{l: l}
		l.capture(&l.manager.files, func() { l.manager.env = l.readManagerEnv() })
	}
	return l.manager.replay()
}

func (l *loader) readManagerEnv() map[string]envVal {
	env := map[string]envVal{}
	files := []string{}
	for _, f := range []string{"/etc/systemd/system.conf", "/run/systemd/system.conf", "/usr/lib/systemd/system.conf"} {
		if l.root.Exists(f) {
			files = append(files, f)
			break
		}
	}
	files = append(files, l.dropInFiles(managerConfDirs, ".")...)
	for _, f := range files {
		b, err := l.readFile(f)
		if err != nil {
			continue
		}
		vals, lines := iniAssignments(b, "Manager", "DefaultEnvironment")
		for i, v := range vals {
			if v == "" {
				clear(env)
				continue
			}
			for k, val := range parseEnvAssignments(v) {
				env[k] = envVal{val, fmt.Sprintf("%s:%d (DefaultEnvironment=)", f, lines[i])}
			}
			l.read(f)
		}
	}
	return env
}

// dropInFiles is dropIns ordered by file name, as systemd applies them.
func (l *loader) dropInFiles(bases []string, sub ...string) []string {
	byName := map[string]string{}
	for _, d := range bases {
		for _, s := range sub {
			files, _ := l.glob(path.Join(d, s, "*.conf"))
			for _, f := range files {
				if _, ok := byName[path.Base(f)]; !ok {
					byName[path.Base(f)] = f
				}
			}
		}
	}
	out := make([]string, 0, len(byName))
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[n])
	}
	return out
}

// unitEnv returns the environment systemd gives svc's processes (systemd.exec(5)): the manager's
// DefaultEnvironment=, then Environment= of the unit file and its drop-ins in order, then the
// EnvironmentFile= files, whose settings override Environment= whatever the order of the lines.
// An empty Environment= or EnvironmentFile= resets the list before it.
func (l *loader) unitEnv(svc string) map[string]envVal {
	return l.readUnit(svc).replay()
}

// unitRead is one reading of a unit: what it gives, and the files it read in order.
type unitRead struct {
	l         *loader
	execStart []Setting
	env       map[string]envVal
	files     []string
}

// replay notes the files read as read now, in their order, and returns a copy of the environment
// for the caller to change.
func (u *unitRead) replay() map[string]envVal {
	for _, f := range u.files {
		u.l.read(f)
	}
	return maps.Clone(u.env)
}

// capture runs fn with the files it reads noted in *files instead of the report's list.
func (l *loader) capture(files *[]string, fn func()) {
	prev := l.record
	l.record = files
	defer func() { l.record = prev }()
	fn()
}

// readUnit reads svc's unit file and drop-ins once per load for both its ExecStart= values
// (ServiceUnit, containerd's --config) and its environment (unitEnv); it notes no file as read
// (replay does). Without a unit file there is no ExecStart=.
func (l *loader) readUnit(svc string) *unitRead {
	if u, ok := l.units[svc]; ok {
		return u
	}
	u := &unitRead{l: l}
	l.capture(&u.files, func() { u.execStart, u.env = l.parseUnit(svc) })
	if l.units == nil {
		l.units = map[string]*unitRead{}
	}
	l.units[svc] = u
	return u
}

func (l *loader) parseUnit(svc string) (execStart []Setting, env map[string]envVal) {
	env = l.managerEnv()
	unit := l.unitFile(svc)
	files := []string{}
	if unit != "" {
		files = append(files, unit)
	}
	files = append(files, l.dropInFiles(unitDirs, svc+".service.d", "service.d")...)
	type assign struct{ text, origin string }
	var assigns, envFiles []assign
	for _, f := range files {
		b, err := l.readFile(f)
		if err != nil {
			continue
		}
		vals, lines := iniAssignments(b, "Service", "ExecStart")
		for i, v := range vals {
			if v == "" {
				execStart = nil
				continue
			}
			execStart = append(execStart, Setting{specifiers(v, svc), fmt.Sprintf("%s:%d (ExecStart=)", f, lines[i])})
		}
		vals, lines = iniAssignments(b, "Service", "Environment")
		for i, v := range vals {
			if v == "" {
				assigns = nil
				continue
			}
			assigns = append(assigns, assign{v, fmt.Sprintf("%s:%d (Environment=)", f, lines[i])})
		}
		vals, lines = iniAssignments(b, "Service", "EnvironmentFile")
		for i, v := range vals {
			if v == "" {
				envFiles = nil
				continue
			}
			envFiles = append(envFiles, assign{v, fmt.Sprintf("%s:%d", f, lines[i])})
		}
		l.read(f)
	}
	if unit == "" {
		// drop-ins without a unit file (or beside a masked one) make no service: systemd loads it
		// as not-found and runs nothing (TestCommandLineAgainstSystemd). Their environment still
		// reaches the proxy reading (unitEnv): the cli, probe and contract fixtures rely on it.
		execStart = nil
	}
	for _, a := range assigns {
		for k, v := range parseEnvAssignments(specifiers(a.text, svc)) {
			env[k] = envVal{v, a.origin}
		}
	}
	for _, a := range envFiles {
		ef := specifiers(strings.TrimPrefix(a.text, "-"), svc)
		eb, err := l.readFile(ef)
		if err != nil {
			continue
		}
		l.read(ef)
		for i, el := range strings.Split(string(eb), "\n") {
			el = strings.TrimSpace(el)
			if el == "" || el[0] == '#' || el[0] == ';' {
				continue
			}
			// one KEY=VALUE a line, the whole rest of the line the value (systemd.exec(5)):
			// KUBELET_FLAGS=--a=1 --b=2 is one variable
			k, v, ok := strings.Cut(strings.TrimPrefix(el, "export "), "=")
			if k = strings.TrimSpace(k); !ok || k == "" {
				continue
			}
			v = strings.TrimSpace(v)
			if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
				v = v[1 : len(v)-1]
			}
			env[k] = envVal{v, fmt.Sprintf("%s:%d (EnvironmentFile= in %s)", ef, i+1, a.origin)}
		}
	}
	return execStart, env
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

// specifiers expands the unit-name specifiers of systemd.unit(5) in a setting of svc's unit
// (k3s's and rke2's units read EnvironmentFile=-/etc/default/%N): %n the full name, %N and %p the
// name without its type (no instances here), %i empty, %% a percent sign.
func specifiers(s, svc string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	return strings.NewReplacer("%%", "%", "%n", svc+".service", "%N", svc, "%p", svc, "%i", "").Replace(s)
}

// proxyVars picks the proxy variables as Go's httpproxy.FromEnvironment does (upper case first).
func proxyVars(env map[string]envVal) (httpP, httpsP, noP envVal) {
	get := func(k string) envVal {
		if v := env[k]; v.value != "" {
			return v
		}
		return env[strings.ToLower(k)]
	}
	return get("HTTP_PROXY"), get("HTTPS_PROXY"), get("NO_PROXY")
}

// origins lists where the set variables came from: one entry per file and directive, its lines
// joined ("/etc/systemd/system.conf.d/proxy.conf:2,4,6 (DefaultEnvironment=)").
func origins(vs ...envVal) string {
	type key struct{ file, rest string }
	var order []key
	lines := map[key][]string{}
	for _, v := range vs {
		if v.value == "" {
			continue
		}
		// origin is "file:line (directive…)" or a bare name
		loc, rest, _ := strings.Cut(v.origin, " ")
		file, line, ok := strings.Cut(loc, ":")
		if !ok {
			file, line = loc, ""
		}
		k := key{file, rest}
		if _, seen := lines[k]; !seen {
			order = append(order, k)
		}
		if line != "" && !slices.Contains(lines[k], line) {
			lines[k] = append(lines[k], line)
		} else if lines[k] == nil {
			lines[k] = []string{}
		}
	}
	var out []string
	for _, k := range order {
		ls := lines[k]
		slices.SortFunc(ls, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) }) // numeric order
		s := k.file
		if len(ls) > 0 {
			s += ":" + strings.Join(ls, ",")
		}
		if k.rest != "" {
			s += " " + k.rest
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// runtimeEnv is the environment the runtime's process runs with, as its service manager hands it
// over, and the unit that sets it.
func (l *loader) runtimeEnv(rt Runtime) (svc string, env map[string]envVal) {
	svc = map[Runtime]string{Containerd: "containerd", CRIO: "crio", Docker: "docker"}[rt]
	env = l.unitEnv(svc)
	if esvc, units := embeddedUnits(l.configFile()); rt == Containerd && esvc != "" {
		// k3s and rke2 run containerd as their child: their unit's environment applies, and
		// CONTAINERD_HTTP(S)_PROXY / CONTAINERD_NO_PROXY override the plain ones for containerd only.
		svc = esvc
		for _, unit := range units {
			if !l.unitExists(unit) {
				continue
			}
			for k, v := range l.unitEnv(unit) {
				env[k] = v
			}
		}
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
			if v, ok := env["CONTAINERD_"+k]; ok {
				env[k] = v
				delete(env, strings.ToLower(k))
			}
		}
	}
	if rt == Containerd {
		maps.Copy(env, l.wrapperEnv(l.configFile()))
	}
	return svc, env
}

// loadProxy reads the runtime's proxy environment as systemd hands it to the runtime, names where
// each variable came from, and flags proxies that the shell or the kubelet have but the runtime does not.
func (l *loader) loadProxy(rt Runtime) {
	svc, env := l.runtimeEnv(rt)
	hp, hsp, np := proxyVars(env)
	p := Proxy{HTTPProxy: hp.value, HTTPSProxy: hsp.value, NoProxy: np.value, Source: origins(hsp, hp, np)}
	if dj := l.docker; rt == Docker && dj != nil && (dj.Proxies.HTTP != "" || dj.Proxies.HTTPS != "") {
		// Docker 23+ takes "proxies" from daemon.json, over the unit's environment.
		p = Proxy{HTTPProxy: dj.Proxies.HTTP, HTTPSProxy: dj.Proxies.HTTPS, NoProxy: dj.Proxies.No, Source: dockerDaemonJSON + " (proxies)"}
	}
	l.cfg.rawProxy = p
	l.cfg.Proxy = Proxy{HTTPProxy: redact.ProxyURL(p.HTTPProxy), HTTPSProxy: redact.ProxyURL(p.HTTPSProxy), NoProxy: p.NoProxy, Source: p.Source}
	if p.HTTPProxy != "" || p.HTTPSProxy != "" {
		return
	}
	// The runtime has no proxy. Does anything else on the node?
	if b, err := l.readFile("/etc/environment"); err == nil {
		env := map[string]envVal{}
		for _, line := range strings.Split(string(b), "\n") {
			for k, v := range parseEnvAssignments(strings.TrimSpace(line)) {
				env[k] = envVal{v, "/etc/environment"}
			}
		}
		if hp, hsp, _ := proxyVars(env); hp.value != "" || hsp.value != "" {
			l.read("/etc/environment")
			l.warn(WarnProxyNotForRuntime, "/etc/environment sets a proxy for login shells, but "+svc+"'s unit does not: curl from a shell goes through the proxy, the runtime goes direct",
				"if the node needs the proxy, set HTTP(S)_PROXY and NO_PROXY "+l.proxyHome(rt, svc), "/etc/environment")
		}
	}
	if hp, hsp, _ := proxyVars(l.unitEnv("kubelet")); hp.value != "" || hsp.value != "" {
		l.warn(WarnProxyNotForRuntime, "the kubelet's unit sets a proxy but "+svc+"'s does not: image pulls are done by "+svc+", so they go direct",
			"set the same HTTP(S)_PROXY and NO_PROXY "+l.proxyHome(rt, svc), origins(hsp, hp))
	}
}

// proxyHome says where this node's runtime takes its proxy from, for a fix: the distributions that
// start containerd themselves have their own place, the rest a systemd drop-in.
func (l *loader) proxyHome(rt Runtime, svc string) string {
	if rt == Containerd {
		switch l.configFile() {
		case microk8sConfig:
			return "in " + microk8sEnv + " (MicroK8s's containerd wrapper sources it) and restart MicroK8s"
		case k0sConfig:
			return "in the k0sworker (or k0scontroller) unit's environment, where k0s hands CONTAINERD_HTTPS_PROXY and HTTP(S)_PROXY to its containerd, and restart k0s"
		case talosCRIConfig:
			return "in the Talos machine config (machine.env: https_proxy, no_proxy) and apply it"
		}
	}
	return "in a " + svc + ".service.d drop-in and restart " + svc
}
