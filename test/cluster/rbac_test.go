package cluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/pullpath/pullpath/internal/report"
)

// grant binds one role of deploy/rbac.yaml to an identity, less the rules on drop's resources
// ("nodes") or one verb of them ("get nodes"): cluster-wide when ns is "", else in ns.
type grant struct {
	role string
	ns   string
	drop []string
}

// identity is a ServiceAccount with a token from the TokenRequest API and a kubeconfig that uses
// it: what an operator's CI job or a kubectl user restricted by RBAC runs pullpath with.
type identity struct {
	user, kubeconfig, token string
}

// rbacRoles are the rules of deploy/rbac.yaml's roles, by name: the tests grant what the project
// tells operators to grant, less the right a case takes away.
func rbacRoles(t *testing.T) map[string][]rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string][]rbacv1.PolicyRule{}
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var r struct {
			Kind     string              `json:"kind"`
			Metadata metav1.ObjectMeta   `json:"metadata"`
			Rules    []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal(doc, &r); err != nil {
			t.Fatalf("deploy/rbac.yaml: %v", err)
		}
		if r.Kind == "ClusterRole" || r.Kind == "Role" {
			roles[r.Metadata.Name] = r.Rules
		}
	}
	return roles
}

// restrictedIdentity mints ServiceAccount name in ns with grants and waits until the API server's
// authorizer sees every binding. Everything cluster-scoped it makes, and every binding outside ns,
// is removed when the test ends.
func (c *cluster) restrictedIdentity(t *testing.T, roles map[string][]rbacv1.PolicyRule, ns, name string, grants ...grant) identity {
	t.Helper()
	ctx := context.Background()
	rb := c.Client.RbacV1()
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	id := identity{user: "system:serviceaccount:" + ns + ":" + name}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}
	var probes []authzv1.ResourceAttributes // one right per binding, to wait for
	for _, g := range grants {
		rules, ok := roles[g.role]
		if !ok {
			t.Fatalf("deploy/rbac.yaml has no role %s", g.role)
		}
		var kept []rbacv1.PolicyRule
		for _, r := range rules {
			var rest []rbacv1.PolicyRule // a resource less one verb, in a rule of its own
			r.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(res string) bool {
				for _, d := range g.drop {
					if verb, dres, ok := strings.Cut(d, " "); ok && dres == res {
						if verbs := slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == verb }); len(verbs) > 0 {
							rest = append(rest, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: []string{res}, Verbs: verbs})
						}
						return true
					}
				}
				return slices.Contains(g.drop, res)
			})
			if len(r.Resources) > 0 {
				kept = append(kept, r)
			}
			kept = append(kept, rest...)
		}
		// a ClusterRole of its own per identity (cluster-scoped names are shared by every test)
		crName := fmt.Sprintf("%s-%s-%s", ns, name, g.role)
		if _, err := rb.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: crName}, Rules: kept}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rb.ClusterRoles().Delete(context.Background(), crName, metav1.DeleteOptions{}) })
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: crName}
		if g.ns == "" {
			if _, err := rb.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: crName}, RoleRef: ref, Subjects: subject}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rb.ClusterRoleBindings().Delete(context.Background(), crName, metav1.DeleteOptions{}) })
		} else {
			if _, err := rb.RoleBindings(g.ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: crName}, RoleRef: ref, Subjects: subject}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rb.RoleBindings(g.ns).Delete(context.Background(), crName, metav1.DeleteOptions{}) })
		}
		if len(kept) > 0 {
			r := kept[0]
			res, sub, _ := strings.Cut(r.Resources[0], "/")
			probes = append(probes, authzv1.ResourceAttributes{Namespace: g.ns, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: res, Subresource: sub})
		}
	}
	// the RBAC authorizer reads bindings from a cache: wait until it has them all
	for _, attrs := range probes {
		deadline := time.Now().Add(10 * time.Second)
		for {
			sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: id.user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}, ResourceAttributes: &attrs}}
			res, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err == nil && res.Status.Allowed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the authorizer never allowed %+v (%v)", id.user, attrs, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	expiry := int64(600) // the API server's minimum
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id.token = tr.Status.Token
	id.kubeconfig = filepath.Join(t.TempDir(), name+".kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: pullpath-cluster-tier
  cluster:
    server: https://%s:6443
    certificate-authority-data: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: restricted
  context: {cluster: pullpath-cluster-tier, user: %s}
current-context: restricted
`, hubIP, base64.StdEncoding.EncodeToString(c.ca.PEM), name, id.token, name)
	if err := os.WriteFile(id.kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestRBACRestrictedIdentity runs pullpath as ServiceAccounts holding deploy/rbac.yaml's roles less
// one right each, with tokens from the TokenRequest API, against the real RBAC authorizer:
//   - verify --from-pod and --pod without get on secrets: the run proceeds, the pod's pull secret
//     is listed not handed over, with the missing right, in the JSON and in a note; no value leaks.
//     The two runs go at once on one pod: each adds its ephemeral container (a 409 on the pod's
//     resourceVersion is retried), and the runner role's rights are enough to leave nothing behind
//   - pod without get pods, list events or list nodes: exit 2 naming the verb and the resource
//   - pod does not ask for nodes/proxy; with --read-kubelet-config and without the unsafe role that
//     grants it, the diagnosis stands, the image-list cap is the default, a note says why; get on
//     the kubelet's own nodes/configz subresource does not stand in for it
//   - verify --from-pod without get on nodes: a note names the right, the pod is compared with the
//     probe on its own node
//   - verify with the runner role cluster-wide (no get on namespaces) in a run namespace that does
//     not exist: exit 2 naming the namespace and the fix
//   - pod in a mistyped namespace: with the reader role's get on namespaces, exit 2 "namespace …
//     does not exist" (pod --all too); without it, the pod not found and the question
//   - verify --pod / --secret naming what does not exist: one line, exit 2, no report
func TestRBACRestrictedIdentity(t *testing.T) {
	c := sharedCluster(t)
	start := time.Now()
	runNamespace(t, c)
	probe := pushProbeImage(t, c) // shared with the other --probe-image tests
	begin := time.Now()
	ctx := context.Background()
	ns := c.Namespace(t, "rbac")
	const secretPass = "rbac-unread-secret-password"
	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + secretPass))
	if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, registry, auth))}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	app := PodOn(ns, "app", "poola-1", pauseRef, corev1.PullNever) // present: nothing to pull
	app.Spec.DNSPolicy = corev1.DNSDefault
	app.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	c.CreatePod(t, app)
	missing := registry + "/rbac/missing:v1"
	c.CreatePod(t, PodOn(ns, "app-fail", "poola-1", missing, corev1.PullAlways))

	roles := rbacRoles(t)
	reader := func(drop ...string) grant { return grant{role: "pullpath-reader", drop: drop} }
	verifier := c.restrictedIdentity(t, roles, ns, "verifier", reader(), grant{role: "pullpath-runner", ns: runNS}, grant{role: "pullpath-pod-prober", ns: ns})
	noProxy := c.restrictedIdentity(t, roles, ns, "noproxy", reader()) // the reader role has no nodes/proxy
	roles["configz-only"] = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/configz"}, Verbs: []string{"get"}}}
	configzOnly := c.restrictedIdentity(t, roles, ns, "configz", reader(), grant{role: "configz-only"})
	// the runner role cluster-wide: its rights hold in any namespace, but it may not read namespaces
	// (the reader role less its get on namespaces, as before deploy/rbac.yaml granted it); pull
	// secrets anywhere, for --secret (the runner role reads none)
	anyNS := c.restrictedIdentity(t, roles, ns, "anyns", reader("namespaces"), grant{role: "pullpath-runner"}, grant{role: "pullpath-secret-reader"})
	noGetNodes := c.restrictedIdentity(t, roles, ns, "nogetnodes", reader("get nodes"), grant{role: "pullpath-runner", ns: runNS}, grant{role: "pullpath-pod-prober", ns: ns})
	lacking := []struct {
		drop, verb, resource, scope string
	}{
		{"pods", "get", "pods", "in namespace " + ns},
		{"events", "list", "events", "in namespace " + ns},
		{"nodes", "list", "nodes", "at cluster scope"},
	}
	without := map[string]identity{}
	for _, l := range lacking {
		without[l.drop] = c.restrictedIdentity(t, roles, ns, "no"+l.drop, reader(l.drop))
	}
	t.Logf("identities ready in %s", time.Since(begin).Round(100*time.Millisecond))
	secrets := []string{secretPass, auth, verifier.token, noProxy.token, configzOnly.token, anyNS.token, noGetNodes.token}
	for _, id := range without {
		secrets = append(secrets, id.token)
	}
	noLeak := func(what, out string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s: a secret value or a token reached the output", what)
			}
		}
	}
	c.WaitPod(t, ns, "app", time.Minute, "Running", running)

	// 1. verify without get on secrets, as JSON (--from-pod and --pod) and as text (--from-pod), at once
	type result struct {
		out, errOut string
		code        int
	}
	var jsonRun, textRun result
	var wg sync.WaitGroup
	verifyStart := time.Now()
	base := []string{"verify", c.Images[cachedImage].Ref, "--kubeconfig", verifier.kubeconfig, "--pool", "poola", "--probe-image", probe,
		"--from-pod", ns + "/app", "--run-namespace", runNS, "--probe-timeout", "60s"}
	wg.Add(2)
	go func() {
		defer wg.Done()
		jsonRun.out, jsonRun.errOut, jsonRun.code = c.Run(t, append(slices.Clone(base), "--pod", ns+"/app", "-o", "json")...)
	}()
	go func() {
		defer wg.Done()
		textRun.out, textRun.errOut, textRun.code = c.Run(t, base...)
	}()

	// 2 and 3 meanwhile: pod reads only
	c.WaitPod(t, ns, "app-fail", time.Minute, "ErrImagePull or ImagePullBackOff", func(p *corev1.Pod) bool {
		r := waitingReason(p)
		return r == "ErrImagePull" || r == "ImagePullBackOff"
	})
	for _, l := range lacking {
		out, errOut, code := c.Run(t, "pod", "app-fail", "-n", ns, "--kubeconfig", without[l.drop].kubeconfig)
		noLeak("pod without "+l.drop, out+errOut)
		want := fmt.Sprintf("the identity needs RBAC verb %q on %q %s", l.verb, l.resource, l.scope)
		if code != 2 || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("pod without %s: exit %d, want 2 with %q on stderr\nstdout: %s\nstderr: %s", l.drop, code, want, out, errOut)
		}
		if l.drop == "pods" {
			t.Logf("pod without get pods (exit %d):\n%s", code, errOut)
		}
	}
	out, errOut, code := c.Run(t, "pod", "app-fail", "-n", ns, "--kubeconfig", noProxy.kubeconfig, "-o", "json")
	noLeak("pod", out+errOut)
	if strings.Contains(out, "nodes/proxy") || code != 1 {
		t.Errorf("pod without --read-kubelet-config: exit %d, want 1 and no word of nodes/proxy (it is not asked)\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = c.Run(t, "pod", "app-fail", "-n", ns, "--kubeconfig", noProxy.kubeconfig, "-o", "json", "--read-kubelet-config")
	noLeak("pod without nodes/proxy", out+errOut)
	var d report.PodDiagnosis
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("pod without nodes/proxy: not JSON (exit %d): %v\n%s\n%s", code, err, out, errOut)
	}
	const capNote = "the kubelet configuration (/configz through nodes/proxy) of some nodes could not be read (no RBAC get on nodes/proxy): their image lists are taken as capped at 50"
	if code != 1 || d.Class != report.ClassNotFound || d.Pod.Node != "poola-1" || !slices.Contains(d.Notes, capNote) {
		t.Errorf("pod without nodes/proxy: exit %d class %s node %s, want 1 not_found on poola-1 with the note %q; notes %q", code, d.Class, d.Pod.Node, capNote, d.Notes)
	}
	if len(d.Nodes) != len(c.nodes) {
		t.Errorf("pod without nodes/proxy: %d nodes, want %d", len(d.Nodes), len(c.nodes))
	}
	for _, n := range d.Nodes {
		if n.ImagesCap != 50 {
			t.Errorf("pod without nodes/proxy: node %s cap %d, want the default 50", n.Name, n.ImagesCap)
		}
	}
	text, errOut, _ := c.Run(t, "pod", "app-fail", "-n", ns, "--kubeconfig", noProxy.kubeconfig, "--read-kubelet-config")
	noLeak("pod without nodes/proxy, text", text+errOut)
	if !strings.Contains(text, "no RBAC get on nodes/proxy") {
		t.Errorf("pod without nodes/proxy, text: no note naming the right:\n%s", text)
	}
	// the kubelet's fine-grained nodes/configz (KEP-2862) does not open /configz through the API
	// server, which authorizes its proxy path as nodes/proxy (docs/rbac.md says so)
	text, errOut, _ = c.Run(t, "pod", "app-fail", "-n", ns, "--kubeconfig", configzOnly.kubeconfig, "--read-kubelet-config")
	noLeak("pod with nodes/configz only", text+errOut)
	if !strings.Contains(text, "no RBAC get on nodes/proxy") {
		t.Errorf("pod with get on nodes/configz but not nodes/proxy: /configz was read through the API server:\n%s\n%s", text, errOut)
	}

	// 3b. a mistyped -n: the reader role may ask whether the namespace exists (else `pod --all`
	// would say "no pull failure", exit 0); without that right the error asks the question
	typo := ns + "-typo"
	for _, tc := range []struct {
		id   identity
		args []string
		want string
	}{
		{noProxy, []string{"pod", "--all"}, fmt.Sprintf("namespace %s does not exist (kubectl get namespaces lists them)", typo)},
		{noProxy, []string{"pod", "app-fail"}, fmt.Sprintf("namespace %s does not exist (kubectl get namespaces lists them)", typo)},
		{anyNS, []string{"pod", "app-fail"}, fmt.Sprintf("pod app-fail not found in namespace %s (does the namespace exist? kubectl get namespaces lists them; it was not read: no RBAC get on namespaces)", typo)},
	} {
		args := append(slices.Clone(tc.args), "-n", typo, "--kubeconfig", tc.id.kubeconfig)
		out, errOut, code := c.Run(t, args...)
		noLeak(strings.Join(tc.args, " ")+" in a mistyped namespace", out+errOut)
		if code != 2 || out != "" || strings.TrimSpace(errOut) != "pullpath: "+tc.want {
			t.Errorf("%s -n %s as %s: exit %d, want 2 with %q\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), typo, tc.id.user, code, tc.want, out, errOut)
		}
	}

	// 4. verify in a run namespace that does not exist, as an identity that may not read namespaces
	gone := ns + "-gone"
	out, errOut, code = c.Run(t, "verify", c.Images[cachedImage].Ref, "--kubeconfig", anyNS.kubeconfig, "--pool", "poola", "--probe-image", probe, "--run-namespace", gone)
	noLeak("verify in a missing namespace", out+errOut)
	wantNS := fmt.Sprintf("namespace %s does not exist: create it (kubectl apply -f deploy/rbac.yaml makes \"pullpath\") or pass --run-namespace", gone)
	if code != 2 || !strings.Contains(errOut, wantNS) || strings.Contains(errOut, "configmaps") {
		t.Errorf("verify in a missing namespace: exit %d, want 2 with %q on stderr\nstdout: %s\nstderr: %s", code, wantNS, out, errOut)
	}

	// 4b. verify --pod and --secret naming what does not exist: one line and exit 2, no report
	// (which a run that had created its objects would print), nothing created
	for _, tc := range []struct {
		id   identity
		args []string
		want string
	}{
		{verifier, []string{"--pod", typo + "/x"}, fmt.Sprintf("--pod %s/x: namespace %s does not exist (kubectl get namespaces lists them) — nothing was created", typo, typo)},
		{anyNS, []string{"--secret", "nosuch", "-n", typo}, fmt.Sprintf("--secret nosuch: secret nosuch not found in namespace %s (does the namespace exist? kubectl get namespaces lists them; it was not read: no RBAC get on namespaces) — nothing was created", typo)},
	} {
		args := append([]string{"verify", c.Images[cachedImage].Ref, "--kubeconfig", tc.id.kubeconfig, "--pool", "poola", "--probe-image", probe, "--run-namespace", runNS}, tc.args...)
		out, errOut, code := c.Run(t, args...)
		noLeak("verify "+strings.Join(tc.args, " "), out+errOut)
		if code != 2 || out != "" || strings.TrimSpace(errOut) != "pullpath: "+tc.want {
			t.Errorf("verify %s as %s: exit %d, want 2 with %q\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), tc.id.user, code, tc.want, out, errOut)
		}
	}

	wg.Wait()
	verifyTook := time.Since(verifyStart)
	noLeak("verify without get secrets", jsonRun.out+jsonRun.errOut)
	noLeak("verify without get secrets, text", textRun.out+textRun.errOut)
	var v report.Verification
	if err := json.Unmarshal([]byte(jsonRun.out), &v); err != nil {
		t.Fatalf("verify without get secrets: not JSON (exit %d): %v\n%s\n%s", jsonRun.code, err, jsonRun.out, jsonRun.errOut)
	}
	if jsonRun.code != 0 || v.Class != report.ClassOK || len(v.LeftBehind) != 0 {
		t.Errorf("verify without get secrets: exit %d class %s left %q, want 0 ok and nothing left (pools %+v)\n%s", jsonRun.code, v.Class, v.LeftBehind, v.Pools, jsonRun.errOut)
	}
	unread := func(ps []report.PodPullSecret) string {
		var out []string
		for _, s := range ps {
			out = append(out, fmt.Sprintf("%s handedOver=%t problem=%q", s.Name, s.HandedOver, s.Problem))
		}
		return strings.Join(out, "; ")
	}
	wantSecret := `regcred handedOver=false problem="not readable: no RBAC get on secrets; cannot tell whether it covers the registry"`
	if got := unread(v.PullSecrets); got != wantSecret {
		t.Errorf("--pod: pullSecrets %s, want %s", got, wantSecret)
	}
	fp := v.FromPod
	if fp == nil || fp.Probe == nil {
		t.Fatalf("verify without get secrets: no probe from the pod: %+v\n%s", fp, jsonRun.errOut)
	}
	if got := unread(fp.PullSecrets); got != wantSecret {
		t.Errorf("--from-pod: pullSecrets %s, want %s", got, wantSecret)
	}
	if fp.Class != report.ClassOK || strings.Contains(fp.Probe.CredentialSource, "regcred") {
		t.Errorf("--from-pod: class %s identity %q, want ok and anonymous: %s", fp.Class, fp.Probe.CredentialSource, fp.Probe.Summary)
	}
	noteFor := func(flag, whom string) string {
		return fmt.Sprintf("%s: pull secret %s/regcred of pod %s/app was not read (no RBAC get on secrets): the kubelet uses it if it covers the image, %s cannot present it; grant get on secrets in namespace %s to hand it over",
			flag, ns, ns, whom, ns)
	}
	for _, want := range []string{noteFor("--from-pod", "the probe in the pod"), noteFor("--pod", "the node probes")} {
		if !slices.Contains(v.Notes, want) {
			t.Errorf("verify without get secrets: no note %q in %q", want, v.Notes)
		}
	}
	if textRun.code != 0 || !hasText(textRun.out, "note "+noteFor("--from-pod", "the probe in the pod")) {
		t.Errorf("verify without get secrets, text: exit %d, want 0 and the note:\n%s\n%s", textRun.code, textRun.out, textRun.errOut)
	}
	t.Logf("verify --from-pod without get secrets:\n%s", textRun.out)

	// 5. verify --from-pod without get on nodes (list stays): the pod's pool is unknown, a note
	// names the right, and the pod is compared with the probe on its own node
	out, errOut, code = c.Run(t, "verify", c.Images[cachedImage].Ref, "--kubeconfig", noGetNodes.kubeconfig, "--pool", "poola", "--all-nodes", "--probe-image", probe,
		"--from-pod", ns+"/app", "--run-namespace", runNS, "--probe-timeout", "60s", "-o", "json")
	noLeak("verify without get nodes", out+errOut)
	var vn report.Verification
	if err := json.Unmarshal([]byte(out), &vn); err != nil {
		t.Fatalf("verify without get nodes: not JSON (exit %d): %v\n%s\n%s", code, err, out, errOut)
	}
	nodeNote := fmt.Sprintf("--from-pod: node poola-1 of pod %s/app was not read (no RBAC get on nodes): its pool is unknown, so the probe in the pod is compared only with a probe on that node; grant get on nodes to compare it with its pool", ns)
	if fp := vn.FromPod; code != 0 || fp == nil || fp.Pool != "" || fp.Class != report.ClassOK || fp.NodeClass != report.ClassOK ||
		fp.Comparison != "the pod and the node poola-1 both reach the registry" || !slices.Contains(vn.Notes, nodeNote) || len(vn.LeftBehind) != 0 {
		t.Errorf("verify without get nodes: exit %d, fromPod %+v, notes %q, left %q; want 0, the note %q and the comparison with poola-1\n%s", code, fp, vn.Notes, vn.LeftBehind, nodeNote, errOut)
	}
	assertNothingLeft(t, c)
	took := fmt.Sprintf("RBAC with restricted identities: %s past bring-up, %s of it the probe image's build and push; the two verify runs side by side %s",
		time.Since(start).Round(100*time.Millisecond), begin.Sub(start).Round(100*time.Millisecond), verifyTook.Round(100*time.Millisecond))
	t.Log(took)
	c.figure("%s", took)
}
