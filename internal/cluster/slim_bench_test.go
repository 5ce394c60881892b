package cluster

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// realNode is a node as an AKS or EKS kubelet reports it: 16 labels, 8 annotations, the managed
// fields of four managers, 50 images (nodeStatusMaxImages) of a tag and a digest each, six
// conditions, addresses and capacity.
func realNode(i int) []byte {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("aks-pool%02d-12345678-vmss%06d", i%50, i), UID: "6b0f5a4c-2f4e-4a8e-9d55-0c1f6ac1b2c3",
		ResourceVersion: "123456789", Labels: map[string]string{}, Annotations: map[string]string{}}}
	for j, k := range []string{"kubernetes.io/os", "kubernetes.io/arch", "kubernetes.io/hostname", "kubernetes.azure.com/agentpool", "agentpool",
		"node.kubernetes.io/instance-type", "topology.kubernetes.io/region", "topology.kubernetes.io/zone", "kubernetes.azure.com/node-image-version",
		"kubernetes.azure.com/os-sku", "kubernetes.azure.com/cluster", "kubernetes.azure.com/mode", "kubernetes.azure.com/role", "storageprofile",
		"storagetier", "failure-domain.beta.kubernetes.io/zone"} {
		n.Labels[k] = fmt.Sprintf("value-%d-%d", j, i%7)
	}
	for j, k := range []string{"csi.volume.kubernetes.io/nodeid", "node.alpha.kubernetes.io/ttl", "volumes.kubernetes.io/controller-managed-attach-detach",
		"kubeadm.alpha.kubernetes.io/cri-socket", "node.kubernetes.io/network-unavailable", "projectcalico.org/IPv4Address", "flannel.alpha.coreos.com/backend-data", "k3s.io/hostname"} {
		n.Annotations[k] = fmt.Sprintf(`{"disk.csi.azure.com":"%s","file.csi.azure.com":"%d"}`, n.Name, j)
	}
	raw := make([]byte, 3000)
	for j := range raw {
		raw[j] = 'a' + byte(j%26)
	}
	for _, m := range []string{"kubelet", "kube-controller-manager", "cloud-node-manager", "kubectl-label"} {
		n.ManagedFields = append(n.ManagedFields, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:x":"` + string(raw) + `"}}`)}})
	}
	for j := range 50 {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{
			fmt.Sprintf("registry.corp.example/team%d/app%d@sha256:%064x", j%9, j, j*7919+i), fmt.Sprintf("registry.corp.example/team%d/app%d:v1.%d", j%9, j, j)},
			SizeBytes: int64(j) << 22})
	}
	n.Status.Images = append(n.Status.Images[:49], corev1.ContainerImage{Names: []string{"mcr.microsoft.com/oss/kubernetes/pause@sha256:" + fmt.Sprintf("%064x", 1), "mcr.microsoft.com/oss/kubernetes/pause:3.6"}})
	for _, c := range []corev1.NodeConditionType{"FrequentContainerdRestart", "KernelDeadlock", "ReadonlyFilesystem", corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodeReady} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory",
			Message: "kubelet has sufficient memory available", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()})
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.224.0.4"}, {Type: corev1.NodeHostName, Address: n.Name}}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}
	n.Status.Allocatable = n.Status.Capacity
	n.Status.NodeInfo = corev1.NodeSystemInfo{MachineID: "f00", SystemUUID: "b4r", BootID: "b00t", KernelVersion: "5.15.0-1064-azure", OSImage: "Ubuntu 22.04.4 LTS",
		ContainerRuntimeVersion: "containerd://1.7.15-1", KubeletVersion: "v1.37.2", KubeProxyVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64"}
	b, _ := json.Marshal(n)
	return b
}

// heapInUse is the bytes of live objects after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkWatcherNodeCache is what a watcher's informer holds for 5,000 real-shaped nodes: each
// decoded from the API's JSON as the informer decodes it, kept whole (before issue 35) or as the
// SlimNode its transform keeps now. The figure is MiB for the 5,000 and KiB a node.
func BenchmarkWatcherNodeCache(b *testing.B) {
	const nodes = 5000
	docs := make([][]byte, nodes)
	for i := range docs {
		docs[i] = realNode(i)
	}
	for _, slim := range []bool{false, true} {
		name := "whole"
		if slim {
			name = "slim"
		}
		b.Run(name, func(b *testing.B) {
			var kept []*corev1.Node
			var used float64
			for range b.N {
				kept = make([]*corev1.Node, 0, nodes)
				base := heapInUse()
				for _, d := range docs {
					n := &corev1.Node{}
					if err := json.Unmarshal(d, n); err != nil {
						b.Fatal(err)
					}
					if slim {
						n = SlimNode(n, nil)
					}
					kept = append(kept, n)
				}
				used = float64(heapInUse() - base)
			}
			runtime.KeepAlive(kept)
			b.ReportMetric(used/(1<<20), "MiB/5000-nodes")
			b.ReportMetric(used/nodes/1024, "KiB/node")
		})
	}
}
