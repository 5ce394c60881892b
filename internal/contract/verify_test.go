package contract

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/pullpath/pullpath/internal/cli"
	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"github.com/pullpath/pullpath/internal/nodeprobe"
	"github.com/pullpath/pullpath/internal/report"
)

// verify -o json as nodeprobe.Verify writes it, on the fake clientset (which runs no pod): the
// probe pods never finish within the timeout, a cordoned pool has no eligible node; every object
// made is cleaned up.
func TestVerificationFromVerify(t *testing.T) {
	objs := kubeCluster()
	cordoned := kubeNode("d1", "poold", t0, podImage)
	cordoned.Spec.Unschedulable = true
	objs = append(objs, cordoned)
	fc := fake.NewClientset(objs...)
	fc.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	v, err := nodeprobe.Verify(context.Background(), &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1())}, nodeprobe.VerifyOptions{
		Image: podImage, Namespace: "pullpath", Timeout: 300 * time.Millisecond, RuntimePull: true,
		Binary: func(string) ([]byte, string, error) { return []byte("\x7fELF not really"), "test", nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	doc := validate(t, "Verification", marshal(t, v))
	pools := doc["pools"].([]any)
	if len(pools) != 4 || doc["class"] == "ok" {
		t.Fatalf("class %v, %d pools", doc["class"], len(pools))
	}
	for _, p := range pools {
		p := p.(map[string]any)
		if p["probe"] != nil || p["error"] == "" {
			t.Errorf("pool %v: probe %v error %v", p["pool"], p["probe"], p["error"])
		}
	}
	if left := doc["leftBehind"].([]any); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if pods, _ := fc.CoreV1().Pods("pullpath").List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("%d pods left", len(pods.Items))
	}
}

// A verification whose pools carry real probe reports (healthy and broken, from the lab) and the
// kubelet's real pull beside them, as a run on a cluster writes it.
func TestVerificationWithProbeReports(t *testing.T) {
	e := lab(t)
	probeOf := func(stdin string, args ...string) *report.Probe {
		r := run(t, stdin, probeArgs(e, args...)...)
		var p report.Probe
		if err := json.Unmarshal(r.out, &p); err != nil {
			t.Fatalf("probe report: %v\n%s", err, r.errOut)
		}
		return &p
	}
	ok := probeOf(demo.Password+"\n", "-u", demo.User, "--password-stdin", e.Lab.Ref("team/app:1.4"))
	broken := probeOf("", "--anonymous", e.Lab.Ref("team/app:1.4"))
	yes, no := true, false
	v := report.Verification{APIVersion: report.APIVersion, Kind: "Verification", Image: ok.Image, Class: broken.Class, Run: "k7x2q",
		Namespace: "pullpath", LeftBehind: []string{}, Started: t0, Duration: report.Duration(41 * time.Second),
		Pools: []report.PoolResult{
			{Pool: "poola", Node: "a1", NodeCreated: t0, Choice: "the newest ready node", ImagePresentBefore: &yes, Delivery: "configmap", Class: ok.Class, Probe: ok,
				RuntimePull: &report.RuntimePull{Result: "ok", Cached: true, Took: report.Duration(120 * time.Millisecond)}},
			{Pool: "poolb", Node: "b2", NodeCreated: t0.Add(2 * time.Hour), Choice: "the newest ready node without the image", ImagePresentBefore: &no, Delivery: "image",
				Class: broken.Class, Probe: broken, RuntimePull: &report.RuntimePull{Result: "failed", Class: broken.Class, Code: broken.Code, Host: broken.Failing.Host,
					Role: broken.Failing.Role, Message: "failed to authorize: 401 Unauthorized", Agrees: &yes, Took: report.Duration(2 * time.Second)}},
			{Pool: "poolc", Delivery: "configmap", Class: report.ClassOther, Error: "no eligible node: c1 (NotReady)"},
		}}
	doc := validate(t, "Verification", marshal(t, v))
	if doc["class"] != "auth" {
		t.Errorf("class %v", doc["class"])
	}
	if strings.Contains(string(marshal(t, v)), demo.Password) {
		t.Error("the password reached the document")
	}
}

// --no-download: the report says the download is partial and unverified.
func TestProbeReportNoDownload(t *testing.T) {
	e := lab(t)
	r := run(t, demo.Password+"\n", probeArgs(e, "-u", demo.User, "--password-stdin", "--no-download", e.Lab.Ref("team/app:1.4"))...)
	if r.code != cli.ExitOK && r.code != cli.ExitBroken {
		r.wantExit(t, cli.ExitOK)
	}
	doc := validate(t, "ProbeReport", r.out)
	d := doc["download"].(map[string]any)
	if d["partial"] != "no-download" || d["verified"] != false {
		t.Errorf("download %v", d)
	}
}
