package nodeprobe

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/cluster/clustertest"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
)

// A watcher copies no Secret: its cleanup neither lists nor deletes Secrets (watch's role holds
// no right on them), and a verify run's copy beside it stays.
func TestWatchCleanupListsNoSecrets(t *testing.T) {
	// a verify run's pod, owner and secret copy; a watcher's pod, owner, loader and status
	verify := &run{id: "aa", o: VerifyOptions{Namespace: "pullpath"}, expires: time.Now().Add(time.Hour)}
	watch := &run{id: "ww", o: VerifyOptions{Namespace: "pullpath"}, by: cluster.ByWatch}
	status := watch.meta(cluster.WatchStatusConfigMap, "status")
	delete(status.Labels, cluster.LabelRun)
	fc := fake.NewClientset(&corev1.Pod{ObjectMeta: verify.meta("pullpath-aa-probe-n1", "probe")}, &corev1.ConfigMap{ObjectMeta: verify.meta("pullpath-run-aa", "owner")},
		&corev1.Secret{ObjectMeta: verify.meta("pullpath-aa-pull-1", "secret")},
		&corev1.Pod{ObjectMeta: watch.meta("pullpath-ww-probe-n1", "probe")}, &corev1.ConfigMap{ObjectMeta: watch.meta("pullpath-run-ww", "owner")},
		&corev1.ConfigMap{ObjectMeta: watch.meta("pullpath-ww-loader-amd64", "loader")}, &corev1.ConfigMap{ObjectMeta: status})
	cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1())}
	if err := RemoveWatchLeftovers(context.Background(), cs, "pullpath", nil); err != nil {
		t.Fatal(err)
	}
	for _, a := range fc.Actions() {
		if a.GetResource().Resource == "secrets" {
			t.Errorf("a watcher's cleanup requested %s secrets", a.GetVerb())
		}
	}
	want := []string{"configmap/pullpath-run-aa", "pod/pullpath-aa-probe-n1", "secret/pullpath-aa-pull-1"}
	if got := clustertest.RemainingIn(fc); !slices.Equal(got, want) {
		t.Errorf("left %v, want the verify run's %v", got, want)
	}
}
