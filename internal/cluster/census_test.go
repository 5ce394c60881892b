package cluster

import (
	"context"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/cluster/clustertest"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// A kube-apiserver (v1.37.2, the cluster tier) refuses nodes/proxy with a Status body that the raw
// request's error drops: client-go says "unknown (get nodes NAME)". The note must still name the
// right the identity lacks.
func TestReadCapsForbiddenNamesTheRight(t *testing.T) {
	// the body the real apiserver sends
	cs := refusingAPI(t, "/api/v1/nodes/poolb-2/proxy/configz", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes \"poolb-2\" is forbidden: User \"system:serviceaccount:rbac-96lzp:noproxy\" cannot get resource \"nodes/proxy\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"name":"poolb-2","kind":"nodes"},"code":403}`)
	var notes []string
	c := &census{cs: cs, o: Options{KubeletConfig: true, MaxImages: DefaultMaxImages}, notes: &notes}
	c.readCaps(context.Background(), []string{"poolb-2"})
	want := "the kubelet configuration (/configz through nodes/proxy) of some nodes could not be read (no RBAC get on nodes/proxy): their image lists are taken as capped at 50"
	if len(notes) != 1 || notes[0] != want {
		t.Errorf("notes %q, want %q", notes, want)
	}
	if len(c.caps) != 0 {
		t.Errorf("caps %v, want none read", c.caps)
	}
	if strings.Contains(strings.Join(notes, " "), "unknown") {
		t.Errorf("the note passes on client-go's empty message: %q", notes)
	}
}

// refusingAPI is an API server that refuses path with a 403 and status, the Status body a
// kube-apiserver sends, and finds nothing else; the client talks to it.
func refusingAPI(t *testing.T, path, status string) *Client {
	cs, err := NewClient(&rest.Config{Host: clustertest.RefusingServer(t, path, status)})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Without the kubelet's configuration a full image list makes the image's presence unknown, and
// the report says how to settle it: verify on that pool, or the runtime on the node.
func TestUnknownPresenceSaysHowToSettleIt(t *testing.T) {
	fc := fake.NewClientset(scenario()...)
	d, err := DiagnosePod(context.Background(), &Client{Core: kubefake.Core(fc.CoreV1())}, "shop", "web-new", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "whether the image is on c1 is unknown (image list full): settle it with pullpath verify " + img + " --pool poolc (a fresh probe on a node of that pool), or pullpath probe " + img + " --cri on the node (its runtime answers)"
	if ci := d.CachedImage; ci == nil || strings.Join(ci.UnknownOn, ",") != "c1" || ci.Settle != want {
		t.Errorf("cached image %+v,\nwant settle %q", ci, want)
	}
	for _, a := range fc.Actions() {
		if a.GetResource().Resource == "nodes" && a.GetSubresource() == "proxy" {
			t.Errorf("a kubelet was asked through nodes/proxy without KubeletConfig: %v", a)
		}
	}
}
