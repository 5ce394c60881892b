package cluster

import (
	"context"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// The watcher in the cluster, as an operator installs it: `image push --watcher` builds the
// watcher image from a static build (the tier's own `go build` is dynamic and is refused), the
// registry serves it, `watch manifests` is applied server-side, and the Deployment's pod, pulled
// by poola-1's kubelet, runs `/pullpath watch` as 65532 on a read-only root: it takes the lease
// and sets the ImagePullPathBroken conditions (poolb-2 True/Route, poola-1 False/OK).
//
// The tier has no scheduler and no kube-proxy: the test binds the Deployment's pod to poola-1,
// and a DNAT rule in that node's namespace sends the kubernetes Service (10.83.0.1:443, in the
// apiserver's certificate) to the apiserver, as kube-proxy would.
func TestWatchInClusterFromImage(t *testing.T) {
	c := sharedCluster(t)
	c.Run(t, "version") // builds c.pullpath
	const node = "poola-1"
	dir := t.TempDir()

	// a plain `go build` with a C compiler at hand is dynamic: refused, with the fix
	if f, err := elf.Open(c.pullpath); err == nil {
		dynamic := false
		for _, p := range f.Progs {
			dynamic = dynamic || p.Type == elf.PT_INTERP
		}
		f.Close()
		if dynamic {
			_, errOut, code := c.Run(t, "image", "push", "--watcher", registry+":5000/tools/pullpath-watch:dyn", "--platform", "linux/"+runtime.GOARCH,
				"--ca-file", c.path("pki", "ca.pem"), "--no-system-cas")
			if code != 2 || !strings.Contains(errOut, "dynamically linked") || !strings.Contains(errOut, "CGO_ENABLED=0") {
				t.Errorf("image push --watcher from a dynamic build: exit %d, want 2 naming CGO_ENABLED=0\n%s", code, errOut)
			}
		}
	}
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "pullpath-linux-"+runtime.GOARCH), "../../cmd/pullpath")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}

	start := time.Now()
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+hubIP+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := c.Exec(t, "unshare", "--mount", "--propagation", "private", "sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, resolv,
		c.pullpath, "image", "push", "--watcher", registry+":5000/tools/pullpath-watch:v1", "--platform", "linux/"+runtime.GOARCH,
		"--binary-dir", dir, "--ca-file", c.path("pki", "ca.pem"), "--add-ca", c.path("pki", "ca.pem"))
	if code != 0 {
		t.Fatalf("image push --watcher: exit %d\n%s\n%s", code, out, errOut)
	}
	pushed := strings.TrimSpace(out)
	watcherRef := registry + "/tools/pullpath-watch@" + pushed[strings.LastIndex(pushed, "@")+1:]
	c.figure("watch in the cluster: image push --watcher built and pushed %s in %s", watcherRef, time.Since(start).Round(100*time.Millisecond))

	// kube-proxy's part for this node's pods: the kubernetes Service to the apiserver
	n := c.node(node)
	dnat := []string{"PREROUTING", "-d", "10.83.0.1/32", "-p", "tcp", "--dport", "443", "-j", "DNAT", "--to-destination", hubIP + ":6443"}
	c.run(append([]string{"ip", "netns", "exec", n.netns, "iptables", "-t", "nat", "-I"}, dnat...)...)
	t.Cleanup(func() {
		c.run(append([]string{"ip", "netns", "exec", n.netns, "iptables", "-t", "nat", "-D"}, dnat...)...)
	})

	// the watcher's own namespace (restricted, enforced for real) and its run namespace
	ns, runNs := c.Namespace(t, "watcherown"), c.Namespace(t, "watchincluster")
	out, errOut, code = c.Run(t, "watch", "manifests", "--image", c.Images[cachedImage].Ref, "--watcher-image", watcherRef,
		"--namespace", ns, "--run-namespace", runNs, "--janitor-namespace", "", "--replicas", "1", "--interval", "30s")
	if code != 0 {
		t.Fatalf("watch manifests: exit %d\n%s", code, errOut)
	}
	applied := applyServerSide(t, c, out)
	t.Cleanup(func() {
		// the Deployment first: its watcher deletes its probe pods on SIGTERM
		ctx := context.Background()
		_ = c.Client.AppsV1().Deployments(ns).Delete(ctx, "pullpath-watch", metav1.DeleteOptions{})
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			if l, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil && len(l.Items) == 0 {
				break
			}
		}
		for _, del := range applied {
			if del.cluster {
				_ = del.ri.Delete(ctx, del.name, metav1.DeleteOptions{})
			}
		}
	})

	// the scheduler's part: bind the watcher's pod to the node; then wait for it to run
	up := time.Now()
	var pod *corev1.Pod
	for deadline := time.Now().Add(90 * time.Second); pod == nil; time.Sleep(300 * time.Millisecond) {
		l, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=pullpath-watch"})
		if err == nil {
			for i := range l.Items {
				p := &l.Items[i]
				if p.Spec.NodeName == "" {
					_ = c.Client.CoreV1().Pods(ns).Bind(context.Background(), &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
						Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
					continue
				}
				if p.Status.Phase == corev1.PodRunning {
					pod = p
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher's pod is not Running within 90 s\n%s", c.podsText(ns))
		}
	}
	c.figure("watch in the cluster: the Deployment's pod Running %s after apply (image pulled by %s)", time.Since(up).Round(100*time.Millisecond), node)
	if sc := pod.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("the watcher's pod runs as %+v, want 65532", sc)
	}

	// it leads, and its probes set the conditions
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		l, err := c.Client.CoordinationV1().Leases(runNs).Get(context.Background(), "pullpath-watch", metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil && strings.HasPrefix(*l.Spec.HolderIdentity, pod.Name) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease is not the pod's within 60 s: %v\n%s", err, c.podLogs(t, ns, pod.Name))
		}
	}
	for _, want := range []struct{ node, status, reason string }{{"poolb-2", "True", "Route"}, {"poola-1", "False", "OK"}} {
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(500 * time.Millisecond) {
			// the in-cluster watcher's own line: a condition that holds is not written again
			cond := c.pathCondition(t, want.node)
			said := regexp.MustCompile(`node ` + want.node + ` \(pool [^)]*\): ` + want.status + ` ` + want.reason).MatchString(c.podLogs(t, ns, pod.Name))
			if cond != nil && string(cond.Status) == want.status && cond.Reason == want.reason && said {
				c.figure("watch in the cluster: node %s %s/%s from the in-cluster watcher %s after apply", want.node, want.status, want.reason, time.Since(up).Round(100*time.Millisecond))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s: condition %+v, want %s/%s set after %s by the in-cluster watcher\n%s", want.node, cond, want.status, want.reason, up, c.podLogs(t, ns, pod.Name))
			}
		}
	}
	t.Logf("the in-cluster watcher's log:\n%s", c.podLogs(t, ns, pod.Name))
}

// appliedObject is what applyServerSide made, for the cleanup of cluster-scoped objects.
type appliedObject struct {
	ri      dynamic.ResourceInterface
	name    string
	cluster bool
}

// applyServerSide applies every object of manifests as `kubectl apply --server-side` would.
func applyServerSide(t *testing.T, c *cluster, manifests string) []appliedObject {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	var applied []appliedObject
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		gvr, ok := manifestResources[u.GetKind()]
		if !ok {
			t.Fatalf("a %s in the manifests, which this test does not know", u.GetKind())
		}
		var ri dynamic.ResourceInterface = dyn.Resource(gvr)
		if u.GetNamespace() != "" {
			ri = dyn.Resource(gvr).Namespace(u.GetNamespace())
		}
		body, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		force := true
		if _, err := ri.Patch(context.Background(), u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "pullpath-cluster-tier", Force: &force}); err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		applied = append(applied, appliedObject{ri: ri, name: u.GetName(), cluster: u.GetNamespace() == "" && u.GetKind() != "Namespace"})
	}
	return applied
}

// podLogs is a pod's log, or why not.
func (c *cluster) podLogs(t *testing.T, ns, name string) string {
	t.Helper()
	b, err := c.Client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil {
		return "logs of " + name + ": " + err.Error()
	}
	return string(b)
}

// podsText says where each pod of ns stands, and the events of ns, for a failure message.
func (c *cluster) podsText(ns string) string {
	l, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range l.Items {
		b.WriteString(p.Name + " on " + p.Spec.NodeName + ": " + string(p.Status.Phase))
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Waiting != nil {
				b.WriteString(" waiting " + s.State.Waiting.Reason + " " + s.State.Waiting.Message)
			}
			if s.State.Terminated != nil {
				b.WriteString(" terminated " + s.State.Terminated.Reason + " " + s.State.Terminated.Message)
			}
		}
		b.WriteString("\n")
	}
	if ev, err := c.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{}); err == nil {
		for _, e := range ev.Items {
			b.WriteString("  " + e.InvolvedObject.Name + " " + e.Reason + ": " + e.Message + "\n")
		}
	}
	return b.String()
}
