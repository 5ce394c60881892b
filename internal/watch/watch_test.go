package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
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
	k8stesting "k8s.io/client-go/testing"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/cluster/clustertest"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"github.com/pullpath/pullpath/internal/nodeprobe"
	"github.com/pullpath/pullpath/internal/report"
)

func TestReason(t *testing.T) {
	for c, want := range map[report.Class]string{report.ClassOK: "OK", report.ClassDNS: "DNS", report.ClassRoute: "Route", report.ClassEndpoint: "Endpoint",
		report.ClassTLS: "TLS", report.ClassAuth: "Auth", report.ClassForbidden: "Forbidden", report.ClassNotFound: "NotFound", report.ClassPlatform: "Platform",
		report.ClassProxy: "Proxy", report.ClassRateLimit: "RateLimit", report.ClassOther: "Other"} {
		if got := Reason(c); got != want {
			t.Errorf("Reason(%s) = %s, want %s", c, got, want)
		}
	}
}

func TestConditionOf(t *testing.T) {
	ok := &report.ProbeSummary{Class: report.ClassOK, Code: report.CodeOK}
	route := &report.ProbeSummary{Class: report.ClassRoute, Code: report.CodeRouteNone, Host: "registry.corp.example:443", Role: report.RoleRegistry, Step: report.StepRoute}
	for _, tc := range []struct {
		name    string
		results []ImageResult
		want    Condition
	}{
		{"all hold", []ImageResult{{Image: "a", Verdict: ok}, {Image: "b", Verdict: ok}}, Condition{"False", "OK", "the pull path holds for a, b"}},
		{"one broken", []ImageResult{{Image: "a", Verdict: ok}, {Image: "b", Verdict: route}}, Condition{"True", "Route", "b: registry.corp.example:443 (registry) step route ROUTE_NONE"}},
		{"broken beats unknown", []ImageResult{{Image: "a", Error: "x"}, {Image: "b", Verdict: route}}, Condition{"True", "Route", "b: registry.corp.example:443 (registry) step route ROUTE_NONE"}},
		{"could not run", []ImageResult{{Image: "a", Verdict: ok}, {Image: "b", Error: "the probe pod on n did not finish:\n  timeout"}}, Condition{"Unknown", "Other", "the probe of b could not run: the probe pod on n did not finish: timeout"}},
	} {
		if got := conditionOf(tc.results); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// fakeCluster: three Ready nodes; the probe pod on "b2" finds no route, the others hold. Probe
// pods finish at once with their compact verdict (ConfigMap delivery).
func fakeCluster(t *testing.T) (*fake.Clientset, *sync.Map) {
	fc := fake.NewClientset(
		clustertest.Node("a1", "poola", clustertest.T0, "v1", "mcr.microsoft.com/oss/kubernetes/pause:3.6"),
		clustertest.Node("b1", "poolb", clustertest.T0.Add(time.Hour), "v1", "mcr.microsoft.com/oss/kubernetes/pause:3.6"),
		clustertest.Node("b2", "poolb", clustertest.T0.Add(2*time.Hour), "v1", "mcr.microsoft.com/oss/kubernetes/pause:3.6"),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pullpath"}})
	fc.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	var order sync.Map // node → the sequence number of its first probe
	var seq int
	var mu sync.Mutex
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		mu.Lock()
		seq++
		order.LoadOrStore(p.Spec.NodeName, seq)
		mu.Unlock()
		msg := `{"class":"ok","code":"OK","summary":"pulled"}`
		if p.Spec.NodeName == "b2" {
			msg = `{"class":"route","code":"ROUTE_NONE","host":"registry.corp.example:443","role":"registry","step":"route"}`
		}
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: msg}}}}
		return false, nil, nil
	})
	return fc, &order
}

// One round on the fake cluster: the newest node first; b2's condition True Route with an event,
// the others False; the metrics say the same; SIGTERM (ctx) leaves nothing of the watcher.
func TestWatchRound(t *testing.T) {
	fc, order := fakeCluster(t)
	cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1()), NoWatchList: true}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := New(ctx, cs, Options{Images: []string{clustertest.Image}, Interval: time.Hour, Concurrency: 1, FullEvery: 1,
		Probe: nodeprobe.VerifyOptions{Namespace: "pullpath", Delivery: nodeprobe.ModeConfigMap, Timeout: 5 * time.Second,
			Binary: func(string) ([]byte, string, error) { return []byte("bin"), "test", nil }}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []string)
	go func() { done <- w.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for len(w.Snapshot().Nodes) < 3 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if first, _ := order.Load("b2"); first != 1 {
		t.Errorf("b2, the newest node, was probed %v-th; want first", first)
	}
	for name, want := range map[string][2]string{"a1": {"False", "OK"}, "b1": {"False", "OK"}, "b2": {"True", "Route"}} {
		n, err := fc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := condition(n)
		if c == nil || string(c.Status) != want[0] || c.Reason != want[1] {
			t.Errorf("node %s: condition %+v, want %s %s", name, c, want[0], want[1])
			continue
		}
		if len(n.Status.Conditions) < 2 {
			t.Errorf("node %s: the kubelet's Ready condition was dropped by the patch: %+v", name, n.Status.Conditions)
		}
	}
	evs, _ := fc.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	var broken []string
	for _, e := range evs.Items {
		if e.Reason == "ImagePullPathBroken" {
			broken = append(broken, e.InvolvedObject.Name+": "+e.Message)
		}
	}
	if len(broken) != 1 || !strings.HasPrefix(broken[0], "b2: "+clustertest.Image+": registry.corp.example:443 (registry) step route ROUTE_NONE") {
		t.Errorf("broken events %q; want one, for b2", broken)
	}
	rec := httptest.NewRecorder()
	w.Metrics().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`pullpath_watch_path_ok{image="` + clustertest.Image + `",node="b2",pool="poolb",registry="registry.corp.example"} 0`,
		`pullpath_watch_path_ok{image="` + clustertest.Image + `",node="a1",pool="poola",registry="registry.corp.example"} 1`,
		`pullpath_watch_node_broken{node="b2",pool="poolb",reason="Route"} 1`,
		`pullpath_watch_probes_total{pool="poolb",result="route"} 1`,
		`pullpath_watch_interval_seconds 3600`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	cancel()
	if left := <-done; len(left) != 0 {
		t.Errorf("left behind %v", left)
	}
	for _, kind := range []string{"pods", "configmaps"} {
		var n int
		switch kind {
		case "pods":
			l, _ := fc.CoreV1().Pods("pullpath").List(context.Background(), metav1.ListOptions{})
			n = len(l.Items)
		case "configmaps":
			l, _ := fc.CoreV1().ConfigMaps("pullpath").List(context.Background(), metav1.ListOptions{})
			n = len(l.Items)
		}
		if n != 0 {
			t.Errorf("%d %s left in the run namespace", n, kind)
		}
	}
}

// Every request a watcher makes on the fake cluster is one internal/cluster's table declares for
// "watch" (deploy/watch/watch.yaml grants exactly those; its tests hold the YAML to the table).
func TestWatchRequestsOnlyItsRights(t *testing.T) {
	fc, _ := fakeCluster(t)
	cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1()), NoWatchList: true}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := New(ctx, cs, Options{Images: []string{clustertest.Image}, Interval: time.Hour, Concurrency: 2, FullEvery: 2,
		Probe: nodeprobe.VerifyOptions{Namespace: "pullpath", Timeout: 5 * time.Second, Binary: func(string) ([]byte, string, error) { return []byte("bin"), "test", nil }}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []string)
	go func() { done <- w.Run(ctx) }()
	for deadline := time.Now().Add(20 * time.Second); len(w.Snapshot().Nodes) < 3 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(11 * time.Second) // the status ConfigMap is written at most every 10 s
	cancel()
	<-done
	declared := map[string]bool{}
	named := map[string]string{} // a right the role limits to one object (resourceNames)
	for _, r := range cluster.Lines("watch") {
		declared[r.Verb+" "+r.Resource+" "+string(r.Scope)] = true
		if r.Name != "" {
			named[r.Verb+" "+r.Resource+" "+string(r.Scope)] = r.Name
		}
	}
	seen := map[string]bool{}
	for _, a := range fc.Actions() {
		res := a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			res += "/" + sub
		}
		scope := cluster.ScopeCluster
		switch a.GetNamespace() {
		case "pullpath":
			scope = cluster.ScopeRun
		case "default":
			scope = cluster.ScopeEvents
		}
		key := a.GetVerb() + " " + res + " " + string(scope)
		seen[key] = true
		if want := named[key]; want != "" {
			var name string
			switch a := a.(type) {
			case k8stesting.GetAction:
				name = a.GetName()
			case k8stesting.UpdateAction:
				name = a.GetObject().(metav1.Object).GetName()
			}
			if name != want {
				t.Errorf("watch requested %s on %q; its role allows only %q (resourceNames)", key, name, want)
			}
		}
		if !declared[key] {
			t.Errorf("watch requested %s, which internal/cluster/access.go does not declare for it", key)
		}
	}
	// what the fake cluster cannot show: attach (no endpoint), an API server that does not answer,
	// a probe pod that cannot start (its events)
	unseen := map[string]bool{"create pods/attach run": true, "get pods/attach run": true, "get nodes cluster": true, "get namespaces cluster": true, "get pods/log run": true, "list events run": true,
		"list events cluster": true} // client-go's informers stream the list in the watch (WatchList)
	for k := range declared {
		if !seen[k] && !unseen[k] {
			t.Errorf("%s is declared for watch and was not requested", k)
		}
	}
}

// watch --secret and --service-account: the probes present the pull identity as pods with it do,
// from copies in the run namespace owned by the watcher's owner object (collected with it when a
// watcher is killed), and the watcher makes only the requests its lines declare, the secret and
// the account read by name.
func TestWatchPresentsItsPullIdentity(t *testing.T) {
	for _, tc := range []struct {
		line string
		set  func(*nodeprobe.VerifyOptions)
	}{
		{"watch --secret", func(o *nodeprobe.VerifyOptions) { o.SecretNamespace, o.Secret = "shop", "corp" }},
		{"watch --service-account", func(o *nodeprobe.VerifyOptions) { o.FromServiceAccount = "shop/puller" }},
	} {
		t.Run(tc.line, func(t *testing.T) {
			fc, _ := fakeCluster(t)
			cfg := `{"auths":{"registry.cluster.test":{"auth":"dXNlcjpzM2NyZXQtdmFsdWU="}}}`
			for _, ob := range []runtime.Object{
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "corp"}, Type: corev1.SecretTypeDockerConfigJson,
					Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}},
				&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "puller"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "corp"}}},
			} {
				if err := fc.Tracker().Add(ob); err != nil {
					t.Fatal(err)
				}
			}
			var envs [][]corev1.EnvVar
			var mu sync.Mutex
			fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				mu.Lock()
				envs = append(envs, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Spec.Containers[0].Env)
				mu.Unlock()
				return false, nil, nil
			})
			cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1()), NoWatchList: true}
			o := nodeprobe.VerifyOptions{Namespace: "pullpath", Delivery: nodeprobe.ModeConfigMap, Timeout: 5 * time.Second,
				Binary: func(string) ([]byte, string, error) { return []byte("bin"), "test", nil }}
			tc.set(&o)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w, err := New(ctx, cs, Options{Images: []string{"registry.cluster.test/shop/web:1"}, Interval: time.Hour, Concurrency: 3, FullEvery: 1, Probe: o})
			if err != nil {
				t.Fatal(err)
			}
			// the tracker, not the client: the test's own read is no request of the watcher's
			obj, err := fc.Tracker().List(corev1.SchemeGroupVersion.WithResource("secrets"), corev1.SchemeGroupVersion.WithKind("Secret"), "pullpath")
			copies, _ := obj.(*corev1.SecretList)
			if err != nil || copies == nil || len(copies.Items) != 1 {
				t.Fatalf("copies in the run namespace: %v (%v), want one", copies, err)
			}
			cp := copies.Items[0]
			if len(cp.OwnerReferences) != 1 || cp.OwnerReferences[0].Kind != "ConfigMap" {
				t.Errorf("the copy %s is owned by %+v, want the watcher's owner ConfigMap (collected with it)", cp.Name, cp.OwnerReferences)
			}
			done := make(chan []string)
			go func() { done <- w.Run(ctx) }()
			for deadline := time.Now().Add(20 * time.Second); len(w.Snapshot().Nodes) < 3 && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
			}
			cancel()
			if left := <-done; len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(envs) == 0 {
				t.Fatal("no probe pod")
			}
			for _, env := range envs {
				var ref string
				for _, e := range env {
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						ref = e.ValueFrom.SecretKeyRef.Name
					}
				}
				if ref != cp.Name {
					t.Errorf("a probe pod's pull secret variable refers to %q, want the copy %s", ref, cp.Name)
				}
			}
			declared := map[string]bool{}
			for _, r := range cluster.Lines("watch", tc.line) {
				declared[r.Verb+" "+r.Resource+" "+string(r.Scope)] = true
			}
			seen := map[string]bool{}
			for _, a := range fc.Actions() {
				res := a.GetResource().Resource
				if sub := a.GetSubresource(); sub != "" {
					res += "/" + sub
				}
				scope := map[string]cluster.Scope{"": cluster.ScopeCluster, "pullpath": cluster.ScopeRun, "default": cluster.ScopeEvents, "shop": cluster.ScopePod}[a.GetNamespace()]
				key := a.GetVerb() + " " + res + " " + string(scope)
				seen[key] = true
				if !declared[key] {
					t.Errorf("%s requested %s, which internal/cluster/access.go does not declare for it", tc.line, key)
				}
				if g, ok := a.(k8stesting.GetAction); ok && scope == cluster.ScopePod && g.GetName() != "corp" && g.GetName() != "puller" {
					t.Errorf("%s read %s %s, not the named identity", tc.line, res, g.GetName())
				}
			}
			for _, r := range cluster.Lines(tc.line) {
				if key := r.Verb + " " + r.Resource + " " + string(r.Scope); !seen[key] {
					t.Errorf("%s is declared for %s and was not requested", key, tc.line)
				}
			}
		})
	}
}

// A kubelet's pull failure of a watched image (a Warning event of reason Failed on a pod) has that
// node probed at once, far ahead of its interval; a failure of another image, or one from before
// the watcher started, does not.
func TestPullFailureTriggersAProbe(t *testing.T) {
	defer func(d time.Duration) { minRetrigger = d }(minRetrigger)
	minRetrigger = 0
	fc, _ := fakeCluster(t)
	var mu sync.Mutex
	probes := map[string]int{}
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		probes[a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Spec.NodeName]++
		mu.Unlock()
		return false, nil, nil
	})
	count := func(node string) int { mu.Lock(); defer mu.Unlock(); return probes[node] }
	cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1()), NoWatchList: true}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := New(ctx, cs, Options{Images: []string{clustertest.Image}, Interval: time.Hour, Concurrency: 3, FullEvery: 1,
		Probe: nodeprobe.VerifyOptions{Namespace: "pullpath", Delivery: nodeprobe.ModeConfigMap, Timeout: 5 * time.Second,
			Binary: func(string) ([]byte, string, error) { return []byte("bin"), "test", nil }}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []string)
	go func() { done <- w.Run(ctx) }()
	for deadline := time.Now().Add(20 * time.Second); len(w.Snapshot().Nodes) < 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first round did not end")
		}
	}
	time.Sleep(1500 * time.Millisecond) // the events informer has listed
	failed := func(name, node, image string, at time.Time) {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Type: corev1.EventTypeWarning, Reason: "Failed",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-1"}, Source: corev1.EventSource{Component: "kubelet", Host: node},
			Message:       `Failed to pull image "` + image + `": rpc error: code = Unknown desc = failed to resolve reference: dial tcp 10.1.2.3:443: connect: no route to host`,
			LastTimestamp: metav1.NewTime(at)}
		if _, err := fc.CoreV1().Events("shop").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]int{"a1": count("a1"), "b1": count("b1"), "b2": count("b2")}
	failed("other", "a1", "registry.corp.example/shop/other:2", time.Now())
	failed("old", "b2", clustertest.Image, time.Now().Add(-time.Hour))
	at := time.Now()
	failed("web", "b1", clustertest.Image, at)
	for count("b1") == before["b1"] {
		if time.Since(at) > TriggerWithin {
			t.Fatalf("node b1 was not probed within %s of its kubelet's pull failure", TriggerWithin)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("b1 probed %s after its pull failure", time.Since(at).Round(10*time.Millisecond))
	time.Sleep(2 * time.Second)
	if count("a1") != before["a1"] || count("b2") != before["b2"] {
		t.Errorf("probes after another image's failure on a1 and an old failure on b2: a1 %d→%d, b2 %d→%d", before["a1"], count("a1"), before["b2"], count("b2"))
	}
	cancel()
	<-done
}

// A status that would pass StatusBudget lists what is broken or unknown and counts the nodes
// that hold (held, oldestHeld), so that the API server still takes it at 5,000 nodes; watch
// status says so, and ages the counted nodes too.
func TestStatusStaysUnderTheBudget(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	s := &Status{APIVersion: report.APIVersion, Kind: "WatchStatus", Updated: now, Interval: "15m0s", Images: []string{clustertest.Image}}
	for i := range 5000 {
		n := NodeStatus{Node: fmt.Sprintf("aks-pool%02d-vmss%06d", i%50, i), Pool: fmt.Sprintf("pool%02d", i%50), Condition: "False", Reason: "OK",
			Message: "pull path holds", Since: now.Add(-time.Hour)}
		if i%500 == 0 {
			n.Condition, n.Reason, n.Message = "True", "Route", clustertest.Image+": registry.corp.example:443 (registry) step route ROUTE_NONE"
		}
		n.Images = []ImageStatus{{Image: clustertest.Image, Class: "ok", Code: "OK", Since: now.Add(-time.Hour), LastProbed: now.Add(-time.Duration(i%900) * time.Second)}}
		s.Nodes = append(s.Nodes, n)
	}
	whole, _ := json.Marshal(s)
	b, err := fit(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("5,000 nodes: %d bytes whole, %d fitted (budget %d)", len(whole), len(b), StatusBudget)
	if len(whole) <= StatusBudget || len(b) > StatusBudget {
		t.Fatalf("whole %d bytes, fitted %d: want the whole over the budget %d and the fitted under it", len(whole), len(b), StatusBudget)
	}
	var got Status
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Nodes) != 10 || got.Held != 4990 || !got.OldestHeld.Equal(now.Add(-899*time.Second)) {
		t.Errorf("listed %d, held %d, oldest %v: want the 10 broken listed and 4,990 counted, oldest 899 s ago", len(got.Nodes), got.Held, got.OldestHeld)
	}
	var out bytes.Buffer
	if err := report.WriteWatchStatusText(&out, &got, "", report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "BROKEN  4990 of 5000 nodes hold") || !strings.Contains(out.String(), "4990 nodes that hold are counted, not listed") {
		t.Errorf("watch status text:\n%s", out.String())
	}
	got.Updated = now.Add(40 * time.Minute) // a watcher that writes, yet probes no one
	if stale := Stale(&got, now.Add(40*time.Minute), 3*time.Minute); !strings.Contains(stale, "of the 4990 counted ones") {
		t.Errorf("a counted node not probed for 40 min: stale %q", stale)
	}
	small := &Status{Interval: "15m0s", Nodes: s.Nodes[:10]}
	if b, _ := fit(small); strings.Contains(string(b), `"held"`) {
		t.Error("a small status is listed whole")
	}
}

// A status write the API server refuses is said once, with its words, not retried in silence
// nor logged every minute.
func TestStatusRefusalIsSaidOnce(t *testing.T) {
	fc := fake.NewClientset()
	fc.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	})
	var lines []string
	w := &Watcher{cs: &cluster.Client{Core: kubefake.Core(fc.CoreV1())}, o: Options{Interval: time.Minute, Probe: nodeprobe.VerifyOptions{Namespace: "pullpath"},
		Progress: func(s string) { lines = append(lines, s) }}, metrics: newMetrics(time.Minute, nil, "test"), nodes: map[string]*nodeState{}}
	for range 3 {
		w.writeStatus(context.Background())
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "was not written") || !strings.Contains(lines[0], "limit is 3145728") {
		t.Errorf("said %q, want one line with the API server's words", lines)
	}
}
