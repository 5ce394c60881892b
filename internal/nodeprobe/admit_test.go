package nodeprobe

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
)

// The PodSecurity admission plugin's refusal, as kube-apiserver words it.
const psaRefusal = `pods "pullpath-x-admit" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), hostPath volumes (volume "host")`

// refusePodSecurity makes fc answer every pod create in the run namespace, dry run or not, as a
// namespace enforcing baseline does; it records whether the refused create was a dry run.
func refusePodSecurity(fc *fake.Clientset, dryRuns *int) {
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != "pullpath" {
			return false, nil, nil
		}
		if slices.Contains(a.(k8stesting.CreateActionImpl).CreateOptions.DryRun, metav1.DryRunAll) {
			*dryRuns++
		}
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "pullpath-x-admit", errors.New(strings.TrimPrefix(psaRefusal, `pods "pullpath-x-admit" is forbidden: `)))
	})
}

// created lists what was created in the run namespace for real (not a dry run).
func created(fc *fake.Clientset) []string {
	var out []string
	for _, a := range fc.Actions() {
		if c, ok := a.(k8stesting.CreateActionImpl); ok && a.GetNamespace() == "pullpath" && len(c.CreateOptions.DryRun) == 0 {
			out = append(out, a.GetResource().Resource+"/"+c.GetObject().(metav1.Object).GetName())
		}
	}
	return out
}

// In a run namespace that enforces Pod Security baseline, verify (with a pull secret to copy)
// and watch's prober stop at the dry run of the probe pod, with the plugin's own message, before
// the owner, the loader or a secret copy exists; and nothing is left.
func TestPodSecurityRefusalBeforeAnythingIsCreated(t *testing.T) {
	withCorp := append(scenario(), dockerSecret("shop", "corp", "registry.corp.example"))
	bin := func(string) ([]byte, string, error) { return []byte("\x7fELF not really"), "test", nil }
	for _, tc := range []struct {
		name string
		run  func(cs *cluster.Client) error
	}{
		{"verify --secret", func(cs *cluster.Client) error {
			_, err := Verify(context.Background(), cs, VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poola"}, MaxImages: 50,
				Timeout: 2 * time.Second, Binary: bin, SecretNamespace: "shop", Secret: "corp"})
			return err
		}},
		{"verify --probe-image", func(cs *cluster.Client) error {
			_, err := Verify(context.Background(), cs, VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poola"}, MaxImages: 50,
				Timeout: 2 * time.Second, ProbeImage: probeImg})
			return err
		}},
		{"watch", func(cs *cluster.Client) error {
			_, err := NewProber(context.Background(), cs, VerifyOptions{Namespace: "pullpath", Timeout: 2 * time.Second, Binary: bin, Delivery: ModeConfigMap}, []string{img})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := fake.NewClientset(withCorp...)
			allowing(fc)
			cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}
			var dryRuns int
			refusePodSecurity(fc, &dryRuns)
			err := tc.run(cs)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range []string{"namespace pullpath refuses the probe pod", `violates PodSecurity "baseline:latest"`, "nothing was created", "pod-security.kubernetes.io/enforce=privileged"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if dryRuns != 1 {
				t.Errorf("%d dry-run creates of the probe pod; want 1, first", dryRuns)
			}
			if c := created(fc); len(c) != 0 {
				t.Errorf("created before the refusal: %v", c)
			}
		})
	}
}

// The dry run is the probe pod verify creates next, not some other pod: same security fields,
// host mount and command shape.
func TestAdmitProbeDryRunsTheProbePod(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc)
	cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}
	var dry, real *corev1.Pod
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c := a.(k8stesting.CreateActionImpl)
		p := c.GetObject().(*corev1.Pod)
		if len(c.CreateOptions.DryRun) > 0 {
			dry = p.DeepCopy()
			return false, nil, nil
		}
		if real == nil {
			real = p.DeepCopy()
		}
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Message: `{"class":"ok","code":"OK","summary":"pulled completely"}`}}}}
		return false, nil, nil
	})
	if _, err := Verify(context.Background(), cs, VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poola"}, MaxImages: 50,
		Timeout: 2 * time.Second, ProbeImage: probeImg}); err != nil {
		t.Fatal(err)
	}
	if dry == nil || real == nil {
		t.Fatalf("dry run %v, probe pod %v", dry != nil, real != nil)
	}
	strip := func(p *corev1.Pod) corev1.PodSpec {
		s := *p.Spec.DeepCopy()
		s.NodeName, s.Containers[0].Command = "", s.Containers[0].Command[:1]
		return s
	}
	if d, r := strip(dry), strip(real); !equality.Semantic.DeepEqual(d, r) {
		t.Errorf("the dry run's spec differs from the probe pod's:\n%+v\n%+v", d, r)
	}
}
