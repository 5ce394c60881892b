// Package clustertest builds the objects the tests of pod and verify give client-go's fake
// clientset: AKS-labelled nodes with their image lists, pods of one image, the kubelet's events.
// Tests only; it imports no pullpath package.
package clustertest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Image is the image every pod runs, Digest the digest it runs at where it runs.
const (
	Image  = "registry.corp.example/shop/web:1.4"
	Digest = "sha256:4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b"
)

// T0 is when the oldest node was created; the rest of a scenario is placed after it.
var T0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// Node is a Ready AKS node of pool with the node image version and the images it lists.
func Node(name, pool string, created time.Time, version string, images ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{"kubernetes.azure.com/agentpool": pool, "kubernetes.azure.com/node-image-version": version}},
		Spec: corev1.NodeSpec{ProviderID: "azure:///subscriptions/x/" + name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo: corev1.NodeSystemInfo{OSImage: "Ubuntu 22.04.5 LTS", KernelVersion: "5.15.0-1079-azure", ContainerRuntimeVersion: "containerd://1.7.27-1", KubeletVersion: "v1.31.7", Architecture: "amd64"}}}
	for _, im := range images {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{im}, SizeBytes: 1 << 20})
	}
	return n
}

// Pod is a pod with one container "web" of Image on nodeName: running it at Digest, or waiting in
// ImagePullBackOff; secrets are its imagePullSecrets.
func Pod(ns, name, nodeName string, running bool, secrets ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(T0.Add(3 * time.Hour))},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "web", Image: Image}}}}
	for _, s := range secrets {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	st := corev1.ContainerStatus{Name: "web", Image: Image}
	if running {
		p.Status.Phase = corev1.PodRunning
		st.ImageID = "registry.corp.example/shop/web@" + Digest
		st.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(T0.Add(30 * time.Minute))}
	} else {
		p.Status.Phase = corev1.PodPending
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "` + Image + `"`}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
	return p
}

// Event is a kubelet event about p's container "web", seen count times from at, a minute apart.
func Event(p *corev1.Pod, reason, typ, msg string, at time.Time, count int32) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: fmt.Sprintf("%s.%s%d%d", p.Name, reason, at.Unix(), len(msg))},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID, FieldPath: "spec.containers{web}"},
		Reason:         reason, Type: typ, Message: msg, Count: count, FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at.Add(time.Duration(count) * time.Minute)),
		Source: corev1.EventSource{Component: "kubelet", Host: p.Spec.NodeName}}
}
