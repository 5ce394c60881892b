package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/report"
)

// The cached-image lie, for real: pool B's old node runs the image from its cache, its new node
// (after a node image upgrade) cannot reach the registry and the kubelet's real pull fails; pool A
// pulls; pool A's newest node lists a full image list. pullpath pod must tell each apart, and the
// pod's pull secret does not cover the registry.
func TestPodCachedImageLie(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	ns := c.Namespace(t, "lie")
	im := c.Images[cachedImage]
	cfg := fmt.Sprintf(`{"auths":{"ghcr.io":{"auth":%q}}}`, base64.StdEncoding.EncodeToString([]byte("bot:not-this-registry")))
	if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ghcr-cred"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	old := PodOn(ns, "app-old", "poolb-1", im.Ref, corev1.PullIfNotPresent)
	healthy := PodOn(ns, "app-a", "poola-1", im.Ref, corev1.PullIfNotPresent)
	failing := PodOn(ns, "app-new", "poolb-2", im.Ref, corev1.PullIfNotPresent)
	failing.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "ghcr-cred"}}
	for _, p := range []*corev1.Pod{old, healthy, failing} {
		c.CreatePod(t, p)
	}
	c.WaitPod(t, ns, "app-old", 2*time.Minute, "Running from cache", running)
	c.WaitPod(t, ns, "app-a", 2*time.Minute, "Running", running)
	c.WaitPod(t, ns, "app-new", 2*time.Minute, "ErrImagePull or ImagePullBackOff", func(p *corev1.Pod) bool {
		r := waitingReason(p)
		return r == "ErrImagePull" || r == "ImagePullBackOff"
	})
	// the kubelet reports images in its next status update: wait until pool A's node lists it
	deadline := time.Now().Add(90 * time.Second)
	for !nodeLists(c, "poola-1", im.Ref) {
		if time.Now().After(deadline) {
			t.Fatal("poola-1 never listed the image it pulled in status.images")
		}
		time.Sleep(time.Second)
	}

	out, errOut, code := c.Run(t, "pod", "app-new", "-n", ns, "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var d report.PodDiagnosis
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if d.Kind != "PodDiagnosis" || d.Pod.Node != "poolb-2" || d.Class != report.ClassRoute || len(d.Findings) == 0 {
		t.Fatalf("pod %+v class %s findings %+v", d.Pod, d.Class, d.Findings)
	}
	if f := d.Findings[0]; !strings.HasPrefix(f.Host, registry) || f.Role != report.RoleRegistry {
		t.Errorf("finding host %q role %s: %s", f.Host, f.Role, f.Message)
	}
	ci := d.CachedImage
	has := func(list []string, n string) bool {
		for _, x := range list {
			if x == n {
				return true
			}
		}
		return false
	}
	if ci == nil || ci.Digest != im.Digest || !has(ci.PresentOn, "poolb-1") || !has(ci.PresentOn, "poola-1") || !has(ci.AbsentOn, "poolb-2") || !has(ci.UnknownOn, "poola-2") || has(ci.AbsentOn, "poola-2") {
		t.Fatalf("cached image %+v", ci)
	}
	if !strings.Contains(ci.Summary, "every failing pod (1) is on a node without the image") {
		t.Errorf("summary: %s", ci.Summary)
	}
	// pod reads no kubelet's /configz by default: the report says how to settle poola-2
	if !strings.Contains(ci.Settle, "pullpath verify "+im.Ref+" --pool poola (") || !strings.Contains(ci.Settle, "pullpath probe "+im.Ref+" --cri on the node") {
		t.Errorf("settle: %q", ci.Settle)
	}
	byName := map[string]report.NodeImage{}
	for _, n := range d.Nodes {
		byName[n.Name] = n
	}
	if n := byName["poolb-2"]; n.Pool != "poolb" || n.ImageVersion != "AKSUbuntu-2204gen2containerd-202511.15.0" || len(n.FailingPods) != 1 || !strings.HasPrefix(n.Runtime, "containerd://") {
		t.Errorf("poolb-2: %+v", n)
	}
	if n := byName["poolb-1"]; len(n.RunningPods) != 1 || !n.Created.Before(byName["poolb-2"].Created) {
		t.Errorf("poolb-1 (old, running from cache): %+v", n)
	}
	if n := byName["poola-2"]; n.ImagePresent != nil || n.ImagesListed < 50 {
		t.Errorf("poola-2's full list is unknown: %+v", n)
	}
	if len(d.RunningElsewhere) != 2 {
		t.Errorf("running elsewhere: %+v", d.RunningElsewhere)
	}
	cr := d.Credentials
	if cr == nil || len(cr.PullSecrets) != 1 || cr.PullSecrets[0].Name != "ghcr-cred" || cr.PullSecrets[0].CoversRegistry == nil || *cr.PullSecrets[0].CoversRegistry || cr.NodeIdentity == "" {
		t.Errorf("credentials %+v", cr)
	}
	// the secret covers another registry: the kubelet's order is the node's docker config, then its providers
	if cr == nil || len(cr.Order) != 2 || cr.Order[0].Source != "node-docker-config" || cr.Order[1].Source != "credential-providers" ||
		!strings.Contains(cr.Order[0].Check, "--pod "+ns+"/app-new") {
		t.Errorf("the kubelet's order %+v", cr)
	}
	kinds := map[string]int{}
	for _, e := range d.Timeline {
		kinds[e.Kind]++
	}
	if kinds["node-created"] < 4 || kinds["pool-upgrade"] != 1 || kinds["first-failure"] != 1 || kinds["image-running"] != 2 {
		t.Errorf("timeline kinds %v: %+v", kinds, d.Timeline)
	}
	if d.Next == nil || d.Next.Command != "pullpath verify "+im.Ref+" --fresh --pool poola --pool poolb --pod "+ns+"/app-new" {
		t.Errorf("next %+v", d.Next)
	}
	if strings.Contains(out, "not-this-registry") || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte("bot:not-this-registry"))) {
		t.Error("a secret value reached the output")
	}

	// the same through kubectl's plugin name, as text
	text, _, code := c.Exec(t, "kubectl-pullpath", "pod", "app-new", "-n", ns)
	if code != 1 || !strings.Contains(text, "BROKEN  pod "+ns+"/app-new on node poolb-2 · class route") || !strings.Contains(text, "the cached-image lie") {
		t.Errorf("kubectl-pullpath pod (exit %d):\n%s", code, text)
	}
	t.Logf("pullpath pod, as an operator sees it:\n%s", text)
	c.figure("pullpath pod on the tier:\n%s", text)

	// the healthy pod: exit 0; --all groups the failure
	if _, _, code := c.Run(t, "pod", "app-a", "-n", ns); code != 0 {
		t.Errorf("healthy pod: exit %d", code)
	}
	out, _, code = c.Run(t, "pod", "--all", "-n", ns, "-o", "json")
	var l report.PullFailures
	if err := json.Unmarshal([]byte(out), &l); err != nil || code != 1 || len(l.Groups) != 1 || l.Groups[0].Pods[0] != ns+"/app-new" || l.Groups[0].Class != report.ClassRoute {
		t.Errorf("pod --all (exit %d, %v): %s", code, err, out)
	}
	// a pod that does not exist, and no rights: exit 2 with the reason
	if _, e, code := c.Run(t, "pod", "nope", "-n", ns); code != 2 || !strings.Contains(e, "pod nope not found in namespace "+ns) {
		t.Errorf("missing pod: exit %d: %s", code, e)
	}
}

func nodeLists(c *cluster, node, ref string) bool {
	n, err := c.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, im := range n.Status.Images {
		for _, name := range im.Names {
			if name == ref {
				return true
			}
		}
	}
	return false
}
