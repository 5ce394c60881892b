package runtimeconfig

import (
	"testing"
	"testing/fstest"
)

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fsys     fstest.MapFS
		rt       Runtime
		evidence string
	}{
		{"containerd", fstest.MapFS{"etc/containerd/config.toml": file(kindConfig)}, Containerd, "/etc/containerd/config.toml"},
		{"containerd certs.d only", fstest.MapFS{"etc/containerd/certs.d/r.example/hosts.toml": file("[host]\n")}, Containerd, "/etc/containerd/certs.d"},
		{"k3s", fstest.MapFS{"var/lib/rancher/k3s/agent/etc/containerd/config.toml": file(kindConfig)}, Containerd, k3sConfig},
		{"rke2", fstest.MapFS{"var/lib/rancher/rke2/agent/etc/containerd/config.toml": file(kindConfig)}, Containerd, rke2Config},
		{"Talos: the CRI's config, not the system containerd's", fstest.MapFS{
			"etc/containerd/config.toml": file("version = 2\ndisabled_plugins = [\n  \"io.containerd.grpc.v1.cri\",\n]\n"),
			"etc/cri/containerd.toml":    file(kindConfig),
		}, Containerd, talosCRIConfig},
		{"crio", fstest.MapFS{"etc/crio/crio.conf": file("[crio]\n")}, CRIO, "/etc/crio/crio.conf"},
		{"registries.conf", fstest.MapFS{"etc/containers/registries.conf": file("")}, CRIO, "/etc/containers/registries.conf"},
		{"docker", fstest.MapFS{"etc/docker/daemon.json": file("{}")}, Docker, dockerDaemonJSON},
		{"docker-ce's containerd.io with the CRI disabled", fstest.MapFS{
			"etc/containerd/config.toml":        file("#   Copyright 2018-2022 Docker Inc.\n\ndisabled_plugins = [\"cri\"]\n"),
			"lib/systemd/system/docker.service": file("[Service]\nExecStart=/usr/bin/dockerd\n"),
		}, Docker, "/etc/containerd/config.toml (CRI disabled; dockerd pulls)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, ev, ok := Detect(Root{FS: tc.fsys, Name: "/"})
			if !ok || rt != tc.rt || ev != tc.evidence {
				t.Errorf("Detect = %s, %q, %t; want %s, %q", rt, ev, ok, tc.rt, tc.evidence)
			}
		})
	}
	// units and binaries without configuration: the runtime pulls with its defaults; nothing to read
	for name, fsys := range map[string]fstest.MapFS{
		"empty":     {},
		"unit only": {"lib/systemd/system/containerd.service": file("[Service]\n")},
		"resolver":  {"etc/resolv.conf": file("nameserver 10.0.0.2\n")},
	} {
		if rt, ev, ok := Detect(Root{FS: fsys, Name: "/"}); ok {
			t.Errorf("%s: Detect = %s, %q, true; want nothing", name, rt, ev)
		}
	}
}
