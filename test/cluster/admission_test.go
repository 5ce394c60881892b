package cluster

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	ppcluster "github.com/pullpath/pullpath/internal/cluster"
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
		r, ok := gvr[u.GetKind()]
		if !ok {
			t.Fatalf("a %s in the policy's YAML", u.GetKind())
		}
		if _, err := dyn.Resource(r).Create(ctx, &u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", u.GetKind(), err)
		}
		t.Cleanup(func() { _ = dyn.Resource(r).Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	}
	dryRun := func(p *corev1.Pod) error {
		p = p.DeepCopy()
		p.Namespace = ns
		_, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	good := ppcluster.ProbePodShapes(ns, "poola-1", "registry.k8s.io/pause:3.10", probeImage)
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
