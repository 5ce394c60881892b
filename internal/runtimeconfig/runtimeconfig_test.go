package runtimeconfig

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pullpath/pullpath/internal/registrytest"
)

func dpkg(pkg, ver string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte("Package: " + pkg + "\nStatus: install ok installed\nVersion: " + ver + "\n\n")}
}

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

var testCA = func() string {
	ca, err := registrytest.NewCA("fixture CA")
	if err != nil {
		panic(err)
	}
	return string(ca.PEM)
}()

const kindConfig = `version = 2
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"
`

func load(t *testing.T, fsys fstest.MapFS, image string, rt Runtime) *Config {
	t.Helper()
	c, err := Load(Options{Root: fsys, Name: "/host", Image: image, Runtime: rt})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func codes(c *Config) []string {
	var out []string
	for _, w := range c.Warnings {
		out = append(out, w.Code)
	}
	return out
}

func hasCode(c *Config, code string) bool {
	for _, w := range c.Warnings {
		if w.Code == code {
			return true
		}
	}
	return false
}

func urls(c *Config) []string {
	var out []string
	for _, h := range c.Hosts {
		out = append(out, h.URL)
	}
	return out
}

// kind / Debian style: containerd 1.6, config_path, a hosts.toml with server, ca and an empty [host].
func TestContainerd16HostsToml(t *testing.T) {
	fsys := fstest.MapFS{
		"var/lib/dpkg/status":                                 file(string(dpkg("containerd", "1.6.20~ds1-1+deb12u3").Data)),
		"etc/containerd/config.toml":                          file(kindConfig),
		"etc/containerd/certs.d/registry.lab.test/hosts.toml": file("server = \"https://registry.lab.test\"\nca = \"/etc/lab/ca.pem\"\n\n[host]\n"),
		"etc/lab/ca.pem":                                      file(testCA),
		"etc/resolv.conf":                                     file("nameserver 10.77.0.2\n"),
	}
	c := load(t, fsys, "registry.lab.test/lab/small:v1", "")
	if c.Runtime != Containerd || c.Version != "1.6.20~ds1-1+deb12u3" {
		t.Errorf("runtime %s version %q", c.Runtime, c.Version)
	}
	if len(c.Hosts) != 1 || c.Hosts[0].URL != "https://registry.lab.test/v2" || c.Hosts[0].CA[0] != "/etc/lab/ca.pem" ||
		!strings.HasPrefix(c.Hosts[0].Source, "/etc/containerd/certs.d/registry.lab.test/hosts.toml:1") {
		t.Errorf("hosts = %+v", c.Hosts)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings = %v", c.Warnings)
	}
}

// The lab's trap (containerd#10027): top-level keys only, on containerd 1.6.
func TestHostsTomlRejectedBy16(t *testing.T) {
	fsys := fstest.MapFS{
		"var/lib/dpkg/status":                                 dpkg("containerd", "1.6.20~ds1-1"),
		"etc/containerd/config.toml":                          file(kindConfig),
		"etc/containerd/certs.d/registry.lab.test/hosts.toml": file("server = \"https://registry.lab.test\"\nca = \"/etc/lab/ca.pem\"\n"),
		"etc/lab/ca.pem":                                      file(testCA),
	}
	c := load(t, fsys, "registry.lab.test/lab/small:v1", "")
	if !hasCode(c, WarnHostsTomlRejected) {
		t.Fatalf("warnings %v, want %s", codes(c), WarnHostsTomlRejected)
	}
	if len(c.Hosts) != 1 || len(c.Hosts[0].CA) != 0 || c.Hosts[0].Source != "default" {
		t.Errorf("containerd 1.6 drops the file: hosts = %+v", c.Hosts)
	}
	// so does 1.7 before 1.7.32 (getSortedHosts); 1.7.32 and 2.x read the same file
	fsys["var/lib/dpkg/status"] = dpkg("containerd", "1.7.24-1")
	if c = load(t, fsys, "registry.lab.test/lab/small:v1", ""); !hasCode(c, WarnHostsTomlRejected) || len(c.Hosts[0].CA) != 0 {
		t.Errorf("1.7.24: warnings %v hosts %+v", codes(c), c.Hosts)
	}
	for _, v := range []string{"1.7.32-1", "2.0.5-1"} {
		fsys["var/lib/dpkg/status"] = dpkg("containerd", v)
		if c = load(t, fsys, "registry.lab.test/lab/small:v1", ""); hasCode(c, WarnHostsTomlRejected) || len(c.Hosts[0].CA) != 1 {
			t.Errorf("%s: warnings %v hosts %+v", v, codes(c), c.Hosts)
		}
	}
	// the rejected directory's docker-style certificate files still apply (loadCertFiles)
	fsys["var/lib/dpkg/status"] = dpkg("containerd", "1.6.20~ds1-1")
	fsys["etc/containerd/certs.d/registry.lab.test/ca.crt"] = file(testCA)
	if c = load(t, fsys, "registry.lab.test/lab/small:v1", ""); len(c.Hosts[0].CA) != 1 || c.Hosts[0].CA[0] != "/etc/containerd/certs.d/registry.lab.test/ca.crt" {
		t.Errorf("cert files of a rejected directory: %+v", c.Hosts)
	}
	delete(fsys, "etc/containerd/certs.d/registry.lab.test/ca.crt")
	// unknown version: keep the file, but warn
	delete(fsys, "var/lib/dpkg/status")
	c = load(t, fsys, "registry.lab.test/lab/small:v1", "")
	if !hasCode(c, WarnHostsTomlRejected) || len(c.Hosts[0].CA) != 1 {
		t.Errorf("unknown version: warnings %v hosts %+v", codes(c), c.Hosts)
	}
}

// AKS style: containerd 1.7, a mirror before the server, a proxy drop-in without NO_PROXY for the registry.
func TestMirrorOrderAndProxy(t *testing.T) {
	fsys := fstest.MapFS{
		"etc/containerd/config.toml": file(kindConfig),
		"etc/containerd/certs.d/myreg.example_5000_/hosts.toml": file(`server = "https://myreg.example:5000"

[host."https://mirror.internal/v2/myreg"]
  capabilities = ["pull", "resolve"]
  ca = "mirror-ca.pem"
  override_path = true
  [host."https://mirror.internal/v2/myreg".header]
    Authorization = "Bearer not-for-logs"
    X-Team = "platform"

[host."https://push-only.internal"]
  capabilities = ["push"]
`),
		"etc/containerd/certs.d/myreg.example_5000_/mirror-ca.pem": file(testCA),
		"etc/containerd/certs.d/myreg.example:5000/hosts.toml":     file(`server = "https://wrong.example"`),
		"lib/systemd/system/containerd.service":                    file(containerdUnit),
		"etc/systemd/system/containerd.service.d/http-proxy.conf": file(`[Service]
Environment="HTTP_PROXY=http://user:secret@proxy.corp:3128/" "HTTPS_PROXY=http://user:secret@proxy.corp:3128/"
Environment="NO_PROXY=localhost,127.0.0.1,.svc,.cluster.local"
`),
	}
	c := load(t, fsys, "myreg.example:5000/team/app:1.4", "")
	want := []string{"https://mirror.internal/v2/myreg", "https://push-only.internal/v2", "https://myreg.example:5000/v2"}
	if strings.Join(urls(c), " ") != strings.Join(want, " ") {
		t.Fatalf("hosts %v, want %v (host_port_ directory first, [host] tables in file order, then server)", urls(c), want)
	}
	m := c.Hosts[0]
	if m.Role != "mirror" || m.CA[0] != "/etc/containerd/certs.d/myreg.example_5000_/mirror-ca.pem" || m.Header["Authorization"][0] != "REDACTED" ||
		m.Header["X-Team"][0] != "platform" || m.RawHeader()["Authorization"][0] != "Bearer not-for-logs" {
		t.Errorf("mirror = %+v", m)
	}
	if !strings.Contains(m.Source, "hosts.toml:3") {
		t.Errorf("mirror source %q, want the line of its [host] table", m.Source)
	}
	if c.Hosts[2].Proxy != "http://REDACTED@proxy.corp:3128/" || !hasCode(c, WarnProxyNoNoProxy) || !hasCode(c, WarnMirrorNoPull) {
		t.Errorf("proxy %q warnings %v", c.Hosts[2].Proxy, codes(c))
	}
	if strings.Contains(c.Proxy.Source, "secret") || c.Proxy.NoProxy != "localhost,127.0.0.1,.svc,.cluster.local" {
		t.Errorf("proxy = %+v", c.Proxy)
	}
	// NO_PROXY that covers the registry: no proxy, no warning
	fsys["etc/systemd/system/containerd.service.d/http-proxy.conf"] = file("[Service]\nEnvironment=\"HTTPS_PROXY=http://proxy.corp:3128\" \"NO_PROXY=.example,.internal\"\n")
	c = load(t, fsys, "myreg.example:5000/team/app:1.4", "")
	if c.Hosts[2].Proxy != "" || hasCode(c, WarnProxyNoNoProxy) {
		t.Errorf("NO_PROXY covers it: proxy %q warnings %v", c.Hosts[2].Proxy, codes(c))
	}
}

// EKS-style legacy mirrors/configs without config_path; docker.io defaults to registry-1.docker.io.
func TestLegacyMirrors(t *testing.T) {
	fsys := fstest.MapFS{
		"etc/containerd/config.toml": file(`version = 2
[plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
  endpoint = ["https://mirror.corp.example"]
[plugins."io.containerd.grpc.v1.cri".registry.configs."mirror.corp.example".tls]
  ca_file = "/etc/pki/mirror.pem"
  insecure_skip_verify = true
`),
	}
	c := load(t, fsys, "nginx:1.27", "")
	if strings.Join(urls(c), " ") != "https://mirror.corp.example/v2 https://registry-1.docker.io/v2" {
		t.Fatalf("hosts %v", urls(c))
	}
	if c.Hosts[0].CA[0] != "/etc/pki/mirror.pem" || !c.Hosts[0].SkipVerify {
		t.Errorf("legacy tls not applied: %+v", c.Hosts[0])
	}
	for _, code := range []string{WarnLegacyRegistry, WarnSkipVerify, WarnCAMissing} {
		if !hasCode(c, code) {
			t.Errorf("warnings %v, want %s", codes(c), code)
		}
	}
}

func TestLegacyWithConfigPathAndUnsetPath(t *testing.T) {
	c := load(t, fstest.MapFS{"etc/containerd/config.toml": file(kindConfig + `  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
    endpoint = ["https://m.example"]
`)}, "nginx", "")
	if !hasCode(c, WarnLegacyWithPath) {
		t.Errorf("warnings %v, want %s", codes(c), WarnLegacyWithPath)
	}
	c = load(t, fstest.MapFS{
		"etc/containerd/config.toml":                          file("version = 2\n"),
		"etc/containerd/certs.d/registry.lab.test/hosts.toml": file("[host.\"https://registry.lab.test\"]\n"),
	}, "registry.lab.test/a:1", "")
	if !hasCode(c, WarnConfigPathUnset) || c.Hosts[0].Source != "default" {
		t.Errorf("warnings %v hosts %+v", codes(c), c.Hosts)
	}
}

// containerd 2.x: config version 3, the images plugin, imports, and the _default directory.
func TestContainerd2ImportsAndDefaultDir(t *testing.T) {
	fsys := fstest.MapFS{
		"etc/containerd/config.toml": file("version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"),
		"etc/containerd/conf.d/10-registry.toml": file(`version = 3
[plugins."io.containerd.cri.v1.images".registry]
  config_path = "/etc/containerd/certs.d:/etc/docker/certs.d"
`),
		"etc/docker/certs.d/_default/hosts.toml": file("[host.\"https://cache.internal\"]\n  capabilities = [\"pull\", \"resolve\"]\n  skip_verify = true\n"),
	}
	c := load(t, fsys, "ghcr.io/org/app:2", "")
	if strings.Join(urls(c), " ") != "https://cache.internal/v2 https://ghcr.io/v2" {
		t.Fatalf("hosts %v", urls(c))
	}
	if !hasCode(c, WarnSkipVerify) || len(c.Files) < 3 {
		t.Errorf("warnings %v files %v", codes(c), c.Files)
	}
}

func TestHostsTomlInvalidAndCAUnparsable(t *testing.T) {
	c := load(t, fstest.MapFS{
		"etc/containerd/config.toml":                          file(kindConfig),
		"etc/containerd/certs.d/registry.lab.test/hosts.toml": file("server = [\"not a string\"\n"),
	}, "registry.lab.test/a:1", "")
	if !hasCode(c, WarnHostsTomlInvalid) || c.Hosts[0].Source != "default" {
		t.Errorf("warnings %v", codes(c))
	}
	c = load(t, fstest.MapFS{
		"etc/containerd/config.toml":                          file(kindConfig),
		"etc/containerd/certs.d/registry.lab.test/hosts.toml": file("server = \"http://registry.lab.test:5004\"\nca = \"ca.pem\"\n[host]\n"),
		"etc/containerd/certs.d/registry.lab.test/ca.pem":     file("not a certificate"),
	}, "registry.lab.test/a:1", "")
	if !hasCode(c, WarnCAUnparsable) || !hasCode(c, WarnPlainHTTP) || !c.Hosts[0].PlainHTTP {
		t.Errorf("warnings %v hosts %+v", codes(c), c.Hosts)
	}
}

// /etc/resolv.conf is an absolute symlink: it must resolve inside the host root.
func TestResolverStubThroughSymlink(t *testing.T) {
	fsys := fstest.MapFS{
		"etc/containerd/config.toml":           file(kindConfig),
		"etc/resolv.conf":                      &fstest.MapFile{Data: []byte("/run/systemd/resolve/stub-resolv.conf"), Mode: 0o777 | 1<<27},
		"run/systemd/resolve/stub-resolv.conf": file("nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch corp.example\n"),
		"run/systemd/resolve/resolv.conf":      file("nameserver 10.0.0.2\nnameserver 10.0.0.3\n"),
	}
	c := load(t, fsys, "nginx", "")
	if !c.Resolver.Stub || strings.Join(c.Resolver.Upstream, ",") != "10.0.0.2:53,10.0.0.3:53" || !hasCode(c, WarnResolverStub) {
		t.Errorf("resolver %+v warnings %v", c.Resolver, codes(c))
	}
}

func TestProxyOnlyForShellOrKubelet(t *testing.T) {
	c := load(t, fstest.MapFS{
		"etc/containerd/config.toml":                         file(kindConfig),
		"etc/environment":                                    file("HTTPS_PROXY=http://proxy.corp:3128\n"),
		"lib/systemd/system/kubelet.service":                 file("[Service]\nExecStart=/usr/bin/kubelet\n"),
		"lib/systemd/system/kubelet.service.d/10-proxy.conf": file("[Service]\nEnvironmentFile=-/etc/default/kubelet-proxy\n"),
		"etc/default/kubelet-proxy":                          file("export HTTPS_PROXY=http://proxy.corp:3128\n"),
	}, "nginx", "")
	n := 0
	for _, w := range c.Warnings {
		if w.Code == WarnProxyNotForRuntime {
			n++
		}
	}
	if n != 2 || c.Proxy.HTTPSProxy != "" {
		t.Errorf("want two %s warnings (shell and kubelet), got %v; proxy %+v", WarnProxyNotForRuntime, codes(c), c.Proxy)
	}
}

func TestCRIO(t *testing.T) {
	fsys := fstest.MapFS{
		"etc/crio/crio.conf": file("[crio]\n"),
		"etc/containers/registries.conf": file(`unqualified-search-registries = ["docker.io"]
[[registry]]
prefix = "quay.io/team"
location = "quay.io/team"
[[registry.mirror]]
location = "mirror.corp/quay-team"
[[registry.mirror]]
location = "digests.corp/quay-team"
pull-from-mirror = "digest-only"

[[registry]]
prefix = "blocked.example"
location = "blocked.example"
blocked = true
`),
		"etc/containers/registries.conf.d/50-insecure.conf": file(`[[registry]]
location = "10.0.0.5:5000"
insecure = true
`),
		"etc/containers/certs.d/mirror.corp/ca.crt": file(testCA),
	}
	c := load(t, fsys, "quay.io/team/app:1", "")
	if c.Runtime != CRIO || strings.Join(urls(c), " ") != "https://mirror.corp/v2/quay-team https://quay.io/v2" || c.Hosts[0].CA[0] != "/etc/containers/certs.d/mirror.corp/ca.crt" ||
		c.Hosts[0].Repository != "quay-team/app" || c.Hosts[1].Repository != "" {
		t.Fatalf("runtime %s hosts %v %+v", c.Runtime, urls(c), c.Hosts)
	}
	c = load(t, fsys, "quay.io/team/app@sha256:"+strings.Repeat("a", 64), "")
	if len(c.Hosts) != 3 {
		t.Errorf("digest pull also uses the digest-only mirror: %v", urls(c))
	}
	if c = load(t, fsys, "blocked.example/x:1", ""); len(c.Hosts) != 0 || !hasCode(c, WarnRegistryBlocked) {
		t.Errorf("blocked: %v %v", urls(c), codes(c))
	}
	if c = load(t, fsys, "10.0.0.5:5000/x:1", ""); !c.Hosts[0].SkipVerify || !hasCode(c, WarnInsecureRegistry) {
		t.Errorf("insecure: %+v %v", c.Hosts, codes(c))
	}
}

func TestDocker(t *testing.T) {
	fsys := fstest.MapFS{
		"etc/docker/daemon.json":                       file(`{"registry-mirrors": ["https://hub-mirror.corp"], "insecure-registries": ["10.0.0.0/8"]}`),
		"etc/docker/certs.d/10.1.2.3:5000/ca.crt":      file(testCA),
		"etc/docker/certs.d/10.1.2.3:5000/client.cert": file("x"),
	}
	c := load(t, fsys, "nginx", "")
	if c.Runtime != Docker || strings.Join(urls(c), " ") != "https://hub-mirror.corp/v2 https://registry-1.docker.io/v2" {
		t.Fatalf("%s %v", c.Runtime, urls(c))
	}
	if c.Hosts[0].Source != "/etc/docker/daemon.json:1" {
		t.Errorf("mirror source %q, want the daemon.json line", c.Hosts[0].Source)
	}
	c = load(t, fsys, "10.1.2.3:5000/app:1", "")
	if !hasCode(c, WarnDockerMirrorHubOnly) || !hasCode(c, WarnInsecureRegistry) || len(c.Hosts[0].CA) != 1 || len(c.Hosts[0].Client) != 1 {
		t.Errorf("warnings %v hosts %+v", codes(c), c.Hosts)
	}
}

func TestMalformedConfigsAreErrorsNamingTheFile(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"/host/etc/containerd/config.toml":     {"etc/containerd/config.toml": file("version = \n")},
		"/host/etc/docker/daemon.json":         {"etc/docker/daemon.json": file("{not json")},
		"/host/etc/containers/registries.conf": {"etc/crio/crio.conf": file(""), "etc/containers/registries.conf": file("[[registry]\n")},
		"/host/etc/containerd/conf.d/x.toml":   {"etc/containerd/config.toml": file("imports = [\"/etc/containerd/conf.d/x.toml\"]\n"), "etc/containerd/conf.d/x.toml": file("= broken")},
	} {
		_, err := Load(Options{Root: fsys, Name: "/host", Image: "nginx"})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v should name the file", name, err)
		}
	}
	if _, err := Load(Options{Root: fstest.MapFS{}, Image: "UPPER/bad"}); err == nil {
		t.Error("bad image reference: want error")
	}
	if _, err := Load(Options{Root: fstest.MapFS{}, Image: "nginx", Runtime: "rkt"}); err == nil {
		t.Error("unknown runtime: want error")
	}
}

func FuzzParseHostsToml(f *testing.F) {
	f.Add("server = \"https://r\"\nca = \"c.pem\"\n[host.\"https://m\"]\ncapabilities = [\"pull\"]\nclient = [[\"a\",\"b\"]]\n[host.\"https://m\".header]\nx = [\"1\",\"2\"]\n")
	f.Add("[host]\n")
	f.Add("server = 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		hf, err := parseHostsToml("/etc/containerd/certs.d/r/hosts.toml", []byte(s), "https://r")
		if err != nil {
			return
		}
		if len(hf.hosts) == 0 || hf.hosts[len(hf.hosts)-1].Role != "registry" {
			t.Fatalf("the server must be last: %+v", hf.hosts)
		}
	})
}

// k3s and rke2 run their own containerd: config and certs.d under /var/lib/rancher/<distro>, and
// a proxy for containerd only (CONTAINERD_*) in the distro unit's environment file.
func TestEmbeddedContainerd(t *testing.T) {
	for _, tc := range []struct {
		name, image, wantURLs, wantNoProxy, wantSource string
		fsys                                           fstest.MapFS
	}{
		{
			name: "k3s", image: "nginx:1.27",
			wantURLs:    "https://registry.corp.example:5000/v2 https://registry-1.docker.io/v2",
			wantNoProxy: ".corp.example", wantSource: "/etc/systemd/system/k3s.service.env",
			fsys: fstest.MapFS{
				"var/lib/rancher/k3s/agent/etc/containerd/config.toml": file(`version = 2
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/var/lib/rancher/k3s/agent/etc/containerd/certs.d"
`),
				// a registries.yaml-made mirror
				"var/lib/rancher/k3s/agent/etc/containerd/certs.d/docker.io/hosts.toml": file(`# File generated by k3s. DO NOT EDIT.
server = "https://registry-1.docker.io/v2"
capabilities = ["pull", "resolve"]

[host."https://registry.corp.example:5000/v2"]
  capabilities = ["pull", "resolve"]
  override_path = true
`),
				"etc/systemd/system/k3s.service":     file("[Service]\nEnvironmentFile=-/etc/systemd/system/k3s.service.env\nExecStart=/usr/local/bin/k3s server\n"),
				"etc/systemd/system/k3s.service.env": file("HTTPS_PROXY=http://shell-proxy:3128\nCONTAINERD_HTTPS_PROXY=http://ctrd-proxy.corp:3128\nCONTAINERD_NO_PROXY=.corp.example\n"),
			},
		},
		{
			name: "rke2", image: "registry.corp.example/team/app:1",
			wantURLs:    "https://mirror.corp.example/v2 https://registry.corp.example/v2",
			wantNoProxy: "mirror.corp.example", wantSource: "/etc/default/rke2-agent",
			fsys: fstest.MapFS{
				"var/lib/rancher/rke2/agent/etc/containerd/config.toml": file(`version = 2
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/var/lib/rancher/rke2/agent/etc/containerd/certs.d"
`),
				"var/lib/rancher/rke2/agent/etc/containerd/certs.d/registry.corp.example/hosts.toml": file(`server = "https://registry.corp.example/v2"
[host."https://mirror.corp.example/v2"]
  capabilities = ["pull", "resolve"]
  override_path = true
`),
				"usr/lib/systemd/system/rke2-agent.service": file("[Service]\nEnvironmentFile=-/etc/default/rke2-agent\nExecStart=/usr/bin/rke2 agent\n"),
				"etc/default/rke2-agent":                    file("CONTAINERD_HTTPS_PROXY=http://ctrd-proxy.corp:3128\nCONTAINERD_NO_PROXY=mirror.corp.example\n"),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.fsys, tc.image, "")
			if c.Runtime != Containerd || strings.Join(urls(c), " ") != tc.wantURLs {
				t.Fatalf("runtime %s hosts %v", c.Runtime, urls(c))
			}
			if c.Proxy.HTTPSProxy != "http://ctrd-proxy.corp:3128" || c.Proxy.NoProxy != tc.wantNoProxy || !strings.Contains(c.Proxy.Source, tc.wantSource) {
				t.Errorf("proxy for containerd = %+v", c.Proxy)
			}
			if c.Hosts[0].Proxy != "" || c.Hosts[1].Proxy != "http://ctrd-proxy.corp:3128" {
				t.Errorf("NO_PROXY covers the first host only: %q %q", c.Hosts[0].Proxy, c.Hosts[1].Proxy)
			}
		})
	}
}

// Docker 23+ reads proxies from daemon.json, and they win over the unit's environment.
func TestDockerDaemonJSONProxies(t *testing.T) {
	fsys := fstest.MapFS{
		"etc/docker/daemon.json":                              file(`{"proxies": {"https-proxy": "http://user:pw@dj-proxy.corp:3128", "no-proxy": "internal.example"}}`),
		"etc/systemd/system/docker.service.d/http-proxy.conf": file("[Service]\nEnvironment=HTTPS_PROXY=http://unit-proxy:3128\n"),
	}
	c := load(t, fsys, "r.example/a:1", "docker")
	if c.Proxy.HTTPSProxy != "http://REDACTED@dj-proxy.corp:3128" || c.Proxy.NoProxy != "internal.example" || !strings.Contains(c.Proxy.Source, "daemon.json") {
		t.Fatalf("docker proxy = %+v", c.Proxy)
	}
	if len(c.Hosts) != 1 || !strings.Contains(c.Hosts[0].Proxy, "dj-proxy.corp:3128") || strings.Contains(c.Hosts[0].Proxy, "pw") {
		t.Errorf("host proxy = %+v", c.Hosts)
	}
	c = load(t, fstest.MapFS{"etc/docker/daemon.json": file(`{"proxies": {"https-proxy": "http://dj:3128", "no-proxy": "r.example"}}`)}, "r.example/a:1", "docker")
	if c.Hosts[0].Proxy != "" {
		t.Errorf("no-proxy in daemon.json ignored: %q", c.Hosts[0].Proxy)
	}
}

// Every warning code the package declares is produced by some fixture.
func TestEveryWarningCodeIsReachable(t *testing.T) {
	fixtures := []struct {
		image string
		fsys  fstest.MapFS
	}{
		{"r.example/a:1", fstest.MapFS{"etc/containerd/config.toml": file(kindConfig), "var/lib/dpkg/status": dpkg("containerd", "1.7.32"),
			"etc/containerd/certs.d/r.example/hosts.toml": file("server = \"http://r.example\"\nca = \"/nope.pem\"\nskip_verify = true\n")}},
		{"r.example/a:1", fstest.MapFS{"etc/containerd/config.toml": file(kindConfig), "var/lib/dpkg/status": dpkg("containerd", "1.6.20"),
			"etc/containerd/certs.d/r.example/hosts.toml": file("server = \"https://r.example\"\n")}},
		{"r.example/a:1", fstest.MapFS{"etc/containerd/config.toml": file(kindConfig), "etc/containerd/certs.d/r.example/hosts.toml": file("server = 1\n"),
			"etc/resolv.conf/x": file("a directory where a file should be")}},
		{"r.example/a:1", fstest.MapFS{"etc/containerd/config.toml": file("version = 2\n"), "etc/containerd/certs.d/r.example/hosts.toml": file("")}},
		{"nginx", fstest.MapFS{"etc/containerd/config.toml": file(kindConfig + "  [plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n    endpoint = [\"https://m\"]\n")}},
		{"nginx", fstest.MapFS{"etc/containerd/config.toml": file("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n  endpoint = [\"https://m\"]\n")}},
		{"r.example/a:1", fstest.MapFS{"etc/containerd/config.toml": file(kindConfig),
			"etc/containerd/certs.d/r.example/hosts.toml": file("[host.\"https://m.example\"]\n  capabilities = [\"push\"]\n  ca = \"ca.pem\"\n"),
			"etc/containerd/certs.d/r.example/ca.pem":     file("junk"),
			"lib/systemd/system/containerd.service":       file(containerdUnit), "etc/systemd/system/containerd.service.d/p.conf": file("[Service]\nEnvironment=HTTPS_PROXY=http://p:3128\n")}},
		{"nginx", fstest.MapFS{"etc/containerd/config.toml": file(kindConfig), "etc/environment": file("HTTPS_PROXY=http://p:3128\n"),
			"etc/resolv.conf": file("nameserver 127.0.0.53\n")}},
		{"b.example/x:1", fstest.MapFS{"etc/crio/crio.conf": file(""), "etc/containers/registries.conf": file("[[registry]]\nlocation = \"b.example\"\nblocked = true\n")}},
		{"i.example/x:1", fstest.MapFS{"etc/crio/crio.conf": file(""), "etc/containers/registries.conf": file("[[registry]]\nlocation = \"i.example\"\ninsecure = true\n")}},
		{"q.example/x:1", fstest.MapFS{"etc/docker/daemon.json": file(`{"registry-mirrors":["https://m"]}`)}},
		{"nginx", fstest.MapFS{"etc/containerd/config.toml": file(kindConfig), "lib/systemd/system/containerd.service": file(containerdUnit), "etc/systemd/system/containerd.service.d/p.conf": file("[Service]\nEnvironment=HTTPS_PROXY=http://p:3128\n"),
			"etc/containerd/certs.d/docker.io/hosts.toml": file("[host.\"https://m.example\"]\n  capabilities = [\"pull\"]\n")}},
		{"r.example/a:1", fstest.MapFS{"etc/containerd/config.toml": file(kindConfig),
			"etc/containerd/certs.d/r.example/hosts.toml": file("capabilities = [\"pull\"]\n[host]\n")}},
		{"q.example/x:1", fstest.MapFS{"etc/crio/crio.conf": file(""), "etc/containers/registries.conf": file("[[registry]]\nlocation = \"q.example\"\n[[registry.mirror]]\nlocation = \"m.example\"\npull-from-mirror = \"digest-only\"\n")}},
		{"nginx", fstest.MapFS{"var/lib/dpkg/status": dpkg("containerd", "2.1.4"), "etc/containerd/config.toml": file("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/a:/b\"\n[plugins.\"io.containerd.cri.v1.images\".registry]\n  config_path = \"/c\"\n"),
			"b/docker.io/hosts.toml": file("[host.\"https://m.example\"]\n")}},
		{"r.example/a:1", fstest.MapFS{"var/lib/dpkg/status": dpkg("containerd", "2.2.2"), "etc/containerd/config.toml": file("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"r.example\".tls]\n  insecure_skip_verify = true\n")}},
	}
	seen := map[string]bool{}
	for _, f := range fixtures {
		for _, code := range codes(load(t, f.fsys, f.image, "")) {
			seen[code] = true
		}
	}
	for _, code := range []string{WarnHostsTomlRejected, WarnHostsTomlInvalid, WarnConfigPathUnset, WarnLegacyWithPath, WarnLegacyRegistry,
		WarnMirrorNoPull, WarnSkipVerify, WarnCAMissing, WarnCAUnparsable, WarnProxyNoNoProxy, WarnProxyNotForRuntime, WarnResolverStub,
		WarnRegistryBlocked, WarnInsecureRegistry, WarnDockerMirrorHubOnly, WarnConfigInvalid, WarnPlainHTTP,
		WarnProxyRoute, WarnMirrorNoResolve, WarnMirrorSkipped, WarnNoPullHost, WarnRegistryShadowed, WarnTransferPathList, WarnLegacyTLSIgnored} {
		if !seen[code] {
			t.Errorf("no fixture produces %s (seen %v)", code, seen)
		}
	}
}

func TestLegacyAuth(t *testing.T) {
	c := load(t, fstest.MapFS{"etc/containerd/config.toml": file(kindConfig + `  [plugins."io.containerd.grpc.v1.cri".registry.configs."r.example".auth]
    username = "puller"
    password = "s3cret-in-config"
`)}, "r.example/a:1", "")
	if hasCode(c, WarnLegacyWithPath) {
		t.Errorf("auth-only configs are allowed with config_path: %v", codes(c))
	}
	h := c.Hosts[0]
	if !strings.Contains(h.Auth, `user "puller"`) || strings.Contains(h.Auth, "s3cret") {
		t.Errorf("Auth = %q", h.Auth)
	}
	if u, p, _ := h.RawAuth(); u != "puller" || p != "s3cret-in-config" {
		t.Errorf("RawAuth = %q %q", u, p)
	}
	b, _ := json.Marshal(c.Report())
	if strings.Contains(string(b), "s3cret") {
		t.Errorf("the password leaked into the JSON: %s", b)
	}
	c = load(t, fstest.MapFS{"etc/containerd/config.toml": file(`version = 2
[plugins."io.containerd.grpc.v1.cri".registry.configs."r.example".auth]
  auth = "` + base64.StdEncoding.EncodeToString([]byte("u2:p2")) + `"
`)}, "r.example/a:1", "")
	if u, p, _ := c.Hosts[0].RawAuth(); u != "u2" || p != "p2" {
		t.Errorf("base64 auth = %q %q", u, p)
	}
}

// A [host] whose scheme, host and port are the registry's own is the registry (docs/taxonomy.md#endpoint-roles): the
// server's, or without one the default containerd gives the directory's registry.
func TestSelfMirrorRole(t *testing.T) {
	for _, tc := range []struct {
		name, toml, dflt string
		want             []string // roles, the server last
	}{
		{"containerd's docs (docs/cri/config.md:742-750)", "server = \"https://192.168.12.34:5000\"\n[host.\"https://192.168.12.34:5000\"]\n  ca = \"ca.crt\"\n",
			"https://192.168.12.34:5000", []string{"registry", "registry"}},
		{"no server: the directory's registry", "[host.\"https://registry.corp.example\"]\n  ca = \"ca.crt\"\n",
			"https://registry.corp.example", []string{"registry", "registry"}},
		{"default port written", "server = \"https://registry.corp.example\"\n[host.\"https://Registry.Corp.Example:443\"]\n",
			"https://registry.corp.example", []string{"registry", "registry"}},
		{"http on 80", "server = \"http://registry.corp.example\"\n[host.\"http://registry.corp.example:80\"]\n",
			"https://registry.corp.example", []string{"registry", "registry"}},
		{"a path on the registry's host", "server = \"https://harbor.corp.example\"\n[host.\"https://harbor.corp.example/v2/proxy\"]\n  override_path = true\n",
			"https://harbor.corp.example", []string{"registry", "registry"}},
		// kubespray's insecure-registry example (docs/CRI/containerd.md:119-129): the server stays https
		{"another scheme", "server = \"https://registry.corp.example:5000\"\n[host.\"http://registry.corp.example:5000\"]\n",
			"https://registry.corp.example:5000", []string{"mirror", "registry"}},
		{"another port", "server = \"https://registry.corp.example\"\n[host.\"https://registry.corp.example:5000\"]\n",
			"https://registry.corp.example", []string{"mirror", "registry"}},
		{"a mirror, then the registry", "server = \"https://registry.corp.example\"\n[host.\"https://mirror.corp.example\"]\n[host.\"https://registry.corp.example\"]\n",
			"https://registry.corp.example", []string{"mirror", "registry", "registry"}},
		// containerd's and kubespray's default for Docker Hub (docs/hosts.md:182-187, defaults/main.yml:58-63)
		{"docker.io, server docker.io", "server = \"https://docker.io\"\n[host.\"https://registry-1.docker.io\"]\n",
			"https://registry-1.docker.io", []string{"registry", "registry"}},
		{"docker.io, no server", "[host.\"https://docker.io\"]\n[host.\"https://mirror.gcr.io\"]\n",
			"https://registry-1.docker.io", []string{"registry", "mirror", "registry"}},
		{"docker.io, a mirror as the server", "server = \"https://mirror.gcr.io\"\n[host.\"https://registry-1.docker.io\"]\n",
			"https://registry-1.docker.io", []string{"mirror", "registry"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hf, err := parseHostsToml("/etc/containerd/certs.d/x/hosts.toml", []byte(tc.toml), tc.dflt)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hf.hosts {
				got = append(got, h.Role)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("roles %v, want %v", got, tc.want)
			}
		})
	}
}
