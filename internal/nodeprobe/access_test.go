package nodeprobe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/kube"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"github.com/pullpath/pullpath/internal/report"
)

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
		m := metav1.ObjectMeta{Namespace: "pullpath", Name: "left", Labels: map[string]string{cluster.LabelManaged: "pullpath", cluster.LabelRun: "r1"}}
		return []runtime.Object{&corev1.Pod{ObjectMeta: m}, &corev1.ConfigMap{ObjectMeta: m}, &corev1.Secret{ObjectMeta: m}}
	}
	verify := func(o VerifyOptions, objs []runtime.Object, setup ...func(*fake.Clientset)) func(t *testing.T) ([]observed, []observed) {
		return func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(objs...)
			allowing(fc)
			for _, s := range setup {
				s(fc)
			}
			v, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o)
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
		scopes map[string]cluster.Scope
		run    func(t *testing.T) (requests, reviews []observed)
	}{
		{"pod", []string{"pod"}, map[string]cluster.Scope{"shop": cluster.ScopePod}, func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(scenario()...)
			if _, err := cluster.DiagnosePod(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1())}, "shop", "web-new", cluster.Options{}); err != nil {
				t.Error(err)
			}
			_, _ = cluster.DiagnosePod(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1())}, "shop", "nope", cluster.Options{}) // not found: is the namespace there?
			return fromActions(fc.Actions()), nil
		}},
		{"pod --read-kubelet-config", []string{"pod", "pod --read-kubelet-config"}, map[string]cluster.Scope{"shop": cluster.ScopePod}, func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(scenario()...)
			var raw []observed
			cs := &cluster.Client{Core: restCore{kubefake.Core(fc.CoreV1()), kubeletAPI(t, &raw)}}
			if _, err := cluster.DiagnosePod(context.Background(), cs, "shop", "web-new", cluster.Options{KubeletConfig: true}); err != nil {
				t.Error(err)
			}
			if len(raw) == 0 {
				t.Error("no /configz read with KubeletConfig")
			}
			return append(fromActions(fc.Actions()), raw...), nil
		}},
		{"pod --all", []string{"pod --all"}, map[string]cluster.Scope{"shop": cluster.ScopePod}, func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(scenario()...)
			if _, err := cluster.DiagnoseAll(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1())}, "shop"); err != nil {
				t.Error(err)
			}
			return fromActions(fc.Actions()), nil
		}},
		{"pod --all --credential-verification --read-kubelet-config", []string{"pod --all", "pod --all --credential-verification", "pod --read-kubelet-config"}, map[string]cluster.Scope{"shop": cluster.ScopePod}, func(t *testing.T) ([]observed, []observed) {
			// no failing pod (whose pool would be read as metadata through the REST client); a
			// running one with a pull secret
			var objs []runtime.Object
			for _, ob := range scenario() {
				if p, ok := ob.(*corev1.Pod); ok && p.Name == "web-new" {
					continue
				} else if ok && p.Name == "web-a" {
					p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
				}
				objs = append(objs, ob)
			}
			fc := fake.NewClientset(objs...)
			var raw []observed
			cs := &cluster.Client{Core: restCore{kubefake.Core(fc.CoreV1()), kubeletAPI(t, &raw)}}
			l, err := cluster.DiagnoseAll(context.Background(), cs, "shop", cluster.AllOptions{CredentialVerification: cluster.PolicyAlwaysVerify, KubeletConfig: true})
			if err != nil {
				t.Error(err)
			}
			if len(raw) == 0 || l.CredentialVerification == nil || len(l.CredentialVerification.Nodes) == 0 {
				t.Error("no /configz read for the policies")
			}
			return append(fromActions(fc.Actions()), raw...), nil
		}},
		{"pod --all -A", []string{"pod --all", "pod --all -A"}, nil, func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(scenario()...)
			if _, err := cluster.DiagnoseAll(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1())}, ""); err != nil {
				t.Error(err)
			}
			return fromActions(fc.Actions()), nil
		}},
		{"pod --all -A without cluster-wide pod rights", []string{"pod --all", "pod --all -A"}, map[string]cluster.Scope{"shop": cluster.ScopePod}, func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(scenario()...)
			fc.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetNamespace() == "" {
					return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("no"))
				}
				return false, nil, nil
			})
			if _, err := cluster.DiagnoseAll(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1())}, ""); err != nil {
				t.Error(err)
			}
			return fromActions(fc.Actions()), nil
		}},
		{"verify --runtime-pull", []string{"verify"}, map[string]cluster.Scope{"pullpath": cluster.ScopeRun},
			verify(withOpts(func(o *VerifyOptions) { o.RuntimePull = true }), scenario(), succeed)},
		{"verify --secret", []string{"verify", "verify --secret"}, map[string]cluster.Scope{"pullpath": cluster.ScopeRun, "shop": cluster.ScopePod},
			verify(withOpts(func(o *VerifyOptions) { o.SecretNamespace, o.Secret = "shop", "corp" }), withCorp(), succeed)},
		{"verify --pod", []string{"verify", "verify --pod"}, map[string]cluster.Scope{"pullpath": cluster.ScopeRun, "shop": cluster.ScopePod},
			verify(withOpts(func(o *VerifyOptions) { o.FromPod = "shop/web-new" }), withCorp(), succeed)},
		{"verify --from-pod", []string{"verify", "verify --from-pod"}, map[string]cluster.Scope{"pullpath": cluster.ScopeRun, "shop": cluster.ScopeFromPod},
			verify(withOpts(func(o *VerifyOptions) { o.ProbeImage, o.ProbeFromPod, o.Binary = probeImg, "shop/web-new", nil }), withCorp(),
				func(fc *fake.Clientset) { podReachesNodeDoesNot(fc, new([]corev1.EphemeralContainer)) })},
		{"cleanup --expired", []string{"cleanup --expired (the watch manifests' CronJob)"}, map[string]cluster.Scope{"pullpath": cluster.ScopeRun}, func(t *testing.T) ([]observed, []observed) {
			objs := leftovers()
			for _, ob := range objs {
				ob.(metav1.Object).GetLabels()[cluster.LabelExpires] = "1"
			}
			fc := fake.NewClientset(objs...)
			if left, err := cluster.Cleanup(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1())}, cluster.CleanupOptions{Namespace: "pullpath", Expired: true}); len(left) != 0 || err != nil {
				t.Errorf("left %v (%v)", left, err)
			}
			if n := len(remainingIn(fc)); n != 0 {
				t.Errorf("%d expired objects were not deleted", n)
			}
			return fromActions(fc.Actions()), nil
		}},
		{"cleanup", []string{"cleanup"}, map[string]cluster.Scope{"pullpath": cluster.ScopeRun}, func(t *testing.T) ([]observed, []observed) {
			fc := fake.NewClientset(leftovers()...)
			if left, err := cluster.Cleanup(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1())}, cluster.CleanupOptions{Namespace: "pullpath"}); len(left) != 0 || err != nil {
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
				for _, r := range cluster.Lines(line) {
					rights = append(rights, line+": "+r.Verb+" "+r.Resource+" "+string(r.Scope))
				}
			}
			match := func(o observed) []string {
				scope := cluster.ScopeCluster
				if o.ns != "" {
					s, ok := tc.scopes[o.ns]
					if !ok {
						t.Errorf("%s %s in namespace %s, which is none of the run's", o.verb, o.resource, o.ns)
					}
					scope = s
				}
				var hits []string
				for _, line := range tc.lines {
					for _, r := range cluster.Lines(line) {
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
	for _, a := range cluster.Commands {
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
