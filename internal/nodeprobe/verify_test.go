package nodeprobe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"github.com/pullpath/pullpath/internal/report"
)

// allowing answers access reviews: everything allowed except what deny names ("verb resource ns").
func allowing(fc *fake.Clientset, deny ...string) {
	fc.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview)
		ra := r.Spec.ResourceAttributes
		key := strings.TrimSpace(ra.Verb + " " + ra.Resource + " " + ra.Namespace)
		r.Status.Allowed = true
		for _, d := range deny {
			if d == key {
				r.Status.Allowed = false
			}
		}
		return true, r, nil
	})
}

func TestVerifyChecksRightsFirst(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc, "create pods pullpath", "list nodes")
	_, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, VerifyOptions{Image: img, Namespace: "pullpath"})
	if err == nil || !strings.Contains(err.Error(), "lacks 2 permission(s)") || !strings.Contains(err.Error(), "create pods in namespace pullpath (the probe pods)") ||
		!strings.Contains(err.Error(), "list nodes cluster-wide") {
		t.Fatalf("err = %v", err)
	}
	if l, _ := fc.CoreV1().ConfigMaps("pullpath").List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
		t.Error("nothing may be created before the rights are known")
	}
}

func TestVerifyChoosesTheNewestNodeWithoutTheImage(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc)
	r := &run{cs: &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o: VerifyOptions{Image: img, Namespace: "pullpath", MaxImages: 50}}
	ts, err := r.choose(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]report.PoolResult{}
	for _, tg := range ts {
		got[tg.Result.Pool] = tg.Result
	}
	if p := got["poolb"]; p.Node != "b2" || p.ImagePresentBefore == nil || *p.ImagePresentBefore || !strings.Contains(p.Choice, "without the image") {
		t.Errorf("pool b: %+v (the cached old node b1 must not be chosen)", p)
	}
	if p := got["poola"]; p.Node != "a1" || p.ImagePresentBefore == nil || !*p.ImagePresentBefore {
		t.Errorf("pool a (only cached nodes): %+v", p)
	}
	if p := got["poolc"]; p.Node != "c1" || p.ImagePresentBefore != nil {
		t.Errorf("pool c (full image list): %+v", p)
	}
	// --fresh: a pool without a fresh node fails with how to get one
	r.o.Fresh = true
	ts, _ = r.choose(context.Background())
	for _, tg := range ts {
		if tg.Result.Pool == "poola" && (tg.Node != nil || !strings.Contains(tg.Result.Error, "az aks nodepool scale") || !strings.Contains(tg.Result.Error, "--name poola")) {
			t.Errorf("--fresh pool a: %+v", tg.Result)
		}
	}
	// cordoned and NotReady nodes are not chosen unless asked
	b2, _ := fc.CoreV1().Nodes().Get(context.Background(), "b2", metav1.GetOptions{})
	b2.Spec.Unschedulable = true
	_, _ = fc.CoreV1().Nodes().Update(context.Background(), b2, metav1.UpdateOptions{})
	r.o.Fresh = false
	ts, _ = r.choose(context.Background())
	for _, tg := range ts {
		if tg.Result.Pool == "poolb" && tg.Result.Node != "b1" {
			t.Errorf("cordoned b2 chosen: %+v", tg.Result)
		}
	}
	r.o.Pools = []string{"nope"}
	if _, err := r.choose(context.Background()); err == nil || !strings.Contains(err.Error(), `no node in pool "nope" (pools: poola, poolb, poolc)`) {
		t.Errorf("unknown pool: %v", err)
	}
}

func TestProbePodSpec(t *testing.T) {
	fc := fake.NewClientset()
	r := &run{cs: &cluster.Client{Core: kubefake.Core(fc.CoreV1())}, id: "abcd1234", o: VerifyOptions{Image: img, Namespace: "pullpath", Timeout: time.Minute},
		secretEnv: secretEnv([]secretRef{{secret: "pullpath-abcd1234-pull-1", key: corev1.DockerConfigJsonKey, label: "shop/regcred key .dockerconfigjson"}}),
		owner:     &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pullpath-run-abcd1234", UID: "u1"}}}
	n := node("b2", "poolb", t0, "v")
	p := r.probeSpec("pullpath-abcd1234-probe-b2", n, &delivery{parts: []string{"p0", "p1"}, loader: "l", size: 1500000, sha256: strings.Repeat("ab", 32)}, "registry.k8s.io/pause:3.10")
	s := p.Spec
	c := s.Containers[0]
	switch {
	case s.NodeName != "b2" || !s.HostNetwork || s.DNSPolicy != corev1.DNSDefault || s.RestartPolicy != corev1.RestartPolicyNever:
		t.Errorf("placement: %+v", s)
	case len(s.Tolerations) != 1 || s.Tolerations[0].Operator != corev1.TolerationOpExists || s.ActiveDeadlineSeconds == nil:
		t.Errorf("tolerations/deadline: %+v", s)
	case c.ImagePullPolicy != corev1.PullNever || c.Image != "registry.k8s.io/pause:3.10":
		t.Errorf("image: %s %s", c.Image, c.ImagePullPolicy)
	case *c.SecurityContext.AllowPrivilegeEscalation || !*c.SecurityContext.ReadOnlyRootFilesystem || *c.SecurityContext.Privileged || c.SecurityContext.Capabilities.Drop[0] != "ALL":
		t.Errorf("security: %+v", c.SecurityContext)
	case c.Resources.Limits.Memory().IsZero() || c.Resources.Limits.Cpu().IsZero():
		t.Errorf("limits: %+v", c.Resources)
	case p.Labels[cluster.LabelRun] != "abcd1234" || len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Name != "pullpath-run-abcd1234":
		t.Errorf("labels/owner: %+v %+v", p.Labels, p.OwnerReferences)
	}
	for _, m := range c.VolumeMounts {
		if m.Name != "run" && !m.ReadOnly {
			t.Errorf("mount %s is writable", m.Name)
		}
	}
	cmd := strings.Join(c.Command, " ")
	for _, w := range []string{"/pp/parts/loader /pp/parts /pp/run/pullpath 1500000 " + strings.Repeat("ab", 32) + " -- probe " + img, "--host-root /host", "--summary-file /dev/termination-log", "--pull-secret-env PULLPATH_PULL_SECRET_1"} {
		if !strings.Contains(cmd, w) {
			t.Errorf("command %q lacks %q", cmd, w)
		}
	}
}

// TestBorrowableIsTheNodesSandbox: the probe borrows only a sandbox image of a known (or given)
// repository, by digest when the node lists it; never a tenant's image, however it is named and
// however large (the kubelet lists the largest first).
func TestBorrowableIsTheNodesSandbox(t *testing.T) {
	const dig = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	withNames := func(n *corev1.Node, names ...string) *corev1.Node {
		n.Status.Images = append([]corev1.ContainerImage{{Names: names, SizeBytes: 900 << 20}}, n.Status.Images...)
		return n
	}
	for _, tc := range []struct {
		name  string
		node  *corev1.Node
		extra []string
		want  []string
	}{
		{"sandbox among others", node("x", "p", t0, "v", "docker.io/library/nginx:1.25", "registry.k8s.io/pause:3.10"), nil, []string{"registry.k8s.io/pause:3.10"}},
		{"by digest when listed", withNames(node("x", "p", t0, "v"), "registry.k8s.io/pause:3.10", "registry.k8s.io/pause@"+dig), nil, []string{"registry.k8s.io/pause@" + dig}},
		{"a tenant's larger pause is never borrowed", withNames(node("x", "p", t0, "v", "mcr.microsoft.com/oss/kubernetes/pause:3.6"), "docker.io/anyone/pause:x", "anyone/pause@"+dig), nil,
			[]string{"mcr.microsoft.com/oss/kubernetes/pause:3.6"}},
		{"substring of a known name", node("x", "p", t0, "v", "registry.k8s.io/pause-evil:1", "evil.example/registry.k8s.io/pause:3.10", "registry.k8s.io/pause/x:1"), nil, nil},
		{"no sandbox at all", node("x", "p", t0, "v", "docker.io/library/nginx:1.25"), nil, nil},
		{"a given repository", node("x", "p", t0, "v", "corp.example/infra/pause:3.9", "docker.io/library/nginx:1.25"), []string{"corp.example/infra/pause"}, []string{"corp.example/infra/pause:3.9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := borrowable(tc.node, tc.extra); !slices.Equal(got, tc.want) {
				t.Errorf("borrowable = %q, want %q", got, tc.want)
			}
		})
	}
	n := node("y", "p", t0, "v", "docker.io/anyone/pause:x")
	if msg := noSandbox(n, nil); !strings.Contains(msg, "--sandbox-image") || !strings.Contains(msg, "registry.k8s.io/pause") {
		t.Errorf("noSandbox = %q: want the known repositories and the flag", msg)
	}
	for _, bad := range []string{"registry.k8s.io/pause:3.10", "pause", "registry.k8s.io/pause@" + dig, "", "a b/c"} {
		if err := CheckSandboxRepos([]string{bad}); err == nil {
			t.Errorf("CheckSandboxRepos(%q) = nil, want an error", bad)
		}
	}
	if err := CheckSandboxRepos([]string{"corp.example/infra/pause"}); err != nil {
		t.Errorf("CheckSandboxRepos(a repository) = %v", err)
	}
}

const probeImg = "registry.corp.example/tools/pullpath-probe@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestProbePodSpecWithProbeImage(t *testing.T) {
	r := &run{cs: &cluster.Client{Core: kubefake.Core(fake.NewClientset().CoreV1())}, id: "abcd1234", o: VerifyOptions{Image: img, Namespace: "pullpath", Timeout: time.Minute, ProbeImage: probeImg}}
	p := r.probeSpec("pullpath-abcd1234-probe-b2", node("b2", "poolb", t0, "v"), nil, probeImg)
	s, c := p.Spec, p.Spec.Containers[0]
	if c.Image != probeImg || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image: %s %s, want the probe image, IfNotPresent", c.Image, c.ImagePullPolicy)
	}
	if got := strings.Join(c.Command, " "); !strings.HasPrefix(got, "/pullpath probe "+img+" --host-root /host -o json --summary-file /dev/termination-log --node b2") {
		t.Errorf("command %q", got)
	}
	if len(s.Volumes) != 1 || s.Volumes[0].HostPath == nil || len(c.VolumeMounts) != 1 || !c.VolumeMounts[0].ReadOnly {
		t.Errorf("volumes %+v mounts %+v: want only the host root, read-only", s.Volumes, c.VolumeMounts)
	}
	if !s.HostNetwork || s.DNSPolicy != corev1.DNSDefault || *c.SecurityContext.AllowPrivilegeEscalation || !*c.SecurityContext.ReadOnlyRootFilesystem || c.SecurityContext.Capabilities.Drop[0] != "ALL" {
		t.Errorf("placement/security changed: %+v %+v", s, c.SecurityContext)
	}
}

// With --probe-image no binary and no loader travel: the probe pods run the image, and a node that
// cannot pull it is a finding, not a wait until the timeout.
func TestVerifyWithProbeImage(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc)
	var cms []string
	fc.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		cms = append(cms, a.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap).Name)
		return false, nil, nil
	})
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if p.Spec.NodeName == "c1" {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ErrImagePull", Message: "failed to pull and unpack image: dial tcp 10.0.0.9:443: connect: connection refused"}}}}
			return false, nil, nil
		}
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 0, Message: `{"class":"ok","code":"OK","summary":"pulled completely"}`}}}}
		return false, nil, nil
	})
	o := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poolb", "poolc"}, ProbeImage: probeImg, MaxImages: 50, Timeout: 20 * time.Second,
		Binary: func(string) ([]byte, string, error) {
			t.Error("the binary was asked for with --probe-image")
			return nil, "", nil
		}}
	v, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range v.Pools {
		if p.Delivery != "image" {
			t.Errorf("pool %s: delivery %q, want image", p.Pool, p.Delivery)
		}
		switch p.Pool {
		case "poolb":
			if p.Class != report.ClassOK || (p.Probe == nil && p.Summary == nil) {
				t.Errorf("pool b: %s %s", p.Class, p.Error)
			}
		case "poolc":
			if p.Probe != nil || !strings.Contains(p.Error, "could not start: ErrImagePull") {
				t.Errorf("pool c: %+v", p)
			}
			// the fake lists no event: the pod's waiting message carries the failed pull of the
			// probe image, which is the pool's class (PodCause), never ok
			if f := p.PodCause(); f == nil || p.Class != report.ClassRoute || f.Class != p.Class || f.Code != report.CodeTCPRefused {
				t.Errorf("pool c: class %s, cause %+v, want route TCP_REFUSED from the probe pod's own pull", p.Class, f)
			}
		}
	}
	if v.Class != report.ClassRoute {
		t.Errorf("class %s, want route (pool c's)", v.Class)
	}
	if len(cms) != 1 || !strings.HasPrefix(cms[0], "pullpath-run-") {
		t.Errorf("ConfigMaps created: %v, want only the run's owner", cms)
	}
	if len(v.LeftBehind) != 0 {
		t.Errorf("left behind: %v", v.LeftBehind)
	}
}

// --from-pod: the probe runs as an ephemeral container in the failing pod (shop/web-new on b2);
// the pod reaches the registry, the node of its pool does not: the pull is the node's.
func TestVerifyFromPod(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc)
	var added []corev1.EphemeralContainer
	podReachesNodeDoesNot(fc, &added)
	o := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poolb"}, ProbeImage: probeImg, ProbeFromPod: "shop/web-new", MaxImages: 50, Timeout: 20 * time.Second}
	cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}
	v, err := Verify(context.Background(), cs, o)
	if err != nil {
		t.Fatal(err)
	}
	fp := v.FromPod
	if fp == nil || fp.Node != "b2" || fp.Pool != "poolb" || fp.Class != report.ClassOK || fp.NodeClass != report.ClassRoute ||
		!strings.Contains(fp.Comparison, "the pod reaches the registry, the node does not") || !strings.Contains(fp.Comparison, "the pull is done by the node") {
		t.Fatalf("from pod: %+v", fp)
	}
	if len(added) != 1 {
		t.Fatalf("ephemeral containers %+v", added)
	}
	ec := added[0]
	if ec.Image != probeImg || ec.Command[0] != "/pullpath" || strings.Join(ec.Command[1:3], " ") != "probe "+img || strings.Contains(strings.Join(ec.Command, " "), "--host-root") ||
		!*ec.SecurityContext.RunAsNonRoot || *ec.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("ephemeral container %+v", ec)
	}
	if len(ec.Env) != 0 || strings.Contains(strings.Join(ec.Command, " "), "--pull-secret") {
		t.Errorf("the pod's secret (for ghcr.io) does not cover the registry: no secret for the probe, got %+v %v", ec.Env, ec.Command)
	}
	// a pod whose pull secret covers the registry: the probe in the pod presents it, from an
	// environment variable that refers to the secret (its value never enters the spec)
	objs := scenario()
	for _, ob := range objs {
		if p, ok := ob.(*corev1.Pod); ok && p.Name == "web-new" {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: "corp"})
		}
	}
	fc3 := fake.NewClientset(append(objs, dockerSecret("shop", "corp", "registry.corp.example"))...)
	allowing(fc3)
	fc3.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "ephemeralcontainers" {
			added = a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod).Spec.EphemeralContainers
		}
		return false, nil, nil
	})
	o3, added := o, nil
	o3.Timeout = 2 * time.Second // the pool's probe pod never ends here; the ephemeral container is what counts
	_, _ = Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc3.CoreV1()), Authz: kubefake.Authz(fc3.AuthorizationV1())}, o3)
	if len(added) != 1 {
		t.Fatalf("ephemeral containers with a covering secret: %+v", added)
	}
	ec = added[0]
	if len(ec.Env) != 2 || ec.Env[0].Value != "" || ec.Env[0].ValueFrom == nil || ec.Env[0].ValueFrom.SecretKeyRef == nil ||
		ec.Env[0].ValueFrom.SecretKeyRef.Name != "corp" || ec.Env[0].ValueFrom.SecretKeyRef.Key != corev1.DockerConfigJsonKey ||
		!strings.Contains(strings.Join(ec.Command, " "), "--pull-secret-env "+ec.Env[0].Name) {
		t.Errorf("the probe in the pod should present secret corp: env %+v, command %v", ec.Env, ec.Command)
	}
	// and name it in its identity (the real run showed only "from $PULLPATH_PULL_SECRET")
	if len(ec.Env) == 0 {
		t.Fatal("no environment for the probe in the pod")
	}
	if n := ec.Env[len(ec.Env)-1]; n.Name != ec.Env[0].Name+"_NAME" || n.Value != "shop/corp key "+corev1.DockerConfigJsonKey || n.ValueFrom != nil {
		t.Errorf("the probe in the pod is not told which secret it presents: %+v", ec.Env)
	}
	// the right to add an ephemeral container is checked first, and only with --from-pod
	fc2 := fake.NewClientset(scenario()...)
	allowing(fc2, "update pods shop")
	_, err = Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc2.CoreV1()), Authz: kubefake.Authz(fc2.AuthorizationV1())}, o)
	if err == nil || !strings.Contains(err.Error(), "update pods/ephemeralcontainers in namespace shop") {
		t.Errorf("rights: %v", err)
	}
	o.ProbeFromPod, o.Timeout = "", time.Second // its probe pod never ends here
	if _, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc2.CoreV1()), Authz: kubefake.Authz(fc2.AuthorizationV1())}, o); err != nil {
		t.Errorf("without --from-pod the right is not needed: %v", err)
	}
}

// podReachesNodeDoesNot makes the fake's probes end as in TestVerifyFromPod: the probe added to a
// pod pulls, every probe pod times out in tcp; added gets the ephemeral containers of the update.
func podReachesNodeDoesNot(fc *fake.Clientset, added *[]corev1.EphemeralContainer) {
	fc.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "ephemeralcontainers" {
			return false, nil, nil
		}
		p := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
		*added = p.Spec.EphemeralContainers
		ec := p.Spec.EphemeralContainers[len(p.Spec.EphemeralContainers)-1].Name
		p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: ec, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Message: `{"class":"ok","code":"OK","summary":"pulled completely from the pod"}`}}}}
		return false, nil, nil
	})
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Message: `{"class":"route","code":"TCP_TIMEOUT","host":"registry.corp.example:443","role":"registry","step":"tcp","summary":"no route"}`}}}}
		return false, nil, nil
	})
}

// A run that cannot start its probes (its namespace cannot be made) says why and leaves nothing.
func TestVerifyWithoutItsNamespace(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc)
	fc.PrependReactor("create", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, &forbidden{}
	})
	v, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())},
		VerifyOptions{Image: img, Namespace: "pullpath", Timeout: time.Minute, Binary: func(string) ([]byte, string, error) { return []byte("bin"), "test", nil }})
	if err == nil || !strings.Contains(err.Error(), "namespace pullpath does not exist and cannot be created") {
		t.Fatalf("err = %v", err)
	}
	if v == nil || len(v.LeftBehind) != 0 || len(v.Pools) != 0 {
		t.Errorf("report %+v", v)
	}
}

// The comparison from the pod is about the network: a registry that refused the probe in the pod
// (which has at most the pod's own pull secret) was reached.
func TestCompareFromPod(t *testing.T) {
	for _, c := range []struct {
		pod, node report.Class
		want      string
	}{
		{report.ClassOK, report.ClassRoute, "the pod reaches the registry, the node does not (route on b2)"},
		{report.ClassAuth, report.ClassRoute, "the pod reaches the registry (it answered auth to the probe in the pod), the node does not"},
		{report.ClassAuth, report.ClassOK, "the pod and the node b2 both reach the registry (it answered auth to the probe in the pod)"},
		{report.ClassAuth, report.ClassAuth, "the pod and the node b2 both reach the registry (it answered auth to the probe in the pod and auth to the node's probe)"},
		{report.ClassOK, report.ClassForbidden, "the pod and the node b2 both reach the registry (it answered forbidden to the node's probe)"},
		{report.ClassDNS, report.ClassAuth, "the node b2 reaches the registry (it answered auth to the node's probe), the pod does not (dns)"},
		{report.ClassOK, report.ClassOK, "the pod and the node b2 both reach the registry"},
		{report.ClassDNS, report.ClassOK, "the node b2 reaches the registry, the pod does not (dns)"},
		{report.ClassRoute, report.ClassEndpoint, "neither the pod (route) nor the node b2 (endpoint)"},
	} {
		pp := &report.PodProbe{Pool: "poolb", Node: "b2", Class: c.pod, Probe: &report.Probe{Class: c.pod}}
		compareFromPod(pp, []report.PoolResult{{Pool: "poolb", Node: "b2", Class: c.node, Probe: &report.Probe{Class: c.node}}})
		if !strings.Contains(pp.Comparison, c.want) {
			t.Errorf("pod %s, node %s: %q, want %q", c.pod, c.node, pp.Comparison, c.want)
		}
	}
}

// secretsScenario is the scenario with pod web-new listing four pull secrets: corp (covers the
// registry), regcred (another registry), hidden (the operator may not read it) and legacy (a
// kubernetes.io/dockercfg one for the registry).
func secretsScenario() *fake.Clientset {
	objs := scenario()
	for _, ob := range objs {
		if p, ok := ob.(*corev1.Pod); ok && p.Name == "web-new" {
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "corp"}, {Name: "regcred"}, {Name: "hidden"}, {Name: "legacy"}}
		}
	}
	legacy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "legacy"}, Type: corev1.SecretTypeDockercfg,
		Data: map[string][]byte{corev1.DockerConfigKey: []byte(`{"registry.corp.example":{"auth":"dXNlcjpzM2NyZXQtdmFsdWU=","email":"x@example.com"}}`)}}
	fc := fake.NewClientset(append(objs, dockerSecret("shop", "corp", "registry.corp.example"), legacy)...)
	allowing(fc)
	fc.PrependReactor("get", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() == "hidden" {
			return true, nil, &forbidden{}
		}
		return false, nil, nil
	})
	return fc
}

// --from-pod hands over every pull secret of the pod that covers the image (a legacy
// kubernetes.io/dockercfg one too), in the pod's order, each from an environment variable that refers
// to the secret; a secret for another registry is not handed over, and one the operator cannot read
// is named in a note with the missing right, in JSON (pullSecrets, notes) and never silently.
func TestVerifyFromPodHandsOverEverySecret(t *testing.T) {
	fc := secretsScenario()
	var added []corev1.EphemeralContainer
	fc.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "ephemeralcontainers" {
			added = a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod).Spec.EphemeralContainers
		}
		return false, nil, nil
	})
	o := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poolb"}, ProbeImage: probeImg, ProbeFromPod: "shop/web-new", MaxImages: 50, Timeout: 2 * time.Second}
	v, _ := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o)
	if len(added) != 1 {
		t.Fatalf("ephemeral containers: %+v", added)
	}
	ec := added[0]
	cmd := strings.Join(ec.Command, " ") + " "
	var refs []string
	for _, e := range ec.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.Value == "":
			if !strings.Contains(cmd, "--pull-secret-env "+e.Name+" ") {
				t.Errorf("%s is not handed to the probe: %s", e.Name, cmd)
			}
			refs = append(refs, e.ValueFrom.SecretKeyRef.Name+" "+e.ValueFrom.SecretKeyRef.Key)
		case strings.HasSuffix(e.Name, "_NAME") && e.ValueFrom == nil:
			refs = append(refs, "named "+e.Value)
		default:
			t.Errorf("unexpected variable %+v", e)
		}
		if strings.Contains(e.Value, "s3cret") || strings.Contains(e.Value, "dXNlcjpz") {
			t.Errorf("a secret value in the spec: %+v", e)
		}
	}
	want := "corp .dockerconfigjson; named shop/corp key .dockerconfigjson; legacy .dockercfg; named shop/legacy key .dockercfg"
	if got := strings.Join(refs, "; "); got != want {
		t.Errorf("handed over %q, want %q", got, want)
	}
	if v == nil || v.FromPod == nil {
		t.Fatalf("no fromPod in %+v", v)
	}
	var got []string
	for _, ps := range v.FromPod.PullSecrets {
		got = append(got, fmt.Sprintf("%s %s %t", ps.Name, ps.Key, ps.HandedOver))
		if !ps.HandedOver && ps.Problem == "" {
			t.Errorf("%s is not handed over and no problem says why", ps.Name)
		}
	}
	if strings.Join(got, ", ") != "corp .dockerconfigjson true, regcred .dockerconfigjson false, hidden  false, legacy .dockercfg true" {
		t.Errorf("fromPod.pullSecrets: %q", got)
	}
	note := ""
	for _, n := range v.Notes {
		if strings.Contains(n, "shop/hidden") {
			note = n
		}
	}
	if !strings.Contains(note, "(no RBAC get on secrets)") || !strings.Contains(note, "the probe in the pod cannot present it; grant get on secrets in namespace shop") {
		t.Errorf("the unreadable secret is not named with the missing right: %q (notes %q)", note, v.Notes)
	}
}

// verify --pod hands the node probes every pull secret of the pod that covers the image, as the
// kubelet tries them (a legacy kubernetes.io/dockercfg one too), the same way --from-pod does: a
// copy in the run's namespace per secret, a variable from each copy, never a value in the spec; a
// secret for another registry is not handed over, one the operator cannot read is named in a note
// and in pullSecrets; the canary asks the kubelet to pull with every copy.
func TestVerifyPodHandsEverySecretToTheNodeProbes(t *testing.T) {
	fc := secretsScenario()
	var pods []*corev1.Pod
	copies := map[string]*corev1.Secret{}
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pods = append(pods, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy())
		return false, nil, nil
	})
	fc.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*corev1.Secret)
		copies[s.Name] = s.DeepCopy()
		return false, nil, nil
	})
	o := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poolb"}, ProbeImage: probeImg, FromPod: "shop/web-new", RuntimePull: true, MaxImages: 50, Timeout: 2 * time.Second}
	v, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o)
	if v == nil {
		t.Fatalf("Verify: %v", err)
	}
	var probe, canary *corev1.Pod
	for _, p := range pods {
		switch p.Labels[cluster.LabelRole] {
		case "probe":
			probe = p
		case "canary":
			canary = p
		}
	}
	if probe == nil || canary == nil {
		t.Fatalf("pods created: %d (probe %v, canary %v)", len(pods), probe != nil, canary != nil)
	}
	c := probe.Spec.Containers[0]
	cmd := strings.Join(c.Command, " ") + " "
	var refs []string
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.Value == "":
			if !strings.Contains(cmd, "--pull-secret-env "+e.Name+" ") {
				t.Errorf("%s is not handed to the probe: %s", e.Name, cmd)
			}
			ref := e.ValueFrom.SecretKeyRef
			cp := copies[ref.Name]
			if cp == nil || cp.Namespace != "pullpath" || cp.Labels[cluster.LabelRun] != v.Run || len(cp.Data) != 1 || cp.Data[ref.Key] == nil {
				t.Errorf("%s refers to %s key %s, not a labelled copy in the run's namespace holding that key: %+v", e.Name, ref.Name, ref.Key, cp)
				continue
			}
			refs = append(refs, string(cp.Type)+" "+ref.Key)
		case strings.HasSuffix(e.Name, "_NAME") && e.ValueFrom == nil:
			refs = append(refs, "named "+e.Value)
		default:
			t.Errorf("unexpected variable %+v", e)
		}
	}
	want := "kubernetes.io/dockerconfigjson .dockerconfigjson; named shop/corp key .dockerconfigjson; kubernetes.io/dockercfg .dockercfg; named shop/legacy key .dockercfg"
	if got := strings.Join(refs, "; "); got != want {
		t.Errorf("handed to the node probe %q, want %q", got, want)
	}
	if strings.Contains(cmd, "--pull-secret ") || len(probe.Spec.Volumes) != 1 {
		t.Errorf("a second way to hand over a secret: %s, volumes %+v", cmd, probe.Spec.Volumes)
	}
	var pulls []string
	for _, s := range canary.Spec.ImagePullSecrets {
		pulls = append(pulls, s.Name)
	}
	if len(pulls) != 2 || copies[pulls[0]] == nil || copies[pulls[1]] == nil {
		t.Errorf("the canary pulls with %v, want both copies %v", pulls, copies)
	}
	for _, p := range pods {
		raw := fmt.Sprintf("%+v", p.Spec)
		if strings.Contains(raw, "s3cret") || strings.Contains(raw, "dXNlcjpz") {
			t.Errorf("a secret value in the spec of %s", p.Name)
		}
	}
	var got []string
	for _, ps := range v.PullSecrets {
		got = append(got, fmt.Sprintf("%s %s %t", ps.Name, ps.Key, ps.HandedOver))
		if !ps.HandedOver && ps.Problem == "" {
			t.Errorf("%s is not handed over and no problem says why", ps.Name)
		}
	}
	if strings.Join(got, ", ") != "corp .dockerconfigjson true, regcred .dockerconfigjson false, hidden  false, legacy .dockercfg true" {
		t.Errorf("pullSecrets: %q", got)
	}
	var hidden, presented string
	for _, n := range v.Notes {
		if strings.Contains(n, "shop/hidden") {
			hidden = n
		}
		if strings.Contains(n, "the node probes present") {
			presented = n
		}
		if strings.Contains(n, "s3cret") || strings.Contains(n, "dXNlcjpz") {
			t.Errorf("a secret value in a note: %q", n)
		}
	}
	if !strings.Contains(hidden, "--pod: ") || !strings.Contains(hidden, "(no RBAC get on secrets)") || !strings.Contains(hidden, "the node probes cannot present it; grant get on secrets in namespace shop") {
		t.Errorf("the unreadable secret is not named with the missing right: %q (notes %q)", hidden, v.Notes)
	}
	if !strings.Contains(presented, "in turn as the kubelet does: corp, legacy") {
		t.Errorf("no note on the secrets presented in turn: %q", v.Notes)
	}
	if len(v.LeftBehind) != 0 {
		t.Errorf("left behind: %v", v.LeftBehind)
	}
	if l, _ := fc.CoreV1().Secrets("pullpath").List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("copies not deleted: %d", len(l.Items))
	}
}

// --secret takes a legacy kubernetes.io/dockercfg secret too and hands it over as --pod does; a
// pod whose only pull secret cannot be read gets no claim that no secret covers the image.
func TestVerifySecretFlagAndUnreadablePodSecret(t *testing.T) {
	legacy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "legacy"}, Type: corev1.SecretTypeDockercfg,
		Data: map[string][]byte{corev1.DockerConfigKey: []byte(`{"registry.corp.example":{"auth":"dXNlcjpzM2NyZXQtdmFsdWU="}}`)}}
	objs := scenario()
	for _, ob := range objs {
		if p, ok := ob.(*corev1.Pod); ok && p.Name == "web-new" {
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "hidden"}}
		}
	}
	fc := fake.NewClientset(append(objs, legacy)...)
	allowing(fc)
	fc.PrependReactor("get", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() == "hidden" {
			return true, nil, &forbidden{}
		}
		return false, nil, nil
	})
	var probes []*corev1.Pod
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		probes = append(probes, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy())
		return false, nil, nil
	})
	cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}
	o := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poolb"}, ProbeImage: probeImg, SecretNamespace: "shop", Secret: "legacy", MaxImages: 50, Timeout: time.Second}
	v, _ := Verify(context.Background(), cs, o)
	if v == nil || len(probes) != 1 {
		t.Fatalf("--secret legacy: %+v, %d probe pods", v, len(probes))
	}
	c := probes[0].Spec.Containers[0]
	if len(c.Env) != 2 || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.SecretKeyRef.Key != corev1.DockerConfigKey || c.Env[1].Value != "shop/legacy key .dockercfg" ||
		!strings.Contains(strings.Join(c.Command, " "), "--pull-secret-env "+c.Env[0].Name) {
		t.Errorf("--secret legacy: env %+v command %v", c.Env, c.Command)
	}
	if len(v.PullSecrets) != 1 || !v.PullSecrets[0].HandedOver || v.PullSecrets[0].Key != corev1.DockerConfigKey {
		t.Errorf("--secret legacy: pullSecrets %+v", v.PullSecrets)
	}

	probes = nil
	o.Secret, o.FromPod = "", "shop/web-new"
	v, _ = Verify(context.Background(), cs, o)
	if v == nil || len(probes) != 1 || len(probes[0].Spec.Containers[0].Env) != 0 {
		t.Fatalf("--pod with an unreadable secret: %+v, probe pods %d", v, len(probes))
	}
	notes := strings.Join(v.Notes, "\n")
	if !strings.Contains(notes, "no pull secret of the pod that could be read covers the image") || strings.Contains(notes, "no pull secret of the pod covers") ||
		!strings.Contains(notes, "pull secret shop/hidden of pod shop/web-new was not read (no RBAC get on secrets)") {
		t.Errorf("--pod with an unreadable secret: notes\n%s", notes)
	}
}

// verify --pod does not stop when the operator may not read the pod's secrets in its namespace: as
// with --from-pod, each one is named in a note with the missing right, and in pullSecrets; the node
// probes pull with the node's own configuration.
func TestVerifyPodWithoutSecretRights(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc, "get secrets shop")
	fc.PrependReactor("get", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "shop" {
			return true, nil, &forbidden{}
		}
		return false, nil, nil
	})
	o := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poolb"}, ProbeImage: probeImg, FromPod: "shop/web-new", MaxImages: 50, Timeout: time.Second}
	v, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o)
	if err != nil || v == nil {
		t.Fatalf("Verify stopped: %v", err)
	}
	if len(v.PullSecrets) != 1 || v.PullSecrets[0].Name != "regcred" || v.PullSecrets[0].HandedOver || !strings.HasPrefix(v.PullSecrets[0].Problem, "not readable") {
		t.Errorf("pullSecrets %+v", v.PullSecrets)
	}
	notes := strings.Join(v.Notes, "\n")
	if !strings.Contains(notes, "--pod: pull secret shop/regcred of pod shop/web-new was not read (no RBAC get on secrets)") ||
		!strings.Contains(notes, "grant get on secrets in namespace shop to hand it over") ||
		!strings.Contains(notes, "--pod shop/web-new: no pull secret of the pod that could be read covers the image") {
		t.Errorf("notes:\n%s", notes)
	}
	// --secret still needs the right up front: that secret is the whole point of the flag
	o.FromPod, o.SecretNamespace, o.Secret = "", "shop", "regcred"
	if _, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o); err == nil || !strings.Contains(err.Error(), "get secrets in namespace shop (read the pull secret)") {
		t.Errorf("--secret without the right: %v", err)
	}
}

// The API server refuses an ephemeral container added to a pod that changed since it was read (the
// cluster tier: two runs --from-pod on one pod, "the object has been modified"); the kubelet's
// status updates do the same. The probe reads the pod again and is added once.
func TestVerifyFromPodRetriesAConflict(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc)
	tries := 0
	var added []corev1.EphemeralContainer
	fc.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "ephemeralcontainers" {
			return false, nil, nil
		}
		if tries++; tries == 1 {
			return true, nil, apierrors.NewConflict(corev1.Resource("pods"), "web-new", fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		p := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
		added = p.Spec.EphemeralContainers
		p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: added[len(added)-1].Name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Message: `{"class":"ok","code":"OK","summary":"pulled completely from the pod"}`}}}}
		return false, nil, nil
	})
	o := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poolb"}, ProbeImage: probeImg, ProbeFromPod: "shop/web-new", MaxImages: 50, Timeout: 2 * time.Second}
	v, _ := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o)
	if v == nil || v.FromPod == nil {
		t.Fatal("no result from the pod")
	}
	if fp := v.FromPod; fp.Error != "" || fp.Class != report.ClassOK || tries != 2 || len(added) != 1 {
		t.Errorf("after one conflict: error %q class %s, %d updates, containers %d; want the probe added on the second try", fp.Error, fp.Class, tries, len(added))
	}
}

// With the binary in ConfigMaps, a listed image that turns out gone is replaced by the next; when
// each one tried is gone the pool says so (it had no error at all), other, and not verified.
func TestVerifyEveryListedImageGone(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc)
	var tried []string
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		tried = append(tried, p.Spec.Containers[0].Image)
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ErrImageNeverPull", Message: `Container image "` + p.Spec.Containers[0].Image + `" is not present with pull policy of Never`}}}}
		return false, nil, nil
	})
	o := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poolc"}, MaxImages: 50, Timeout: 20 * time.Second,
		Binary: func(string) ([]byte, string, error) { return []byte("\x7fELF not really"), "test", nil }}
	v, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o)
	if err != nil {
		t.Fatal(err)
	}
	p := v.Pools[0]
	if len(tried) != 3 || p.Class != report.ClassOther || p.PodCause() != nil || !strings.Contains(p.Error, "listed in status.images but gone (ErrImageNeverPull): "+tried[0]) {
		t.Errorf("tried %v; pool c: class %s error %q", tried, p.Class, p.Error)
	}
}

// Whether a pull secret was read is its error's type, not its problem's words: RBAC's refusal is
// fixed by a grant, admission's or the network's is not; each says why in the same problem.
func TestUnreadableSecretByType(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}
	for _, c := range []struct {
		name string
		err  error
		rbac bool
		why  string
	}{
		{"rbac", &forbidden{}, true, "not readable: no RBAC get on secrets; cannot tell whether it covers the registry"},
		{"admission", apierrors.NewForbidden(corev1.Resource("secrets"), "regcred", errors.New("namespace shop is being terminated")), false, "not readable: "},
		{"network", &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api/v1/namespaces/shop/secrets/regcred", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, false, "not readable: cannot reach the cluster to get secrets regcred"},
	} {
		fc.PrependReactor("get", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) { return true, nil, c.err })
		ps, _, err := cluster.ReadSecret(context.Background(), cs, "shop", "regcred", "pod", img)
		var u *cluster.UnreadableSecret
		if !errors.As(err, &u) || u.RBAC() != c.rbac || ps.Problem != err.Error() || !strings.HasPrefix(ps.Problem, c.why) || ps.Exists != nil {
			t.Errorf("%s: err %v (rbac %t), problem %q, want %q…", c.name, err, u != nil && u.RBAC(), ps.Problem, c.why)
		}
	}
	fc.PrependReactor("get", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(corev1.Resource("secrets"), "regcred")
	})
	if ps, _, err := cluster.ReadSecret(context.Background(), cs, "shop", "regcred", "pod", img); err != nil || ps.Exists == nil || *ps.Exists {
		t.Errorf("a missing secret was read as unreadable: %v %+v", err, ps)
	}
}

// The ephemeral container whose probe image the node cannot pull: the probe in the pod did not
// run, and its class is that failed pull as explain reads it (report.Cause), as for a pool's probe pod.
func TestVerifyFromPodProbeImageNotPulled(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc)
	fc.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "ephemeralcontainers" {
			return false, nil, nil
		}
		p := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
		ec := p.Spec.EphemeralContainers[len(p.Spec.EphemeralContainers)-1].Name
		p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: ec, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull",
			Message: `failed to pull and unpack image "` + probeImg + `": failed to resolve reference "` + probeImg + `": failed to do request: Head "https://registry.corp.example/v2/tools/pullpath-probe/manifests/sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": dial tcp: lookup registry.corp.example on 10.96.0.10:53: no such host`}}}}
		return false, nil, nil
	})
	var added []corev1.EphemeralContainer
	podReachesNodeDoesNot(fc, &added) // runs first: the pools' probe pods, and a status this test's reactor replaces
	o := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poolb"}, ProbeImage: probeImg, ProbeFromPod: "shop/web-new", MaxImages: 50, Timeout: 20 * time.Second}
	v, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o)
	if err != nil {
		t.Fatal(err)
	}
	fp := v.FromPod
	if fp == nil || fp.Probe != nil || fp.Class != report.ClassDNS || len(fp.Findings) == 0 || fp.Findings[0].Code != report.CodeDNSNXDomain ||
		!strings.Contains(fp.Error, "ErrImagePull") || !strings.Contains(fp.Comparison, "could not pull the probe image (dns DNS_NXDOMAIN on ") {
		t.Fatalf("from pod: %+v", fp)
	}
	if v.Class != report.ClassRoute {
		t.Errorf("the probe in the pod is beside the verdict, not part of it: class %s, want the pool's route", v.Class)
	}
}

// A pod or secret that verify takes credentials (or a pod network) from is read before anything is
// created: a mistyped name or namespace is one line and exit 2, not a namespace, an owner ConfigMap
// and a report of "0 of 0 pools".
func TestVerifyReadsItsSourcesBeforeCreating(t *testing.T) {
	opaque := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "opaque"}, Type: corev1.SecretTypeOpaque}
	for _, c := range []struct {
		name       string
		nsReadable bool
		o          VerifyOptions
		want       string
	}{
		{"--pod, namespace missing", true, VerifyOptions{FromPod: "nosuchns/x"},
			"--pod nosuchns/x: namespace nosuchns does not exist (kubectl get namespaces lists them) — nothing was created"},
		{"--pod, namespaces unreadable", false, VerifyOptions{FromPod: "nosuchns/x"},
			"--pod nosuchns/x: pod x not found in namespace nosuchns (does the namespace exist? kubectl get namespaces lists them; it was not read: no RBAC get on namespaces) — nothing was created"},
		{"--pod, pod missing", true, VerifyOptions{FromPod: "shop/x"},
			"--pod shop/x: pod x not found in namespace shop — nothing was created"},
		{"--secret, namespace missing", true, VerifyOptions{SecretNamespace: "nosuchns", Secret: "nosuch"},
			"--secret nosuch: namespace nosuchns does not exist (kubectl get namespaces lists them) — nothing was created"},
		{"--secret, namespaces unreadable", false, VerifyOptions{SecretNamespace: "nosuchns", Secret: "nosuch"},
			"--secret nosuch: secret nosuch not found in namespace nosuchns (does the namespace exist? kubectl get namespaces lists them; it was not read: no RBAC get on namespaces) — nothing was created"},
		{"--secret of another type", true, VerifyOptions{SecretNamespace: "shop", Secret: "opaque"},
			"--secret: secret shop/opaque has type Opaque: the kubelet only pulls with kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg secrets — nothing was created"},
		{"--from-pod, pod missing", true, VerifyOptions{ProbeImage: probeImg, ProbeFromPod: "shop/gone"},
			"--from-pod shop/gone: pod gone not found in namespace shop — nothing was created"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fc := fake.NewClientset(append(scenario(), opaque, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})...)
			allowing(fc)
			if !c.nsReadable {
				fc.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, &forbidden{}
				})
			}
			o := c.o
			o.Image, o.Namespace, o.MaxImages, o.Timeout = img, "pullpath", 50, time.Second
			o.Binary = func(string) ([]byte, string, error) { return []byte("bin"), "test", nil }
			v, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o)
			if v != nil || err == nil || err.Error() != c.want {
				t.Errorf("report %v, err\n%v\nwant\n%s", v, err, c.want)
			}
			for _, a := range fc.Actions() {
				if a.GetVerb() == "create" && a.GetResource().Resource != "selfsubjectaccessreviews" {
					t.Errorf("created %s in %q before the sources were read", a.GetResource().Resource, a.GetNamespace())
				}
			}
		})
	}
}
