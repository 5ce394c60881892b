package cluster

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/kube"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"github.com/pullpath/pullpath/internal/report"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

var updateDocs = flag.Bool("update", false, "rewrite the generated table of docs/rbac.md")

// deployRole is one Role or ClusterRole of deploy/, with the comment lines above it.
type deployRole struct {
	kind, name, namespace, file, comment string
	rules                                []rbacv1.PolicyRule
}

// deployRoles renders every Role and ClusterRole of every YAML file under deploy/.
func deployRoles(t *testing.T) []deployRole {
	t.Helper()
	var out []deployRole
	err := filepath.WalkDir("../../deploy", func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "helm" {
			// Go templates, not YAML: internal/watch's TestHelmChartRendersManifests holds the
			// chart's objects to watch manifests, whose output is deploy/watch/watch.yaml
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, doc := range bytes.Split(b, []byte("\n---\n")) {
			var r struct {
				Kind     string              `json:"kind"`
				Metadata metav1.ObjectMeta   `json:"metadata"`
				Rules    []rbacv1.PolicyRule `json:"rules"`
			}
			if err := yaml.Unmarshal(doc, &r); err != nil {
				return fmt.Errorf("%s: %v", p, err)
			}
			if r.Kind == "Role" || r.Kind == "ClusterRole" {
				out = append(out, deployRole{kind: r.Kind, name: r.Metadata.Name, namespace: r.Metadata.Namespace, file: p, comment: string(doc), rules: r.Rules})
			}
		}
		return nil
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("deploy/: %d roles, %v", len(out), err)
	}
	return out
}

// grant is one verb on one resource of one API group, as an RBAC rule grants it, limited to the
// object name when the rule names one.
type grant struct{ group, resource, verb, name string }

func (g grant) String() string {
	s := g.verb + " " + g.resource
	if g.name != "" {
		s += " named " + g.name
	}
	if g.group != "" {
		s += " (" + g.group + ")"
	}
	return s
}

func grantOf(r Right) grant { return grant{r.Group, r.Resource, r.Verb, r.Name} }

// grants expands a role's rules; a rule pullpath's table cannot express (a wildcard, more than one
// resource name, non-resource URLs) is an error.
func (d deployRole) grants(t *testing.T) map[grant]bool {
	out := map[grant]bool{}
	for _, r := range d.rules {
		if len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 {
			t.Errorf("%s %s: a rule with resourceNames beyond one, or nonResourceURLs: %+v", d.kind, d.name, r)
		}
		name := ""
		if len(r.ResourceNames) == 1 {
			name = r.ResourceNames[0]
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if g == "*" || res == "*" || v == "*" || strings.HasSuffix(res, "/*") {
						t.Errorf("%s %s grants a wildcard: %s %s %s", d.kind, d.name, v, res, g)
					}
					out[grant{g, res, v, name}] = true
				}
			}
		}
	}
	return out
}

// Every rule of every role in deploy/ is a right some command uses, and every right a command uses
// is granted by the role the table names, bound as docs/rbac.md binds it: the roles are what they
// say. The table is logged, command by command.
func TestDeployRolesGrantExactlyWhatCommandsUse(t *testing.T) {
	granted := map[string]map[grant]bool{}
	for _, d := range deployRoles(t) {
		if granted[d.name] != nil {
			t.Errorf("role %s is defined twice in deploy/", d.name)
		}
		granted[d.name] = d.grants(t)
		scopes, ok := Bindings[d.name]
		switch {
		case !ok:
			t.Errorf("%s: %s %s is bound by no command (Bindings)", d.file, d.kind, d.name)
		case slices.Equal(scopes, []Scope{ScopeRun}) && (d.kind != "Role" || (d.namespace != "pullpath" && d.namespace != WatchRunNamespace)):
			t.Errorf("%s: %s is bound only in the run namespace: want a Role in namespace pullpath (verify's default --run-namespace) or %s (watch's); got %s in %q", d.file, d.name, WatchRunNamespace, d.kind, d.namespace)
		case !slices.Equal(scopes, []Scope{ScopeRun}) && d.kind != "ClusterRole":
			t.Errorf("%s: %s is bound in %v: want a ClusterRole, got %s", d.file, d.name, scopes, d.kind)
		}
	}
	used := map[string]map[grant][]string{}
	for _, a := range Commands {
		for _, r := range a.Rights {
			if r.Use == NotGiven {
				for role, gs := range granted {
					if gs[grantOf(r)] && r.Scope == ScopeCluster {
						t.Errorf("%s: %s is %q (%s), yet role %s grants it", a.Command, grantOf(r), NotGiven, r.Why, role)
					}
				}
				if r.Role != "" {
					t.Errorf("%s: %s is %q but names role %s", a.Command, grantOf(r), NotGiven, r.Role)
				}
				continue
			}
			if used[r.Role] == nil {
				used[r.Role] = map[grant][]string{}
			}
			used[r.Role][grantOf(r)] = append(used[r.Role][grantOf(r)], a.Command)
			if b := Bindings[r.Role]; !slices.Contains(b, r.Scope) && !slices.Contains(b, ScopeCluster) {
				t.Errorf("%s: %s in scope %s from role %s, which is bound only in %v", a.Command, grantOf(r), r.Scope, r.Role, b)
			}
		}
	}
	for _, role := range sortedKeys(keysOf(granted)) {
		for g := range granted[role] {
			if used[role][g] == nil {
				t.Errorf("deploy/: role %s grants %s, which no command uses (internal/cluster/access.go)", role, g)
			}
		}
	}
	for _, role := range sortedKeys(keysOf(used)) {
		if slices.Contains(GeneratedRoles, role) {
			continue // watch manifests renders it for a flag's object: internal/watch's tests hold it
		}
		if granted[role] == nil {
			t.Errorf("no role %s in deploy/, which %d rights name", role, len(used[role]))
			continue
		}
		for g, cmds := range used[role] {
			if !granted[role][g] {
				t.Errorf("%s needs %s (role %s), which deploy/ does not grant", strings.Join(cmds, ", "), g, role)
			}
		}
	}
	var b strings.Builder
	for _, a := range Commands {
		fmt.Fprintf(&b, "\n%s", a.Command)
		for _, r := range a.Rights {
			fmt.Fprintf(&b, "\n  %-8s %-30s %-9s %-28s %s", r.Verb, r.Resource, r.Scope, report.OrDash(r.Role), r.Use)
		}
	}
	t.Logf("rights by command:%s", b.String())
}

// No role of deploy/ grants exec-like rights (nodes/proxy, pods/exec, pods/attach,
// pods/portforward) or RBAC escalation, except the two the table documents: get on nodes/proxy in
// its own, clearly named role that carries the warning, and create on pods/attach in the run
// namespace only. The default `pod` line never names the unsafe role.
func TestNoDefaultRoleGrantsExecLikeRights(t *testing.T) {
	dangerous := []string{"nodes/proxy", "pods/exec", "pods/attach", "pods/portforward", "nodes", "pods/proxy", "services/proxy"}
	allowed := map[string][]grant{RoleNodesProxy: {{"", "nodes/proxy", "get", ""}}, RoleRunner: {{"", "pods/attach", "create", ""}, {"", "pods/attach", "get", ""}},
		RoleWatch: {{"", "nodes", "watch", ""}}, RoleWatchRunner: {{"", "pods/attach", "create", ""}, {"", "pods/attach", "get", ""}}}
	for _, d := range deployRoles(t) {
		for g := range d.grants(t) {
			if slices.Contains([]string{"escalate", "bind", "impersonate"}, g.verb) {
				t.Errorf("%s %s grants %s", d.kind, d.name, g)
			}
			if !slices.Contains(dangerous, g.resource) || (g.resource == "nodes" && (g.verb == "get" || g.verb == "list")) {
				continue
			}
			if !slices.Contains(allowed[d.name], g) {
				t.Errorf("%s %s grants %s: an exec-like or node right no default role may hold", d.kind, d.name, g)
			}
		}
		if d.name == RoleNodesProxy && (!strings.Contains(d.comment, "WARNING") || !strings.Contains(d.comment, "run commands in every container")) {
			t.Errorf("%s carries no warning in deploy/rbac.yaml:\n%s", d.name, d.comment)
		}
		if d.name == RoleRunner && !strings.Contains(d.comment, "attach to the stdin/stdout of any container of any pod in this\n  # namespace only") {
			t.Errorf("%s: pods/attach has no comment saying what it allows:\n%s", d.name, d.comment)
		}
	}
	for _, line := range []string{"pod", "pod --all", "pod --all -A", "verify", "cleanup"} {
		for _, r := range Lines(line) {
			if r.Role == RoleNodesProxy || r.Resource == "nodes/proxy" {
				t.Errorf("%s uses %s (%s): only --read-kubelet-config may", line, grantOf(r), r.Role)
			}
		}
	}
	for _, r := range Lines("pod --read-kubelet-config") {
		if r.Use != OptIn {
			t.Errorf("pod --read-kubelet-config: %s is %s, want %s", grantOf(r), r.Use, OptIn)
		}
	}
}

// observed is one API request a command made: a verb on a resource (with its subresource) in a
// namespace ("" at cluster scope).
type observed struct{ verb, group, resource, ns string }

func fromActions(as []k8stesting.Action) []observed {
	var out []observed
	for _, a := range as {
		res := a.GetResource().Resource
		if s := a.GetSubresource(); s != "" {
			res += "/" + s
		}
		out = append(out, observed{a.GetVerb(), a.GetResource().Group, res, a.GetNamespace()})
	}
	return out
}

// accessReviews are the rights verify asked the API server about (checkRights).
func accessReviews(as []k8stesting.Action) []observed {
	var out []observed
	for _, a := range as {
		c, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetResource().Resource != "selfsubjectaccessreviews" {
			continue
		}
		ra := c.GetObject().(*authzv1.SelfSubjectAccessReview).Spec.ResourceAttributes
		res := ra.Resource
		if ra.Subresource != "" {
			res += "/" + ra.Subresource
		}
		out = append(out, observed{ra.Verb, ra.Group, res, ra.Namespace})
	}
	return out
}

// kubeletAPI is the REST client of an API server that answers /configz through nodes/proxy and
// records each request as observed.
func kubeletAPI(t *testing.T, seen *[]observed) rest.Interface {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/") // api v1 nodes NAME proxy configz
		if len(parts) < 5 || parts[2] != "nodes" || parts[4] != "proxy" || r.Method != http.MethodGet {
			t.Errorf("unexpected raw request %s %s", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		*seen = append(*seen, observed{"get", "", "nodes/proxy", ""})
		mu.Unlock()
		_, _ = w.Write([]byte(`{"kubeletconfig":{"nodeStatusMaxImages":50}}`))
	}))
	t.Cleanup(srv.Close)
	c, err := corev1client.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c.RESTClient()
}

// restCore is the fake's core client with a real REST client for raw requests (the fake has none).
type restCore struct {
	kube.Core
	rc rest.Interface
}

func (c restCore) RESTClient() rest.Interface { return c.rc }

// unseenInUnitRuns are rights the fake-client runs below cannot exercise, and why; the cluster
// tier (test/cluster TestRBACRolesPerCommand) sees them. One that shows up must leave this list.
var unseenInUnitRuns = map[string]string{
	"pod --all: get namespaces cluster": "asked by internal/cli when no pod is seen, not by internal/cluster",
	"verify: create pods/attach run":    "the fake clientset has no attach endpoint (the stream is the API server's); the cluster tier's TestRBACRolesPerCommand sees it",
	"verify: get pods/attach run":       "the same",
}

// Each command line, run on a fake cluster, makes only the requests the table declares for it, in
// the scope it declares; every right the table declares is seen in some run (unseenInUnitRuns
// aside); and every right verify checks before it starts is one it declares.
func TestCommandsRequestOnlyTheirRights(t *testing.T) {
	withCorp := func() []runtime.Object {
		objs := scenario()
		for _, ob := range objs {
			if p, ok := ob.(*corev1.Pod); ok && p.Name == "web-new" {
				p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: "corp"})
			}
		}
		return append(objs, dockerSecret("shop", "corp", "registry.corp.example"))
	}
	succeed := func(fc *fake.Clientset) {
		fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Message: `{"class":"ok","code":"OK","summary":"pulled completely"}`}}}}
			return false, nil, nil
		})
	}
	bin := func(string) ([]byte, string, error) { return []byte("\x7fELF not really"), "test", nil }
	leftovers := func() []runtime.Object {
		m := metav1.ObjectMeta{Namespace: "pullpath", Name: "left", Labels: map[string]string{LabelManaged: "pullpath", LabelRun: "r1"}}
		return []runtime.Object{&corev1.Pod{ObjectMeta: m}, &corev1.ConfigMap{ObjectMeta: m}, &corev1.Secret{ObjectMeta: m}}
	}
	verify := func(o VerifyOptions, objs []runtime.Object, setup ...func(*fake.Clientset)) func(t *testing.T) ([]observed, []observed) {
		return func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(objs...)
			allowing(fc)
			for _, s := range setup {
				s(fc)
			}
			v, err := Verify(context.Background(), &Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			for _, p := range v.Pools {
				if p.Summary == nil && p.Probe == nil {
					t.Errorf("pool %s: no probe ran: %s", p.Pool, p.Error)
				}
			}
			return fromActions(fc.Actions()), accessReviews(fc.Actions())
		}
	}
	base := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poola"}, MaxImages: 50, Timeout: 2 * time.Second, Binary: bin}
	withOpts := func(f func(*VerifyOptions)) VerifyOptions {
		o := base
		f(&o)
		return o
	}
	cases := []struct {
		name   string
		lines  []string
		scopes map[string]Scope
		run    func(t *testing.T) (requests, reviews []observed)
	}{
		{"pod", []string{"pod"}, map[string]Scope{"shop": ScopePod}, func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(scenario()...)
			if _, err := DiagnosePod(context.Background(), &Client{Core: kubefake.Core(fc.CoreV1())}, "shop", "web-new", Options{}); err != nil {
				t.Error(err)
			}
			_, _ = DiagnosePod(context.Background(), &Client{Core: kubefake.Core(fc.CoreV1())}, "shop", "nope", Options{}) // not found: is the namespace there?
			return fromActions(fc.Actions()), nil
		}},
		{"pod --read-kubelet-config", []string{"pod", "pod --read-kubelet-config"}, map[string]Scope{"shop": ScopePod}, func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(scenario()...)
			var raw []observed
			cs := &Client{Core: restCore{kubefake.Core(fc.CoreV1()), kubeletAPI(t, &raw)}}
			if _, err := DiagnosePod(context.Background(), cs, "shop", "web-new", Options{KubeletConfig: true}); err != nil {
				t.Error(err)
			}
			if len(raw) == 0 {
				t.Error("no /configz read with KubeletConfig")
			}
			return append(fromActions(fc.Actions()), raw...), nil
		}},
		{"pod --all", []string{"pod --all"}, map[string]Scope{"shop": ScopePod}, func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(scenario()...)
			if _, err := DiagnoseAll(context.Background(), &Client{Core: kubefake.Core(fc.CoreV1())}, "shop"); err != nil {
				t.Error(err)
			}
			return fromActions(fc.Actions()), nil
		}},
		{"pod --all -A", []string{"pod --all", "pod --all -A"}, nil, func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(scenario()...)
			if _, err := DiagnoseAll(context.Background(), &Client{Core: kubefake.Core(fc.CoreV1())}, ""); err != nil {
				t.Error(err)
			}
			return fromActions(fc.Actions()), nil
		}},
		{"pod --all -A without cluster-wide pod rights", []string{"pod --all", "pod --all -A"}, map[string]Scope{"shop": ScopePod}, func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(scenario()...)
			fc.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetNamespace() == "" {
					return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("no"))
				}
				return false, nil, nil
			})
			if _, err := DiagnoseAll(context.Background(), &Client{Core: kubefake.Core(fc.CoreV1())}, ""); err != nil {
				t.Error(err)
			}
			return fromActions(fc.Actions()), nil
		}},
		{"verify --runtime-pull", []string{"verify"}, map[string]Scope{"pullpath": ScopeRun},
			verify(withOpts(func(o *VerifyOptions) { o.RuntimePull = true }), scenario(), succeed)},
		{"verify --secret", []string{"verify", "verify --secret"}, map[string]Scope{"pullpath": ScopeRun, "shop": ScopePod},
			verify(withOpts(func(o *VerifyOptions) { o.SecretNamespace, o.Secret = "shop", "corp" }), withCorp(), succeed)},
		{"verify --pod", []string{"verify", "verify --pod"}, map[string]Scope{"pullpath": ScopeRun, "shop": ScopePod},
			verify(withOpts(func(o *VerifyOptions) { o.FromPod = "shop/web-new" }), withCorp(), succeed)},
		{"verify --from-pod", []string{"verify", "verify --from-pod"}, map[string]Scope{"pullpath": ScopeRun, "shop": ScopeFromPod},
			verify(withOpts(func(o *VerifyOptions) { o.ProbeImage, o.ProbeFromPod, o.Binary = probeImg, "shop/web-new", nil }), withCorp(),
				func(fc *fake.Clientset) { podReachesNodeDoesNot(fc, new([]corev1.EphemeralContainer)) })},
		{"cleanup --expired", []string{"cleanup --expired (the watch manifests' CronJob)"}, map[string]Scope{"pullpath": ScopeRun}, func(t *testing.T) ([]observed, []observed) {
			objs := leftovers()
			for _, ob := range objs {
				ob.(metav1.Object).GetLabels()[LabelExpires] = "1"
			}
			fc := fake.NewClientset(objs...)
			if left, err := Cleanup(context.Background(), &Client{Core: kubefake.Core(fc.CoreV1())}, CleanupOptions{Namespace: "pullpath", Expired: true}); len(left) != 0 || err != nil {
				t.Errorf("left %v (%v)", left, err)
			}
			if n := len(remainingIn(fc)); n != 0 {
				t.Errorf("%d expired objects were not deleted", n)
			}
			return fromActions(fc.Actions()), nil
		}},
		{"cleanup", []string{"cleanup"}, map[string]Scope{"pullpath": ScopeRun}, func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(leftovers()...)
			if left, err := Cleanup(context.Background(), &Client{Core: kubefake.Core(fc.CoreV1())}, CleanupOptions{Namespace: "pullpath"}); len(left) != 0 || err != nil {
				t.Errorf("left %v (%v)", left, err)
			}
			return fromActions(fc.Actions()), nil
		}},
	}
	seen := map[string]bool{} // "line: verb resource scope"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requests, reviews := tc.run(t)
			var rights []string
			for _, line := range tc.lines {
				for _, r := range Lines(line) {
					rights = append(rights, line+": "+r.Verb+" "+r.Resource+" "+string(r.Scope))
				}
			}
			match := func(o observed) []string {
				scope := ScopeCluster
				if o.ns != "" {
					s, ok := tc.scopes[o.ns]
					if !ok {
						t.Errorf("%s %s in namespace %s, which is none of the run's", o.verb, o.resource, o.ns)
					}
					scope = s
				}
				var hits []string
				for _, line := range tc.lines {
					for _, r := range Lines(line) {
						if r.Verb == o.verb && r.Resource == o.resource && r.Group == o.group && r.Scope == scope {
							hits = append(hits, line+": "+r.Verb+" "+r.Resource+" "+string(r.Scope))
						}
					}
				}
				return hits
			}
			var got []string
			for _, o := range requests {
				hits := match(o)
				if len(hits) == 0 {
					t.Errorf("%s requests %s %s in %q, which the table does not declare for %s", tc.name, o.verb, o.resource, report.OrDash(o.ns), strings.Join(tc.lines, " + "))
				}
				for _, h := range hits {
					seen[h] = true
				}
				got = append(got, o.verb+" "+o.resource+" "+report.OrDash(o.ns))
			}
			for _, o := range reviews {
				if len(match(o)) == 0 {
					t.Errorf("verify checks %s %s in %q before it starts, which the table does not declare for %s", o.verb, o.resource, report.OrDash(o.ns), strings.Join(tc.lines, " + "))
				}
			}
			slices.Sort(got)
			t.Logf("%s: %s", tc.name, strings.Join(slices.Compact(got), ", "))
		})
	}
	for _, a := range Commands {
		if a.Command == "watch" || strings.HasPrefix(a.Command, "watch ") {
			continue // internal/watch imports this package: its TestWatchRequestsOnlyItsRights runs watch's lines
		}
		for _, r := range a.Rights {
			key := a.Command + ": " + r.Verb + " " + r.Resource + " " + string(r.Scope)
			why, unseen := unseenInUnitRuns[key]
			switch {
			case !seen[key] && !unseen:
				t.Errorf("%s (%s) is declared, and no run requested it: drop it from the table and deploy/, or run the path that needs it", key, r.Why)
			case seen[key] && unseen:
				t.Errorf("%s is requested now: drop it from unseenInUnitRuns (%s)", key, why)
			}
		}
	}
	var keys []string
	for k := range unseenInUnitRuns {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("declared and not requested on the fake cluster: %s", strings.Join(keys, "; "))
}

// rightsTable is the table of every right by command line, as docs/rbac.md shows it.
func rightsTable() string {
	scope := map[Scope]string{ScopeCluster: "cluster-wide", ScopeRun: "run namespace", ScopePod: "the pod's (or `-n`'s) namespace", ScopeFromPod: "`--from-pod`'s namespace"}
	var b strings.Builder
	b.WriteString("| command | verb | resource | where | role | without it | what for |\n|---|---|---|---|---|---|---|\n")
	for _, a := range Commands {
		for i, r := range a.Rights {
			cmd := ""
			if i == 0 {
				cmd = "`" + a.Command + "`"
			}
			res := "`" + r.Resource + "`"
			if r.Group != "" {
				res = "`" + r.Group + "/" + r.Resource + "`"
			}
			if r.Name != "" {
				res += " named `" + r.Name + "`"
			}
			role := "none"
			if r.Role != "" {
				role = "`" + r.Role + "`"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", cmd, r.Verb, res, scope[r.Scope], role, r.Use, r.Why)
		}
	}
	return b.String()
}

// docs/rbac.md shows the table of rights by command as the code declares it (go test -run
// TestRBACDoc -update rewrites it), and reviews every right of every role of deploy/ in the role's
// own section.
func TestRBACDoc(t *testing.T) {
	const file = "../../docs/rbac.md"
	const begin, end = "<!-- rights by command: go test ./internal/cluster -run TestRBACDoc -update -->\n", "<!-- end of rights by command -->\n"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", file, begin, end)
	}
	want := doc[:i+len(begin)] + rightsTable() + doc[j:]
	if *updateDocs && want != doc {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = want
	}
	if doc != want {
		t.Errorf("%s: the rights by command differ from internal/cluster/access.go; go test ./internal/cluster -run TestRBACDoc -update rewrites them", file)
	}
	for _, d := range deployRoles(t) {
		head := "### `" + d.name + "`"
		k := strings.Index(doc, head)
		if k < 0 {
			t.Errorf("%s has no section %q", file, head)
			continue
		}
		section := doc[k+len(head):]
		if n := strings.Index(section, "\n### "); n >= 0 {
			section = section[:n]
		}
		for g := range d.grants(t) {
			row := "| `" + g.verb + " " + g.resource + "`"
			if !strings.Contains(section, row) {
				t.Errorf("%s, section %s: no row %q reviewing that right", file, d.name, row)
			}
		}
	}
}
