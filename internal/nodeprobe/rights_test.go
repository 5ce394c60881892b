package nodeprobe

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"github.com/pullpath/pullpath/internal/report"
)

// deploy/rbac.yaml grants no get on namespaces: a run namespace that does not exist must be named
// as such, not as a ConfigMap that was not found.
func TestVerifyRunNamespaceMissingAndUnreadable(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc)
	fc.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, &forbidden{}
	})
	fc.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		// what the NamespaceLifecycle admission plugin answers
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, a.GetNamespace())
	})
	v, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())},
		VerifyOptions{Image: img, Namespace: "pp-run", Timeout: time.Minute, Binary: func(string) ([]byte, string, error) { return []byte("bin"), "test", nil }})
	want := "namespace pp-run does not exist: create it (kubectl apply -f deploy/rbac.yaml makes \"pullpath\") or pass --run-namespace"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if v == nil || len(v.LeftBehind) != 0 || len(v.Pools) != 0 {
		t.Errorf("report %+v", v)
	}
	for _, a := range fc.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "namespaces" {
			t.Errorf("a namespace it could not read was created: %v", a)
		}
	}
}

// --from-pod without get on nodes: the probe in the pod runs, a note names the right, and the
// comparison uses the probe on the pod's own node.
func TestVerifyFromPodWithoutGetNodes(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc)
	fc.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, &forbidden{}
	})
	podReachesNodeDoesNot(fc, new([]corev1.EphemeralContainer))
	o := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poolb"}, AllNodes: true, ProbeImage: probeImg, ProbeFromPod: "shop/web-new", MaxImages: 50, Timeout: 20 * time.Second}
	v, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o)
	if err != nil {
		t.Fatal(err)
	}
	note := "--from-pod: node b2 of pod shop/web-new was not read (no RBAC get on nodes): its pool is unknown, so the probe in the pod is compared only with a probe on that node; grant get on nodes to compare it with its pool"
	if !strings.Contains(strings.Join(v.Notes, "\n"), note) {
		t.Errorf("notes %q, want %q", v.Notes, note)
	}
	fp := v.FromPod
	if fp == nil || fp.Pool != "" || fp.Class != report.ClassOK || fp.NodeClass != report.ClassRoute || !strings.Contains(fp.Comparison, "the pod reaches the registry, the node does not (route on b2)") {
		t.Fatalf("from pod: %+v", fp)
	}
	// and with no probe on that node, the comparison says why there is nothing to compare
	pp := &report.PodProbe{Node: "b2", Class: report.ClassOK, Summary: &report.ProbeSummary{Class: report.ClassOK}}
	compareFromPod(pp, []report.PoolResult{{Pool: "poolb", Node: "b3", Class: report.ClassRoute, Summary: &report.ProbeSummary{Class: report.ClassRoute}}})
	if pp.Comparison != "the pool of the pod's node b2 is unknown (the node was not read) and that node was not probed: nothing to compare" {
		t.Errorf("comparison %q", pp.Comparison)
	}
}

// A raw read the API server refuses (a pod's log) answers with a Status body that DoRaw's error
// drops: the refusal must still read "no RBAC get on pods/log", not as an admission refusal.
func TestRawReadRefusalNamesTheRight(t *testing.T) {
	// the body a kube-apiserver (v1.37.2) sends
	cs := refusingAPI(t, "/api/v1/namespaces/pullpath/pods/pp-1/log", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"pp-1\" is forbidden: User \"system:serviceaccount:rbac-96lzp:nolog\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"pullpath\"","reason":"Forbidden","details":{"name":"pp-1","kind":"pods"},"code":403}`)
	logs := func() *rest.Request {
		return cs.Core.Pods("pullpath").GetLogs("pp-1", &corev1.PodLogOptions{Container: "probe"})
	}
	_, err := cluster.RawRead(context.Background(), logs(), "get", "pods/log", "pullpath", "pp-1")
	var re *cluster.RBACError
	if !asRBAC(err, &re) || cluster.ShortErr(err) != "no RBAC get on pods/log" ||
		err.Error() != `not allowed to get pods/log in namespace pullpath: the identity needs RBAC verb "get" on "pods/log" in namespace pullpath (see deploy/rbac.yaml)` {
		t.Errorf("RawRead: %v (short %q)", err, cluster.ShortErr(err))
	}
	// DoRaw's own error, without the body, reads as RBAC's too
	_, raw := logs().DoRaw(context.Background())
	if got := cluster.ShortErr(cluster.APIError(raw, "get", "pods/log", "pullpath", "pp-1")); got != "no RBAC get on pods/log" {
		t.Errorf("DoRaw's error: %q", got)
	}
	r := &run{cs: cs, o: VerifyOptions{Namespace: "pullpath"}}
	if p := r.fullReport(context.Background(), "pp-1"); p != nil || len(r.notes) != 1 ||
		r.notes[0] != "the probes' logs in namespace pullpath were not read (no RBAC get on pods/log): only their compact verdicts are known" {
		t.Errorf("fullReport: %+v, notes %q", p, r.notes)
	}
}
