package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/pullpath/pullpath/internal/cluster/clustertest"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"github.com/pullpath/pullpath/internal/report"
)

const (
	img    = clustertest.Image
	digest = clustertest.Digest
)

var (
	t0    = clustertest.T0
	node  = clustertest.Node
	pod   = clustertest.Pod
	event = clustertest.Event
)

var (
	dockerSecret = clustertest.DockerSecret
	scenario     = clustertest.Scenario
)

const pauseImg = clustertest.PauseImage

func TestDiagnosePodCachedImageLie(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	cs := &Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}
	d, err := DiagnosePod(context.Background(), cs, "shop", "web-new", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Class != report.ClassRoute || len(d.Findings) != 1 || d.Findings[0].Code != report.CodeTCPTimeout {
		t.Fatalf("class %s findings %+v", d.Class, d.Findings)
	}
	ci := d.CachedImage
	if ci == nil || ci.Digest != digest || strings.Join(ci.PresentOn, ",") != "a1,b1" || strings.Join(ci.AbsentOn, ",") != "b2" || strings.Join(ci.UnknownOn, ",") != "c1" {
		t.Fatalf("cached image %+v", ci)
	}
	for _, w := range []string{"present on 2 nodes", "absent on 1 node", "unknown on 1 node whose image list is full", "every failing pod (1) is on a node without the image", "the cached-image lie"} {
		if !strings.Contains(ci.Summary, w) {
			t.Errorf("summary lacks %q: %s", w, ci.Summary)
		}
	}
	byName := map[string]report.NodeImage{}
	for _, n := range d.Nodes {
		byName[n.Name] = n
	}
	if n := byName["b2"]; n.Pool != "poolb" || n.PoolLabel != "kubernetes.azure.com/agentpool" || n.ImagePresent == nil || *n.ImagePresent || len(n.FailingPods) != 1 || n.ImageVersion != "AKSUbuntu-2204gen2-202511.15.0" {
		t.Errorf("node b2 %+v", n)
	}
	if n := byName["c1"]; n.ImagePresent != nil {
		t.Errorf("a full image list is unknown, never absent: %+v", n)
	}
	if d.Nodes[0].Name != "b2" {
		t.Errorf("nodes newest first: %s", d.Nodes[0].Name)
	}
	if len(d.RunningElsewhere) != 2 {
		t.Errorf("running elsewhere %+v", d.RunningElsewhere)
	}
	c := d.Credentials
	if c == nil || len(c.PullSecrets) != 1 || c.PullSecrets[0].CoversRegistry == nil || *c.PullSecrets[0].CoversRegistry || !strings.Contains(c.NodeIdentity, "acr-credential-provider") {
		t.Fatalf("credentials %+v", c)
	}
	var kinds []string
	for _, e := range d.Timeline {
		kinds = append(kinds, e.Kind)
	}
	got := strings.Join(kinds, ",")
	if !strings.Contains(got, "pool-upgrade") || !strings.Contains(got, "first-failure") || !strings.HasPrefix(got, "node-created") {
		t.Errorf("timeline kinds %s", got)
	}
	if d.Next == nil || d.Next.Command != "pullpath verify "+img+" --fresh --pool poola --pool poolb --pod shop/web-new" {
		t.Errorf("next %+v", d.Next)
	}
	b, _ := json.Marshal(d)
	if strings.Contains(string(b), "s3cret") || strings.Contains(string(b), "dXNlcjpz") {
		t.Error("a secret value reached the report")
	}
	var sb strings.Builder
	if err := report.WritePodText(&sb, d); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sb.String(), "s3cret") || !strings.Contains(sb.String(), "does NOT cover registry.corp.example") {
		t.Errorf("text:\n%s", sb.String())
	}
}

// A pod whose pull secrets cover the image is diagnosed with the kubelet's whole order: its
// covering secrets in its keyring's order (the more specific key first), then the node's docker config and credential providers
// (which pod cannot read; the check that reads them is named), with no anonymous pull after; a
// secret for another registry or one on the service account only is not in the order.
func TestDiagnosePodKubeletCredentialOrder(t *testing.T) {
	objs := scenario()
	for i, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Name == "web-new" {
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "corp-a"}, {Name: "hidden"}, {Name: "corp-b"}}
			objs[i] = p
		}
	}
	objs = append(objs, dockerSecret("shop", "corp-a", "registry.corp.example"), dockerSecret("shop", "corp-b", "registry.corp.example/shop"))
	fc := fake.NewClientset(objs...)
	fc.PrependReactor("get", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() == "hidden" {
			return true, nil, &forbidden{}
		}
		return false, nil, nil
	})
	cs := &Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}
	d, err := DiagnosePod(context.Background(), cs, "shop", "web-new", Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := d.Credentials
	var got []string
	for _, o := range c.Order {
		got = append(got, fmt.Sprintf("%s %s %s %t", o.Source, o.Name, o.Entry, o.Known))
	}
	want := []string{"pull-secret corp-b registry.corp.example/shop true", "pull-secret corp-a registry.corp.example true", "pull-secret hidden  false",
		"node-docker-config   false", "credential-providers   false"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("order\n got %q\nwant %q", got, want)
	}
	for _, o := range c.Order[3:] {
		if !strings.Contains(o.Check, "pullpath verify "+img+" --pod shop/web-new") {
			t.Errorf("%s: check %q", o.Source, o.Check)
		}
	}
	if !strings.Contains(c.Order[4].Detail, "acr-credential-provider") {
		t.Errorf("providers: %q", c.Order[4].Detail)
	}
	for _, w := range []string{"the kubelet presents pull secrets corp-b, corp-a in turn", "then the node's docker config and its credential providers", "no anonymous pull follows"} {
		if !strings.Contains(c.Summary, w) {
			t.Errorf("summary lacks %q: %s", w, c.Summary)
		}
	}
	var sb strings.Builder
	if err := report.WritePodText(&sb, d); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"the kubelet's order, each tried in turn until one pulls:\n    1. the pod's pull secret corp-b, entry registry.corp.example/shop\n    2. the pod's pull secret corp-a, entry registry.corp.example\n",
		"    4. the kubelet's own docker config.json on the node", "    5. what the kubelet's credential providers", "  on the node: pullpath verify " + img + " --pod shop/web-new"} {
		if !strings.Contains(sb.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, sb.String())
		}
	}
	if strings.Contains(sb.String(), "s3cret") {
		t.Error("a secret value leaked")
	}
}

func TestDiagnosePodHealthyAndErrors(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	cs := &Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}
	d, err := DiagnosePod(context.Background(), cs, "shop", "web-a", Options{})
	if err != nil || d.Class != report.ClassOK || d.CachedImage != nil {
		t.Fatalf("healthy pod: %v %+v", err, d)
	}
	// the namespace is asked about only for a pod not found: a get says NotFound for a missing namespace too
	if _, err := DiagnosePod(context.Background(), cs, "shop", "nope", Options{}); err == nil || err.Error() != "namespace shop does not exist (kubectl get namespaces lists them)" {
		t.Errorf("missing namespace: %v", err)
	}
	_, _ = fc.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{})
	if _, err := DiagnosePod(context.Background(), cs, "shop", "nope", Options{}); err == nil || err.Error() != "pod nope not found in namespace shop" {
		t.Errorf("missing pod: %v", err)
	}
	fc.PrependReactor("get", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, &forbidden{}
	})
	if _, err := DiagnosePod(context.Background(), cs, "typo", "web-new", Options{}); err == nil ||
		err.Error() != "pod web-new not found in namespace typo (does the namespace exist? kubectl get namespaces lists them; it was not read: no RBAC get on namespaces)" {
		t.Errorf("missing pod, namespaces unreadable: %v", err)
	}
	fc.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, &forbidden{}
	})
	_, err = DiagnosePod(context.Background(), cs, "shop", "web-new", Options{})
	var re *RBACError
	if !asRBAC(err, &re) || re.Verb != "get" || re.Resource != "pods" || !strings.Contains(err.Error(), `needs RBAC verb "get" on "pods" in namespace shop`) {
		t.Errorf("forbidden: %v", err)
	}
}

func TestDiagnoseAllGroupsByImageAndCause(t *testing.T) {
	objs := scenario()
	other := pod("shop", "web-new-2", "b2", false)
	objs = append(objs, other, event(other, "Failed", "Warning", `Failed to pull image "`+img+`": rpc error: code = Unknown desc = failed to pull and unpack image "`+img+`": failed to resolve reference "`+img+`": failed to do request: Head "https://registry.corp.example/v2/shop/web/manifests/1.4": dial tcp 10.20.30.40:443: i/o timeout`, t0.Add(4*time.Hour), 1))
	l, err := DiagnoseAll(context.Background(), fakeClient(objs...), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Groups) != 1 || len(l.Groups[0].Pods) != 2 || l.Groups[0].Class != report.ClassRoute || strings.Join(l.Groups[0].Pools, ",") != "poolb" {
		t.Errorf("groups %+v", l.Groups)
	}
}

func fakeClient(objs ...runtime.Object) *Client {
	fc := fake.NewClientset(objs...)
	return &Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}
}

// A long history keeps the oldest entry and the most recent ones, and counts what it cut.
func TestTimelineCut(t *testing.T) {
	objs := scenario()
	for i := range 60 {
		objs = append(objs, node(fmt.Sprintf("b%02d", i+10), "poolb", t0.Add(time.Duration(i+10)*time.Minute), "AKSUbuntu-2204gen2-202510.01.0"))
	}
	fc := fake.NewClientset(objs...)
	d, err := DiagnosePod(context.Background(), &Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, "shop", "web-new", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Timeline) != maxTimeline || d.TimelineOmitted == 0 || !d.Timeline[0].Time.Equal(t0) {
		t.Fatalf("timeline of %d entries, %d omitted, first at %v", len(d.Timeline), d.TimelineOmitted, d.Timeline[0].Time)
	}
	for _, e := range d.Timeline {
		if e.Kind == "note" {
			t.Errorf("a note entry in the timeline: %+v", e)
		}
	}
	if last := d.Timeline[len(d.Timeline)-1]; last.Kind != "last-failure" && last.Kind != "first-failure" {
		t.Errorf("the most recent entry must stay: %+v", last)
	}
	var b strings.Builder
	if err := report.WritePodText(&b, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), fmt.Sprintf("(%d entries left out)", d.TimelineOmitted)) {
		t.Errorf("text does not say what the timeline left out:\n%s", b.String())
	}
}

// An identity that may not list events at cluster scope gets a timeline without scale-ups and a
// note naming the missing right (issue 34: they were dropped without a word).
func TestTimelineNotesUnreadableScaleUps(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	fc.PrependReactor("list", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "",
				errors.New(`User "dev" cannot list resource "events" in API group "" at the cluster scope`))
		}
		return false, nil, nil
	})
	cs := &Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}
	d, err := DiagnosePod(context.Background(), cs, "shop", "web-new", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "scale-ups are not on the timeline: the autoscalers' events could not be read (no RBAC list on events at cluster scope); node creations still are"
	if !slices.Contains(d.Notes, want) {
		t.Errorf("notes %q, want %q", d.Notes, want)
	}
	if len(d.Findings) == 0 {
		t.Error("the pod's own events (namespaced) were not read")
	}
	// with the right, no such note
	fc = fake.NewClientset(scenario()...)
	d, err = DiagnosePod(context.Background(), &Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, "shop", "web-new", Options{})
	if err != nil || slices.ContainsFunc(d.Notes, func(n string) bool { return strings.HasPrefix(n, "scale-ups") }) {
		t.Errorf("with the right: %v, notes %q", err, d.Notes)
	}
}
