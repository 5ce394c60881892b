package clustertest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PauseImage is the fixtures' sandbox image: the one the probe borrows.
const PauseImage = "registry.k8s.io/pause:3.10"

// DockerSecret is a kubernetes.io/dockerconfigjson pull secret for registry.
func DockerSecret(ns, name, registry string) *corev1.Secret {
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":"dXNlcjpzM2NyZXQtdmFsdWU="}}}`, registry)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}}
}

// Scenario is the scenario of the cached-image lie: pool A old nodes run the image from cache;
// pool B's new node (after a node image upgrade) cannot pull; pool C's node has a full image list.
func Scenario() []runtime.Object {
	full := []string{}
	for i := range 47 {
		full = append(full, fmt.Sprintf("docker.io/library/filler%d:1", i))
	}
	// the sandbox images the probe may borrow (three: verify tries up to three that are gone)
	full = append(full, "registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.8")
	failing := Pod("shop", "web-new", "b2", false, "regcred")
	objs := []runtime.Object{
		Node("a1", "poola", T0, "AKSUbuntu-2204gen2-202510.01.0", "registry.corp.example/shop/web@"+Digest, Image, PauseImage),
		Node("b1", "poolb", T0.Add(10*time.Minute), "AKSUbuntu-2204gen2-202510.01.0", "registry.corp.example/shop/web@"+Digest, PauseImage),
		Node("b2", "poolb", T0.Add(2*time.Hour), "AKSUbuntu-2204gen2-202511.15.0", PauseImage),
		Node("c1", "poolc", T0.Add(time.Hour), "AKSUbuntu-2204gen2-202510.01.0", full...),
		Pod("shop", "web-a", "a1", true), Pod("shop", "web-b", "b1", true), failing,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "default"}},
		DockerSecret("shop", "regcred", "ghcr.io"),
		Event(failing, "Pulling", "Normal", `Pulling image "`+Image+`"`, T0.Add(3*time.Hour), 4),
		Event(failing, "Failed", "Warning", `Failed to pull image "`+Image+`": rpc error: code = Unknown desc = failed to pull and unpack image "`+Image+`": failed to resolve reference "`+Image+`": failed to do request: Head "https://registry.corp.example/v2/shop/web/manifests/1.4": dial tcp 10.20.30.40:443: i/o timeout`, T0.Add(3*time.Hour+time.Minute), 4),
		Event(failing, "Failed", "Warning", "Error: ErrImagePull", T0.Add(3*time.Hour+time.Minute), 4),
		Event(failing, "BackOff", "Normal", `Back-off pulling image "`+Image+`"`, T0.Add(3*time.Hour+2*time.Minute), 12),
		Event(failing, "Unhealthy", "Warning", `Readiness probe failed: Get "http://10.244.1.5:8080/healthz": dial tcp 10.244.1.5:8080: connect: connection refused`, T0.Add(3*time.Hour+3*time.Minute), 2),
	}
	return objs
}
