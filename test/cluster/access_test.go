package cluster

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ppcluster "github.com/pullpath/pullpath/internal/cluster"
)

// auditedNS holds the ServiceAccounts whose every request the API server's audit log records.
const auditedNS = "pullpath-audited"

// auditEvent is what TestRBACRolesPerCommand reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	URI   string `json:"requestURI"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	Annotations map[string]string `json:"annotations"`
}

// auditedRequests are the requests user made, from the API server's audit log: "verb resource
// namespace" with the authorizer's decision.
func (c *cluster) auditedRequests(t *testing.T, user string) []auditEvent {
	t.Helper()
	f, err := os.Open(c.path("apiserver", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log: %v", err)
		}
		if e.User.Username == user && e.Stage == "ResponseComplete" {
			out = append(out, e)
		}
	}
	return out
}

// commandRun is one pullpath command line run as an identity holding exactly the roles
// internal/cluster's table documents for lines.
type commandRun struct {
	lines  []string                   // lines of ppcluster.Commands
	scopes map[string]ppcluster.Scope // namespace → the scope it plays
	args   []string
	code   int
}

// TestRBACRolesPerCommand runs every cluster command line as a ServiceAccount holding exactly the
// roles the table of internal/cluster/access.go documents for it, bound as docs/rbac.md binds them,
// and nothing more, on the real RBAC authorizer; the API server's audit log records every request.
// It fails when a command is refused a request (a right the YAML does not grant), when it makes a
// request the table does not declare for it, when a run does not end as it should, and when a right
// of deploy/rbac.yaml is used by none of the runs (one no command uses).
func TestRBACRolesPerCommand(t *testing.T) {
	c := sharedCluster(t)
	start := time.Now()
	runNamespace(t, c)
	probe := pushProbeImage(t, c)
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: auditedNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), auditedNS, metav1.DeleteOptions{})
	})
	podNS, fromNS, emptyNS := c.Namespace(t, "access"), c.Namespace(t, "accessfrom"), c.Namespace(t, "accessempty")
	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + registryPass))
	for _, ns := range []string{podNS, fromNS} {
		if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, registry, auth))}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		app := PodOn(ns, "app", "poola-1", pauseRef, corev1.PullNever)
		app.Spec.DNSPolicy = corev1.DNSDefault
		app.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		c.CreatePod(t, app)
	}
	fail := PodOn(podNS, "app-fail", "poola-1", registry+"/access/missing:v1", corev1.PullAlways)
	fail.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}} // pod reads it
	c.CreatePod(t, fail)
	// what an interrupted run left, for cleanup to delete
	left := metav1.ObjectMeta{Name: "pullpath-auditleft-left", Namespace: runNS, Labels: map[string]string{ppcluster.LabelManaged: "pullpath", ppcluster.LabelRun: "auditleft"}}
	if _, err := c.Client.CoreV1().ConfigMaps(runNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: left}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Secrets(runNS).Create(ctx, &corev1.Secret{ObjectMeta: left}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	leftPod := PodOn(runNS, left.Name, "poola-1", pauseRef, corev1.PullNever)
	leftPod.Labels = left.Labels
	c.CreatePod(t, leftPod)
	// what a killed run left past its expiry, for the janitor (cleanup --expired)
	expired := metav1.ObjectMeta{Name: "pullpath-auditexpired-left", Namespace: runNS, Labels: map[string]string{ppcluster.LabelManaged: "pullpath",
		ppcluster.LabelRun: "auditexpired", ppcluster.LabelExpires: "1"}}
	if _, err := c.Client.CoreV1().ConfigMaps(runNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: expired}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Secrets(runNS).Create(ctx, &corev1.Secret{ObjectMeta: expired}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expiredPod := PodOn(runNS, expired.Name, "poola-1", pauseRef, corev1.PullNever)
	expiredPod.Labels = expired.Labels
	c.CreatePod(t, expiredPod)
	for _, ns := range []string{podNS, fromNS} {
		c.WaitPod(t, ns, "app", time.Minute, "Running", running)
	}
	c.WaitPod(t, podNS, "app-fail", time.Minute, "ErrImagePull or ImagePullBackOff", func(p *corev1.Pod) bool {
		r := waitingReason(p)
		return r == "ErrImagePull" || r == "ImagePullBackOff"
	})

	img := c.Images[cachedImage].Ref
	verify := []string{"verify", img, "--pool", "poola", "--run-namespace", runNS, "--probe-timeout", "60s", "-o", "json"}
	podScope := map[string]ppcluster.Scope{podNS: ppcluster.ScopePod}
	runs := []commandRun{
		{[]string{"pod"}, podScope, []string{"pod", "app-fail", "-n", podNS, "-o", "json"}, 1},
		{[]string{"pod"}, podScope, []string{"pod", "nosuch", "-n", podNS}, 2},
		{[]string{"pod", "pod --read-kubelet-config"}, podScope, []string{"pod", "app-fail", "-n", podNS, "-o", "json", "--read-kubelet-config"}, 1},
		{[]string{"pod --all"}, podScope, []string{"pod", "--all", "-n", podNS}, 1},
		{[]string{"pod --all"}, map[string]ppcluster.Scope{emptyNS: ppcluster.ScopePod}, []string{"pod", "--all", "-n", emptyNS}, 0},
		{[]string{"pod --all", "pod --all -A"}, nil, []string{"pod", "--all", "-A"}, 1},
		{[]string{"verify"}, map[string]ppcluster.Scope{runNS: ppcluster.ScopeRun}, append(slices.Clone(verify), "--runtime-pull"), 0},
		{[]string{"verify", "verify --secret"}, map[string]ppcluster.Scope{runNS: ppcluster.ScopeRun, podNS: ppcluster.ScopePod},
			append(slices.Clone(verify), "--probe-image", probe, "--secret", "regcred", "-n", podNS), 0},
		{[]string{"verify", "verify --pod"}, map[string]ppcluster.Scope{runNS: ppcluster.ScopeRun, podNS: ppcluster.ScopePod},
			append(slices.Clone(verify), "--probe-image", probe, "--pod", podNS+"/app"), 0},
		{[]string{"verify", "verify --from-pod"}, map[string]ppcluster.Scope{runNS: ppcluster.ScopeRun, fromNS: ppcluster.ScopeFromPod},
			append(slices.Clone(verify), "--probe-image", probe, "--from-pod", fromNS+"/app"), 0},
		{[]string{"cleanup"}, map[string]ppcluster.Scope{runNS: ppcluster.ScopeRun}, []string{"cleanup", "--run", "auditleft", "--run-namespace", runNS}, 0},
		{[]string{"cleanup --expired (the watch manifests' CronJob)"}, map[string]ppcluster.Scope{runNS: ppcluster.ScopeRun}, []string{"cleanup", "--expired", "--run-namespace", runNS}, 0},
	}

	// one identity per set of lines, holding exactly the roles those lines name, bound where
	// ppcluster.Bindings says
	roles := rbacRoles(t)
	type identityRuns struct {
		id     identity
		lines  []string
		scopes map[string]ppcluster.Scope
		runs   []commandRun
	}
	ids := map[string]*identityRuns{}
	var order []string
	for _, r := range runs {
		key := strings.Join(r.lines, " + ")
		ir := ids[key]
		if ir == nil {
			ir = &identityRuns{lines: r.lines, scopes: map[string]ppcluster.Scope{}}
			ids[key] = ir
			order = append(order, key)
		}
		for ns, s := range r.scopes {
			ir.scopes[ns] = s
		}
		ir.runs = append(ir.runs, r)
	}
	begin := time.Now()
	for i, key := range order {
		ir := ids[key]
		nsOf := map[ppcluster.Scope]string{}
		for ns, s := range ir.scopes {
			nsOf[s] = ns
		}
		var grants []grant
		seen := map[string]bool{}
		for _, r := range ppcluster.Lines(ir.lines...) {
			if r.Role == "" {
				continue
			}
			g := grant{role: r.Role}
			if !slices.Contains(ppcluster.Bindings[r.Role], ppcluster.ScopeCluster) {
				if g.ns = nsOf[r.Scope]; g.ns == "" {
					t.Fatalf("%s: no namespace plays %s for role %s", key, r.Scope, r.Role)
				}
			}
			if k := g.role + "/" + g.ns; !seen[k] {
				seen[k] = true
				grants = append(grants, g)
			}
		}
		ir.id = c.restrictedIdentity(t, roles, auditedNS, fmt.Sprintf("cmd%d", i), grants...)
		var bound []string
		for _, g := range grants {
			bound = append(bound, g.role+" in "+orCluster(g.ns))
		}
		t.Logf("%s: %s", key, strings.Join(bound, ", "))
	}
	t.Logf("identities ready in %s", time.Since(begin).Round(100*time.Millisecond))

	runsStart := time.Now()
	for _, key := range order {
		ir := ids[key]
		for _, r := range ir.runs {
			out, errOut, code := c.Run(t, append(slices.Clone(r.args), "--kubeconfig", ir.id.kubeconfig)...)
			if strings.Contains(out+errOut, ir.id.token) {
				t.Errorf("%s: the token reached the output", strings.Join(r.args, " "))
			}
			if code != r.code || strings.Contains(out+errOut, "no RBAC") || strings.Contains(errOut, "not allowed to") || strings.Contains(errOut, "lacks") {
				t.Errorf("pullpath %s as %s: exit %d, want %d and no missing right\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), key, code, r.code, out, errOut)
			}
		}
	}
	runsTook := time.Since(runsStart)

	// every request, against the table and the authorizer's decision
	used := map[string]map[string]bool{} // role → "verb resource" seen allowed
	for _, key := range order {
		ir := ids[key]
		events := c.auditedRequests(t, ir.id.user)
		if len(events) == 0 {
			t.Errorf("%s: no request in the audit log", key)
		}
		var got []string
		for _, e := range events {
			if e.ObjectRef == nil {
				t.Errorf("%s: a request outside the resource API: %s %s", key, e.Verb, e.URI)
				continue
			}
			res := e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				res += "/" + e.ObjectRef.Subresource
			}
			scope := ppcluster.ScopeCluster
			// the API server audits a namespace with itself as its namespace; it is cluster-scoped
			if ns := e.ObjectRef.Namespace; ns != "" && e.ObjectRef.Resource != "namespaces" {
				s, ok := ir.scopes[ns]
				if !ok {
					t.Errorf("%s: %s %s in namespace %s, which plays no part in its runs", key, e.Verb, res, ns)
				}
				scope = s
			}
			what := fmt.Sprintf("%s %s (%s)", e.Verb, res, scope)
			got = append(got, what+" "+e.Annotations["authorization.k8s.io/decision"])
			if d := e.Annotations["authorization.k8s.io/decision"]; d != "allow" {
				t.Errorf("%s was refused %s (%s): the command needs a right its documented roles do not grant", key, what, d)
			}
			declared := false
			for _, r := range ppcluster.Lines(ir.lines...) {
				if r.Verb == e.Verb && r.Resource == res && r.Group == e.ObjectRef.APIGroup && r.Scope == scope {
					declared = true
					if used[r.Role] == nil {
						used[r.Role] = map[string]bool{}
					}
					used[r.Role][r.Verb+" "+r.Resource] = true
				}
			}
			if !declared {
				t.Errorf("%s requested %s, which internal/cluster/access.go does not declare for it", key, what)
			}
		}
		sort.Strings(got)
		t.Logf("%s: %d requests: %s", key, len(events), strings.Join(slices.Compact(got), ", "))
	}

	// every right of deploy/rbac.yaml was used by a run
	// the attach stream is a WebSocket upgrade, a GET: the API server authorizes it as get and checks
	// create as a second, synthetic permission (KEP-4006, on by default since 1.35), which the audit
	// log does not record as a request of its own
	pending := map[string]string{"pullpath-runner create pods/attach": "checked on the WebSocket upgrade, recorded as its get",
		// pod --all -A reads the namespaces one by one only when listing pods cluster-wide is
		// refused: the fleet tier's TestPodAllNamespaceWithoutRights uses it, with a limited user
		"pullpath-reader list namespaces": "used only when list pods cluster-wide is refused (fleet tier)"}
	for role, rules := range roles {
		for _, rule := range rules {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					k := v + " " + res
					why, isPending := pending[role+" "+k]
					switch {
					case used[role][k] && isPending:
						t.Errorf("%s %s is used now: drop it from pending (%s)", role, k, why)
					case isPending:
						t.Logf("not used by any run: %s %s (%s)", role, k, why)
					case !used[role][k]:
						t.Errorf("deploy/rbac.yaml: %s grants %s, which no command used on the cluster", role, k)
					}
				}
			}
		}
	}
	assertNothingLeft(t, c)
	took := fmt.Sprintf("RBAC per command (%d command lines as %d identities with exactly their roles, every request audited): %s past bring-up, the runs %s",
		len(runs), len(order), time.Since(start).Round(100*time.Millisecond), runsTook.Round(100*time.Millisecond))
	t.Log(took)
	c.figure("%s", took)
}

func orCluster(ns string) string {
	if ns == "" {
		return "the cluster"
	}
	return ns
}
