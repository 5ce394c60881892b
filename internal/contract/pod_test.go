package contract

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/cluster/clustertest"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"github.com/pullpath/pullpath/internal/report"
)

// pod and pod --all need an API server; they run here on client-go's fake clientset, through the
// same functions and JSON writer the command uses.

const (
	podImage  = clustertest.Image
	podDigest = clustertest.Digest
)

var (
	t0        = clustertest.T0
	kubeEvent = clustertest.Event
)

func kubeNode(name, pool string, created time.Time, images ...string) *corev1.Node {
	return clustertest.Node(name, pool, created, "AKSUbuntu-2204gen2-202511.15.0", images...)
}

// kubePod is a pod of a ReplicaSet in namespace shop, with an init container of the same image.
func kubePod(name, nodeName string, running bool, secrets ...string) *corev1.Pod {
	p := clustertest.Pod("shop", name, nodeName, running, secrets...)
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-7d9f8b6c5", Controller: ptr(true)}}
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: podImage}}
	return p
}

func ptr[T any](v T) *T { return &v }

// cluster is the cached-image lie: pool a's old node runs the image from its cache, pool b's new
// node cannot pull it (a 401 at the token realm), pool c's node has a full image list; the pod's
// pull secret is for another registry and the service account names one that does not exist.
func kubeCluster() []runtime.Object {
	full := []string{}
	for i := range 50 {
		full = append(full, fmt.Sprintf("docker.io/library/filler%d:1", i))
	}
	failing := kubePod("web-new", "b2", false, "regcred")
	failing2 := kubePod("web-new-2", "b2", false)
	cfg := `{"auths":{"ghcr.io":{"auth":"dXNlcjpzM2NyZXQtdmFsdWU="}}}`
	objs := []runtime.Object{
		kubeNode("a1", "poola", t0, "registry.corp.example/shop/web@"+podDigest, podImage),
		kubeNode("b2", "poolb", t0.Add(2*time.Hour)),
		kubeNode("c1", "poolc", t0.Add(time.Hour), full...),
		kubePod("web-a", "a1", true), failing, failing2,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "default"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "gone"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}},
		kubeEvent(failing, "Pulling", "Normal", `Pulling image "`+podImage+`"`, t0.Add(3*time.Hour), 4),
		kubeEvent(failing, "Failed", "Warning", `Failed to pull image "`+podImage+`": rpc error: code = Unknown desc = failed to pull and unpack image "`+podImage+`": failed to resolve reference "`+podImage+`": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://registry.corp.example/oauth2/token?scope=repository%3Ashop%2Fweb%3Apull&service=registry.corp.example: 401 Unauthorized`, t0.Add(3*time.Hour+time.Minute), 4),
		kubeEvent(failing, "BackOff", "Normal", `Back-off pulling image "`+podImage+`"`, t0.Add(3*time.Hour+2*time.Minute), 12),
		kubeEvent(failing2, "Failed", "Warning", `Failed to pull image "`+podImage+`": rpc error: code = Unknown desc = failed to pull and unpack image "`+podImage+`": failed to resolve reference "`+podImage+`": failed to do request: Head "https://registry.corp.example/v2/shop/web/manifests/1.4": dial tcp 10.20.30.40:443: i/o timeout`, t0.Add(4*time.Hour), 1),
	}
	return objs
}

func fakeCluster(objs ...runtime.Object) *cluster.Client {
	fc := fake.NewClientset(objs...)
	return &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteJSON(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestPodDiagnosis(t *testing.T) {
	cs := fakeCluster(kubeCluster()...)
	ctx := context.Background()
	t.Run("failing", func(t *testing.T) {
		d, err := cluster.DiagnosePod(ctx, cs, "shop", "web-new", cluster.Options{})
		if err != nil {
			t.Fatal(err)
		}
		doc := validate(t, "PodDiagnosis", marshal(t, d))
		if doc["class"] != "auth" || doc["cachedImage"] == nil || doc["credentials"] == nil {
			t.Errorf("class %v cachedImage %v credentials %v", doc["class"], doc["cachedImage"], doc["credentials"])
		}
		if c := doc["pod"].(map[string]any)["controller"]; c != "ReplicaSet/web-7d9f8b6c5" {
			t.Errorf("pod.controller %v", c)
		}
	})
	t.Run("healthy", func(t *testing.T) {
		d, err := cluster.DiagnosePod(ctx, cs, "shop", "web-a", cluster.Options{})
		if err != nil {
			t.Fatal(err)
		}
		doc := validate(t, "PodDiagnosis", marshal(t, d))
		if doc["class"] != "ok" || doc["cachedImage"] != nil {
			t.Errorf("class %v cachedImage %v", doc["class"], doc["cachedImage"])
		}
	})
}

func TestPullFailureList(t *testing.T) {
	ctx := context.Background()
	l, err := cluster.DiagnoseAll(ctx, fakeCluster(kubeCluster()...), "")
	if err != nil {
		t.Fatal(err)
	}
	doc := validate(t, "PullFailureList", marshal(t, l))
	if _, ok := doc["credentialVerification"]; ok {
		t.Error("credentialVerification without the flag")
	}
	if groups := doc["groups"].([]any); len(groups) != 2 {
		t.Errorf("%d groups, want 2 (one image, two causes): %v", len(groups), groups)
	}
	// the KEP-2535 pre-flight: web-a runs from a1's cache with no secret covering the registry
	l, err = cluster.DiagnoseAll(ctx, fakeCluster(kubeCluster()...), "", cluster.AllOptions{CredentialVerification: cluster.PolicyAlwaysVerify})
	if err != nil {
		t.Fatal(err)
	}
	doc = validate(t, "PullFailureList", marshal(t, l))
	if cv, ok := doc["credentialVerification"].(map[string]any); !ok || fmt.Sprint(cv["breaks"]) != "2" || cv["policy"] != "AlwaysVerify" {
		t.Errorf("credentialVerification %v, want 2 breaking (web-a's two containers)", doc["credentialVerification"])
	}
	// a namespace without a pull failure
	l, err = cluster.DiagnoseAll(ctx, fakeCluster(kubeNode("a1", "poola", t0, podImage), kubePod("web-a", "a1", true)), "shop")
	if err != nil {
		t.Fatal(err)
	}
	doc = validate(t, "PullFailureList", marshal(t, l))
	if doc["class"] != "ok" || len(doc["groups"].([]any)) != 0 {
		t.Errorf("healthy: %v", doc)
	}
}
