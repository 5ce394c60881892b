package runtimeconfig

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pullpath/pullpath/internal/report"
)

// withResolv gives a fixture the resolv.conf every node has, unless it brings its own.
func withResolv(fsys fstest.MapFS) fstest.MapFS {
	if _, ok := fsys["etc/resolv.conf"]; !ok {
		fsys["etc/resolv.conf"] = file("nameserver 10.0.0.2\n")
	}
	return fsys
}

func severityOf(c *Config, code string) []Severity {
	var out []Severity
	for _, w := range c.Warnings {
		if w.Code == code {
			out = append(out, w.Severity)
		}
	}
	return out
}

// Healthy nodes as they are really configured: nothing here breaks or changes the pull, so nothing
// is an error (issue 8: `pullpath runtime` exited 1 on each of them).
func TestHealthyNodesAreNotBroken(t *testing.T) {
	const digest = "@sha256:0123456789012345678901234567890123456789012345678901234567890123"
	aksProxy := "[Service]\nEnvironment=\"HTTP_PROXY=http://10.0.0.4:3128\" \"HTTPS_PROXY=http://10.0.0.4:3128\" \"NO_PROXY=localhost,127.0.0.1,10.0.0.0/8,.svc,.cluster.local\"\n"
	for _, tc := range []struct {
		name, image, info string
		fsys              fstest.MapFS
	}{
		{"systemd-resolved stub", "nginx:1.27", WarnResolverStub, fstest.MapFS{
			"etc/containerd/config.toml":      file(kindConfig),
			"etc/resolv.conf":                 file("nameserver 127.0.0.53\noptions edns0 trust-ad\n"),
			"run/systemd/resolve/resolv.conf": file("nameserver 168.63.129.16\n"),
		}},
		{"public registry through the proxy", "myacr.azurecr.io/team/app:1.4", WarnProxyRoute, fstest.MapFS{
			"etc/containerd/config.toml":                              file(kindConfig),
			"lib/systemd/system/containerd.service":                   file(containerdUnit),
			"etc/systemd/system/containerd.service.d/http-proxy.conf": file(aksProxy),
		}},
		{"public registry through a proxy with no NO_PROXY at all", "mcr.microsoft.com/oss/nginx:1.27", WarnProxyRoute, fstest.MapFS{
			"etc/containerd/config.toml":                              file(kindConfig),
			"lib/systemd/system/containerd.service":                   file(containerdUnit),
			"etc/systemd/system/containerd.service.d/http-proxy.conf": file("[Service]\nEnvironment=HTTPS_PROXY=http://proxy.corp.example:3128\n"),
		}},
		{"pull-only mirror on a tag pull", "docker.io/library/nginx:1.27", WarnMirrorNoResolve, fstest.MapFS{
			"etc/containerd/config.toml":                  file(kindConfig),
			"etc/containerd/certs.d/docker.io/hosts.toml": file("server = \"https://registry-1.docker.io\"\n\n[host.\"https://cache.corp.example\"]\n  capabilities = [\"pull\"]\n"),
		}},
		{"pull-only mirror on a digest pull", "docker.io/library/nginx" + digest, "", fstest.MapFS{
			"etc/containerd/config.toml":                  file(kindConfig),
			"etc/containerd/certs.d/docker.io/hosts.toml": file("server = \"https://registry-1.docker.io\"\n\n[host.\"https://cache.corp.example\"]\n  capabilities = [\"pull\"]\n"),
		}},
		{"docker Hub mirrors, private registry", "registry.corp.example:5000/app:1", WarnDockerMirrorHubOnly, fstest.MapFS{
			"etc/docker/daemon.json": file(`{"registry-mirrors": ["https://hub-mirror.corp.example"]}`),
		}},
		{"CRI-O digest-only mirror on a tag pull", "quay.io/team/app:1", WarnMirrorSkipped, fstest.MapFS{
			"etc/crio/crio.conf":             file("[crio]\n"),
			"etc/containers/registries.conf": file("[[registry]]\nprefix = \"quay.io\"\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"digests.corp.example/quay\"\npull-from-mirror = \"digest-only\"\n"),
		}},
		{"CRI-O mirror-by-digest-only on a tag pull", "quay.io/team/app:1", WarnMirrorSkipped, fstest.MapFS{
			"etc/crio/crio.conf":             file("[crio]\n"),
			"etc/containers/registries.conf": file("[[registry]]\nprefix = \"quay.io\"\nlocation = \"quay.io\"\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"digests.corp.example/quay\"\n"),
		}},
		{"plain HTTP to a registry on the node's loopback", "localhost:5000/app:1", WarnPlainHTTP, fstest.MapFS{
			"etc/containerd/config.toml":                        file(kindConfig),
			"etc/containerd/certs.d/localhost_5000_/hosts.toml": file("server = \"http://localhost:5000\"\n[host]\n"),
		}},
		{"legacy mirrors on containerd 1.7", "nginx:1.27", WarnLegacyRegistry, fstest.MapFS{
			"var/lib/dpkg/status":        dpkg("containerd", "1.7.24-1"),
			"etc/containerd/config.toml": file("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n  endpoint = [\"https://mirror.corp.example\"]\n"),
		}},
		// still read by 2.4.2 (its notice says removal in 2.7): the lab pulls through one
		{"legacy mirrors on containerd 2.4", "nginx:1.27", WarnLegacyRegistry, fstest.MapFS{
			"var/lib/dpkg/status":        dpkg("containerd", "2.4.2-1"),
			"etc/containerd/config.toml": file("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n  endpoint = [\"https://mirror.corp.example\"]\n"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, withResolv(tc.fsys), tc.image, "")
			if c.Broken() {
				t.Errorf("Broken() = true, want false: %+v", c.Warnings)
			}
			if tc.info == "" {
				if len(c.Warnings) != 0 {
					t.Errorf("warnings %+v, want none", c.Warnings)
				}
				return
			}
			if got := severityOf(c, tc.info); len(got) != 1 || got[0] != SeverityInfo {
				t.Errorf("%s severities %v, want one info (all: %+v)", tc.info, got, c.Warnings)
			}
		})
	}
}

// The same kind of setting, made a trap: these are errors.
func TestTrapsAreErrors(t *testing.T) {
	for _, tc := range []struct {
		name, image, code string
		fsys              fstest.MapFS
	}{
		{"internal registry through the proxy", "registry.corp.internal/app:1", WarnProxyNoNoProxy, fstest.MapFS{
			"etc/containerd/config.toml":                              file(kindConfig),
			"lib/systemd/system/containerd.service":                   file(containerdUnit),
			"etc/systemd/system/containerd.service.d/http-proxy.conf": file("[Service]\nEnvironment=HTTPS_PROXY=http://proxy:3128 NO_PROXY=.svc\n"),
		}},
		{"private address through the proxy", "10.1.2.3:5000/app:1", WarnProxyNoNoProxy, fstest.MapFS{
			"etc/containerd/config.toml":                              file(kindConfig),
			"lib/systemd/system/containerd.service":                   file(containerdUnit),
			"etc/systemd/system/containerd.service.d/http-proxy.conf": file("[Service]\nEnvironment=HTTPS_PROXY=http://proxy:3128 NO_PROXY=.svc\n"),
		}},
		{"no host may resolve a tag", "r.example/app:1", WarnNoPullHost, fstest.MapFS{
			"etc/containerd/config.toml":                  file(kindConfig),
			"etc/containerd/certs.d/r.example/hosts.toml": file("server = \"https://r.example\"\ncapabilities = [\"pull\"]\n[host.\"https://m.example\"]\n  capabilities = [\"pull\"]\n"),
		}},
		{"plain HTTP across the network", "r.example/app:1", WarnPlainHTTP, fstest.MapFS{
			"etc/containerd/config.toml":                  file(kindConfig),
			"etc/containerd/certs.d/r.example/hosts.toml": file("server = \"http://r.example\"\n[host]\n"),
		}},
		{"legacy TLS on containerd 2.1, no config_path", "r.example/a:1", WarnLegacyTLSIgnored, fstest.MapFS{
			"var/lib/dpkg/status":        dpkg("containerd", "2.1.4-1"),
			"etc/containerd/config.toml": file("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"r.example\".tls]\n  insecure_skip_verify = true\n"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, withResolv(tc.fsys), tc.image, "")
			if got := severityOf(c, tc.code); len(got) != 1 || got[0] != SeverityError || !c.Broken() {
				t.Errorf("%s severities %v, want one error (all: %+v)", tc.code, got, c.Warnings)
			}
		})
	}
}

// One insecure setting is one warning, in the words of the runtime that reads it.
func TestInsecureIsOneWarningInTheRuntimesWords(t *testing.T) {
	for _, tc := range []struct {
		name, image, want, source string
		fsys                      fstest.MapFS
	}{
		{"docker", "10.1.2.3:5000/app:1", "dockerd", "/etc/docker/daemon.json:1", fstest.MapFS{
			"etc/docker/daemon.json": file(`{"insecure-registries": ["10.0.0.0/8"]}`),
		}},
		{"crio registry", "r.example/app:1", "CRI-O", "/etc/containers/registries.conf:1", fstest.MapFS{
			"etc/crio/crio.conf":             file(""),
			"etc/containers/registries.conf": file("[[registry]]\nlocation = \"r.example\"\ninsecure = true\n"),
		}},
		{"crio v1 list", "r.example/app:1", "CRI-O", "/etc/containers/registries.conf:2", fstest.MapFS{
			"etc/crio/crio.conf":             file(""),
			"etc/containers/registries.conf": file("[registries.insecure]\nregistries = [\"r.example\"]\n"),
		}},
		{"containerd", "r.example/app:1", "skip_verify", "/etc/containerd/certs.d/r.example/hosts.toml:1", fstest.MapFS{
			"etc/containerd/config.toml":                  file(kindConfig),
			"etc/containerd/certs.d/r.example/hosts.toml": file("server = \"https://r.example\"\nskip_verify = true\n[host]\n"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, withResolv(tc.fsys), tc.image, "")
			if len(c.Warnings) != 1 {
				t.Fatalf("warnings %+v, want exactly one", c.Warnings)
			}
			w := c.Warnings[0]
			if !strings.Contains(w.Message, tc.want) || w.Severity != SeverityError || w.Source != tc.source {
				t.Errorf("warning %+v, want %q in the message, severity error, source %s", w, tc.want, tc.source)
			}
			if tc.name != "containerd" && (strings.Contains(w.Message, "skip_verify") || w.Code == WarnSkipVerify) {
				t.Errorf("containerd wording on a %s node: %+v", tc.name, w)
			}
		})
	}
}

func TestTextSeparatesNotes(t *testing.T) {
	c := load(t, fstest.MapFS{
		"etc/containerd/config.toml": file(kindConfig),
		"etc/resolv.conf":            file("nameserver 127.0.0.53\n"),
	}, "nginx", "")
	var b strings.Builder
	if err := report.WriteRuntimeText(&b, c.Report(), report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "no traps found") || !strings.Contains(out, "1 note(s)") || strings.Index(out, "RESOLVER_STUB") < strings.Index(out, "1 note(s)") {
		t.Errorf("text:\n%s", out)
	}
}

// A resolv.conf without a nameserver is said, not rendered as an empty list ("resolver   from
// /etc/resolv.conf"); one that cannot be read is said as such.
func TestTextResolverWithoutNameserver(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"empty", fstest.MapFS{"etc/resolv.conf": file("# nothing\n")}, "resolver  no nameserver in /etc/resolv.conf\n"},
		{"missing", fstest.MapFS{}, "resolver  /etc/resolv.conf could not be read\n"},
		{"one", fstest.MapFS{"etc/resolv.conf": file("nameserver 10.0.0.2\n")}, "resolver  10.0.0.2:53 from /etc/resolv.conf\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fsys["etc/containerd/config.toml"] = file(kindConfig)
			var b strings.Builder
			if err := report.WriteRuntimeText(&b, load(t, tc.fsys, "nginx", "").Report(), report.TextOptions{}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("text, want %q:\n%s", tc.want, b.String())
			}
		})
	}
}
