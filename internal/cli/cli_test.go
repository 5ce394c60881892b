package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/registrytest"
)

var (
	envOnce sync.Once
	env     *demo.Env
	envErr  error
	envMu   sync.Mutex
)

func lab(t *testing.T) *demo.Env {
	t.Helper()
	envOnce.Do(func() { env, envErr = demo.Setup(context.Background(), 32<<10) })
	if envErr != nil {
		t.Fatal(envErr)
	}
	envMu.Lock()
	t.Cleanup(func() { env.Lab.SetFaults(registrytest.Faults{}); envMu.Unlock() })
	return env
}

type result struct {
	code        int
	out, errOut string
}

func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), Streams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, args)
	code := Code(err, &errOut)
	return result{code: code, out: out.String(), errOut: errOut.String()}
}

func labArgs(e *demo.Env, extra ...string) []string {
	return append([]string{"probe", "--dns-server", e.Lab.DNS.Addr, "--ca-file", e.Lab.CAFile, "--hosts-file", "",
		"--platform", demo.Platform, "--connect-timeout", "2s", "--stall-timeout", "1s"}, extra...)
}

func TestProbeExitCodesAndJSON(t *testing.T) {
	e := lab(t)
	cases := []struct {
		name  string
		args  []string
		stdin string
		code  int
		class string
		role  string
		layer string
	}{
		{name: "healthy", args: labArgs(e, "-u", demo.User, "--password-stdin", "-o", "json", e.Lab.Ref("team/app:1.4")), stdin: demo.Password + "\n", code: 0, class: "ok"},
		{name: "anonymous is 401 at the token realm", args: labArgs(e, "--anonymous", "-o", "json", e.Lab.Ref("team/app:1.4")), code: 1, class: "auth", role: "token", layer: "auth"},
		{name: "missing tag", args: labArgs(e, "-u", demo.User, "--password-stdin", "-o", "json", e.Lab.Ref("team/app:missing")), stdin: demo.Password, code: 1, class: "not_found", role: "registry", layer: "manifest"},
		{name: "untrusted without --ca-file", args: []string{"probe", "--dns-server", e.Lab.DNS.Addr, "--hosts-file", "", "--anonymous", "-o", "json", e.Lab.Ref("team/app:1.4")}, code: 1, class: "tls", role: "registry", layer: "tls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.stdin, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.out, r.errOut)
			}
			var doc struct {
				Image   string `json:"image"`
				Class   string `json:"class"`
				Owner   string `json:"owner"`
				Failing *struct {
					Host, Role, Step string
				} `json:"failing"`
				Endpoints []struct {
					Host, Role string
					Addresses  []struct{ IP string }
				} `json:"endpoints"`
				Download struct {
					Layers   int
					Bytes    int64
					Verified bool
				} `json:"download"`
			}
			if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, r.out)
			}
			if doc.Class != tc.class {
				t.Fatalf("class %q, want %q", doc.Class, tc.class)
			}
			if tc.class == "ok" {
				if doc.Failing != nil || !doc.Download.Verified || doc.Download.Layers != 3 {
					t.Errorf("ok report: failing %+v download %+v", doc.Failing, doc.Download)
				}
				if len(doc.Endpoints) != 3 {
					t.Errorf("%d endpoints, want 3", len(doc.Endpoints))
				}
				return
			}
			if doc.Failing == nil || doc.Failing.Role != tc.role || doc.Failing.Step != tc.layer {
				t.Fatalf("failing %+v, want role %s layer %s", doc.Failing, tc.role, tc.layer)
			}
		})
	}
}

func TestProbeUsageErrors(t *testing.T) {
	cases := [][]string{
		{"probe"},
		{"probe", "a", "b"},
		{"probe", "Not/A:Valid:Ref"},
		{"probe", "-o", "yaml", "registry.example/app:1"},
		{"probe", "--resolv-conf", "/nonexistent/resolv.conf", "registry.example/app:1"},
		{"probe", "--dns-server", "not-an-ip", "registry.example/app:1"},
		{"probe", "--pull-secret", "/nonexistent/secret.yaml", "registry.example/app:1"},
		{"probe", "--username", "u", "registry.example/app:1"},
		{"probe", "--concurrency", "0", "--anonymous", "--dns-server", "127.0.0.1", "registry.example/app:1"},
		{"probe", "--nope", "registry.example/app:1"},
		{"nosuchcommand"},
	}
	for _, args := range cases {
		r := run(t, "", args...)
		if r.code != ExitUsage {
			t.Errorf("%v: exit %d, want 2\nstderr: %s", args, r.code, r.errOut)
		}
		if !strings.HasPrefix(r.errOut, "pullpath: ") {
			t.Errorf("%v: stderr %q should say what is wrong", args, r.errOut)
		}
		if strings.Contains(r.errOut, "panic") || strings.Contains(r.errOut, "goroutine") {
			t.Errorf("%v: panic: %s", args, r.errOut)
		}
	}
}

func TestAllowlist(t *testing.T) {
	e := lab(t)
	r := run(t, demo.Password, labArgs(e, "-u", demo.User, "--password-stdin", "--allowlist", e.Lab.Ref("team/app:1.4"))...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.out, r.errOut)
	}
	got := strings.Fields(r.out)
	want := []string{e.Lab.AuthAddr(), e.Lab.BlobAddr(), e.Lab.RegistryAddr()}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("allowlist %v, want %v", got, want)
	}
	// broken: exit 1, the hosts it knows, and what it could not discover; -o json is honoured
	e.Lab.SetFaults(registrytest.Faults{Cert: registrytest.CertRogue})
	r = run(t, "", labArgs(e, "--anonymous", "--allowlist", e.Lab.Ref("team/app:1.4"))...)
	if r.code != 1 || !strings.HasPrefix(r.out, e.Lab.RegistryAddr()+"\n# incomplete: the walk stopped at tls on "+e.Lab.RegistryAddr()) ||
		!strings.Contains(r.out, "# not discovered: the token realm") {
		t.Errorf("exit %d, allowlist of a broken path:\n%s", r.code, r.out)
	}
	r = run(t, "", labArgs(e, "--anonymous", "--allowlist", "-o", "json", e.Lab.Ref("team/app:1.4"))...)
	var doc struct {
		Kind     string `json:"kind"`
		Complete bool   `json:"complete"`
		Hosts    []struct{ Host, Role string }
		Undisc   []string `json:"undiscovered"`
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || doc.Kind != "Allowlist" || doc.Complete || len(doc.Hosts) != 1 || len(doc.Undisc) != 2 {
		t.Errorf("json allowlist (%v): %s", err, r.out)
	}
}

// No output, in any format or verbosity, carries the password, the bearer token, the Basic
// credential or the signed blob URL's signature.
func TestSecretsNeverLeak(t *testing.T) {
	e := lab(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.yaml")
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, e.Lab.RegistryAddr(), base64.StdEncoding.EncodeToString([]byte(demo.User+":"+demo.Password)))
	y := "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: " + base64.StdEncoding.EncodeToString([]byte(cfg)) + "\n"
	if err := os.WriteFile(secret, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	var outputs []string
	for _, faults := range []registrytest.Faults{{}, {BlobCorrupt: true}, {BlobForbidden: true}, {Forbid: true}} {
		e.Lab.SetFaults(faults)
		for _, format := range [][]string{{"-o", "json"}, {"-o", "text", "-v"}} {
			args := labArgs(e, append(format, "--pull-secret", secret, e.Lab.Ref("team/app:1.4"))...)
			r := run(t, "", args...)
			if r.code == ExitUsage {
				t.Fatalf("exit 2: %s", r.errOut)
			}
			outputs = append(outputs, r.out, r.errOut)
		}
	}
	all := strings.Join(outputs, "\n")
	if !strings.Contains(all, "X-Amz-Signature=REDACTED") {
		t.Error("the signed URL should appear with its signature redacted (the probe followed the redirect)")
	}
	secrets := map[string]string{
		"password":          demo.Password,
		"bearer token":      e.Lab.Token(),
		"basic credential":  base64.StdEncoding.EncodeToString([]byte(demo.User + ":" + demo.Password)),
		"URL signature":     e.Lab.Signature(),
		"token prefix":      "lab-token-",
		"Authorization hdr": "Authorization:",
	}
	for what, s := range secrets {
		if s == "" {
			t.Fatalf("no %s to look for", what)
		}
		if strings.Contains(all, s) {
			t.Errorf("the %s appears in the output", what)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	if r := run(t, "", "version"); r.code != 0 || !strings.Contains(r.out, "pullpath") {
		t.Errorf("version: %+v", r)
	}
	r := run(t, "", "probe", "--help")
	if r.code != 0 || !strings.Contains(r.out, "--connect-timeout") || !strings.Contains(r.out, "Exit codes") {
		t.Errorf("probe --help: %+v", r)
	}
}

func TestDemoCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	r := run(t, "", "demo")
	if r.code != 0 {
		t.Fatalf("demo exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	if !strings.Contains(r.out, "all 22 diagnoses match") {
		t.Errorf("demo summary missing:\n%s", r.out)
	}
}

// Every staged fault, through the real command line: exit 1 and the scenario's class, role and
// layer in the JSON; the healthy paths exit 0.
func TestEveryScenarioExitCode(t *testing.T) {
	for _, s := range demo.Scenarios() {
		t.Run(s.Name, func(t *testing.T) {
			e := lab(t)
			o := s.Stage(e)
			args := []string{"probe", "-o", "json", "--hosts-file", "", "--platform", o.Platform, "--connect-timeout", "2s", "--stall-timeout", "1s"}
			for _, ns := range o.Resolver.Nameservers {
				args = append(args, "--dns-server", ns)
			}
			for _, ca := range o.CAFiles {
				args = append(args, "--ca-file", ca)
			}
			stdin := ""
			if o.Credential.Username != "" {
				args = append(args, "-u", o.Credential.Username, "--password-stdin")
				stdin = o.Credential.Password + "\n"
			} else {
				args = append(args, "--anonymous")
			}
			r := run(t, stdin, append(args, o.Image)...)
			want := ExitBroken
			if s.Expect == "ok" {
				want = ExitOK
			}
			if r.code != want {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, want, r.out, r.errOut)
			}
			var doc struct {
				Class   string
				Code    string
				Failing *struct{ Role, Step string }
			}
			if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Class != string(s.Expect) || doc.Code != string(s.Code) {
				t.Fatalf("class %s code %s, want %s %s", doc.Class, doc.Code, s.Expect, s.Code)
			}
			if s.Expect != "ok" && (doc.Failing == nil || doc.Failing.Role != string(s.Role) || doc.Failing.Step != s.Step.String()) {
				t.Errorf("failing %+v, want %s/%s", doc.Failing, s.Role, s.Step)
			}
		})
	}
}
