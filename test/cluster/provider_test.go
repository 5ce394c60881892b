package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/report"
)

// TestCredentialProvider (issue 13): poola-2's kubelet trades the node's identity for registry
// credentials through a credential provider, an exec plugin configured as AKS configures
// acr-credential-provider (flags in /etc/default/kubelet). The kubelet's real pull and pullpath — on
// the node (probe --host-root / --cri, as an operator runs it there) and in verify's probe pod
// (--host-root /host) — run the same provider, present the same identity and agree: the provider
// that answers with the registry's credentials pulls; the one whose credentials the registry
// rejects fails with auth on the registry, and the report names that provider. poola-1, in the same
// pool and without a provider, fails for want of any identity. A pod with a pull secret the registry
// rejects is pulled on poola-2 with the provider's credential after the secret's, and verify --pod
// tries them in the same order.
func TestCredentialProvider(t *testing.T) {
	c := sharedCluster(t)
	c.Run(t, "version") // builds pullpath
	stamp := time.Now().UnixNano()
	refs := map[string]string{}
	for _, repo := range []string{providerGood, providerBad} {
		im := c.Push(t, fmt.Sprintf("%s/app-%d:v1", strings.TrimPrefix(repo, authRegistry+"/"), stamp))
		refs[repo] = authRegistry + strings.TrimPrefix(im.Ref, registry)
	}
	calls := filepath.Join(c.node("poola-2").dir, "var-lib", "kubelet-credential-provider", "calls.log")
	type want struct {
		provider string
		class    report.Class
		cri      string // the runtime's own result with the provider's credentials
	}
	cases := map[string]want{
		providerGood: {"pullpath-good", report.ClassOK, "ok"},
		providerBad:  {"pullpath-bad", report.ClassAuth, "failed"},
	}

	// 1. on the node, before anything pulled the images: the probe reads the kubelet's flags, runs the
	// provider and asks the node's containerd to pull with what it returned
	for repo, w := range cases {
		ref := refs[repo]
		out, errOut, code := c.OnNode(t, "poola-2", "probe", ref, "--host-root", "/", "--cri", "-o", "json")
		var p report.Probe
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%s: not JSON (exit %d): %v\n%s\n%s", ref, code, err, out, errOut)
		}
		wantSource := "credential provider " + w.provider + " (/var/lib/kubelet-credential-provider/config.yaml:"
		if p.Class != w.class || !strings.HasPrefix(p.CredentialSource, wantSource) {
			t.Errorf("%s: probe class %s (%s), identity %q; want %s from %s…", ref, p.Class, p.Summary, p.CredentialSource, w.class, wantSource)
		}
		if w.class != report.ClassOK && (code != 1 || p.Failing == nil || p.Failing.Host != authRegistry || p.Failing.Role != report.RoleRegistry) {
			t.Errorf("%s: exit %d failing %+v, want 1 on %s (registry)", ref, code, p.Failing, authRegistry)
		}
		if w.class == report.ClassOK && (code != 0 || !p.Download.Verified) {
			t.Errorf("%s: exit %d, download %+v: want a verified download", ref, code, p.Download)
		}
		if !hasStep(p, "credential provider "+w.provider) {
			t.Errorf("%s: the provider's exchange is not a step: %+v", ref, p.Steps)
		}
		if x := p.CRI; x == nil || x.PresentBefore || x.Result != w.cri || x.Agrees == nil || !*x.Agrees ||
			(w.class != report.ClassOK && x.Class != w.class) {
			t.Errorf("%s: the runtime's own pull with the provider's credentials: %+v, want %s agreeing", ref, x, w.cri)
		}
		for _, secret := range []string{registryPass, "rejected-by-the-registry"} {
			if strings.Contains(out+errOut, secret) {
				t.Errorf("%s: the provider's password reached the output", ref)
			}
		}
	}
	text, _, _ := c.OnNode(t, "poola-2", "probe", refs[providerBad], "--host-root", "/", "--cri")
	t.Logf("pullpath probe on poola-2 with the provider whose credentials the registry rejects:\n%s", text)
	if !strings.Contains(text, "pullpath-bad") || !strings.Contains(text, "agree") {
		t.Errorf("text report names neither the provider nor the runtime's agreement:\n%s", text)
	}
	// each probe ran its provider, for the walk and again for the runtime's pull, as the kubelet
	// runs it before each pull (the provider sees no parent name: pullpath entered the node's
	// namespaces from outside its PID namespace; the kubelet has not run yet)
	for _, repo := range []string{providerGood, providerBad} {
		img := strings.TrimSuffix(refs[repo], ":v1")
		if n := strings.Count(readCalls(t, calls), "- "+img+"\n"); n < 2 {
			t.Errorf("the probe ran the provider for %s %d times, want at least 2 (the walk, the runtime's pull)", img, n)
		}
	}

	// 2. the kubelet's real pull (PullAlways: it asks the registry, with whatever the provider gave)
	ns := c.Namespace(t, "provider")
	c.CreatePod(t, PodOn(ns, "good", "poola-2", refs[providerGood], corev1.PullAlways))
	c.CreatePod(t, PodOn(ns, "bad", "poola-2", refs[providerBad], corev1.PullAlways))
	c.WaitEvent(t, ns, "good", "Pulled", time.Minute, "Successfully pulled image", refs[providerGood])
	e := c.WaitEvent(t, ns, "bad", "Failed", time.Minute, "Failed to pull image", refs[providerBad], "401 Unauthorized")
	log := readCalls(t, calls)
	for repo, w := range cases {
		if !strings.Contains(log, "kubelet "+strings.TrimSuffix(refs[repo], ":v1")) {
			t.Errorf("the kubelet did not run %s for %s:\n%s", w.provider, refs[repo], log)
		}
	}
	// explain reads the kubelet's event as the probe read the pull: auth on the registry
	out, errOut, code := c.Run(t, "pod", "bad", "-n", ns, "-o", "json")
	var d report.PodDiagnosis
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Class != report.ClassAuth || code != 1 {
		t.Errorf("pullpath pod on the kubelet's failure (event %q): class %s exit %d, want auth\n%s\n%s", e.Message, d.Class, code, out, errOut)
	}

	// 3. verify on pool A, every node: poola-2's probe pod runs the node's provider from the node's
	// disk; poola-1 has none. The canaries are the kubelet's own pulls.
	runNamespace(t, c)
	out, errOut, code = c.Run(t, "verify", refs[providerGood], "--pool", "poola", "--all-nodes", "--runtime-pull",
		"--run-namespace", runNS, "--probe-timeout", "90s", "-o", "json")
	var v report.Verification
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("verify: not JSON (exit %d): %v\n%s\n%s", code, err, out, errOut)
	}
	byNode := map[string]report.PoolResult{}
	for _, p := range v.Pools {
		byNode[p.Node] = p
	}
	for node, w := range map[string]struct {
		class  report.Class
		source string
	}{
		"poola-2": {report.ClassOK, "credential provider pullpath-good"},
		"poola-1": {report.ClassAuth, "anonymous"},
	} {
		p, ok := byNode[node]
		if !ok || p.Probe == nil {
			t.Errorf("verify: no probe of %s: %+v", node, p)
			continue
		}
		if p.Class != w.class || !strings.HasPrefix(p.Probe.CredentialSource, w.source) {
			t.Errorf("verify on %s: class %s identity %q, want %s with %s…", node, p.Class, p.Probe.CredentialSource, w.class, w.source)
		}
		if rp := p.RuntimePull; rp == nil || rp.Agrees == nil || !*rp.Agrees {
			t.Errorf("verify on %s: the kubelet's canary pull must agree with the probe: %+v", node, rp)
		}
	}
	if code != 1 {
		t.Errorf("verify exit %d, want 1 (poola-1 has no identity)", code)
	}

	// 4. a pull secret the registry rejects, on poola-2: the kubelet's keyring puts the pod's secrets
	// first and the providers' answers after (kubelet v1.37 secrets.go:39), so the secret is refused
	// and the provider's credential pulls. verify --pod hands the node probes the same secret; on
	// poola-2 the probe runs the node's provider after it, as the kubelet does, and agrees with the
	// canary; on poola-1 (no provider) the secret's refusal stands, with no anonymous pull after.
	wrongAuth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + podWrongPass))
	if _, err := c.Client.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wrong"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, authRegistry, wrongAuth))}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := PodOn(ns, "secret-then-provider", "poola-2", refs[providerGood], corev1.PullAlways)
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "wrong"}}
	c.CreatePod(t, pod)
	c.WaitEvent(t, ns, pod.Name, "Pulled", time.Minute, "Successfully pulled image", refs[providerGood])
	out, errOut, code = c.Run(t, "verify", refs[providerGood], "--pool", "poola", "--all-nodes", "--pod", ns+"/"+pod.Name, "--runtime-pull",
		"--run-namespace", runNS, "--probe-timeout", "90s", "-o", "json")
	v = report.Verification{}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("verify --pod: not JSON (exit %d): %v\n%s\n%s", code, err, out, errOut)
	}
	for _, secret := range []string{registryPass, podWrongPass, wrongAuth, "rejected-by-the-registry"} {
		if strings.Contains(out+errOut, secret) {
			t.Errorf("verify --pod: a password or its Authorization value reached the output")
		}
	}
	for _, p := range v.Pools {
		if p.Probe == nil {
			t.Errorf("verify --pod: no probe of %s: %+v", p.Node, p)
			continue
		}
		turns := ""
		for _, w := range p.Probe.Warnings {
			if w.Code == report.CodePullSecretMore {
				turns = w.Message
			}
		}
		switch p.Node {
		case "poola-2":
			if p.Class != report.ClassOK || !strings.HasPrefix(p.Probe.CredentialSource, "credential provider pullpath-good") || !hasStep(*p.Probe, "credential provider pullpath-good") {
				t.Errorf("verify --pod on poola-2: class %s identity %q, want ok with pullpath-good after the secret: %s", p.Class, p.Probe.CredentialSource, p.Probe.Summary)
			}
			i, j := strings.Index(turns, ns+"/wrong"), strings.Index(turns, "credential provider pullpath-good")
			if i < 0 || j < i || !strings.Contains(turns, ": auth (AUTH_401)") || !strings.Contains(turns, ": ok (OK)") {
				t.Errorf("verify --pod on poola-2: what each credential got, in the kubelet's order: %q", turns)
			}
			t.Logf("poola-2, in turn: %s", turns)
		case "poola-1":
			if p.Class != report.ClassAuth || p.Probe.Code != report.CodeAuth401 || !strings.Contains(p.Probe.CredentialSource, ns+"/wrong") {
				t.Errorf("verify --pod on poola-1: class %s %s identity %q, want the secret's AUTH_401", p.Class, p.Probe.Code, p.Probe.CredentialSource)
			}
		}
		if rp := p.RuntimePull; rp == nil || rp.Agrees == nil || !*rp.Agrees {
			t.Errorf("verify --pod on %s: the kubelet's canary pull with the run's copy of the secret must agree with the probe: %+v", p.Node, rp)
		}
	}
	if code != 1 {
		t.Errorf("verify --pod exit %d, want 1 (poola-1: the secret refused, no provider)", code)
	}
	assertNothingLeft(t, c)
	t.Logf("provider calls:\n%s", readCalls(t, calls))
}

// OnNode runs pullpath as an operator on the node would: in the node's network and mount
// namespaces (its /etc/containerd, /etc/default, /var/lib and resolv.conf), as root.
func (c *cluster) OnNode(t testing.TB, nodeName string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	n := c.node(nodeName)
	pid := ""
	for _, p := range pids() {
		comm, _ := os.ReadFile("/proc/" + p + "/comm")
		if ns, err := os.Readlink("/proc/" + p + "/ns/pid"); err == nil && ns == n.pidNS && strings.TrimSpace(string(comm)) == "containerd" {
			pid = p
			break
		}
	}
	if pid == "" {
		t.Fatalf("no containerd in %s's namespaces", nodeName)
	}
	return runIn(t, 3*time.Minute, nil, append([]string{"nsenter", "--net=/run/netns/" + n.netns, "--mount=/proc/" + pid + "/ns/mnt", "--", c.pullpath}, args...))
}

func readCalls(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func hasStep(p report.Probe, endpoint string) bool {
	for _, s := range p.Steps {
		if s.Endpoint == endpoint {
			return true
		}
	}
	return false
}
