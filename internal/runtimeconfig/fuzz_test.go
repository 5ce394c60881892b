package runtimeconfig

import (
	"testing"
	"testing/fstest"
)

// A node's files are input like any other: whatever config.toml, registries.conf, unit or proxy
// drop-in a node holds, loading it gives a configuration or an error, never a panic, and the hosts
// it lists end with the registry (or none, when the runtime blocks it).
func FuzzLoadNodeFiles(f *testing.F) {
	f.Add(kindConfig, "[host]\n", "[Service]\nExecStart=/usr/bin/containerd --config /etc/containerd/config.toml\nEnvironment=HTTPS_PROXY=http://p:3128\n", "")
	f.Add("version = 3\n[plugins.'io.containerd.cri.v1.images'.registry]\nconfig_path = '/etc/containerd/certs.d:/x'\n", "server = \"https://r\"\n", "", "")
	f.Add("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\nendpoint = [\"https://m/v2/x\", \"\"]\n", "", "[Service]\nEnvironmentFile=-/etc/environment\n", "")
	f.Add("", "", "", "unqualified-search-registries = [\"docker.io\"]\n[[registry]]\nlocation = \"docker.io\"\nblocked = true\n[[registry.mirror]]\nlocation = \"m.example/x\"\npull-from-mirror = \"digest-only\"\n")
	f.Add("imports = [\"/etc/containerd/conf.d/*.toml\"]\ndisabled_plugins = [\n\"io.containerd.grpc.v1.cri\",\n]\n", "[host.\"http://m\"]\nskip_verify = true\n", "[Service]\nExecStart=/usr/bin/containerd -c ${CFG}\nEnvironment=CFG=/usr/share/containerd/config.toml\n", "")
	f.Fuzz(func(t *testing.T, config, hosts, unit, registries string) {
		fsys := fstest.MapFS{
			"etc/containerd/config.toml":                         file(config),
			"etc/containerd/certs.d/docker.io/hosts.toml":        file(hosts),
			"etc/systemd/system/containerd.service":              file(unit),
			"etc/systemd/system/containerd.service.d/proxy.conf": file(unit),
			"etc/resolv.conf":                                    file("nameserver 10.0.0.2\n"),
		}
		if registries != "" {
			fsys = fstest.MapFS{
				"etc/crio/crio.conf":              file("[crio.image]\n"),
				"etc/containers/registries.conf":  file(registries),
				"etc/systemd/system/crio.service": file(unit),
				"etc/resolv.conf":                 file("nameserver 10.0.0.2\n"),
			}
		}
		for _, image := range []string{"nginx:1.27", "docker.io/library/nginx@sha256:" + sha64} {
			cfg, err := Load(Options{Root: fsys, Name: "/", Image: image})
			if err != nil {
				continue
			}
			if n := len(cfg.Hosts); n > 0 && cfg.Hosts[n-1].Role != "registry" && cfg.Hosts[n-1].Role != "mirror" {
				t.Fatalf("the last host is a %s: %+v", cfg.Hosts[n-1].Role, cfg.Hosts)
			}
		}
	})
}

const sha64 = "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b"
