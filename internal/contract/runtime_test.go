package contract

import (
	"sort"
	"testing"

	"github.com/pullpath/pullpath/internal/cli"
	"github.com/pullpath/pullpath/internal/registrytest"
)

func dpkgStatus(ver string) string {
	return "Package: containerd\nStatus: install ok installed\nVersion: " + ver + "\n\n"
}

// runtime -o json on node trees of every runtime and trap (the traps of runtimeconfig's own
// fixtures, written to disk): each document matches the schema, exit 1 exactly when a warning is
// an error, and together they produce every warning code the schema lists.
func TestRuntimeReportFixtures(t *testing.T) {
	ca := testCA(t)
	fixtures := []struct {
		name, image string
		files       map[string]string
	}{
		{"containerd 1.6 hosts.toml with ca", "registry.lab.test/lab/small:v1", map[string]string{
			"var/lib/dpkg/status": dpkgStatus("1.6.20~ds1-1+deb12u3"), "etc/containerd/config.toml": kindConfig,
			"etc/containerd/certs.d/registry.lab.test/hosts.toml": "server = \"https://registry.lab.test\"\nca = \"/etc/lab/ca.pem\"\n\n[host]\n",
			"etc/lab/ca.pem": ca, "etc/resolv.conf": "nameserver 10.77.0.2\n"}},
		{"mirror, headers, client pair, proxy", "myreg.example:5000/team/app:1.4", map[string]string{
			"etc/containerd/config.toml":                               kindConfig,
			"etc/containerd/certs.d/myreg.example_5000_/hosts.toml":    "server = \"https://myreg.example:5000\"\n\n[host.\"https://mirror.internal/v2/myreg\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"mirror-ca.pem\"\n  client = [[\"c.pem\", \"k.pem\"]]\n  dial_timeout = \"3s\"\n  override_path = true\n  [host.\"https://mirror.internal/v2/myreg\".header]\n    Authorization = \"Bearer not-for-logs\"\n    X-Team = \"platform\"\n\n[host.\"https://push-only.internal\"]\n  capabilities = [\"push\"]\n",
			"etc/containerd/certs.d/myreg.example_5000_/mirror-ca.pem": ca,
			"etc/systemd/system/containerd.service.d/http-proxy.conf":  "[Service]\nEnvironment=\"HTTP_PROXY=http://user:secret@proxy.corp:3128/\" \"HTTPS_PROXY=http://user:secret@proxy.corp:3128/\"\nEnvironment=\"NO_PROXY=localhost,127.0.0.1,.svc\"\n"}},
		{"plain http, missing ca, skip_verify", "r.example/a:1", map[string]string{"etc/containerd/config.toml": kindConfig, "var/lib/dpkg/status": dpkgStatus("1.7.32"),
			"etc/containerd/certs.d/r.example/hosts.toml": "server = \"http://r.example\"\nca = \"/nope.pem\"\nskip_verify = true\n"}},
		{"hosts.toml rejected by 1.6", "r.example/a:1", map[string]string{"etc/containerd/config.toml": kindConfig, "var/lib/dpkg/status": dpkgStatus("1.6.20"),
			"etc/containerd/certs.d/r.example/hosts.toml": "server = \"https://r.example\"\n"}},
		{"hosts.toml invalid", "r.example/a:1", map[string]string{"etc/containerd/config.toml": kindConfig, "etc/containerd/certs.d/r.example/hosts.toml": "server = 1\n",
			"etc/resolv.conf/x": "a directory where a file should be"}},
		{"config_path unset", "r.example/a:1", map[string]string{"etc/containerd/config.toml": "version = 2\n", "etc/containerd/certs.d/r.example/hosts.toml": ""}},
		{"legacy mirrors with config_path", "nginx", map[string]string{"etc/containerd/config.toml": kindConfig + "  [plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n    endpoint = [\"https://m\"]\n"}},
		{"legacy mirrors", "nginx", map[string]string{"etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n  endpoint = [\"https://m\"]\n"}},
		{"push-only mirror, unparsable ca, proxy without NO_PROXY", "r.example/a:1", map[string]string{"etc/containerd/config.toml": kindConfig,
			"etc/containerd/certs.d/r.example/hosts.toml":    "[host.\"https://m.example\"]\n  capabilities = [\"push\"]\n  ca = \"ca.pem\"\n",
			"etc/containerd/certs.d/r.example/ca.pem":        "junk",
			"etc/systemd/system/containerd.service.d/p.conf": "[Service]\nEnvironment=HTTPS_PROXY=http://p:3128\n"}},
		{"proxy for the shell only, resolver stub", "nginx", map[string]string{"etc/containerd/config.toml": kindConfig, "etc/environment": "HTTPS_PROXY=http://p:3128\n",
			"etc/resolv.conf": "nameserver 127.0.0.53\n"}},
		{"crio blocked", "b.example/x:1", map[string]string{"etc/crio/crio.conf": "", "etc/containers/registries.conf": "[[registry]]\nlocation = \"b.example\"\nblocked = true\n"}},
		{"crio insecure", "i.example/x:1", map[string]string{"etc/crio/crio.conf": "", "etc/containers/registries.conf": "[[registry]]\nlocation = \"i.example\"\ninsecure = true\n"}},
		{"crio mirror with a path", "quay.io/team/app:1", map[string]string{"etc/crio/crio.conf": "[crio]\n",
			"etc/containers/registries.conf":            "unqualified-search-registries = [\"docker.io\"]\n[[registry]]\nprefix = \"quay.io/team\"\nlocation = \"quay.io/team\"\n[[registry.mirror]]\nlocation = \"mirror.corp/quay-team\"\n",
			"etc/containers/certs.d/mirror.corp/ca.crt": ca}},
		{"crio digest-only mirror", "q.example/x:1", map[string]string{"etc/crio/crio.conf": "", "etc/containers/registries.conf": "[[registry]]\nlocation = \"q.example\"\n[[registry.mirror]]\nlocation = \"m.example\"\npull-from-mirror = \"digest-only\"\n"}},
		{"docker mirrors are for the hub", "q.example/x:1", map[string]string{"etc/docker/daemon.json": `{"registry-mirrors":["https://m"]}`}},
		{"docker certs.d and insecure", "10.1.2.3:5000/app:1", map[string]string{"etc/docker/daemon.json": `{"registry-mirrors": ["https://hub-mirror.corp"], "insecure-registries": ["10.0.0.0/8"]}`,
			"etc/docker/certs.d/10.1.2.3:5000/ca.crt": ca, "etc/docker/certs.d/10.1.2.3:5000/client.cert": "x"}},
		{"pull-only docker.io mirror through the proxy", "nginx", map[string]string{"etc/containerd/config.toml": kindConfig,
			"etc/systemd/system/containerd.service.d/p.conf": "[Service]\nEnvironment=HTTPS_PROXY=http://p:3128\n",
			"etc/containerd/certs.d/docker.io/hosts.toml":    "[host.\"https://m.example\"]\n  capabilities = [\"pull\"]\n"}},
		{"no pull host", "r.example/a:1", map[string]string{"etc/containerd/config.toml": kindConfig, "etc/containerd/certs.d/r.example/hosts.toml": "capabilities = [\"pull\"]\n[host]\n"}},
		{"containerd 2.1 config_path list", "nginx", map[string]string{"var/lib/dpkg/status": dpkgStatus("2.1.4"),
			"etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/a:/b\"\n[plugins.\"io.containerd.cri.v1.images\".registry]\n  config_path = \"/c\"\n",
			"b/docker.io/hosts.toml":     "[host.\"https://m.example\"]\n"}},
		{"k3s", "nginx:1.27", map[string]string{
			"var/lib/rancher/k3s/agent/etc/containerd/config.toml":                  "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/var/lib/rancher/k3s/agent/etc/containerd/certs.d\"\n",
			"var/lib/rancher/k3s/agent/etc/containerd/certs.d/docker.io/hosts.toml": "server = \"https://registry-1.docker.io/v2\"\ncapabilities = [\"pull\", \"resolve\"]\n\n[host.\"https://registry.corp.example:5000/v2\"]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n",
			"etc/systemd/system/k3s.service":                                        "[Service]\nEnvironmentFile=-/etc/systemd/system/k3s.service.env\nExecStart=/usr/local/bin/k3s server\n",
			"etc/systemd/system/k3s.service.env":                                    "CONTAINERD_HTTPS_PROXY=http://ctrd-proxy.corp:3128\nCONTAINERD_NO_PROXY=.corp.example\n"}},
		{"containerd 2.2 ignores registry.configs tls", "r.example/a:1", map[string]string{"var/lib/dpkg/status": dpkgStatus("2.2.0"),
			"etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"r.example\".tls]\n  ca_file = \"/etc/pki/r.pem\"\n"}},
		{"legacy auth", "r.example/a:1", map[string]string{"etc/containerd/config.toml": kindConfig + "  [plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"r.example\".auth]\n    username = \"puller\"\n    password = \"s3cret-in-config\"\n"}},
		// containerd on its built-in defaults: a unit, no config.toml (an empty root is exit 2, cli.TestRuntimeEmptyHostRoot)
		{"defaults only", "registry.example/app:1", map[string]string{"etc/hostname": "node\n", "lib/systemd/system/containerd.service": "[Service]\nExecStart=/usr/bin/containerd\n"}},
	}
	seen := map[string]bool{}
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			root := writeTree(t, f.files)
			r := run(t, "", "runtime", "-o", "json", "--host-root", root, f.image)
			if r.code != cli.ExitOK && r.code != cli.ExitBroken {
				r.wantExit(t, cli.ExitBroken)
			}
			doc := validate(t, "RuntimeReport", r.out)
			broken := false
			for _, w := range doc["warnings"].([]any) {
				w := w.(map[string]any)
				seen[w["code"].(string)] = true
				broken = broken || w["severity"] == "error"
			}
			if broken != (r.code == cli.ExitBroken) {
				t.Errorf("exit %d with error-severity warnings %v", r.code, broken)
			}
		})
	}
	var missing []string
	for _, c := range schemaEnum(t, "runtimeWarningCode") {
		if !seen[c] {
			missing = append(missing, c)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no fixture produced %v: add one, so each code's document is validated", missing)
	}
}

func testCA(t *testing.T) string {
	t.Helper()
	ca, err := registrytest.NewCA("contract fixture CA")
	if err != nil {
		t.Fatal(err)
	}
	return string(ca.PEM)
}
