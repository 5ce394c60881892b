package runtimeconfig

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// Where distributions start the CRI's containerd, read from their generators (the corpus's SOURCE
// notes name the commits): none of them uses /etc/containerd/config.toml.
const (
	k0sConfig      = "/etc/k0s/containerd.toml"                        // k0s: --config=/etc/k0s/containerd.toml
	microk8sConfig = "/var/snap/microk8s/current/args/containerd.toml" // rendered from args/containerd-template.toml
	talosCRIConfig = "/etc/cri/containerd.toml"                        // Talos: its own containerd uses /etc/containerd/config.toml with the CRI disabled
)

// distroConfigs are tried in this order when the standard file is absent or not the CRI's.
var distroConfigs = []string{k3sConfig, rke2Config, k0sConfig, microk8sConfig, talosCRIConfig}

// configFile returns the containerd config the CRI runs with: the file the containerd unit passes
// with --config (Flatcar: --config ${CONTAINERD_CONFIG}, /usr/share/containerd/config.toml), else
// /etc/containerd/config.toml unless it disables the CRI plugin, else a distribution's own file. A
// missing file is containerd's built-in defaults (srvconfig.LoadConfig ignores a missing file).
func (l *loader) configFile() string {
	if l.located == "" {
		l.located = l.locate()
	}
	return l.located
}

func (l *loader) locate() string {
	if f := l.unitConfigFlag("containerd"); f != "" {
		return f
	}
	if l.root.Exists(containerdConfig) && !l.disablesCRI(containerdConfig) {
		return containerdConfig
	}
	for _, f := range distroConfigs {
		if l.root.Exists(f) {
			return f
		}
	}
	return containerdConfig
}

// unitConfigFlag returns the --config (-c) value of svc's ExecStart, read as systemd passes it
// (CommandLine) and as containerd's urfave/cli parses it with Go's flag package: one or two dashes,
// the value after = or in the next word, the last one winning, none after "--"; "" without a unit
// or the flag.
func (l *loader) unitConfigFlag(svc string) string {
	u := l.readUnit(svc) // the proxy reading notes the unit's files as read
	if len(u.execStart) == 0 {
		return ""
	}
	args := CommandLine(u.execStart[len(u.execStart)-1], settings(u.env))
	v := ""
	for i := 1; i < len(args); i++ {
		a := args[i].Text
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if name != "config" && name != "c" {
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				break
			}
			i++
			val = args[i].Text
		}
		v = val
	}
	if path.IsAbs(v) { // "" when no flag was given
		return path.Clean(v)
	}
	return ""
}

// disablesCRI reports whether a containerd config disables the CRI plugin, whatever the form of its
// disabled_plugins list (Talos writes one name a line; docker-ce's containerd.io writes ["cri"],
// which also tells that dockerd, not a CRI, pulls).
func (l *loader) disablesCRI(f string) bool {
	b, err := l.readFile(f)
	if err != nil {
		return false
	}
	var m struct {
		Disabled []string `toml:"disabled_plugins"`
	}
	if _, err := toml.Decode(string(b), &m); err != nil {
		return false
	}
	return slices.ContainsFunc(m.Disabled, func(p string) bool {
		return p == "cri" || p == criV1 || p == criImages
	})
}

// microk8sEnv is the environment file MicroK8s's wrapper (run-containerd-with-args) sources with
// `set -a` before it execs containerd: where MicroK8s documents the runtime's proxy.
const microk8sEnv = "/var/snap/microk8s/current/args/containerd-env"

// wrapperEnv returns what a distribution's start script adds to containerd's environment after
// systemd's: MicroK8s's args/containerd-env. Assignments that expand variables ($PATH) are skipped.
func (l *loader) wrapperEnv(configFile string) map[string]envVal {
	if configFile != microk8sConfig {
		return nil
	}
	b, err := l.readFile(microk8sEnv)
	if err != nil {
		return nil
	}
	l.read(microk8sEnv)
	env := map[string]envVal{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "export ")
		if line == "" || line[0] == '#' || strings.Contains(line, "$") {
			continue
		}
		for k, v := range parseEnvAssignments(line) {
			env[k] = envVal{v, fmt.Sprintf("%s:%d", microk8sEnv, i+1)}
		}
	}
	return env
}
