package nodeprobe

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/cluster"
)

// A slim node answers every question watch asks of a node as the whole node does (pool,
// eligibility, Ready, architecture, what sandbox image to borrow), without managedFields, other
// annotations or the image list beyond the sandbox images.
func TestSlimNodeAnswersAsTheNode(t *testing.T) {
	full := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0)),
			Labels:        map[string]string{"kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64"},
			Annotations:   map[string]string{"machine.openshift.io/machine": "openshift-machine-api/workers-east-abcde", "node.alpha.kubernetes.io/ttl": "0", "huge": string(make([]byte, 4096))},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "virtual-kubelet.io/provider", Value: "azure"}}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:   corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "arm64", KernelVersion: "6.1"},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
		},
	}
	for i := range 49 {
		full.Status.Images = append(full.Status.Images, corev1.ContainerImage{Names: []string{fmt.Sprintf("docker.io/library/app%d@sha256:%064d", i, i)}, SizeBytes: 1 << 20})
	}
	full.Status.Images = append(full.Status.Images, corev1.ContainerImage{Names: []string{"registry.k8s.io/pause@sha256:" + fmt.Sprintf("%064d", 7), "registry.k8s.io/pause:3.10"}},
		corev1.ContainerImage{Names: []string{"corp.example/base/pause:1"}})
	slim := cluster.SlimNode(full, []string{"corp.example/base/pause"})
	if p1, _ := cluster.Pool(full); p1 != func() string { p, _ := cluster.Pool(slim); return p }() {
		t.Errorf("pool differs")
	}
	for _, unready := range []bool{true, false} {
		if cluster.Ineligible(full, unready) != cluster.Ineligible(slim, unready) {
			t.Errorf("eligibility (includeUnready %v): %q, slim %q", unready, cluster.Ineligible(full, unready), cluster.Ineligible(slim, unready))
		}
	}
	if cluster.NodeReady(full) != cluster.NodeReady(slim) || slim.Status.NodeInfo.Architecture != "arm64" || !slim.CreationTimestamp.Equal(&full.CreationTimestamp) {
		t.Error("Ready, architecture or age differ")
	}
	if a, b := borrowable(full, []string{"corp.example/base/pause"}), borrowable(slim, []string{"corp.example/base/pause"}); !slices.Equal(a, b) || len(a) != 2 {
		t.Errorf("borrowable: %v, slim %v", a, b)
	}
	// of the addresses, the IPs a resident agent answers on; not the hostname
	if len(slim.ManagedFields) != 0 || len(slim.Status.Images) != 2 || len(slim.Annotations) != 1 || len(slim.Status.Addresses) != 1 || slim.Status.Addresses[0].Type != corev1.NodeInternalIP {
		t.Errorf("slim keeps %d managedFields, %d images, annotations %v, %d addresses", len(slim.ManagedFields), len(slim.Status.Images), slim.Annotations, len(slim.Status.Addresses))
	}
}
