package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/report"
)

// The text of verify --from-pod says which of the pod's pull secrets the probe in the pod
// presented, which not and why (a secret the operator cannot read), what it pulled with, and what
// each secret got in turn.
func TestVerifyTextFromPodSecrets(t *testing.T) {
	v := &report.Verification{Image: "registry.corp.example/shop/web:1", Class: report.ClassOK, Run: "r1", Namespace: "pullpath",
		FromPod: &report.PodProbe{Pod: "shop/web", Node: "b2", Pool: "poolb", Container: "pullpath-r1", Class: report.ClassOK,
			Probe: &report.Probe{Class: report.ClassOK, Summary: "pulled", CredentialSource: "pull secret shop/right key .dockercfg via $PULLPATH_PULL_SECRET_2 (entry registry.corp.example)",
				Warnings: []report.Warning{{Code: report.CodePullSecretMore, Message: "the kubelet tries each credential of the pod's pull secrets that covers the image until one pulls, and so did the probe: shop/wrong: auth (AUTH_401); shop/right: ok (OK)"}}},
			PullSecrets: []report.PodPullSecret{{Name: "wrong", Key: ".dockerconfigjson", HandedOver: true}, {Name: "hidden", Problem: "not readable: no RBAC get on secrets"}, {Name: "right", Key: ".dockercfg", HandedOver: true}},
			Comparison:  "the pod and the node b2 both reach the registry"}}
	var b bytes.Buffer
	if err := writeVerifyText(&b, v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"pull secrets  presented, tried in turn as the kubelet does: wrong, right",
		"not presented hidden (not readable: no RBAC get on secrets)",
		"identity  pull secret shop/right key .dockercfg",
		"in turn   the kubelet tries each credential of the pod's pull secrets that covers the image until one pulls, and so did the probe: shop/wrong: auth (AUTH_401); shop/right: ok (OK)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}
