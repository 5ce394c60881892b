package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	ppcluster "github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/nodeprobe"
	"github.com/pullpath/pullpath/internal/watch"
)

// verify in a run namespace that enforces Pod Security baseline stops at the dry run of its probe
// pod: exit 2, the admission plugin's message, and nothing stored (no owner, loader or secret copy).
func TestPodSecurityFailFast(t *testing.T) {
	c := sharedCluster(t)
	ns := c.Namespace(t, "psabaseline")
	ctx := context.Background()
	n, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	if _, err := c.Client.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := c.Run(t, "verify", c.Images[cachedImage].Ref, "--pool", "poola", "--run-namespace", ns, "--probe-timeout", "60s", "-o", "json")
	if code != 2 {
		t.Errorf("exit %d, want 2\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var v struct {
		Stored struct{ Objects int }
		Pools  []json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("stdout: %v\n%s", err, out)
	}
	if v.Stored.Objects != 0 {
		t.Errorf("the run stored %d objects before the refusal", v.Stored.Objects)
	}
	for _, want := range []string{"refuses the probe pod", `violates PodSecurity "baseline`, "hostNetwork", "nothing was created"} {
		if !strings.Contains(out+errOut, want) {
			t.Errorf("output lacks %q\nstdout: %s\nstderr: %s", want, out, errOut)
		}
	}
	for _, kind := range []string{"pods", "configmaps", "secrets"} {
		var n int
		sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=pullpath"}
		switch kind {
		case "pods":
			l, _ := c.Client.CoreV1().Pods(ns).List(ctx, sel)
			n = len(l.Items)
		case "configmaps":
			l, _ := c.Client.CoreV1().ConfigMaps(ns).List(ctx, sel)
			n = len(l.Items)
		case "secrets":
			l, _ := c.Client.CoreV1().Secrets(ns).List(ctx, sel)
			n = len(l.Items)
		}
		if n != 0 {
			t.Errorf("%d %s of pullpath in %s", n, kind, ns)
		}
	}
}

// deploy/admission.yaml's policy, bound to a namespace of the test (never the run namespace the
// other tests use): it admits every probe pod pullpath builds and refuses a pod of any other
// shape, shown with server-side dry-run creates on kube-apiserver's own CEL admission.
func TestAdmissionPolicyAdmitsOnlyTheProbePod(t *testing.T) {
	c := sharedCluster(t)
	ns := c.Namespace(t, "admission")
	ctx := context.Background()
	const probeRepo = "registry.cluster.test/tools/pullpath-probe"
	probeImage := probeRepo + "@sha256:" + strings.Repeat("ab", 32)
	// a name of its own: the cluster-scoped policy must not meet TestWatchManifestsAccepted's
	name := ppcluster.AdmissionPolicyName + "-" + ns
	doc := strings.ReplaceAll(ppcluster.AdmissionPolicy(ns, []string{probeRepo}), ppcluster.AdmissionPolicyName, name)
	createPolicy(t, c, doc)
	dryRun := func(p *corev1.Pod) error {
		p = p.DeepCopy()
		p.Namespace = ns
		_, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	good := nodeprobe.ProbePodShapes(ns, "poola-1", "registry.k8s.io/pause:3.10", probeImage)
	base := good[0]
	mutate := func(f func(p *corev1.Pod)) *corev1.Pod {
		p := base.DeepCopy()
		f(p)
		return p
	}
	yes, no := true, false
	bad := []struct {
		name, want string
		pod        *corev1.Pod
	}{
		{"privileged", "is not privileged", mutate(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Privileged, p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &yes, nil
		})},
		{"escalation", "cannot escalate", mutate(func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &yes })},
		{"a capability added", "drops every capability", mutate(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		})},
		{"a writable host mount", "host paths are mounted read-only", mutate(func(p *corev1.Pod) {
			for i := range p.Spec.Containers[0].VolumeMounts {
				p.Spec.Containers[0].VolumeMounts[i].ReadOnly = false
			}
		})},
		{"another host path", "volumes are the node's /", mutate(func(p *corev1.Pod) {
			for i := range p.Spec.Volumes {
				if p.Spec.Volumes[i].HostPath != nil {
					p.Spec.Volumes[i].HostPath.Path = "/var/run"
				}
			}
		})},
		{"host PID", "no other host namespace", mutate(func(p *corev1.Pod) { p.Spec.HostPID = true })},
		{"a service-account token", "mounts no service-account token", mutate(func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = &yes })},
		{"another image", "sandbox image", mutate(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "docker.io/library/busybox:1.36" })},
		{"a probe image by tag", "pinned by digest", mutate(func(p *corev1.Pod) { p.Spec.Containers[0].Image = probeRepo + ":v1" })},
		{"another command", "runs the loader", mutate(func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"/bin/sh", "-c", "id"} })},
		{"a writable root filesystem", "read-only root filesystem", mutate(func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = &no })},
	}
	// the policy takes effect once the API server has loaded it: wait for its first refusal (of a
	// pod nothing else refuses)
	deadline := time.Now().Add(time.Minute)
	for dryRun(mutate(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "docker.io/library/busybox:1.36" })) == nil {
		if time.Now().After(deadline) {
			t.Fatal("a pod of another image is still admitted a minute after the policy was created")
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, p := range good {
		if err := dryRun(p); err != nil {
			t.Errorf("pullpath's own probe pod %s was refused: %v", p.Name, err)
		}
	}
	for _, b := range bad {
		err := dryRun(b.pod)
		switch {
		case err == nil:
			t.Errorf("%s: admitted", b.name)
		case !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err):
			t.Errorf("%s: %v, want a refusal by the policy", b.name, err)
		case !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), name):
			t.Errorf("%s: %v, want the policy's %q", b.name, err, b.want)
		}
	}
	// the run namespace the other tests use is not bound
	if _, err := c.Client.CoreV1().Pods(runNS).Create(ctx, bad[0].pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil && strings.Contains(err.Error(), name) {
		t.Errorf("the policy reached namespace %s: %v", runNS, err)
	}
}

// watch manifests' node status policy: the watcher's identity (here a ServiceAccount of the test,
// impersonated) may change its own condition of a node and nothing else of the node's status,
// on kube-apiserver's own CEL admission. A condition type and policy name of the test's own keep
// the watch tests' ImagePullPathBroken out of it.
func TestNodeStatusPolicyLimitsTheWatcherToItsCondition(t *testing.T) {
	c := sharedCluster(t)
	ns := c.Namespace(t, "nodepolicy")
	ctx := context.Background()
	const sa, node, cond = "watcher", "poola-1", "PullPathPolicyTest"
	name := watch.NodeStatusPolicyName + "-" + ns
	doc := strings.NewReplacer(watch.NodeStatusPolicyName, name, watch.ConditionType, cond).Replace(watch.NodeStatusPolicy(ns, sa))
	createPolicy(t, c, doc)
	// watch's cluster right, for the test's account
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	patch := func(p string) error {
		_, err := as.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{}, "status")
		return err
	}
	// remove what a write let through, as the admin (the kubelet owns the rest of the status)
	t.Cleanup(func() {
		_, _ = c.Client.CoreV1().Nodes().Patch(context.Background(), node, types.StrategicMergePatchType,
			[]byte(`{"status":{"conditions":[{"type":"`+cond+`","$patch":"delete"}],"capacity":{"pullpath.test/probe":null}}}`), metav1.PatchOptions{}, "status")
	})
	// the policy is live once the API server refuses a capacity change (harmless, removed above)
	deadline := time.Now().Add(30 * time.Second)
	for i := 1; ; i++ {
		// a new value each time: a write that changes nothing passes any policy
		err := patch(fmt.Sprintf(`{"status":{"capacity":{"pullpath.test/probe":"%d"}}}`, i))
		if err != nil && strings.Contains(err.Error(), "nothing else of its status") {
			break
		}
		if err != nil {
			t.Fatalf("a capacity patch: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy did not refuse a capacity change within 30 s (last: %v)", err)
		}
		time.Sleep(time.Second)
	}
	now := metav1.Now().UTC().Format(time.RFC3339)
	if err := patch(`{"status":{"conditions":[{"type":"` + cond + `","status":"False","reason":"OK","message":"pull path holds","lastTransitionTime":"` + now + `","lastHeartbeatTime":"` + now + `"}]}}`); err != nil {
		t.Errorf("the watcher's own condition was refused: %v", err)
	}
	for _, bad := range []struct{ what, patch, want string }{
		{"the Ready condition", `{"status":{"conditions":[{"type":"Ready","status":"False","reason":"Forged","message":"forged by the watcher"}]}}`, "no other condition"},
		{"the node's addresses", `{"status":{"addresses":[{"type":"InternalIP","address":"192.0.2.1"}]}}`, "nothing else of its status"},
	} {
		err := patch(bad.patch)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: the watcher's write got %v, want a refusal saying %q", bad.what, err, bad.want)
		}
	}
	n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cnd := range n.Status.Conditions {
		if cnd.Type == corev1.NodeReady && cnd.Reason == "Forged" {
			t.Errorf("the forged Ready condition reached node %s", node)
		}
	}
}

// createPolicy creates the ValidatingAdmissionPolicy and binding of doc (YAML), deleted when the
// test ends.
func createPolicy(t *testing.T, c *cluster, doc string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := map[string]schema.GroupVersionResource{
		"ValidatingAdmissionPolicy":        {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
		"ValidatingAdmissionPolicyBinding": {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
	}
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		r, ok := gvr[u.GetKind()]
		if !ok {
			t.Fatalf("a %s in the policy's YAML", u.GetKind())
		}
		if _, err := dyn.Resource(r).Create(context.Background(), &u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", u.GetKind(), err)
		}
		t.Cleanup(func() { _ = dyn.Resource(r).Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	}
}
