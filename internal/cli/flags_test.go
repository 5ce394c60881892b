package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/demo"
)

// Flag combinations that cannot mean anything are usage errors (exit 2) that say why.
func TestProbeFlagConflicts(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{args: []string{"--anonymous", "-u", "me", "--password-stdin"}, stdin: "pw\n", want: "--anonymous presents no credentials: it cannot be combined with --username"},
		{args: []string{"--anonymous", "--password-stdin"}, stdin: "pw\n", want: "cannot be combined with --password-stdin"},
		{args: []string{"--anonymous", "--pull-secret", "/nonexistent/secret.yaml"}, want: "cannot be combined with --pull-secret"},
		{args: []string{"--pull-secret", "-", "-u", "me", "--password-stdin"}, stdin: "pw\n", want: "both read stdin"},
		{args: []string{"--anonymous", "--hosts-file", "/nonexistent/hosts"}, want: "--hosts-file: stat /nonexistent/hosts"},
		{args: []string{"--anonymous", "--pull-secret-env", "X"}, want: "cannot be combined with --pull-secret-env"},
		{args: []string{"--pull-secret", "/nonexistent/secret.yaml", "--pull-secret-env", "X"}, want: "both name a pull secret"},
	} {
		r := run(t, tc.stdin, append(append([]string{"probe"}, tc.args...), "registry.example/app:1")...)
		if r.code != ExitUsage || !strings.Contains(r.errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.errOut, tc.want)
		}
	}
}

// The default hosts file (/etc/hosts, or the host root's) may be missing: then DNS only, quietly.
func TestMissingDefaultHostsFileIsSkipped(t *testing.T) {
	o := &probeOptions{hostsFile: filepath.Join(t.TempDir(), "etc/hosts")}
	o.probe.Resolver.HostsFile = o.hostsFile
	o.skipMissingHostsFile()
	if o.hostsFile != "" || o.probe.Resolver.HostsFile != "" {
		t.Errorf("a missing default hosts file should be dropped: %q %q", o.hostsFile, o.probe.Resolver.HostsFile)
	}
	existing := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(existing, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o = &probeOptions{hostsFile: existing}
	o.probe.Resolver.HostsFile = existing
	o.skipMissingHostsFile()
	if o.probe.Resolver.HostsFile != existing {
		t.Errorf("an existing hosts file was dropped")
	}
}

// --pull-secret - reads the Secret from stdin, as `kubectl get secret -o yaml | pullpath probe` sends it.
func TestPullSecretFromStdin(t *testing.T) {
	e := lab(t)
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, e.Lab.RegistryAddr(), base64.StdEncoding.EncodeToString([]byte(demo.User+":"+demo.Password)))
	y := "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: " + base64.StdEncoding.EncodeToString([]byte(cfg)) + "\n"
	r := run(t, y, labArgs(e, "--pull-secret", "-", "-o", "json", e.Lab.Ref("team/app:1.4"))...)
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	if strings.Contains(r.out, demo.Password) {
		t.Error("the password leaked")
	}
	r = run(t, "not a secret", labArgs(e, "--pull-secret", "-", e.Lab.Ref("team/app:1.4"))...)
	if r.code != ExitUsage || !strings.Contains(r.errOut, "pull secret from stdin") {
		t.Errorf("bad secret on stdin: exit %d %q", r.code, r.errOut)
	}
}

// --pull-secret-env reads a config.json from the environment: how verify --from-pod hands the
// pod's pull secret to its probe (an env var from the secret; no volume can be added there).
func TestPullSecretFromEnv(t *testing.T) {
	e := lab(t)
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, e.Lab.RegistryAddr(), base64.StdEncoding.EncodeToString([]byte(demo.User+":"+demo.Password)))
	t.Setenv("PULLPATH_TEST_SECRET", cfg)
	r := run(t, "", labArgs(e, "--pull-secret-env", "PULLPATH_TEST_SECRET", "-o", "json", e.Lab.Ref("team/app:1.4"))...)
	if r.code != ExitOK || !strings.Contains(r.out, `"credentialSource": "pull secret from $PULLPATH_TEST_SECRET`) {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	if strings.Contains(r.out+r.errOut, demo.Password) {
		t.Error("the password leaked")
	}
	// with $VAR_NAME (as verify --from-pod sets it) the identity names the secret, not only the variable
	t.Setenv("PULLPATH_TEST_SECRET_NAME", "shop/corp key .dockerconfigjson")
	r = run(t, "", labArgs(e, "--pull-secret-env", "PULLPATH_TEST_SECRET", "-o", "json", e.Lab.Ref("team/app:1.4"))...)
	if r.code != ExitOK || !strings.Contains(r.out, `"credentialSource": "pull secret shop/corp key .dockerconfigjson via $PULLPATH_TEST_SECRET (entry `) {
		t.Errorf("named secret: exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	r = run(t, "", labArgs(e, "--pull-secret-env", "PULLPATH_TEST_UNSET", e.Lab.Ref("team/app:1.4"))...)
	if r.code != ExitUsage || !strings.Contains(r.errOut, "--pull-secret-env PULLPATH_TEST_UNSET: the variable is not set") {
		t.Errorf("unset variable: exit %d %q", r.code, r.errOut)
	}
}

// verify --from-pod hands over every pull secret of the pod that covers the image, in one variable
// each, and a legacy kubernetes.io/dockercfg secret as its bare .dockercfg: the probe tries every
// covering entry in the kubelet's order until one pulls, says which pulled and what each got, and
// never shows a password.
func TestPullSecretsFromEnvInTurn(t *testing.T) {
	e := lab(t)
	reg := e.Lab.RegistryAddr()
	wrong := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg, base64.StdEncoding.EncodeToString([]byte(demo.User+":not-the-password")))
	legacy := fmt.Sprintf(`{%q:{"auth":%q,"email":"ops@example.com"}}`, reg, base64.StdEncoding.EncodeToString([]byte(demo.User+":"+demo.Password)))
	t.Setenv("PULLPATH_TEST_SECRET_1", wrong)
	t.Setenv("PULLPATH_TEST_SECRET_1_NAME", "shop/wrong key .dockerconfigjson")
	t.Setenv("PULLPATH_TEST_SECRET_2", legacy)
	t.Setenv("PULLPATH_TEST_SECRET_2_NAME", "shop/old key .dockercfg")
	var doc struct {
		Class            string
		CredentialSource string
		Warnings         []struct{ Code, Message string }
	}
	// the legacy secret alone pulls
	r := run(t, "", labArgs(e, "--pull-secret-env", "PULLPATH_TEST_SECRET_2", "-o", "json", e.Lab.Ref("team/app:1.4"))...)
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || r.code != ExitOK || !strings.Contains(doc.CredentialSource, "shop/old key .dockercfg") {
		t.Fatalf(".dockercfg alone: exit %d %+v\n%s", r.code, doc, r.errOut)
	}
	// the wrong one first, as the pod lists it: refused, then the legacy one pulls
	r = run(t, "", labArgs(e, "--pull-secret-env", "PULLPATH_TEST_SECRET_1", "--pull-secret-env", "PULLPATH_TEST_SECRET_2", "-o", "json", e.Lab.Ref("team/app:1.4"))...)
	doc.Warnings = nil
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatalf("not JSON (exit %d): %v\n%s", r.code, err, r.errOut)
	}
	if r.code != ExitOK || doc.Class != "ok" || !strings.Contains(doc.CredentialSource, "shop/old key .dockercfg") {
		t.Errorf("in turn: exit %d class %s identity %q, want ok with shop/old", r.code, doc.Class, doc.CredentialSource)
	}
	turns := inTurnMessage(doc.Warnings)
	if !strings.Contains(turns, "shop/wrong key .dockerconfigjson via $PULLPATH_TEST_SECRET_1 (entry "+reg+"): auth (AUTH_401)") ||
		!strings.Contains(turns, "shop/old key .dockercfg via $PULLPATH_TEST_SECRET_2 (entry "+reg+"): ok (OK)") {
		t.Errorf("what each secret got: %q (warnings %+v)", turns, doc.Warnings)
	}
	if strings.Contains(r.out+r.errOut, demo.Password) || strings.Contains(r.out+r.errOut, "not-the-password") {
		t.Error("a password leaked")
	}
	// both wrong: auth, with what each got
	t.Setenv("PULLPATH_TEST_SECRET_2", wrong)
	r = run(t, "", labArgs(e, "--pull-secret-env", "PULLPATH_TEST_SECRET_1", "--pull-secret-env", "PULLPATH_TEST_SECRET_2", "-o", "json", e.Lab.Ref("team/app:1.4"))...)
	if r.code != 1 || !strings.Contains(r.out, "none did") || !strings.Contains(r.out, "PULLPATH_TEST_SECRET_1") || !strings.Contains(r.out, "PULLPATH_TEST_SECRET_2") {
		t.Errorf("none pulls: exit %d\n%s", r.code, r.out)
	}
}

// --pull-secret FILE is read as --pull-secret-env is: every entry of the file that covers the
// image is tried in the kubelet's order (the repository's key before the host's) until one pulls,
// with the same account of what each got.
func TestPullSecretFileInTurn(t *testing.T) {
	e := lab(t)
	reg := e.Lab.RegistryAddr()
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q},%q:{"auth":%q}}}`,
		reg+"/team", base64.StdEncoding.EncodeToString([]byte(demo.User+":not-the-password")),
		reg, base64.StdEncoding.EncodeToString([]byte(demo.User+":"+demo.Password)))
	file := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, input := range []struct{ name, stdin, arg, label string }{{"file", "", file, file}, {"stdin", cfg, "-", "from stdin"}} {
		r := run(t, input.stdin, labArgs(e, "--pull-secret", input.arg, "-o", "json", e.Lab.Ref("team/app:1.4"))...)
		var doc struct {
			Class            string
			CredentialSource string
			Warnings         []struct{ Code, Message string }
		}
		if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
			t.Fatalf("%s: not JSON (exit %d): %v\n%s", input.name, r.code, err, r.errOut)
		}
		if r.code != ExitOK || doc.Class != "ok" || doc.CredentialSource != "pull secret "+input.label+" (entry "+reg+")" {
			t.Errorf("%s: exit %d class %s identity %q, want ok with the host's entry", input.name, r.code, doc.Class, doc.CredentialSource)
		}
		turns := inTurnMessage(doc.Warnings)
		want := "pull secret " + input.label + " (entry " + reg + "/team): auth (AUTH_401); pull secret " + input.label + " (entry " + reg + "): ok (OK)"
		if !strings.Contains(turns, want) {
			t.Errorf("%s: what each entry got: %q, want %q", input.name, turns, want)
		}
		if strings.Contains(r.out+r.errOut, demo.Password) || strings.Contains(r.out+r.errOut, "not-the-password") {
			t.Errorf("%s: a password leaked", input.name)
		}
	}
}

// --no-download: exit 0 on a reachable path, and the JSON and text say it was not a full pull.
func TestNoDownloadFlag(t *testing.T) {
	e := lab(t)
	r := run(t, demo.Password, labArgs(e, "-u", demo.User, "--password-stdin", "--no-download", "-o", "json", e.Lab.Ref("team/app:1.4"))...)
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	var doc struct {
		Class    string
		Summary  string
		Download struct {
			Verified bool
			Partial  string
			Layers   int
		}
		Warnings []struct{ Code string }
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Class != "ok" || doc.Download.Verified || doc.Download.Partial != "no-download" || doc.Download.Layers != 3 ||
		!strings.Contains(doc.Summary, "reachable, not downloaded") || len(doc.Warnings) == 0 || doc.Warnings[0].Code != "NOT_DOWNLOADED" {
		t.Errorf("--no-download report: %+v", doc)
	}
	r = run(t, demo.Password, labArgs(e, "-u", demo.User, "--password-stdin", "--no-download", e.Lab.Ref("team/app:1.4"))...)
	if !strings.Contains(r.out, "OK  the pull path is reachable, not downloaded") || !strings.Contains(r.out, "NOT a full pull") {
		t.Errorf("text:\n%s", r.out)
	}
}

// inTurnMessage is the message of the PULL_SECRET_MORE warning (what each credential tried in
// turn got), or "" without one.
func inTurnMessage(ws []struct{ Code, Message string }) string {
	turns := ""
	for _, w := range ws {
		if w.Code == "PULL_SECRET_MORE" {
			turns = w.Message
		}
	}
	return turns
}
