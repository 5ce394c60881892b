package nodeprobe

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"github.com/pullpath/pullpath/internal/loader"
	"github.com/pullpath/pullpath/internal/report"
)

// attachCluster is the fake cluster with probe pods that start Running and finish once their
// stdin has delivered the whole binary (what the loader checks): the attach stream is fake, the
// bookkeeping around it is real.
type attachCluster struct {
	fc       *fake.Clientset
	bin      []byte
	mu       sync.Mutex
	received map[string][]byte // pod → what its stdin got
	fail     func(pod string) error
	cut      bool // the stream ends early: the loader's size check fails
	specs    []*corev1.Pod
	cms      []*corev1.ConfigMap
}

func newAttachCluster(t *testing.T, bin []byte, deny ...string) *attachCluster {
	a := &attachCluster{fc: fake.NewClientset(scenario()...), bin: bin, received: map[string][]byte{}}
	allowing(a.fc, deny...)
	a.fc.PrependReactor("create", "configmaps", func(act k8stesting.Action) (bool, runtime.Object, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.cms = append(a.cms, act.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap).DeepCopy())
		return false, nil, nil
	})
	a.fc.PrependReactor("create", "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
		p := act.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		a.mu.Lock()
		a.specs = append(a.specs, p.DeepCopy())
		a.mu.Unlock()
		if p.Spec.Containers[0].Stdin {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		} else { // ConfigMap delivery: the loader joins the parts and the probe runs at once
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Message: `{"class":"route","code":"ROUTE_NONE","host":"registry.corp.example:443","role":"registry","step":"route"}`, ExitCode: 1}}}}
		}
		return false, nil, nil
	})
	return a
}

func (a *attachCluster) client() *cluster.Client {
	return &cluster.Client{Core: kubefake.Core(a.fc.CoreV1()), Authz: kubefake.Authz(a.fc.AuthorizationV1()), Attach: func(ctx context.Context, ns, pod, container string, stdin io.Reader) error {
		if a.fail != nil {
			if err := a.fail(pod); err != nil {
				return err
			}
		}
		got, err := io.ReadAll(stdin)
		if err != nil {
			return err
		}
		a.mu.Lock()
		a.received[pod] = got
		a.mu.Unlock()
		p, err := a.fc.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		term := &corev1.ContainerStateTerminated{ExitCode: 1, Message: `{"class":"route","code":"ROUTE_NONE","host":"registry.corp.example:443","role":"registry","step":"route"}`}
		if a.cut || !bytes.Equal(got, a.bin) { // the loader's own check
			term = &corev1.ContainerStateTerminated{ExitCode: loader.ExitSize, Message: "pullpath-loader: read 3 bytes from stdin, want 9: the stream was cut"}
		}
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: term}}}
		_, err = a.fc.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		<-ctx.Done() // a real stream lasts until the container ends and the caller stops it
		return nil
	}}
}

func (a *attachCluster) verify(t *testing.T, delivery string) *report.Verification {
	t.Helper()
	o := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poolc"}, MaxImages: 50, Timeout: 10 * time.Second, Delivery: delivery,
		Binary: func(string) ([]byte, string, error) { return a.bin, "test build", nil }}
	v, err := Verify(context.Background(), a.client(), o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (a *attachCluster) binaryConfigMaps() int {
	n := 0
	for _, cm := range a.cms {
		if cm.Labels[cluster.LabelRole] == "binary" {
			n++
		}
	}
	return n
}

// By default the binary is streamed into the probe pod: the pod reads stdin once, the loader
// reads it from "-", nothing but the loader is stored, and the verdict is the probe's.
func TestVerifyAttachDelivery(t *testing.T) {
	bin := bytes.Repeat([]byte("probe-bin"), 300_000) // 2.7 MB: three ConfigMaps' worth
	a := newAttachCluster(t, bin)
	v := a.verify(t, "")
	p := v.Pools[0]
	if p.Delivery != ModeAttach || p.Class != report.ClassRoute || p.Summary == nil || p.Summary.Code != report.CodeRouteNone {
		t.Fatalf("pool c: delivery %s class %s error %q", p.Delivery, p.Class, p.Error)
	}
	if len(a.specs) != 1 {
		t.Fatalf("%d probe pods, want 1", len(a.specs))
	}
	c := a.specs[0].Spec.Containers[0]
	// the loader runs only the binary whose digest the command names
	sum := sha256.Sum256(bin)
	if !c.Stdin || !c.StdinOnce || c.TTY || !slices.Equal(c.Command[:6], []string{"/pp/parts/loader", "-", "/pp/run/pullpath", "2700000", hex.EncodeToString(sum[:]), "--"}) {
		t.Errorf("probe container: stdin %v once %v tty %v command %q", c.Stdin, c.StdinOnce, c.TTY, c.Command[:6])
	}
	if got := a.received[a.specs[0].Name]; !bytes.Equal(got, bin) {
		t.Errorf("the stream delivered %d bytes, want the binary's %d", len(got), len(bin))
	}
	if n := a.binaryConfigMaps(); n != 0 {
		t.Errorf("%d ConfigMaps of the binary stored with attach delivery", n)
	}
	if v.Stored.Bytes > 64<<10 || v.Stored.Objects != 2 { // the owner and the loader
		t.Errorf("stored %+v; want the owner and the loader only", v.Stored)
	}
	if d := p.DeliveryStats; d == nil || d.Bytes != len(bin) || d.Source != "test build" || d.Start <= 0 || d.Fallback != "" {
		t.Errorf("delivery stats %+v", d)
	}
	if len(v.LeftBehind) != 0 {
		t.Errorf("left behind %v", v.LeftBehind)
	}
}

// A stream that breaks is retried once with ConfigMaps, on the same node, and says so; with
// --delivery attach it is not, and the pool is not verified, with the stream's reason.
func TestVerifyAttachFallsBackToConfigMaps(t *testing.T) {
	bin := []byte("probe-bin")
	a := newAttachCluster(t, bin)
	a.fail = func(string) error { return errors.New("attach to pod pullpath/x: upgrade request required") }
	v := a.verify(t, "")
	p := v.Pools[0]
	if p.Delivery != ModeConfigMap || p.Class != report.ClassRoute || p.DeliveryStats == nil || !strings.Contains(p.DeliveryStats.Fallback, "upgrade request required") {
		t.Fatalf("pool c: delivery %s class %s stats %+v error %q", p.Delivery, p.Class, p.DeliveryStats, p.Error)
	}
	if len(a.specs) != 2 || a.binaryConfigMaps() != 1 {
		t.Errorf("%d probe pods and %d binary ConfigMaps; want the attach try, then one with ConfigMaps", len(a.specs), a.binaryConfigMaps())
	}
	if !slices.ContainsFunc(v.Notes, func(n string) bool { return strings.Contains(n, "its probe was delivered in ConfigMaps instead") }) {
		t.Errorf("notes %q", v.Notes)
	}

	a = newAttachCluster(t, bin)
	a.fail = func(string) error { return errors.New("attach to pod pullpath/x: upgrade request required") }
	p = a.verify(t, ModeAttach).Pools[0]
	if p.Delivery != ModeAttach || p.Class != report.ClassOther || !strings.Contains(p.Error, "upgrade request required") || a.binaryConfigMaps() != 0 {
		t.Errorf("--delivery attach: delivery %s class %s error %q, %d binary ConfigMaps", p.Delivery, p.Class, p.Error, a.binaryConfigMaps())
	}
}

// A stream cut short is the loader's exit 124: retried with ConfigMaps, never run half a binary.
func TestVerifyAttachCutStream(t *testing.T) {
	a := newAttachCluster(t, []byte("probe-bin"))
	a.cut = true
	v := a.verify(t, "")
	p := v.Pools[0]
	if p.Delivery != ModeConfigMap || p.DeliveryStats == nil || !strings.Contains(p.DeliveryStats.Fallback, "the stream was cut") {
		t.Errorf("pool c: delivery %s stats %+v error %q", p.Delivery, p.DeliveryStats, p.Error)
	}
}

// Without create on pods/attach the run stores the binary in ConfigMaps from the start, with a
// note; --delivery attach makes the right a requirement, checked before anything is created.
func TestVerifyAttachRefused(t *testing.T) {
	ac := newAttachCluster(t, []byte("probe-bin"))
	denyAttach(ac.fc)
	v := ac.verify(t, "")
	if p := v.Pools[0]; p.Delivery != ModeConfigMap || ac.binaryConfigMaps() != 1 || len(ac.received) != 0 {
		t.Errorf("pool c: delivery %s, %d binary ConfigMaps, %d streams", p.Delivery, ac.binaryConfigMaps(), len(ac.received))
	}
	if !slices.ContainsFunc(v.Notes, func(n string) bool { return strings.Contains(n, "may not create pods/attach in namespace pullpath") }) {
		t.Errorf("notes %q", v.Notes)
	}
	ac = newAttachCluster(t, []byte("probe-bin"))
	denyAttach(ac.fc)
	_, err := Verify(context.Background(), ac.client(), VerifyOptions{Image: img, Namespace: "pullpath", Delivery: ModeAttach, MaxImages: 50,
		Binary: func(string) ([]byte, string, error) { return []byte("x"), "t", nil }})
	if err == nil || !strings.Contains(err.Error(), "create pods/attach in namespace pullpath") || len(ac.cms) != 0 {
		t.Errorf("--delivery attach without the right: err %v, %d ConfigMaps created", err, len(ac.cms))
	}
}

// denyAttach refuses create on pods/attach in access reviews (allowing keys on the resource only).
func denyAttach(fc *fake.Clientset) {
	fc.PrependReactor("create", "selfsubjectaccessreviews", func(act k8stesting.Action) (bool, runtime.Object, error) {
		r := act.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview)
		if ra := r.Spec.ResourceAttributes; ra.Subresource == "attach" {
			r.Status.Allowed = false
			return true, r, nil
		}
		return false, nil, nil
	})
}

// A probe pod whose volumes the kubelet cannot mount never starts: the pool says so in the
// kubelet's words, not with what a half-delivered binary would print (execve: ENOENT).
func TestVerifyDeliveryThatNeverMounts(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	allowing(fc)
	fc.PrependReactor("create", "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
		p := act.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: p.Name + ".1", Namespace: p.Namespace}, Type: corev1.EventTypeWarning, Reason: "FailedMount",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: p.Name, Namespace: p.Namespace},
			Message:        `MountVolume.SetUp failed for volume "parts" : failed to sync configmap cache: timed out waiting for the condition`}
		if err := fc.Tracker().Add(ev); err != nil {
			t.Error(err)
		}
		return false, nil, nil
	})
	o := VerifyOptions{Image: img, Namespace: "pullpath", Pools: []string{"poolc"}, MaxImages: 50, Timeout: 1500 * time.Millisecond, Delivery: ModeConfigMap,
		Binary: func(string) ([]byte, string, error) { return []byte("bin"), "t", nil }}
	v, err := Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, o)
	if err != nil {
		t.Fatal(err)
	}
	p := v.Pools[0]
	if p.Class != report.ClassOther || !strings.Contains(p.Error, "did not finish") || !strings.Contains(p.Error, "the kubelet says: FailedMount: MountVolume.SetUp failed for volume \"parts\"") {
		t.Errorf("pool c: class %s error %q", p.Class, p.Error)
	}
}

// A run namespace verify had to create is deleted at the end, and its deletion waited for.
func TestVerifyDropsTheNamespaceItMade(t *testing.T) {
	a := newAttachCluster(t, []byte("probe-bin"))
	o := VerifyOptions{Image: img, Namespace: "pp-made", Pools: []string{"poolc"}, MaxImages: 50, Timeout: 10 * time.Second,
		Binary: func(string) ([]byte, string, error) { return a.bin, "t", nil }}
	v, err := Verify(context.Background(), a.client(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.LeftBehind) != 0 {
		t.Errorf("left behind %v", v.LeftBehind)
	}
	if _, err := a.fc.CoreV1().Namespaces().Get(context.Background(), "pp-made", metav1.GetOptions{}); err == nil {
		t.Error("namespace pp-made, which verify made, is still there")
	}
	var created, deleted bool
	for _, act := range a.fc.Actions() {
		if act.GetResource().Resource == "namespaces" {
			created = created || act.GetVerb() == "create"
			deleted = deleted || act.GetVerb() == "delete"
		}
	}
	if !created || !deleted {
		t.Errorf("namespace created %v, deleted %v", created, deleted)
	}
}

// TestDeliveryHealsAndRefusesAnImpostor: a long-lived run (watch) re-checks its loader before each
// use: deleted (pullpath cleanup) it is delivered again; replaced by other bytes it is deleted and
// replaced by pullpath's own, never run (issue 33 items 2 and 5).
func TestDeliveryHealsAndRefusesAnImpostor(t *testing.T) {
	fc := fake.NewClientset()
	cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}
	bin := []byte("\x7fELF probe")
	r := newRun(context.Background(), cs, VerifyOptions{Namespace: "pullpath", Binary: func(string) ([]byte, string, error) { return bin, "test", nil }})
	ctx := context.Background()
	d := r.deliver(ctx, "amd64", ModeConfigMap)
	if d.err != nil {
		t.Fatal(d.err)
	}
	cms := fc.CoreV1().ConfigMaps("pullpath")
	lcm, err := cms.Get(ctx, d.loader, metav1.GetOptions{})
	if err != nil || lcm.Immutable == nil || !*lcm.Immutable {
		t.Fatalf("loader ConfigMap %v (err %v): want it immutable", lcm, err)
	}
	if again := r.deliver(ctx, "amd64", ModeConfigMap); again != d {
		t.Errorf("an intact delivery was made again")
	}

	// a cleanup deleted everything: delivered again, under the same names
	for _, n := range append([]string{d.loader}, d.parts...) {
		if err := cms.Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	healed := r.deliver(ctx, "amd64", ModeConfigMap)
	if healed == d || healed.err != nil {
		t.Fatalf("after a cleanup: same delivery %v, err %v; want a new one", healed == d, healed.err)
	}
	for _, n := range append([]string{healed.loader}, healed.parts...) {
		if _, err := cms.Get(ctx, n, metav1.GetOptions{}); err != nil {
			t.Errorf("%s not made again: %v", n, err)
		}
	}

	// someone replaced the loader with their own program
	if err := cms.Delete(ctx, healed.loader, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	evil := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: healed.loader, Namespace: "pullpath"}, BinaryData: map[string][]byte{loader.File: []byte("#!/bin/sh\nid\n")}}
	if _, err := cms.Create(ctx, evil, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	third := r.deliver(ctx, "amd64", ModeConfigMap)
	got, err := cms.Get(ctx, third.loader, metav1.GetOptions{})
	want, _ := loader.Binary("amd64")
	if third == healed || err != nil || !bytes.Equal(got.BinaryData[loader.File], want) {
		t.Errorf("after a replaced loader: new delivery %v, the loader ConfigMap holds pullpath's loader: %v (err %v)", third != healed, err == nil && bytes.Equal(got.BinaryData[loader.File], want), err)
	}
	if !slices.ContainsFunc(r.notes, func(s string) bool { return strings.Contains(s, "not the one this run made") }) {
		t.Errorf("notes %q do not say the loader was replaced", r.notes)
	}
}
