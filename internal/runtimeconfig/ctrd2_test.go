package runtimeconfig

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pullpath/pullpath/internal/report"
)

const mirrorToml = "server = \"https://registry-1.docker.io\"\n[host.\"https://mirror.corp.example\"]\n  capabilities = [\"pull\", \"resolve\"]\n"

// containerd 2.x reads its configuration as its migration code does (see ctrdload.go).
func TestContainerd2Configuration(t *testing.T) {
	certsD := func(fsys fstest.MapFS) fstest.MapFS {
		fsys["etc/containerd/certs.d/docker.io/hosts.toml"] = file(mirrorToml)
		return withResolv(fsys)
	}
	const viaMirror = "https://mirror.corp.example/v2 https://registry-1.docker.io/v2"
	const direct = "https://registry-1.docker.io/v2"
	for _, tc := range []struct {
		name, hosts string
		errors      []string // error-severity codes, in order
		fixHas      string   // in the first error's fix
		fsys        fstest.MapFS
	}{
		{"version 3, config_path in the images plugin", viaMirror, nil, "", certsD(fstest.MapFS{
			"var/lib/dpkg/status":        dpkg("containerd", "2.0.5-1"),
			"etc/containerd/config.toml": file("version = 3\n[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = '/etc/containerd/certs.d'\n"),
		})},
		{"version 4 on 2.3", viaMirror, nil, "", certsD(fstest.MapFS{
			"var/lib/dpkg/status":        dpkg("containerd", "2.3.1-1"),
			"etc/containerd/config.toml": file("version = 4\n[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = '/etc/containerd/certs.d'\n"),
		})},
		{"version 2 file with the 2.x table, on 2.0: honoured", viaMirror, nil, "", certsD(fstest.MapFS{
			"var/lib/dpkg/status":        dpkg("containerd", "2.0.5-1"),
			"etc/containerd/config.toml": file("version = 2\n[plugins.\"io.containerd.cri.v1.images\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n"),
		})},
		{"version 2 file with the 2.x table, on 1.7: not read", direct, []string{WarnConfigPathUnset}, `[plugins."io.containerd.grpc.v1.cri".registry]`, certsD(fstest.MapFS{
			"var/lib/dpkg/status":        dpkg("containerd", "1.7.24-1"),
			"etc/containerd/config.toml": file("version = 2\n[plugins.\"io.containerd.cri.v1.images\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n"),
		})},
		{"version 1 names migrated on 2.x", viaMirror, nil, "", certsD(fstest.MapFS{
			"var/lib/dpkg/status":        dpkg("containerd", "2.0.5-1"),
			"etc/containerd/config.toml": file("[plugins.cri.registry]\n  config_path = \"/etc/containerd/certs.d\"\n"),
		})},
		{"version 2 with both tables on 2.1: grpc.v1.cri's registry replaces the other", direct, []string{WarnRegistryShadowed, WarnConfigPathUnset}, "version = 3", certsD(fstest.MapFS{
			"var/lib/dpkg/status": dpkg("containerd", "2.1.4-1"),
			"etc/containerd/config.toml": file(`version = 2
[plugins."io.containerd.grpc.v1.cri".registry.headers]
  X-Meta-Source = ["node"]
[plugins."io.containerd.cri.v1.images".registry]
  config_path = "/etc/containerd/certs.d"
`),
		})},
		{"version 3 on 1.7: containerd does not start", direct, []string{WarnConfigInvalid, WarnConfigPathUnset}, "version = 2", certsD(fstest.MapFS{
			"var/lib/dpkg/status":        dpkg("containerd", "1.7.24-1"),
			"etc/containerd/config.toml": file("version = 3\n[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = '/etc/containerd/certs.d'\n"),
		})},
		// nvidia-ctk style drop-in: on 1.x it replaces the whole CRI table, config_path included
		{"1.7: a drop-in touching the CRI plugin drops config_path", direct, []string{WarnConfigPathUnset}, "", certsD(fstest.MapFS{
			"var/lib/dpkg/status":                  dpkg("containerd", "1.7.24-1"),
			"etc/containerd/config.toml":           file("imports = [\"/etc/containerd/conf.d/*.toml\"]\n" + kindConfig),
			"etc/containerd/conf.d/99-nvidia.toml": file("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  default_runtime_name = \"nvidia\"\n"),
		})},
		{"2.0: the same drop-in is merged key by key", viaMirror, nil, "", certsD(fstest.MapFS{
			"var/lib/dpkg/status":                  dpkg("containerd", "2.0.5-1"),
			"etc/containerd/config.toml":           file("imports = [\"/etc/containerd/conf.d/*.toml\"]\n" + kindConfig),
			"etc/containerd/conf.d/99-nvidia.toml": file("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  default_runtime_name = \"nvidia\"\n"),
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.fsys, "nginx:1.27", "")
			if got := strings.Join(urls(c), " "); got != tc.hosts {
				t.Errorf("hosts %s, want %s", got, tc.hosts)
			}
			var errs []string
			var first *Warning
			for i, w := range c.Warnings {
				if w.Severity == SeverityError {
					errs = append(errs, w.Code)
					if first == nil {
						first = &c.Warnings[i]
					}
				}
			}
			if strings.Join(errs, " ") != strings.Join(tc.errors, " ") {
				t.Errorf("errors %v, want %v (all: %+v)", errs, tc.errors, c.Warnings)
			}
			if tc.fixHas != "" && (first == nil || !strings.Contains(first.Fix, tc.fixHas)) {
				t.Errorf("first error %+v: want %q in its fix", first, tc.fixHas)
			}
		})
	}
}

// Version-specific pull paths: the 2.1+ transfer service and a ':' list, 2.2+'s default
// config_path, and the localhost rule.
func TestContainerdVersionSpecificPaths(t *testing.T) {
	listConfig := "version = 3\n[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = '/etc/containerd/certs.d:/etc/docker/certs.d'\n"
	second := func(ver, config string) fstest.MapFS {
		return withResolv(fstest.MapFS{
			"var/lib/dpkg/status":                     dpkg("containerd", ver),
			"etc/containerd/config.toml":              file(config),
			"etc/docker/certs.d/docker.io/hosts.toml": file(mirrorToml),
		})
	}
	const viaMirror = "https://mirror.corp.example/v2 https://registry-1.docker.io/v2"
	for _, tc := range []struct {
		name, image, hosts, errCode string
		fsys                        fstest.MapFS
	}{
		{"2.0: the local pull reads every directory", "nginx", viaMirror, "", second("2.0.5-1", listConfig)},
		{"2.1: the transfer service reads none", "nginx", "https://registry-1.docker.io/v2", WarnTransferPathList, second("2.1.4-1", listConfig)},
		{"2.3: still so", "nginx", "https://registry-1.docker.io/v2", WarnTransferPathList, second("2.3.1-1", listConfig)},
		{"2.1 with use_local_image_pull", "nginx", viaMirror, "", second("2.1.4-1", listConfig+"  [plugins.'io.containerd.cri.v1.images']\n  use_local_image_pull = true\n")},
		// EKS (nodeadm) writes discard_unpacked_layers = true, which forces the local pull (issue 12415)
		{"2.1 with discard_unpacked_layers", "nginx", viaMirror, "", second("2.1.4-1", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  discard_unpacked_layers = true\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d:/etc/docker/certs.d\"\n")},
		{"2.2: default config_path, and the transfer service ignores it", "nginx", "https://registry-1.docker.io/v2", WarnTransferPathList, second("2.2.2-1", "version = 3\n")},
		{"2.2: default config_path, local pull", "nginx", viaMirror, "", second("2.2.2-1", "version = 3\n[plugins.'io.containerd.cri.v1.images']\n  use_local_image_pull = true\n")},
		{"2.1: no default config_path", "nginx", "https://registry-1.docker.io/v2", "", second("2.1.4-1", "version = 3\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.fsys, tc.image, "")
			if got := strings.Join(urls(c), " "); got != tc.hosts {
				t.Errorf("hosts %s, want %s (%+v)", got, tc.hosts, c.Warnings)
			}
			got := ""
			for _, w := range c.Warnings {
				if w.Severity == SeverityError {
					got += w.Code
				}
			}
			if got != tc.errCode {
				t.Errorf("errors %q, want %q: %+v", got, tc.errCode, c.Warnings)
			}
		})
	}

	for _, tc := range []struct {
		ver, image, url string
		skip            bool
	}{
		{"1.6.20", "localhost:5000/app:1", "http://localhost:5000/v2", true},
		{"1.7.7", "127.0.0.1:5000/app:1", "http://127.0.0.1:5000/v2", true},
		{"1.7.24", "localhost/app:1", "https://localhost/v2", true},
		{"2.0.5", "localhost:80/app:1", "http://localhost:80/v2", false},
		{"2.0.5", "localhost:5000/app:1", "http://localhost:5000/v2", true}, // HTTPS first (HTTPFallback)
	} {
		c := load(t, withResolv(fstest.MapFS{"var/lib/dpkg/status": dpkg("containerd", tc.ver), "etc/containerd/config.toml": file(kindConfig)}), tc.image, "")
		h := c.Hosts[0]
		fallback := tc.ver == "2.0.5" && strings.Contains(tc.image, ":5000") // HTTPS first, then plain HTTP
		if h.URL != tc.url || h.SkipVerify != tc.skip || h.HTTPFallback != fallback || c.Broken() {
			t.Errorf("containerd %s, %s: host %s skipVerify %t broken %t, want %s %t (%+v)", tc.ver, tc.image, h.URL, h.SkipVerify, c.Broken(), tc.url, tc.skip, c.Warnings)
		}
	}
}

// registry.configs.*.tls beside config_path: containerd 1.7 refuses to load the CRI plugin; 2.x
// loads it and ignores the TLS settings, with or without config_path (its RegistryConfig has no
// TLS since 2.0.0; the lab's 2.4.2 fails TLS to such a host).
func TestLegacyTLSWithConfigPath(t *testing.T) {
	tlsOnly := "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"r.example\".tls]\n  ca_file = \"/etc/pki/r.pem\"\n"
	for _, tc := range []struct {
		ver, config, want string
		ca                bool
	}{
		{"1.7.24-1", tlsOnly + "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n", WarnLegacyWithPath, false},
		{"2.0.5-1", tlsOnly + "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n", WarnLegacyTLSIgnored, false},
		{"2.2.2-1", tlsOnly, WarnLegacyTLSIgnored, false},
		{"2.1.4-1", tlsOnly, WarnLegacyTLSIgnored, false}, // no config_path: 2.x's registry.configs hold auth only
		{"1.7.24-1", tlsOnly, "", true},                   // 1.x applies them without config_path
	} {
		c := load(t, withResolv(fstest.MapFS{"var/lib/dpkg/status": dpkg("containerd", tc.ver), "etc/containerd/config.toml": file(tc.config), "etc/pki/r.pem": file(testCA)}), "r.example/a:1", "")
		got := ""
		for _, w := range c.Warnings {
			if w.Severity == SeverityError {
				got += w.Code
			}
		}
		if got != tc.want || (len(c.Hosts[0].CA) > 0) != tc.ca {
			t.Errorf("containerd %s: errors %q hosts %+v, want %q (ca applied %t)", tc.ver, got, c.Hosts, tc.want, tc.ca)
		}
	}
}

// The config_path `pullpath runtime` names, and why: the lab checks each against the path the
// real containerd 2.4.2 exports (RegistryConfigPath), default included.
func TestConfigPathView(t *testing.T) {
	const dflt = "/etc/containerd/certs.d:/etc/docker/certs.d"
	for _, tc := range []struct {
		name, ver, config string
		path, source      string
		text              string // the `config` line of the text render
	}{
		{"2.4: the default", "2.4.2", "version = 3\n", dflt, "containerd 2.4.2's default",
			`config    config_path "` + dflt + `" (containerd 2.4.2's default: /etc/containerd/config.toml sets none)`},
		{"2.4: set", "2.4.2", "version = 3\n[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = '/etc/containerd/certs.d'\n", "/etc/containerd/certs.d", "/etc/containerd/config.toml:3",
			`config    config_path "/etc/containerd/certs.d" from /etc/containerd/config.toml:3`},
		{"2.1: no default", "2.1.4", "version = 3\n", "", "/etc/containerd/config.toml",
			"config    config_path not set in /etc/containerd/config.toml (containerd 2.1.4 has no default (2.2 added one): no hosts.toml is read)"},
		{"1.6: no default", "1.6.20", "version = 2\n", "", "/etc/containerd/config.toml",
			"config    config_path not set in /etc/containerd/config.toml (containerd 1.6.20 has no default: no hosts.toml is read)"},
		{"version unknown", "", "version = 2\n", "", "/etc/containerd/config.toml", "earlier versions read no hosts.toml; the version is unknown here)"},
		{"2.2: legacy mirrors keep the default off", "2.2.2", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n  endpoint = [\"https://mirror.corp.example\"]\n", "", "/etc/containerd/config.toml",
			"(registry.mirrors apply instead, from /etc/containerd/config.toml:2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := withResolv(fstest.MapFS{"etc/containerd/config.toml": file(tc.config)})
			if tc.ver != "" {
				fsys["var/lib/dpkg/status"] = dpkg("containerd", tc.ver)
			}
			c := load(t, fsys, "nginx", "")
			if c.ConfigPath == nil || c.ConfigPath.Path != tc.path || c.ConfigPath.Source != tc.source || c.ConfigPath.Default != (tc.path == dflt) {
				t.Fatalf("ConfigPath = %+v, want path %q from %q", c.ConfigPath, tc.path, tc.source)
			}
			var b strings.Builder
			if err := report.WriteRuntimeText(&b, c.Report(), report.TextOptions{Width: 1000}); err != nil { // the content, unwrapped
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.text) {
				t.Errorf("text render lacks %q:\n%s", tc.text, b.String())
			}
		})
	}
}

// The lab's case (test/lab "mirror in certs.d, no config_path"): containerd 2.4.2 with no
// config_path exports the default list; its transfer service misses the mirror, its local pull
// finds it.
func TestDefaultConfigPathLab(t *testing.T) {
	const mirror = "server = \"https://dflt.lab.test\"\n\n[host.\"https://registry.lab.test\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
	for _, tc := range []struct {
		name, config, hosts, errCode, says string
	}{
		{"transfer service", "version = 3\n", "https://dflt.lab.test/v2", WarnTransferPathList, "config_path is not set, so containerd 2.4.2 uses its default"},
		{"use_local_image_pull", "version = 3\n[plugins.'io.containerd.cri.v1.images']\n  use_local_image_pull = true\n", "https://registry.lab.test/v2 https://dflt.lab.test/v2", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, withResolv(fstest.MapFS{
				"var/lib/dpkg/status":                             dpkg("containerd", "2.4.2"),
				"etc/containerd/config.toml":                      file(tc.config),
				"etc/containerd/certs.d/dflt.lab.test/hosts.toml": file(mirror),
			}), "dflt.lab.test/lab/x:v1", "")
			if got := strings.Join(urls(c), " "); got != tc.hosts {
				t.Errorf("hosts %s, want %s (%+v)", got, tc.hosts, c.Warnings)
			}
			got, msg := "", ""
			for _, w := range c.Warnings {
				if w.Severity == SeverityError {
					got, msg = got+w.Code, msg+w.Message
				}
			}
			if got != tc.errCode || !strings.Contains(msg, tc.says) {
				t.Errorf("errors %q, want %q saying %q: %+v", got, tc.errCode, tc.says, c.Warnings)
			}
		})
	}
}
