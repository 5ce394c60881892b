package cluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The smoke tests prove the harness: real kubelets register, pull for real, fail for real, run from
// their cache and run a program delivered in a ConfigMap; teardown leaves nothing.

func TestNodesRegisterAndTurnReady(t *testing.T) {
	c := sharedCluster(t)
	list, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(scenario.Nodes) {
		t.Fatalf("%d nodes registered, want %d", len(list.Items), len(scenario.Nodes))
	}
	byName := map[string]corev1.Node{}
	pools := map[string]bool{}
	for _, no := range list.Items {
		byName[no.Name] = no
		pools[no.Labels[poolLabel]] = true
	}
	if len(pools) < 2 {
		t.Errorf("pools %v: want at least 2", pools)
	}
	var prev *corev1.Node
	for _, n := range c.nodes {
		no, ok := byName[n.spec.Name]
		if !ok {
			t.Errorf("node %s did not register", n.spec.Name)
			continue
		}
		if !nodeReady(&no) {
			t.Errorf("%s is not Ready", no.Name)
		}
		if got := no.Labels[poolLabel]; got != n.spec.Pool {
			t.Errorf("%s: pool label %q, want %q", no.Name, got, n.spec.Pool)
		}
		for k, v := range n.spec.Labels {
			if no.Labels[k] != v {
				t.Errorf("%s: label %s=%q, want %q", no.Name, k, no.Labels[k], v)
			}
		}
		if ip := internalIP(&no); ip != n.ip {
			t.Errorf("%s: InternalIP %q, want %q", no.Name, ip, n.ip)
		}
		if v := no.Status.NodeInfo.KubeletVersion; v != kubeVersion {
			t.Errorf("%s: kubelet %s, want %s", no.Name, v, kubeVersion)
		}
		if v := no.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(v, "containerd://") {
			t.Errorf("%s: runtime %q, want containerd", no.Name, v)
		}
		for _, taint := range no.Spec.Taints {
			t.Errorf("%s: taint %s left", no.Name, taint.ToString())
		}
		// started in order, each at least a second after the previous: creation times order them
		if prev != nil && !prev.CreationTimestamp.Before(&no.CreationTimestamp) {
			t.Errorf("%s created at %s, not after %s (%s)", no.Name, no.CreationTimestamp, prev.Name, prev.CreationTimestamp)
		}
		prev = &no
		t.Logf("%s pool=%s ip=%s created=%s ready after %s runtime=%s", no.Name, no.Labels[poolLabel], internalIP(&no),
			no.CreationTimestamp.Format(time.TimeOnly), n.ready.Round(100*time.Millisecond), no.Status.NodeInfo.ContainerRuntimeVersion)
	}
	mem := c.memoryFigure()
	c.figure("%s", mem)
	t.Log(mem)
}

func internalIP(no *corev1.Node) string {
	for _, a := range no.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func TestPullAndRun(t *testing.T) {
	c := sharedCluster(t)
	ns := c.Namespace(t, "pull")
	im := c.Push(t, fmt.Sprintf("smoke/pull-%d:v1", time.Now().UnixNano()))
	created := time.Now()
	c.CreatePod(t, PodOn(ns, "pull", "poola-1", im.Ref, corev1.PullAlways))
	p := c.WaitPod(t, ns, "pull", 2*time.Minute, "Running", running)
	c.figure("pull pod on %s: Running %s after create (fresh image, 2 random layers + the pause binary, blobs redirected)", "poola-1", time.Since(created).Round(100*time.Millisecond))
	t.Logf("Running %s after create", time.Since(created).Round(100*time.Millisecond))

	// the kubelet's events, as the API has them
	pulling := c.WaitEvent(t, ns, "pull", "Pulling", 30*time.Second, im.Ref)
	pulled := c.WaitEvent(t, ns, "pull", "Pulled", 30*time.Second, "Successfully pulled image", im.Ref)
	started := c.WaitEvent(t, ns, "pull", "Started", 30*time.Second)
	if eventTime(pulled).Before(eventTime(pulling)) || eventTime(started).Before(eventTime(pulled)) {
		t.Errorf("events out of order:\n%s", c.eventText(ns, "pull"))
	}
	// the digest the node pulled is the one pushed
	if got := p.Status.ContainerStatuses[0].ImageID; got != im.DigestRef {
		t.Errorf("imageID %q, want %q", got, im.DigestRef)
	}
}

func running(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil
}

func waitingReason(p *corev1.Pod) string {
	if len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Waiting != nil {
		return p.Status.ContainerStatuses[0].State.Waiting.Reason
	}
	return ""
}

func TestPullFailsForReal(t *testing.T) {
	c := sharedCluster(t)
	ns := c.Namespace(t, "fail")
	cases := []struct {
		name, node string
		want       func(im pushedImage) []string // fragments of the kubelet's Failed event
	}{
		{"no route to the registry", "poolb-2", func(im pushedImage) []string {
			return []string{"Failed to pull image", im.Ref, "dial tcp " + registryIP + ":443", "network is unreachable"}
		}},
		{"resolver without the private zone", "poold-1", func(im pushedImage) []string {
			return []string{"Failed to pull image", im.Ref, "lookup " + registry, "no such host"}
		}},
		{"blob host unreachable", "poolc-1", func(im pushedImage) []string {
			return []string{"Failed to pull image", im.Ref, "dial tcp " + blobsIP + ":443", "network is unreachable"}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			im := c.Push(t, fmt.Sprintf("smoke/fail-%d-%d:v1", i, time.Now().UnixNano()))
			pod := fmt.Sprintf("fail-%d", i)
			c.CreatePod(t, PodOn(ns, pod, tc.node, im.Ref, corev1.PullIfNotPresent))
			e := c.WaitEvent(t, ns, pod, "Failed", 90*time.Second, tc.want(im)...)
			if e.Source.Component != "kubelet" || e.Source.Host != tc.node {
				t.Errorf("event source %+v, want the kubelet of %s", e.Source, tc.node)
			}
			t.Logf("%s: %s", tc.node, e.Message)
			c.WaitPod(t, ns, pod, 90*time.Second, "in ImagePullBackOff", func(p *corev1.Pod) bool { return waitingReason(p) == "ImagePullBackOff" })
			c.WaitEvent(t, ns, pod, "BackOff", 30*time.Second, "Back-off pulling image", im.Ref)
		})
	}
}

func TestCachedImageRunsWithoutRegistry(t *testing.T) {
	c := sharedCluster(t)
	im := c.Images[cachedImage]
	ctx := context.Background()
	old, err := c.Client.CoreV1().Nodes().Get(ctx, "poolb-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !listsImage(old, im.Ref) || !listsImage(old, im.DigestRef) {
		t.Errorf("poolb-1's status.images lacks %s / %s: %v", im.Ref, im.DigestRef, old.Status.Images)
	}
	if newer, err := c.Client.CoreV1().Nodes().Get(ctx, "poolb-2", metav1.GetOptions{}); err != nil || listsImage(newer, im.Ref) {
		t.Errorf("poolb-2 must not list %s (err %v)", im.Ref, err)
	}
	// the full list: 52 fillers + the sandbox image, capped at the kubelet's default 50
	if full, err := c.Client.CoreV1().Nodes().Get(ctx, "poola-2", metav1.GetOptions{}); err != nil || len(full.Status.Images) != 50 {
		t.Errorf("poola-2 lists %d images, want the cap of 50 (err %v)", len(full.Status.Images), err)
	}

	ns := c.Namespace(t, "cached")
	c.CreatePod(t, PodOn(ns, "cached", "poolb-1", im.Ref, corev1.PullIfNotPresent))
	p := c.WaitPod(t, ns, "cached", time.Minute, "Running", running)
	c.WaitEvent(t, ns, "cached", "Pulled", 10*time.Second, im.Ref, "already present on machine")
	for _, e := range c.Events(ns, "cached") {
		if e.Reason == "Pulling" {
			t.Errorf("the kubelet pulled: %s", e.Message)
		}
	}
	if got := p.Status.ContainerStatuses[0].ImageID; got != im.DigestRef {
		t.Errorf("imageID %q, want %q (the registry's digest)", got, im.DigestRef)
	}
}

func listsImage(no *corev1.Node, ref string) bool {
	for _, img := range no.Status.Images {
		for _, n := range img.Names {
			if n == ref {
				return true
			}
		}
	}
	return false
}

func TestConfigMapProgramRunsWithoutPull(t *testing.T) {
	c := sharedCluster(t)
	ns := c.Namespace(t, "deliver")
	prog, err := os.ReadFile(c.progs["exitwith"])
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "prog"}, BinaryData: map[string][]byte{"exitwith": prog}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// on the node that cannot reach the registry, on the sandbox image it already has
	pod := PodOn(ns, "deliver", "poolb-2", pauseRef, corev1.PullNever)
	mode := int32(0o755)
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.Volumes = []corev1.Volume{{Name: "prog", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "prog"}, DefaultMode: &mode}}}}
	pod.Spec.Containers[0].Command = []string{"/prog/exitwith", "3", "delivered without a pull"}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "prog", MountPath: "/prog", ReadOnly: true}}
	c.CreatePod(t, pod)
	p := c.WaitPod(t, ns, "deliver", time.Minute, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	term := p.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 3 || term.Message != "delivered without a pull" {
		t.Fatalf("terminated state %+v, want exit 3 and the message", term)
	}
	c.WaitEvent(t, ns, "deliver", "Pulled", 10*time.Second, "already present on machine")
	logs, err := c.Client.CoreV1().Pods(ns).GetLogs("deliver", &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil || !strings.Contains(string(logs), "delivered without a pull") {
		t.Errorf("logs through the apiserver and the kubelet: %q, %v", logs, err)
	}
}

// TestPullSecret: the registry on :5001 wants credentials; the kubelet passes the pod's pull secret
// to containerd, and without it the real pull fails with the registry's 401.
func TestPullSecret(t *testing.T) {
	c := sharedCluster(t)
	ns := c.Namespace(t, "secret")
	im := c.Push(t, fmt.Sprintf("smoke/auth-%d:v1", time.Now().UnixNano()))
	ref := authRegistry + strings.TrimPrefix(im.Ref, registry)
	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + registryPass))
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, authRegistry, auth)
	_, err := c.Client.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	with := PodOn(ns, "with-secret", "poola-1", ref, corev1.PullAlways)
	with.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
	c.CreatePod(t, with)
	c.CreatePod(t, PodOn(ns, "without-secret", "poola-1", ref, corev1.PullAlways))
	c.WaitPod(t, ns, "with-secret", time.Minute, "Running", running)
	c.WaitEvent(t, ns, "with-secret", "Pulled", 10*time.Second, "Successfully pulled image", ref)
	e := c.WaitEvent(t, ns, "without-secret", "Failed", time.Minute, "Failed to pull image", ref, "401 Unauthorized")
	t.Logf("without the secret: %s", e.Message)
}

// TestPodOnlyRoute: on poolb-2 a pod reaches the registry while the node (and so the kubelet's pull,
// and a hostNetwork probe) does not: the VPN-sidecar case, where the pod is not what pulls.
func TestPodOnlyRoute(t *testing.T) {
	c := sharedCluster(t)
	ns := c.Namespace(t, "podroute")
	prog, err := os.ReadFile(c.progs["tcpconnect"])
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "prog"}, BinaryData: map[string][]byte{"tcpconnect": prog}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		hostNetwork bool
		exit        int32
		message     string
	}{
		{"from-pod", false, 0, "connected to " + registryIP + ":443"},
		{"from-node", true, 1, "connect " + registryIP + ":443: Network is unreachable"},
	} {
		pod := PodOn(ns, tc.name, "poolb-2", pauseRef, corev1.PullNever)
		mode := int32(0o755)
		pod.Spec.HostNetwork = tc.hostNetwork
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		pod.Spec.Volumes = []corev1.Volume{{Name: "prog", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "prog"}, DefaultMode: &mode}}}}
		pod.Spec.Containers[0].Command = []string{"/prog/tcpconnect", registryIP, "443"}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "prog", MountPath: "/prog", ReadOnly: true}}
		c.CreatePod(t, pod)
		p := c.WaitPod(t, ns, tc.name, time.Minute, "finished", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		term := p.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.ExitCode != tc.exit || term.Message != tc.message {
			t.Errorf("%s: terminated %+v, want exit %d and %q", tc.name, term, tc.exit, tc.message)
		}
	}
}

// TestOwnerDeleteCascades: one delete of an owner pod removes the ConfigMaps it owns, which is how a
// verify run cleans up (this needs the garbage collector of kube-controller-manager).
func TestOwnerDeleteCascades(t *testing.T) {
	c := sharedCluster(t)
	if !c.Controllers {
		t.Skip("kube-controller-manager is not in " + c.bins + ": rerun scripts/kubebins.sh")
	}
	ctx := context.Background()
	ns := c.Namespace(t, "owner")
	owner := c.CreatePod(t, PodOn(ns, "owner", "poola-1", pauseRef, corev1.PullNever))
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: owner.Name, UID: owner.UID}
	for i := 0; i < 3; i++ {
		_, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("part-%d", i), OwnerReferences: []metav1.OwnerReference{ref}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	c.WaitPod(t, ns, "owner", time.Minute, "Running", running)
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		cms, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		left := 0
		for _, cm := range cms.Items {
			if strings.HasPrefix(cm.Name, "part-") {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d owned ConfigMaps left a minute after their owner's delete", left)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func TestRunInTheHub(t *testing.T) {
	c := sharedCluster(t)
	out, stderr, code := c.Run(t, "version")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("pullpath version: exit %d\n%s%s", code, out, stderr)
	}
	// the kubeconfig Run hands over works from where Run runs, and the binary is a kubectl plugin there
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Log("kubectl is not installed: the kubeconfig and plugin checks are skipped")
		return
	}
	nodes, stderr, code := c.Exec(t, "kubectl", "get", "nodes", "-o", "name")
	if code != 0 || strings.Count(nodes, "node/") != len(scenario.Nodes) {
		t.Errorf("kubectl get nodes in the hub: exit %d\n%s%s", code, nodes, stderr)
	}
	plugin, stderr, code := c.Exec(t, "kubectl", "pullpath", "version")
	if code != 0 || plugin != out {
		t.Errorf("kubectl pullpath version: exit %d\n%s%s\nwant %s", code, plugin, stderr, out)
	}
}

// TestTeardownLeavesNothing brings up a one-node cluster of its own, runs a pod on it, closes it,
// and looks for anything of it on the machine.
func TestTeardownLeavesNothing(t *testing.T) {
	if skipReason != "" {
		t.Skip("cluster tier skipped: " + skipReason)
	}
	c, err := startCluster(clusterSpec{Nodes: []nodeSpec{{Name: "solo-1", Pool: "solo", CanReachRegistry: true, CanReachBlobs: true}}})
	if err != nil {
		t.Fatal(err)
	}
	ns := c.Namespace(t, "teardown")
	c.CreatePod(t, PodOn(ns, "sleeper", "solo-1", pauseRef, corev1.PullNever))
	c.WaitPod(t, ns, "sleeper", time.Minute, "Running", running)
	if len(c.nodeProcesses()) < 4 { // containerd, kubelet, a shim, the sandbox, the container
		t.Errorf("node processes before close: %v", c.nodeProcesses())
	}
	closed := time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	t.Logf("teardown in %s", time.Since(closed).Round(time.Millisecond))
	for _, err := range c.leftovers() {
		t.Error(err)
	}
	if _, err := os.Stat(c.dir); err == nil && os.Getenv("PULLPATH_CLUSTER_KEEP") == "" {
		t.Errorf("%s is still there", c.dir)
	}
	if len(c.kernelHeldBy) > 0 {
		t.Logf("kernel settings left to the clusters still running (%s), which restore them", strings.Join(c.kernelHeldBy, ", "))
	} else {
		t.Logf("kernel settings restored: %v", c.sysctls)
	}
}
