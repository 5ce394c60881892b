package runtimeconfig

import (
	"slices"
)

// Detect reports which runtime's pull configuration the root holds, and the file that shows it:
// containerd's config.toml or certs.d, k3s's or rke2's containerd config, CRI-O's crio.conf or
// registries.conf, docker's daemon.json. A unit file alone is not configuration: with nothing to
// read, the runtime pulls with its defaults and ok is false.
func Detect(root Root) (rt Runtime, evidence string, ok bool) {
	l := &loader{root: root}
	for _, c := range []struct {
		rt    Runtime
		paths []string
	}{
		{Containerd, append([]string{containerdConfig, "/etc/containerd/certs.d"}, distroConfigs...)},
		{CRIO, []string{"/etc/crio/crio.conf", "/etc/crio/crio.conf.d", "/etc/containers/registries.conf", "/etc/containers/registries.conf.d"}},
		{Docker, []string{dockerDaemonJSON}},
	} {
		for _, p := range c.paths {
			if !root.Exists(p) {
				continue
			}
			if c.rt == Containerd && l.disablesCRI(containerdConfig) && l.dockerPresent() {
				// docker-ce's containerd.io ships a config.toml with the CRI disabled: dockerd pulls
				return Docker, p + " (CRI disabled; dockerd pulls)", true
			}
			if c.rt == Containerd {
				if f := l.configFile(); root.Exists(f) {
					p = f // the config the CRI runs with (Talos: not the system containerd's config.toml)
				}
			}
			return c.rt, p, true
		}
	}
	return "", "", false
}

// detect picks the runtime from what is installed: containerd (the Kubernetes default since
// dockershim's removal) before CRI-O before docker; a containerd with its CRI disabled next to
// docker is docker's.
func (l *loader) detect() Runtime {
	switch {
	case l.root.Exists(containerdConfig) || l.root.IsDir("/etc/containerd") || l.unitExists("containerd") || slices.ContainsFunc(distroConfigs, l.root.Exists):
		if l.disablesCRI(containerdConfig) && l.dockerPresent() {
			return Docker
		}
		return Containerd
	case l.root.Exists("/etc/crio/crio.conf") || l.root.IsDir("/etc/crio") || l.unitExists("crio"):
		return CRIO
	case l.root.Exists(dockerDaemonJSON) || l.unitExists("docker"):
		return Docker
	}
	return Containerd
}

func (l *loader) dockerPresent() bool {
	return l.root.Exists(dockerDaemonJSON) || l.unitExists("docker") || l.root.Exists("/usr/bin/dockerd")
}

// Present reports whether root holds anything of a container runtime: its configuration (Detect),
// or a containerd, CRI-O or docker unit (a runtime running on its defaults). An empty or mistyped
// host root holds neither.
func Present(root Root) bool {
	if _, _, ok := Detect(root); ok {
		return true
	}
	l := &loader{root: root}
	return l.unitExists("containerd") || l.unitExists("crio") || l.unitExists("docker") || root.IsDir("/etc/containerd") || root.IsDir("/etc/crio")
}
