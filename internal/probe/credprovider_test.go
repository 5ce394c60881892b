package probe_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/credprovider"
	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

var (
	provOnce sync.Once
	provBin  []byte
	provErr  error
)

// nodeWithProvider writes a node root to a temp dir: the kubelet's flags in /etc/default/kubelet
// (AKS style), the provider config, and the test provider built from credprovider/testdata as
// /opt/cp/bin/fake. It returns the plan the CLI would find for the lab image.
func nodeWithProvider(t *testing.T, e *demo.Env, matchImage string, args ...string) (*credprovider.Plan, string) {
	t.Helper()
	provOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pullpath-provider")
		if err != nil {
			provErr = err
			return
		}
		defer os.RemoveAll(dir)
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "fake"), "../credprovider/testdata/provider").CombinedOutput()
		if err != nil {
			provErr = err
			t.Logf("%s", out)
			return
		}
		provBin, provErr = os.ReadFile(filepath.Join(dir, "fake"))
	})
	if provErr != nil {
		t.Fatalf("building the test provider: %v", provErr)
	}
	root := t.TempDir()
	var argLines string
	for _, a := range args {
		argLines += "\n  - \"" + a + "\""
	}
	files := map[string]string{
		"etc/default/kubelet": "KUBELET_FLAGS=--max-pods=30 --image-credential-provider-config=/etc/kubernetes/cp.yaml --image-credential-provider-bin-dir=/opt/cp/bin\n",
		"etc/kubernetes/cp.yaml": "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: fake\n  matchImages:\n  - \"" + matchImage +
			"\"\n  defaultCacheDuration: 10m\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  args:" + argLines + "\n",
	}
	for f, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "opt/cp/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "opt/cp/bin/fake"), provBin, 0o755); err != nil {
		t.Fatal(err)
	}
	plans, note, err := credprovider.FindAll(credprovider.ReadKubelet(runtimeconfig.Root{FS: os.DirFS(root), Name: root}), e.Lab.RegistryAddr()+"/team/app")
	if err != nil {
		t.Fatal(err)
	}
	var plan *credprovider.Plan
	if len(plans) > 0 {
		plan = plans[0]
	}
	if plan != nil && plan.Bin != filepath.Join(root, "opt/cp/bin/fake") {
		t.Fatalf("the provider must be executed under the host root: %s", plan.Bin)
	}
	return plan, note
}

// providerOpts are the lab's options with the credential the CLI hands over when a provider matches.
func providerOpts(e *demo.Env, plan *credprovider.Plan) probe.Options {
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	o.Credential = creds.Credential{Source: plan.Source()}
	o.Providers = []*credprovider.Plan{plan}
	return o
}

func TestCredentialProviderIdentity(t *testing.T) {
	e := lab(t)
	plan, _ := nodeWithProvider(t, e, "*.pullpath.test:"+port(e.Lab.RegistryAddr()), "ok", demo.User, demo.Password)
	rep, err := probe.Run(context.Background(), providerOpts(e, plan))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK {
		t.Fatalf("class %s %s: %s", rep.Class, rep.Code, rep.Summary)
	}
	if want := "credential provider fake (/etc/kubernetes/cp.yaml:4)"; !strings.HasSuffix(rep.CredentialSource, "fake ("+plan.Provider.Origin+")") || !strings.HasSuffix(plan.Provider.Origin, "/etc/kubernetes/cp.yaml:4") {
		t.Errorf("credentialSource %q, origin %q, want %s", rep.CredentialSource, plan.Provider.Origin, want)
	}
	var txt bytes.Buffer
	if err := report.WriteText(&txt, rep, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "identity  credential provider fake (") {
		t.Errorf("the text report should name the identity source:\n%s", txt.String())
	}
	assertNoSecret(t, rep, demo.Password, e.Lab.Token())
}

func TestCredentialProviderFailures(t *testing.T) {
	e := lab(t)
	for _, c := range []struct {
		name    string
		args    []string
		timeout time.Duration
		code    report.Code
		ev      string
	}{
		{"exit 1 with stderr", []string{"fail"}, 0, report.CodeCredentialProviderFailed, "stderr: E1202 failed to get token: managed identity endpoint said 400"},
		{"timeout", []string{"sleep"}, 500 * time.Millisecond, report.CodeCredentialProviderFailed, "exit: killed after 500ms"},
		{"invalid JSON", []string{"badjson"}, 0, report.CodeCredentialProviderFailed, "exit: exit status 0"},
		{"no auth for the image", []string{"noauth"}, 0, report.CodeCredentialProviderNoAuth, "auth keys: other.example.com"},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, _ := nodeWithProvider(t, e, e.Lab.RegistryAddr(), c.args...)
			plan.Timeout = c.timeout
			rep, err := probe.Run(context.Background(), providerOpts(e, plan))
			if err != nil {
				t.Fatal(err)
			}
			f := rep.Failing
			if rep.Class != report.ClassAuth || rep.Owner != report.ClassAuth.Owner() || rep.Code != c.code || f == nil ||
				f.Host != e.Lab.RegistryAddr() || f.Role != report.RoleRegistry || f.Step != report.StepAuth {
				t.Fatalf("class %s code %s failing %+v: %s", rep.Class, rep.Code, f, rep.Summary)
			}
			ev := strings.Join(append(rep.Evidence, rep.Summary), "\n")
			if !strings.Contains(ev, c.ev) || !strings.Contains(ev, "/etc/kubernetes/cp.yaml:4") || !strings.Contains(ev, "AUTH_401") {
				t.Errorf("evidence should hold %q, the config's file:line and the anonymous 401:\n%s", c.ev, ev)
			}
			if !strings.Contains(rep.WhereToLook, "CredentialProviderRequest") || !strings.Contains(rep.WhereToLook, "/opt/cp/bin/fake") {
				t.Errorf("whereToLook should say how to run the provider by hand: %q", rep.WhereToLook)
			}
			if !strings.Contains(rep.CredentialSource, "credential provider fake") || !strings.Contains(rep.CredentialSource, "anonymous") {
				t.Errorf("credentialSource %q", rep.CredentialSource)
			}
			if os.Getenv("SHOW") != "" {
				var b bytes.Buffer
				report.WriteText(&b, rep, report.TextOptions{})
				t.Log(b.String())
			}
			assertNoSecret(t, rep, "leaked-provider-token-42", "eyJhbGciOiJSUzI1NiJ9", "provider-other-secret")
		})
	}
}

// A provider whose matchImages miss the image is not run (the kubelet's isImageAllowed): the pull
// is anonymous, and the report says why.
func TestCredentialProviderWrongMatchImages(t *testing.T) {
	e := lab(t)
	plan, note := nodeWithProvider(t, e, "*.pullpath.test", "ok", demo.User, demo.Password) // no port: no match
	if plan != nil || !strings.Contains(note, "no kubelet credential provider matches") {
		t.Fatalf("plan %+v note %q", plan, note)
	}
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	o.Credential = creds.Credential{Source: "anonymous (" + note + ")"}
	rep, err := probe.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassAuth || rep.Code != report.CodeAuth401 || !strings.Contains(rep.CredentialSource, "no kubelet credential provider matches") {
		t.Fatalf("class %s code %s source %q", rep.Class, rep.Code, rep.CredentialSource)
	}
}

// The provider answers, the registry rejects what it answered: auth 401, and the report names the
// provider as the identity; its password never reaches text or JSON.
func TestCredentialProviderRejectedAndSecrets(t *testing.T) {
	e := lab(t)
	const pass = "provider-issued-password-7781"
	plan, _ := nodeWithProvider(t, e, e.Lab.RegistryAddr(), "ok", "00000000-0000-0000-0000-000000000000", pass)
	rep, err := probe.Run(context.Background(), providerOpts(e, plan))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassAuth || rep.Code != report.CodeAuth401 || rep.CredentialSource != plan.Source() {
		t.Fatalf("class %s code %s source %q, want auth AUTH_401 from %s", rep.Class, rep.Code, rep.CredentialSource, plan.Source())
	}
	if !strings.Contains(rep.WhereToLook, "credential provider fake") {
		t.Errorf("whereToLook should name the provider: %q", rep.WhereToLook)
	}
	assertNoSecret(t, rep, pass)
}

func assertNoSecret(t *testing.T, rep *report.Probe, secrets ...string) {
	t.Helper()
	var js, txt bytes.Buffer
	if err := report.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteText(&txt, rep, report.TextOptions{Verbose: true}); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(js.String(), s) || strings.Contains(txt.String(), s) {
			t.Errorf("secret %q reached the output", s)
		}
	}
}

func port(hostport string) string { return hostport[strings.LastIndexByte(hostport, ':')+1:] }

// The exchanges of a pull with the node's identity, each a recorded step with its host and role,
// tell apart: no identity at all (the provider failed), an identity the registry rejects (401 at
// the token exchange), and an identity without rights on the repository (at the manifest).
func TestCredentialProviderExchangesTellIdentityFailuresApart(t *testing.T) {
	e := lab(t)
	cases := []struct {
		name   string
		args   []string
		faults func()
		class  report.Class
		code   report.Code
		host   string
		role   report.Role
		step   report.StepName
		prov   report.Verdict
	}{
		{"no identity", []string{"fail"}, nil, report.ClassAuth, report.CodeCredentialProviderFailed, e.Lab.RegistryAddr(), report.RoleRegistry, report.StepAuth, report.Fail},
		{"identity rejected at the exchange", []string{"ok", demo.User, "not-the-password"}, nil, report.ClassAuth, report.CodeAuth401, e.Lab.AuthAddr(), report.RoleToken, report.StepAuth, report.Pass},
		{"identity without rights", []string{"ok", demo.User, demo.Password}, func() { e.Lab.SetFaults(registrytest.Faults{Forbid: true}) }, report.ClassForbidden, report.CodeAuth403, e.Lab.RegistryAddr(), report.RoleRegistry, report.StepManifest, report.Pass},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.Lab.SetFaults(registrytest.Faults{})
			if c.faults != nil {
				c.faults()
			}
			plan, _ := nodeWithProvider(t, e, e.Lab.RegistryAddr(), c.args...)
			rep, err := probe.Run(context.Background(), providerOpts(e, plan))
			if err != nil {
				t.Fatal(err)
			}
			f := rep.Failing
			if rep.Class != c.class || rep.Code != c.code || f == nil || f.Host != c.host || f.Role != c.role || f.Step != c.step {
				t.Fatalf("class %s code %s failing %+v, want %s %s on %s (%s) at %s: %s", rep.Class, rep.Code, f, c.class, c.code, c.host, c.role, c.step, rep.Summary)
			}
			var prov *report.Step
			for i, s := range rep.Steps {
				if s.Endpoint == "credential provider fake" {
					prov = &rep.Steps[i]
				}
			}
			if prov == nil || prov.Verdict != c.prov || prov.Role != report.RoleToken || prov.Step != report.StepAuth {
				t.Errorf("the provider exchange should be a recorded step (verdict %s): %+v", c.prov, prov)
			}
			assertNoSecret(t, rep, e.Lab.Token(), demo.Password, "not-the-password", "leaked-provider-token-42")
		})
	}
	e.Lab.SetFaults(registrytest.Faults{})
}

// The kubelet runs every provider whose matchImages cover the image and combines their answers: a
// provider that fails while another answers leaves the pull with the other's credential (not
// anonymous), and several matching credentials are tried in turn, most specific key first.
func TestCredentialProvidersCombined(t *testing.T) {
	e := lab(t)
	nodeWithProvider(t, e, "x", "ok") // builds the provider
	reg := e.Lab.RegistryAddr()
	for _, c := range []struct {
		name               string
		first, second      string // args
		class              report.Class
		source, warn, miss string
	}{
		{"the first fails, the second answers", "fail", `ok ` + demo.User + ` ` + demo.Password, report.ClassOK,
			"credential provider second (", string(report.CodeCredentialProviderFailed), ""},
		{"both answer: the more specific key first", `ok ` + demo.User + ` wrong-password ` + reg, `ok ` + demo.User + ` ` + demo.Password + ` ` + reg + `/team`, report.ClassOK,
			"credential provider second (", string(report.CodeCredentialProviderMore), ""},
		// the v1.37 keyring keeps both answers for a key (plugins_test.go "multiple providers")
		{"both answer the same key: the earlier provider's first", `ok ` + demo.User + ` ` + demo.Password, `ok ` + demo.User + ` wrong-password`, report.ClassOK,
			"credential provider first (", string(report.CodeCredentialProviderMore), ""},
		{"both answer the same key, the earlier is refused: the later one's pulls", `ok ` + demo.User + ` wrong-password`, `ok ` + demo.User + ` ` + demo.Password, report.ClassOK,
			"credential provider second (", string(report.CodeCredentialProviderMore), ""},
		{"both fail: the first failure stands", "fail", "noauth", report.ClassAuth,
			"credential provider first (", "", ""},
		{"the first credential is refused: the next one pulls, as the kubelet tries them in turn", `ok ` + demo.User + ` wrong-password ` + reg + `/team`, `ok ` + demo.User + ` ` + demo.Password + ` ` + reg, report.ClassOK,
			"credential provider second (", string(report.CodeCredentialProviderMore), ""},
		{"every credential refused: the first one's finding, all listed", `ok ` + demo.User + ` wrong-password ` + reg + `/team`, `ok ` + demo.User + ` wrong-too ` + reg, report.ClassAuth,
			"credential provider first (", string(report.CodeCredentialProviderMore), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			yamlArgs := func(a string) string {
				var out string
				for _, w := range strings.Fields(a) {
					out += "\n  - \"" + w + "\""
				}
				return out
			}
			files := map[string]string{
				"etc/default/kubelet": "KUBELET_FLAGS=--image-credential-provider-config=/etc/kubernetes/cp.yaml --image-credential-provider-bin-dir=/opt/cp/bin\n",
				"etc/kubernetes/cp.yaml": "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n" +
					"- name: first\n  matchImages: [\"" + reg + "\"]\n  defaultCacheDuration: 0s\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  args:" + yamlArgs(c.first) + "\n" +
					"- name: second\n  matchImages: [\"" + reg + "/team\"]\n  defaultCacheDuration: 0s\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  args:" + yamlArgs(c.second) + "\n" +
					"- name: other\n  matchImages: [\"elsewhere.test\"]\n  defaultCacheDuration: 0s\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n",
			}
			for _, n := range []string{"first", "second", "other"} {
				files["opt/cp/bin/"+n] = string(provBin)
			}
			for f, data := range files {
				os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
				if err := os.WriteFile(filepath.Join(root, f), []byte(data), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			plans, _, err := credprovider.FindAll(credprovider.ReadKubelet(runtimeconfig.Root{FS: os.DirFS(root), Name: root}), reg+"/team/app")
			if err != nil || len(plans) != 2 || plans[0].Provider.Name != "first" || plans[1].Provider.Name != "second" {
				t.Fatalf("FindAll: %v %v (want first and second, not other)", plans, err)
			}
			o := e.Options(e.Lab.Ref("team/app:1.4"))
			o.Credential = creds.Credential{Source: plans[0].Source()}
			o.Providers = plans
			rep, err := probe.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Class != c.class || !strings.HasPrefix(rep.CredentialSource, c.source) {
				t.Errorf("class %s (%s), identity %q; want %s from %s…", rep.Class, rep.Summary, rep.CredentialSource, c.class, c.source)
			}
			steps := 0
			for _, s := range rep.Steps {
				if strings.HasPrefix(s.Endpoint, "credential provider ") {
					steps++
				}
			}
			if steps != 2 {
				t.Errorf("%d provider steps, want one per provider run (2)", steps)
			}
			codes := map[report.Code]bool{}
			for _, w := range rep.Warnings {
				codes[w.Code] = true
			}
			if c.warn != "" && !codes[report.Code(c.warn)] || c.miss != "" && codes[report.Code(c.miss)] {
				t.Errorf("warnings %+v: want %q, not %q", rep.Warnings, c.warn, c.miss)
			}
			assertNoSecret(t, rep, demo.Password, "wrong-password", "wrong-too")
			for _, w := range rep.Warnings {
				if w.Code == report.CodeCredentialProviderMore && c.class == report.ClassAuth && !strings.Contains(w.Message, "none did") {
					t.Errorf("every credential refused, but the warning does not say so: %s", w.Message)
				}
			}
		})
	}
}

// The kubelet unions the pod's pull secrets with the node's credential providers (v1.37
// secrets.go:39): the secrets' credentials first, then the providers' answers, each tried in turn,
// and no anonymous pull once there was a credential (kuberuntime_image.go:50-70).
func TestPullSecretsThenProviders(t *testing.T) {
	e := lab(t)
	reg := e.Lab.RegistryAddr()
	for _, c := range []struct {
		name     string
		secret   string   // the pull secret's password
		prov     []string // the provider's args
		class    report.Class
		code     report.Code
		source   string
		warnings []report.Code
		tried    string // in the PULL_SECRET_MORE warning, in order
	}{
		{"the secret is refused: the provider's answer pulls", "wrong-password", []string{"ok", demo.User, demo.Password}, report.ClassOK, report.CodeOK,
			"credential provider fake (", []report.Code{report.CodePullSecretMore}, "pull secret s1 (entry " + reg + "): auth (AUTH_401); credential provider fake ("},
		{"the secret pulls: the provider still ran, its answer not needed", demo.Password, []string{"ok", demo.User, "wrong-too"}, report.ClassOK, report.CodeOK,
			"pull secret s1", nil, ""},
		{"the secret pulls although the provider failed", demo.Password, []string{"fail"}, report.ClassOK, report.CodeOK,
			"pull secret s1", []report.Code{report.CodeCredentialProviderFailed}, ""},
		{"both refused: the secret's finding, both listed", "wrong-password", []string{"ok", demo.User, "wrong-too"}, report.ClassAuth, report.CodeAuth401,
			"pull secret s1", []report.Code{report.CodePullSecretMore}, "pull secret s1 (entry " + reg + "): auth (AUTH_401); credential provider fake ("},
		{"the secret refused, the provider failed: no anonymous pull", "wrong-password", []string{"fail"}, report.ClassAuth, report.CodeAuth401,
			"pull secret s1", []report.Code{report.CodeCredentialProviderFailed}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, _ := nodeWithProvider(t, e, reg, c.prov...)
			secret := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg, base64.StdEncoding.EncodeToString([]byte(demo.User+":"+c.secret)))
			o := providerOpts(e, plan)
			o.Keyring = &creds.Keyring{}
			if err := o.Keyring.AddPullSecrets([]creds.NamedSecret{{Label: "s1", Data: []byte(secret)}}); err != nil {
				t.Fatal(err)
			}
			rep, err := probe.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Class != c.class || rep.Code != c.code || !strings.HasPrefix(rep.CredentialSource, c.source) {
				t.Errorf("class %s %s, identity %q; want %s %s from %s…: %s", rep.Class, rep.Code, rep.CredentialSource, c.class, c.code, c.source, rep.Summary)
			}
			if c.class == report.ClassAuth && (rep.Failing == nil || rep.Failing.Host != e.Lab.AuthAddr() || rep.Failing.Role != report.RoleToken) {
				t.Errorf("the secret's refusal must stand, not an anonymous pull: %+v %q", rep.Failing, rep.CredentialSource)
			}
			steps := 0
			for _, s := range rep.Steps {
				if s.Endpoint == "credential provider fake" {
					steps++
				}
			}
			if steps != 1 {
				t.Errorf("%d provider steps: the kubelet runs the provider beside the pull secrets, once", steps)
			}
			got := map[report.Code]string{}
			for _, w := range rep.Warnings {
				got[w.Code] = w.Message
			}
			for _, want := range c.warnings {
				if _, ok := got[want]; !ok {
					t.Errorf("no %s warning: %+v", want, rep.Warnings)
				}
			}
			if m, ok := got[report.CodePullSecretMore]; ok != (c.tried != "") || !strings.Contains(m, c.tried) {
				t.Errorf("PULL_SECRET_MORE %q, want it listing %q", m, c.tried)
			}
			if c.class == report.ClassAuth && c.tried != "" && !strings.Contains(got[report.CodePullSecretMore], "none did") {
				t.Errorf("every credential refused, but the warning does not say so: %s", got[report.CodePullSecretMore])
			}
			assertNoSecret(t, rep, demo.Password, "wrong-password", "wrong-too", "leaked-provider-token-42")
		})
	}
}
