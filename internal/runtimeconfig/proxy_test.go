package runtimeconfig

import (
	"strings"
	"testing"
	"testing/fstest"
)

// AgentBaker's HTTP-proxy feature (parts/linux/cloud-init/artifacts/cse_config.sh,
// configureEtcEnvironment): DefaultEnvironment= in /etc/systemd/system.conf.d/proxy.conf reaches
// every unit, containerd's included; /etc/environment only the shells and the kubelet (through its
// EnvironmentFile= drop-in).
const aksProxyConf = `[Manager]
DefaultEnvironment="HTTP_PROXY=http://10.0.0.4:3128/"
DefaultEnvironment="http_proxy=http://10.0.0.4:3128/"
DefaultEnvironment="HTTPS_PROXY=http://10.0.0.4:3128/"
DefaultEnvironment="https_proxy=http://10.0.0.4:3128/"
DefaultEnvironment="NO_PROXY=localhost,127.0.0.1,168.63.129.16,169.254.169.254,10.0.0.0/16,konnectivity,.svc,.cluster.local"
DefaultEnvironment="no_proxy=localhost,127.0.0.1,168.63.129.16,169.254.169.254,10.0.0.0/16,konnectivity,.svc,.cluster.local"
`

func TestProxyFromSystemdManager(t *testing.T) {
	fsys := withResolv(fstest.MapFS{
		"etc/containerd/config.toml":                              file(kindConfig),
		"etc/systemd/system.conf.d/proxy.conf":                    file(aksProxyConf),
		"etc/environment":                                         file("HTTPS_PROXY=http://10.0.0.4:3128/\nhttps_proxy=http://10.0.0.4:3128/\n"),
		"etc/systemd/system/kubelet.service.d/10-httpproxy.conf":  file("[Service]\nEnvironmentFile=/etc/environment\n"),
		"etc/systemd/system/containerd.service.d/exec_start.conf": file("[Service]\nExecStartPost=/sbin/iptables -P FORWARD ACCEPT\nLimitNOFILE=1048576\n"),
		"usr/lib/systemd/system/containerd.service":               file("[Service]\nExecStart=/usr/bin/containerd\n"),
	})
	c := load(t, fsys, "myacr.azurecr.io/team/app:1", "")
	if c.Proxy.HTTPSProxy != "http://10.0.0.4:3128/" || !strings.Contains(c.Proxy.NoProxy, ".cluster.local") {
		t.Fatalf("proxy %+v, want the manager's DefaultEnvironment", c.Proxy)
	}
	if c.Proxy.Source != "/etc/systemd/system.conf.d/proxy.conf:2,4,6 (DefaultEnvironment=)" {
		t.Errorf("source %q", c.Proxy.Source)
	}
	if hasCode(c, WarnProxyNotForRuntime) || c.Hosts[0].Proxy != "http://10.0.0.4:3128/" || c.Broken() {
		t.Errorf("containerd has the proxy: warnings %+v host proxy %q", c.Warnings, c.Hosts[0].Proxy)
	}
}

func TestProxySystemdOrder(t *testing.T) {
	base := func() fstest.MapFS {
		return withResolv(fstest.MapFS{
			"etc/containerd/config.toml":            file(kindConfig),
			"etc/systemd/system.conf":               file("[Manager]\n#DefaultEnvironment=HTTPS_PROXY=http://commented:1\nDefaultEnvironment=HTTPS_PROXY=http://manager:3128\n"),
			"lib/systemd/system/containerd.service": file("[Service]\nEnvironment=HTTPS_PROXY=http://packaged-unit:3128\nExecStart=/usr/bin/containerd\n"),
		})
	}
	for _, tc := range []struct {
		name, want, source string
		extra              fstest.MapFS
	}{
		{"the packaged unit's Environment= over the manager", "http://packaged-unit:3128", "/lib/systemd/system/containerd.service:2 (Environment=)", nil},
		{"a unit in /etc replaces the packaged one", "http://manager:3128", "/etc/systemd/system.conf:3 (DefaultEnvironment=)", fstest.MapFS{
			"etc/systemd/system/containerd.service": file("[Service]\nExecStart=/usr/local/bin/containerd\n"),
		}},
		{"drop-ins in file-name order, across directories", "http://20-etc:3128", "/etc/systemd/system/containerd.service.d/20-proxy.conf:2 (Environment=)", fstest.MapFS{
			"etc/systemd/system/containerd.service.d/20-proxy.conf":     file("[Service]\nEnvironment=\"HTTPS_PROXY=http://20-etc:3128\"\n"),
			"usr/lib/systemd/system/containerd.service.d/10-proxy.conf": file("[Service]\nEnvironment=\"HTTPS_PROXY=http://10-usr:3128\"\n"),
		}},
		{"a drop-in in /etc hides the same name in /usr/lib", "http://etc:3128", "/etc/systemd/system/containerd.service.d/50-proxy.conf:2 (Environment=)", fstest.MapFS{
			"etc/systemd/system/containerd.service.d/50-proxy.conf":     file("[Service]\nEnvironment=HTTPS_PROXY=http://etc:3128\n"),
			"usr/lib/systemd/system/containerd.service.d/50-proxy.conf": file("[Service]\nEnvironment=HTTPS_PROXY=http://usr:3128 NO_PROXY=x\n"),
		}},
		{"EnvironmentFile= overrides Environment= whatever the line order", "http://from-file:3128", "/etc/default/containerd:1 (EnvironmentFile= in /etc/systemd/system/containerd.service.d/proxy.conf:2)", fstest.MapFS{
			"etc/systemd/system/containerd.service.d/proxy.conf": file("[Service]\nEnvironmentFile=-/etc/default/containerd\nEnvironment=HTTPS_PROXY=http://after-the-file:3128\n"),
			"etc/default/containerd":                             file("HTTPS_PROXY=\"http://from-file:3128\"\n"),
		}},
		{"unit-name specifiers in EnvironmentFile= (k3s's and rke2's units)", "http://from-default:3128", "/etc/default/containerd:1 (EnvironmentFile= in /etc/systemd/system/containerd.service.d/env.conf:2)", fstest.MapFS{
			"etc/systemd/system/containerd.service.d/env.conf": file("[Service]\nEnvironmentFile=-/etc/default/%N\n"),
			"etc/default/containerd":                           file("HTTPS_PROXY=http://from-default:3128\n"),
		}},
		{"an empty Environment= resets the list before it", "http://manager:3128", "/etc/systemd/system.conf:3 (DefaultEnvironment=)", fstest.MapFS{
			"etc/systemd/system/containerd.service.d/reset.conf": file("[Service]\nEnvironment=\n"),
		}},
		{"system.conf.d after system.conf, in the Manager section only", "http://dropin:3128", "/run/systemd/system.conf.d/10-proxy.conf:4 (DefaultEnvironment=)", fstest.MapFS{
			"lib/systemd/system/containerd.service":   file("[Service]\nExecStart=/usr/bin/containerd\n"),
			"run/systemd/system.conf.d/10-proxy.conf": file("[Service]\nDefaultEnvironment=HTTPS_PROXY=http://wrong-section:1\n[Manager]\nDefaultEnvironment=HTTPS_PROXY=http://dropin:3128\n"),
		}},
		{"a masked unit is no unit", "http://manager:3128", "/etc/systemd/system.conf:3 (DefaultEnvironment=)", fstest.MapFS{
			"etc/systemd/system/containerd.service": &fstest.MapFile{Data: []byte("/dev/null"), Mode: 0o777 | 1<<27},
			"dev/null":                              file(""),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := base()
			for k, v := range tc.extra {
				fsys[k] = v
			}
			c := load(t, fsys, "r.example/a:1", "")
			if c.Proxy.HTTPSProxy != tc.want || c.Proxy.Source != tc.source {
				t.Errorf("proxy %q from %q, want %q from %q", c.Proxy.HTTPSProxy, c.Proxy.Source, tc.want, tc.source)
			}
		})
	}
}

// The fix for a proxy the runtime lacks points where this distribution's containerd takes its
// environment from: MicroK8s's args/containerd-env, Talos's machine config, else a drop-in.
func TestProxyFixWhereTheRuntimeReadsIt(t *testing.T) {
	for name, c := range map[string]struct {
		config, body, want string
	}{
		"MicroK8s": {"var/snap/microk8s/current/args/containerd.toml", kindConfig, "/var/snap/microk8s/current/args/containerd-env"},
		"Talos":    {"etc/cri/containerd.toml", kindConfig, "Talos machine config (machine.env"},
		"systemd":  {"etc/containerd/config.toml", kindConfig, "containerd.service.d drop-in"},
	} {
		fsys := withResolv(fstest.MapFS{
			c.config:          file(c.body),
			"etc/environment": file("HTTPS_PROXY=http://10.0.0.4:3128/\n"),
		})
		cfg := load(t, fsys, "registry.example/team/app:1", "")
		found := false
		for _, w := range cfg.Warnings {
			if w.Code == WarnProxyNotForRuntime {
				found = true
				if !strings.Contains(w.Fix, c.want) {
					t.Errorf("%s: fix %q, want it to name %q", name, w.Fix, c.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no %s among %+v", name, WarnProxyNotForRuntime, cfg.Warnings)
		}
	}
}
