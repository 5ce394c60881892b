package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const demoPassword = "s3cret-demo-password\n"

// A plain `pullpath probe` reads the runtime's configuration under / when it is there; this machine
// may have its own runtime installed, so the package's tests look nowhere unless they say where.
func init() { nodeRoot = "" }

// withNodeRoot points the default runtime lookup at root for one test.
func withNodeRoot(t *testing.T, root string) {
	old := nodeRoot
	nodeRoot = root
	t.Cleanup(func() { nodeRoot = old })
}

func TestRuntimeCLI(t *testing.T) {
	e := lab(t)
	root := t.TempDir()
	ca, _ := os.ReadFile(e.Lab.CAFile)
	dir := strings.ReplaceAll(e.Lab.RegistryAddr(), ":", "_") + "_"
	writeTree(t, root, map[string]string{
		"etc/containerd/config.toml":                         "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n",
		"etc/containerd/certs.d/" + dir + "/hosts.toml":      "server = \"https://" + e.Lab.RegistryAddr() + "\"\nca = \"/etc/lab/ca.pem\"\n[host]\n",
		"etc/lab/ca.pem":                                     string(ca),
		"run/node/resolv.conf":                               "nameserver 127.0.0.254\n", // loopback, nothing listens there
		"etc/systemd/system/containerd.service.d/proxy.conf": "[Service]\nEnvironment=\"HTTPS_PROXY=http://user:proxy-password@proxy.corp:3128\" \"NO_PROXY=." + e.Lab.Domain + "\"\n",
	})
	// an absolute symlink, as on a systemd-resolved node: must resolve under the root, not on this machine
	if err := os.Symlink("/run/node/resolv.conf", filepath.Join(root, "etc/resolv.conf")); err != nil {
		t.Fatal(err)
	}

	r := run(t, "", "runtime", "--host-root", root, "-o", "json", e.Lab.Ref("team/app:1.4"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.out, r.errOut)
	}
	var doc struct {
		Runtime string
		Hosts   []struct {
			Host, URL, Source string
			CA                []string
			Capabilities      []string
			SkipVerify        bool `json:"skip_verify"`
		}
		Proxy    map[string]string
		Resolver struct{ Nameservers []string }
		Warnings []struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	if doc.Runtime != "containerd" || len(doc.Hosts) != 1 || strings.Join(doc.Hosts[0].CA, ",") != "/etc/lab/ca.pem" ||
		strings.Join(doc.Resolver.Nameservers, ",") != "127.0.0.254:53" {
		t.Errorf("runtime json = %+v", doc)
	}
	if strings.Contains(r.out, "proxy-password") {
		t.Error("the proxy password leaked into the output")
	}

	// the runtime-faithful probe: the node's CA from hosts.toml, no --ca-file
	r = run(t, demoPassword, "probe", "--host-root", root, "--dns-server", e.Lab.DNS.Addr, "-u", "puller", "--password-stdin", "--platform", "linux/amd64", "-o", "json", e.Lab.Ref("team/app:1.4"))
	if r.code != 0 {
		t.Fatalf("probe --host-root: exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	// without --dns-server it uses the node's resolv.conf, through the symlink, under the root
	r = run(t, demoPassword, "probe", "--host-root", root, "--connect-timeout", "1s", "-u", "puller", "--password-stdin", "-o", "json", e.Lab.Ref("team/app:1.4"))
	if !strings.Contains(r.out, `"source": "`+filepath.Join(root, "etc/resolv.conf")) || !strings.Contains(r.out, "127.0.0.254:53") {
		t.Errorf("the probe should use the node's resolv.conf under the root:\n%.900s", r.out)
	}

	// a trap gives exit 1 with the warning code
	writeTree(t, root, map[string]string{"etc/containerd/certs.d/" + dir + "/hosts.toml": "server = \"https://" + e.Lab.RegistryAddr() + "\"\nskip_verify = true\n[host]\n"})
	r = run(t, "", "runtime", "--host-root", root, e.Lab.Ref("team/app:1.4"))
	if r.code != ExitBroken || !strings.Contains(r.out, "SKIP_VERIFY") {
		t.Errorf("skip_verify: exit %d\n%s", r.code, r.out)
	}

	for _, args := range [][]string{
		{"runtime", "--host-root", "/nonexistent/root", "nginx"},
		{"runtime", "--runtime", "rkt", "nginx"},
		{"runtime", "UPPER/bad"},
		{"probe", "--runtime", "crio", "nginx"},
		{"probe", "--host-root", "none", "--runtime", "crio", "nginx"},
	} {
		if r := run(t, "", args...); r.code != ExitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", args, r.code, r.errOut)
		}
	}
}

// Only error-severity warnings make `pullpath runtime` exit 1; info is shown apart.
func TestRuntimeExitFollowsSeverity(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n",
		"etc/resolv.conf":            "nameserver 127.0.0.53\n",
		"etc/systemd/system/containerd.service.d/http-proxy.conf": "[Service]\nEnvironment=\"HTTPS_PROXY=http://10.0.0.4:3128\" \"NO_PROXY=.svc\"\n",
	})
	r := run(t, "", "runtime", "--host-root", root, "myacr.azurecr.io/team/app:1")
	if r.code != ExitOK || !strings.Contains(r.out, "no traps found") || !strings.Contains(r.out, "2 note(s)") {
		t.Errorf("healthy node with a stub resolver and a proxy: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	r = run(t, "", "runtime", "--host-root", root, "-o", "json", "myacr.azurecr.io/team/app:1")
	var doc struct {
		Warnings []struct{ Code, Severity string }
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || r.code != ExitOK || len(doc.Warnings) != 2 || doc.Warnings[0].Severity != "info" {
		t.Errorf("json: exit %d err %v %+v", r.code, err, doc)
	}
	r = run(t, "", "runtime", "--host-root", root, "registry.corp.internal/team/app:1")
	if r.code != ExitBroken || !strings.Contains(r.out, "PROXY_WITHOUT_NO_PROXY") {
		t.Errorf("internal registry through the proxy: exit %d\n%s", r.code, r.out)
	}
}

// On a node, plain `probe` pulls the way the runtime does (issue 8 item 3): the runtime's CA makes
// the lab registry trusted without --ca-file; one line on stderr and the report's runtime section
// say so; --host-root none opts out and the same probe fails TLS.
func TestProbeReadsTheNodesRuntimeByDefault(t *testing.T) {
	e := lab(t)
	root := t.TempDir()
	ca, _ := os.ReadFile(e.Lab.CAFile)
	dir := strings.ReplaceAll(e.Lab.RegistryAddr(), ":", "_") + "_"
	writeTree(t, root, map[string]string{
		"etc/containerd/config.toml":                    "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n",
		"etc/containerd/certs.d/" + dir + "/hosts.toml": "server = \"https://" + e.Lab.RegistryAddr() + "\"\nca = \"/etc/lab/ca.pem\"\n[host]\n",
		"etc/lab/ca.pem":                                string(ca),
		"etc/resolv.conf":                               "nameserver 127.0.0.254\n",
	})
	withNodeRoot(t, root)
	args := func(extra ...string) []string {
		return append([]string{"probe", "--dns-server", e.Lab.DNS.Addr, "--hosts-file", "", "-u", "puller", "--password-stdin", "--platform", "linux/amd64"}, append(extra, e.Lab.Ref("team/app:1.4"))...)
	}
	r := run(t, demoPassword, args("-o", "json")...)
	if r.code != ExitOK {
		t.Fatalf("probe on a containerd node: exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	var doc struct {
		Runtime *struct{ Name, HostRoot, Detected string }
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || doc.Runtime == nil || doc.Runtime.Name != "containerd" || doc.Runtime.HostRoot != root ||
		doc.Runtime.Detected != "/etc/containerd/config.toml" {
		t.Errorf("runtime section %+v (%v)", doc.Runtime, err)
	}
	if r.errOut != "" {
		t.Errorf("-o json: nothing on stderr, got %q", r.errOut)
	}
	r = run(t, demoPassword, args()...)
	if lines := strings.Count(r.errOut, "\n"); r.code != ExitOK || lines != 1 || !strings.Contains(r.errOut, "pulling the way containerd does") || !strings.Contains(r.errOut, "--host-root none") {
		t.Errorf("text: exit %d, want one line on stderr saying so: %q", r.code, r.errOut)
	}
	r = run(t, demoPassword, args("--host-root", "none", "-o", "json")...)
	if r.code != ExitBroken || !strings.Contains(r.out, `"class": "tls"`) || strings.Contains(r.out, `"runtime":`) {
		t.Errorf("--host-root none: exit %d, want the TLS failure of a probe without the runtime's CA\n%.600s", r.code, r.out)
	}

	// no runtime configuration under the root: the probe is the plain one, and says nothing
	withNodeRoot(t, t.TempDir())
	r = run(t, demoPassword, args("--ca-file", e.Lab.CAFile)...)
	if r.code != ExitOK || r.errOut != "" {
		t.Errorf("no runtime here: exit %d stderr %q", r.code, r.errOut)
	}

	// a malformed configuration found by default is an error that says how to skip it
	writeTree(t, root, map[string]string{"etc/containerd/config.toml": "version = \n"})
	withNodeRoot(t, root)
	if r = run(t, demoPassword, args()...); r.code != ExitUsage || !strings.Contains(r.errOut, "--host-root none") {
		t.Errorf("malformed config: exit %d %q", r.code, r.errOut)
	}
}

// TestRuntimeEmptyHostRoot is runtime --host-root on an empty or mistyped directory: exit 2 with
// one line, not containerd's defaults read from nothing (a config.toml that is not there, a
// resolv.conf warning, "files read:" empty) and exit 1.
func TestRuntimeEmptyHostRoot(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"home/user/notes.txt": "not a node\n"})
	for _, args := range [][]string{
		{"runtime", "--host-root", root, "registry.invalid/app:1"},
		{"probe", "--host-root", root, "registry.invalid/app:1"},
	} {
		r := run(t, "", args...)
		want := "pullpath: no container runtime configuration under " + root + ":"
		if r.code != ExitUsage || r.out != "" || !strings.HasPrefix(r.errOut, want) || strings.Count(r.errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and one line %q", args[0], r.code, r.out, r.errOut, want)
		}
	}
	// --runtime says which one: its defaults are shown
	if r := run(t, "", "runtime", "--runtime", "containerd", "--host-root", root, "registry.invalid/app:1"); r.code == ExitUsage {
		t.Errorf("--runtime containerd on an empty root: exit 2: %s", r.errOut)
	}
}
