package cluster

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/pullpath/pullpath/internal/cluster/clustertest"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
)

// watchAndRunObjects: a verify run's pod, owner and secret copy, and a watcher's pod, owner,
// loader and status ConfigMap whose heartbeat is hb ago (ahead when negative), or none.
func watchAndRunObjects(hb time.Duration, none bool) []runtime.Object {
	run := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "pullpath", Name: name, Labels: map[string]string{LabelManaged: "pullpath", LabelRun: "aa"}}
	}
	byWatch := func(name, role string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "pullpath", Name: name, Labels: map[string]string{LabelManaged: "pullpath", LabelRun: "ww", LabelBy: ByWatch, LabelRole: role}}
	}
	status := byWatch(WatchStatusConfigMap, "status")
	delete(status.Labels, LabelRun)
	if !none {
		status.Annotations = map[string]string{AnnotationHeartbeat: strconv.FormatInt(time.Now().Add(-hb).Unix(), 10)}
	}
	return []runtime.Object{
		&corev1.Pod{ObjectMeta: run("pullpath-aa-probe-n1")}, &corev1.ConfigMap{ObjectMeta: run("pullpath-run-aa")}, &corev1.Secret{ObjectMeta: run("pullpath-aa-pull-1")},
		&corev1.Pod{ObjectMeta: byWatch("pullpath-ww-probe-n1", "probe")}, &corev1.ConfigMap{ObjectMeta: byWatch("pullpath-run-ww", "owner")},
		&corev1.ConfigMap{ObjectMeta: byWatch("pullpath-ww-loader-amd64", "loader")}, &corev1.ConfigMap{ObjectMeta: status},
	}
}

func remaining(t *testing.T, fc *fake.Clientset) []string {
	t.Helper()
	return remainingIn(fc)
}

var remainingIn = clustertest.RemainingIn

// cleanup's default (LiveWatch, then NotByWatch) spares a running watcher's objects and deletes a
// verify run's; a watcher whose heartbeat stopped, or that never wrote one, is not running and its
// leftovers go; without the selector (--include-watch) everything goes.
func TestCleanupSparesALiveWatcher(t *testing.T) {
	watchObjs := []string{"configmap/pullpath-run-ww", "configmap/pullpath-watch-status", "configmap/pullpath-ww-loader-amd64", "pod/pullpath-ww-probe-n1"}
	for _, tc := range []struct {
		name         string
		hb           time.Duration
		none         bool
		includeWatch bool
		live         bool
		want         []string
	}{
		{"heartbeat 30s ago", 30 * time.Second, false, false, true, watchObjs},
		{"heartbeat from a clock 2m ahead", -2 * time.Minute, false, false, true, watchObjs},
		{"heartbeat 30s ago, --include-watch", 30 * time.Second, false, true, true, nil},
		{"heartbeat 10m ago", 10 * time.Minute, false, false, false, nil},
		{"no heartbeat", 0, true, false, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := fake.NewClientset(watchAndRunObjects(tc.hb, tc.none)...)
			cs := &Client{Core: kubefake.Core(fc.CoreV1())}
			live, _, err := LiveWatch(context.Background(), cs, "pullpath")
			if err != nil || live != tc.live {
				t.Fatalf("LiveWatch = %v, %v; want %v", live, err, tc.live)
			}
			o := CleanupOptions{Namespace: "pullpath"}
			if live && !tc.includeWatch {
				o.Selector = NotByWatch
			}
			if left, err := Cleanup(context.Background(), cs, o); len(left) != 0 || err != nil {
				t.Fatalf("Cleanup: left %v, %v", left, err)
			}
			if got := remaining(t, fc); !slices.Equal(got, tc.want) {
				t.Errorf("left in the namespace %v, want %v", got, tc.want)
			}
		})
	}
}

// A refused delete of ConfigMaps is named as such: every list passed, so "may not list pods"
// (what cleanup used to say) sends the reader to the wrong right.
func TestCleanupNamesTheRefusedRight(t *testing.T) {
	fc := fake.NewClientset(watchAndRunObjects(0, true)...)
	fc.PrependReactor("delete", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, a.(k8stesting.DeleteAction).GetName(),
			errors.New(`User "dev" cannot delete resource "configmaps" in API group "" in the namespace "pullpath"`))
	})
	cs := &Client{Core: kubefake.Core(fc.CoreV1())}
	_, err := Cleanup(context.Background(), cs, CleanupOptions{Namespace: "pullpath"})
	var re *RBACError
	if !errors.As(err, &re) || re.Verb != "delete" || re.Resource != "configmaps" || re.Namespace != "pullpath" {
		t.Fatalf("Cleanup = %v; want an RBACError for delete configmaps in pullpath", err)
	}
	if !apierrors.IsForbidden(err) {
		t.Errorf("the RBACError hides the 403: %v", err)
	}
	if got := err.Error(); !strings.Contains(got, `verb "delete" on "configmaps"`) || strings.Contains(got, "list") {
		t.Errorf("error %q", got)
	}
}

// An object a finalizer holds is left, said to be terminating, and deleted once: a second delete
// changes nothing, and each request costs a token of client-go's rate limiter.
func TestCleanupLeavesTerminatingObjects(t *testing.T) {
	now := metav1.Now()
	objs := watchAndRunObjects(0, true)
	pod := objs[0].(*corev1.Pod)
	pod.DeletionTimestamp, pod.Finalizers = &now, []string{"example.com/hold"}
	fc := fake.NewClientset(objs...)
	cs := &Client{Core: kubefake.Core(fc.CoreV1())}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	left, err := Cleanup(ctx, cs, CleanupOptions{Namespace: "pullpath", Selector: NotByWatch})
	want := []string{"pod/pullpath/pullpath-aa-probe-n1 (terminating: finalizer example.com/hold)"}
	if err != nil || !slices.Equal(left, want) {
		t.Fatalf("Cleanup = %q, %v; want %q", left, err, want)
	}
	for _, a := range fc.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			t.Errorf("deleted the terminating pod %s", a.(k8stesting.DeleteAction).GetName())
		}
	}
}
