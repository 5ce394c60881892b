package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/cri/critest"
	"github.com/pullpath/pullpath/internal/demo"
)

// On a node whose kubelet has a credential provider for the image, `probe --host-root` presents
// the node's identity: it runs the node's provider (from under the root) as the kubelet does.
// --username wins, and the provider is not run; pull secrets are tried first, then the provider's
// answer, as the kubelet's keyring unions them.
func TestProbeUsesTheKubeletsCredentialProvider(t *testing.T) {
	e := lab(t)
	root := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(root, "opt/cp/bin/fake"), "../credprovider/testdata/provider").CombinedOutput()
	if err != nil {
		t.Fatalf("building the test provider: %v\n%s", err, out)
	}
	ca, _ := os.ReadFile(e.Lab.CAFile)
	dir := strings.ReplaceAll(e.Lab.RegistryAddr(), ":", "_") + "_"
	tree := func(args string) {
		writeTree(t, root, map[string]string{
			"etc/containerd/config.toml":                    "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n",
			"etc/containerd/certs.d/" + dir + "/hosts.toml": "server = \"https://" + e.Lab.RegistryAddr() + "\"\nca = \"/etc/lab/ca.pem\"\n[host]\n",
			"etc/lab/ca.pem":                                string(ca),
			"etc/resolv.conf":                               "nameserver 127.0.0.254\n",
			"etc/systemd/system/kubelet.service":            "[Service]\nEnvironmentFile=-/etc/default/kubelet\nExecStart=/usr/local/bin/kubelet $KUBELET_FLAGS\n",
			"etc/default/kubelet":                           "KUBELET_FLAGS=--image-credential-provider-config=/var/lib/kubelet/credential-provider-config.yaml --image-credential-provider-bin-dir=/opt/cp/bin\n",
			"var/lib/kubelet/credential-provider-config.yaml": "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: fake\n    matchImages:\n      - \"" +
				e.Lab.RegistryAddr() + "\"\n    defaultCacheDuration: \"10m\"\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    args: [" + args + "]\n",
		})
	}
	probe := func(stdin string, extra ...string) result {
		return run(t, stdin, append([]string{"probe", "--host-root", root, "--dns-server", e.Lab.DNS.Addr, "--hosts-file", "", "--platform", demo.Platform, "-o", "json"},
			append(extra, e.Lab.Ref("team/app:1.4"))...)...)
	}
	var doc struct {
		Class, Code, CredentialSource string
		Failing                       *struct{ Host, Role, Step string }
	}
	tree(`ok, ` + demo.User + `, ` + demo.Password)
	r := probe("")
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || r.code != ExitOK || doc.CredentialSource != "credential provider fake (/var/lib/kubelet/credential-provider-config.yaml:4)" {
		t.Fatalf("provider ok: exit %d %+v %v\n%s", r.code, doc, err, r.errOut)
	}
	if strings.Contains(r.out, demo.Password) || strings.Contains(r.errOut, demo.Password) {
		t.Error("the provider's password reached the output")
	}
	// probe --cri: the runtime pulls with the identity the provider gave the walk, never printed
	rt := critest.Start(t)
	r = probe("", "--cri="+rt.Socket)
	if p := rt.Pulls(); r.code != ExitOK || len(p) != 1 || p[0].Auth.GetUsername() != demo.User || p[0].Auth.GetPassword() != demo.Password ||
		strings.Contains(r.out+r.errOut, demo.Password) || !strings.Contains(r.out, `"agrees": true`) {
		t.Errorf("--cri with the provider's identity: exit %d, pulls %d\n%.600s", r.code, len(p), r.out)
	}
	tree(`fail`)
	r = probe("")
	doc.Failing = nil
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || r.code != ExitBroken || doc.Class != "auth" || doc.Code != "CREDENTIAL_PROVIDER_FAILED" ||
		doc.Failing == nil || doc.Failing.Host != e.Lab.RegistryAddr() || doc.Failing.Step != "auth" || strings.Contains(r.out, "leaked-provider-token-42") {
		t.Fatalf("provider fails: exit %d %+v %v\n%.800s", r.code, doc, err, r.out)
	}
	// explicit credentials: the provider (still failing) is not run
	r = probe(demoPassword+"\n", "-u", demo.User, "--password-stdin")
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || r.code != ExitOK || !strings.HasPrefix(doc.CredentialSource, "flag") {
		t.Fatalf("explicit credentials: exit %d %+v %v", r.code, doc, err)
	}
	// pull secrets and the provider, as the kubelet's keyring unions them: the secret first, then
	// the provider's answer, no anonymous pull after
	secret := func(pass string) string {
		return fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, e.Lab.RegistryAddr(), base64.StdEncoding.EncodeToString([]byte(demo.User+":"+pass)))
	}
	var full struct {
		Class, Code, CredentialSource string
		Failing                       *struct{ Host, Role, Step string }
		Warnings                      []struct{ Code, Message string }
	}
	for _, c := range []struct {
		name, prov, secret, class, code, source string
		warn                                    []string
	}{
		{"secret refused, provider pulls", `ok, ` + demo.User + `, ` + demo.Password, secret("wrong-password"), "ok", "OK", "credential provider fake", []string{"PULL_SECRET_MORE"}},
		{"secret pulls, provider failed", `fail`, secret(demo.Password), "ok", "OK", "pull secret s1 via $PULLPATH_TEST_SECRET", []string{"CREDENTIAL_PROVIDER_FAILED"}},
		{"secret refused, provider failed: the secret's finding", `fail`, secret("wrong-password"), "auth", "AUTH_401", "pull secret s1 via $PULLPATH_TEST_SECRET", []string{"CREDENTIAL_PROVIDER_FAILED"}},
		{"secret for another registry: the provider alone", `ok, ` + demo.User + `, ` + demo.Password, `{"auths":{"elsewhere.test":{"auth":"eDp5"}}}`, "ok", "OK", "credential provider fake", nil},
	} {
		tree(c.prov)
		t.Setenv("PULLPATH_TEST_SECRET", c.secret)
		t.Setenv("PULLPATH_TEST_SECRET_NAME", "s1")
		r = probe("", "--pull-secret-env", "PULLPATH_TEST_SECRET")
		full.Warnings = nil
		if err := json.Unmarshal([]byte(r.out), &full); err != nil || full.Class != c.class || full.Code != c.code || !strings.HasPrefix(full.CredentialSource, c.source) {
			t.Errorf("%s: exit %d class %s %s identity %q %v\n%s", c.name, r.code, full.Class, full.Code, full.CredentialSource, err, r.errOut)
		}
		codes := map[string]bool{}
		for _, w := range full.Warnings {
			codes[w.Code] = true
		}
		for _, w := range c.warn {
			if !codes[w] {
				t.Errorf("%s: no %s warning: %+v", c.name, w, full.Warnings)
			}
		}
		if strings.Contains(r.out+r.errOut, demo.Password) || strings.Contains(r.out+r.errOut, "wrong-password") {
			t.Errorf("%s: a password reached the output", c.name)
		}
	}
	// --cri hands the runtime the same list in the same order: the secret's, then the provider's
	tree(`ok, ` + demo.User + `, ` + demo.Password)
	t.Setenv("PULLPATH_TEST_SECRET", secret("wrong-password"))
	rt2 := critest.Start(t)
	rt2.FailPulls("failed to pull and unpack image: 401 Unauthorized")
	r = probe("", "--cri="+rt2.Socket, "--pull-secret-env", "PULLPATH_TEST_SECRET")
	if p := rt2.Pulls(); len(p) != 2 || p[0].Auth.GetPassword() != "wrong-password" || p[1].Auth.GetPassword() != demo.Password {
		t.Errorf("--cri with a pull secret and the provider: %d pulls, want the secret's then the provider's\n%.600s", len(p), r.out)
	}
	// the kubelet's own docker config (its node keyring) sits between the pod's secrets and the
	// providers: refused, it is followed by the provider's answer; right, it pulls after a refused secret
	nodeCfg := filepath.Join(root, "var/lib/kubelet/config.json")
	for _, c := range []struct {
		name, prov, node string
		env              []string
		source           string
		order            []string // in the PULL_SECRET_MORE warning
	}{
		{"docker config refused, provider pulls", `ok, ` + demo.User + `, ` + demo.Password, secret("wrong-password"), nil,
			"credential provider fake", []string{"the kubelet's docker config /var/lib/kubelet/config.json (entry " + e.Lab.RegistryAddr() + "): auth (AUTH_401)", "credential provider fake"}},
		{"secret refused, docker config pulls", `fail`, secret(demo.Password), []string{"--pull-secret-env", "PULLPATH_TEST_SECRET"},
			"the kubelet's docker config", []string{"pull secret s1 via $PULLPATH_TEST_SECRET", ": auth (AUTH_401)", "the kubelet's docker config /var/lib/kubelet/config.json", ": ok (OK)"}},
	} {
		tree(c.prov)
		writeTree(t, root, map[string]string{"var/lib/kubelet/config.json": c.node})
		t.Setenv("PULLPATH_TEST_SECRET", secret("wrong-password"))
		r = probe("", c.env...)
		full.Warnings = nil
		if err := json.Unmarshal([]byte(r.out), &full); err != nil || full.Class != "ok" || !strings.HasPrefix(full.CredentialSource, c.source) {
			t.Errorf("%s: exit %d class %s %s identity %q %v\n%s", c.name, r.code, full.Class, full.Code, full.CredentialSource, err, r.errOut)
		}
		turns := inTurnMessage(full.Warnings)
		at := 0
		for _, part := range c.order {
			i := strings.Index(turns[at:], part)
			if i < 0 {
				t.Errorf("%s: %q not in order in %q", c.name, part, turns)
				break
			}
			at += i + len(part)
		}
		if strings.Contains(r.out+r.errOut, demo.Password) || strings.Contains(r.out+r.errOut, "wrong-password") {
			t.Errorf("%s: a password reached the output", c.name)
		}
	}
	if err := os.Remove(nodeCfg); err != nil {
		t.Fatal(err)
	}
	// a broken provider config is a clear usage error naming the file
	writeTree(t, root, map[string]string{"var/lib/kubelet/credential-provider-config.yaml": "kind: Nope\n"})
	if r = probe(""); r.code != ExitUsage || !strings.Contains(r.errOut, "credential-provider-config.yaml") {
		t.Errorf("broken config: exit %d %q", r.code, r.errOut)
	}
}
