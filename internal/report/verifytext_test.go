//go:build !probeonly

package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

// The text of verify --from-pod says which of the pod's pull secrets the probe in the pod
// presented, which not and why (a secret the operator cannot read), what it pulled with, and what
// each secret got in turn.
func TestVerifyTextFromPodSecrets(t *testing.T) {
	v := &Verification{Image: "registry.corp.example/shop/web:1", Class: ClassOK, Run: "r1", Namespace: "pullpath",
		FromPod: &PodProbe{Pod: "shop/web", Node: "b2", Pool: "poolb", Container: "pullpath-r1", Class: ClassOK,
			Probe: &Probe{Class: ClassOK, Summary: "pulled", CredentialSource: "pull secret shop/right key .dockercfg via $PULLPATH_PULL_SECRET_2 (entry registry.corp.example)",
				Warnings: []Warning{{Code: CodePullSecretMore, Message: "the kubelet tries each credential of the pod's pull secrets that covers the image until one pulls, and so did the probe: shop/wrong: auth (AUTH_401); shop/right: ok (OK)"}}},
			PullSecrets: []PodPullSecret{{Name: "wrong", Key: ".dockerconfigjson", HandedOver: true}, {Name: "hidden", Problem: "not readable: no RBAC get on secrets"}, {Name: "right", Key: ".dockercfg", HandedOver: true}},
			Comparison:  "the pod and the node b2 both reach the registry"}}
	var b bytes.Buffer
	if err := WriteVerifyText(&b, v); err != nil {
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

// When the probe in the pod left only its termination-message verdict (its log could not be read),
// the text prints that verdict — class, host, step, code — not "NO PROBE" with an empty reason.
func TestVerifyTextFromPodSummaryOnly(t *testing.T) {
	v := &Verification{Image: "registry.corp.example/shop/web:1", Class: ClassOK, Run: "r1", Namespace: "pullpath",
		FromPod: &PodProbe{Pod: "shop/web", Node: "b2", Pool: "poolb", Container: "pullpath-r1", Class: ClassEndpoint,
			Summary: &ProbeSummary{Class: ClassEndpoint, Code: CodeBlobRedirectFailed, Host: "blob.corp.example:443", Role: RoleBlob,
				Step: StepTCP, Summary: "the blob host times out"},
			Comparison: "the node b2 reaches the registry, the pod does not (endpoint)"}}
	var b bytes.Buffer
	if err := WriteVerifyText(&b, v); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "NO PROBE") {
		t.Errorf("the pod's verdict is shown as no probe:\n%s", out)
	}
	for _, want := range []string{
		"BROKEN  class endpoint · blob.corp.example:443 (blob) · step tcp · BLOB_REDIRECT_UNREACHABLE · from the probe's termination message",
		"the blob host times out",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	// an OK verdict from the termination message is OK, not broken
	v.FromPod.Class, v.FromPod.Summary = ClassOK, &ProbeSummary{Class: ClassOK, Code: CodeOK, Summary: "pulled 3 layers"}
	b.Reset()
	if err := WriteVerifyText(&b, v); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "  OK      class ok · OK · from the probe's termination message") || strings.Contains(out, "NO PROBE") {
		t.Errorf("ok verdict from the termination message:\n%s", out)
	}
	// no probe in the pod because the node could not pull the probe image: the text says why, as explain reads it
	v.FromPod.Class, v.FromPod.Summary, v.FromPod.Error = ClassDNS, nil, "the ephemeral container could not start: ErrImagePull: …"
	v.FromPod.Findings = []Finding{{Class: ClassDNS, Code: CodeDNSNXDomain, Host: "registry.corp.example:443", Role: RoleRegistry}}
	b.Reset()
	if err := WriteVerifyText(&b, v); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "NO PROBE  the ephemeral container could not start") ||
		!strings.Contains(out, "the probe image's pull, as explain reads it: class dns · registry.corp.example:443 (registry) · DNS_NXDOMAIN") {
		t.Errorf("no probe in the pod, its pull explained:\n%s", out)
	}
}

// The text of verify --pod says which of the pod's pull secrets the node probes presented, which
// not and why, and per pool what the probe pulled with and what each secret got in turn.
func TestVerifyTextPodSecrets(t *testing.T) {
	v := &Verification{Image: "registry.corp.example/shop/web:1", Class: ClassOK, Run: "r1", Namespace: "pullpath",
		Pools: []PoolResult{{Pool: "poolb", Node: "b2", Class: ClassOK,
			Probe: &Probe{Class: ClassOK, Summary: "pulled", CredentialSource: "pull secret shop/right key .dockercfg via $PULLPATH_PULL_SECRET_2 (entry registry.corp.example)",
				Warnings: []Warning{{Code: CodePullSecretMore, Message: "… shop/wrong: auth (AUTH_401); shop/right: ok (OK)"}}}}},
		PullSecrets: []PodPullSecret{{Name: "wrong", Key: ".dockerconfigjson", HandedOver: true}, {Name: "hidden", Problem: "not readable: no RBAC get on secrets"}, {Name: "right", Key: ".dockercfg", HandedOver: true}}}
	var b bytes.Buffer
	if err := WriteVerifyText(&b, v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"node probes and canaries\n  pull secrets  presented, tried in turn as the kubelet does: wrong, right\n  not presented hidden (not readable: no RBAC get on secrets)",
		"  OK      pulled\n  identity  pull secret shop/right key .dockercfg",
		"in turn   … shop/wrong: auth (AUTH_401); shop/right: ok (OK)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	// none readable: the node probes are said to pull with the node's configuration
	v.PullSecrets = []PodPullSecret{{Name: "hidden", Problem: "not readable: no RBAC get on secrets"}}
	b.Reset()
	_ = WriteVerifyText(&b, v)
	if !strings.Contains(b.String(), "pull secrets  none presented: they pull with the node's own configuration") {
		t.Errorf("no secret presented:\n%s", b.String())
	}
}

// Several answers of the kubelet's credential providers are tried in turn as pull secrets are: the
// text says what each got in both cases, per pool.
func TestVerifyTextProvidersInTurn(t *testing.T) {
	msg := "the kubelet tries each credential its providers gave until one pulls, and so did the probe: credential provider acr (first): auth (AUTH_401); credential provider acr (second): ok (OK)"
	v := &Verification{Image: "corp.azurecr.io/shop/web:1", Class: ClassOK, Run: "r1", Namespace: "pullpath",
		Pools: []PoolResult{{Pool: "poola", Node: "a1", Class: ClassOK,
			Probe: &Probe{Class: ClassOK, Summary: "pulled", CredentialSource: "credential provider acr (second)",
				Warnings: []Warning{{Code: CodeCredentialProviderMore, Message: msg}}}}}}
	var b bytes.Buffer
	if err := WriteVerifyText(&b, v); err != nil {
		t.Fatal(err)
	}
	if want := "  identity  credential provider acr (second)\n  in turn   " + msg + "\n"; !strings.Contains(b.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, b.String())
	}
}

// A pool whose probe left only its termination-message verdict (its log unreadable) is judged by
// that verdict: a failure with its class, code and host, not an error as if no probe had run; so is
// a pool whose probe pod never started, by explain's reading of its events when they name a cause.
func TestJUnitReportsEveryVerdict(t *testing.T) {
	v := &Verification{Image: "registry.cluster.test/app:1", Pools: []PoolResult{
		{Pool: "a", Node: "a-1", Class: ClassOK, Probe: &Probe{Class: ClassOK, Summary: "the whole path holds"}},
		{Pool: "b", Node: "b-1", Class: ClassAuth, Probe: &Probe{Class: ClassAuth, Code: CodeAuth401, Summary: "refused",
			Failing: &Failing{Host: "registry.cluster.test:5001", Role: RoleRegistry, Step: StepManifest}}},
		{Pool: "c", Node: "c-1", Class: ClassRoute, Error: "the probe's log could not be read",
			Summary: &ProbeSummary{Class: ClassRoute, Code: CodeTCPTimeout, Host: "registry.cluster.test:443", Role: RoleRegistry, Step: StepTCP, Summary: "no answer"}},
		{Pool: "d", Node: "d-1", Class: ClassOK, Error: "the probe's log could not be read",
			Summary: &ProbeSummary{Class: ClassOK, Code: CodeOK, Summary: "the whole path holds"}},
		{Pool: "e", Class: ClassOther, Error: "no eligible node"},
		{Pool: "f", Node: "f-1", Delivery: "image", Class: ClassAuth, Error: "the probe pod on f-1 could not start: ErrImagePull: …",
			Findings: []Finding{{Class: ClassOther, Code: CodeBackoffNoCause, Message: "Error: ErrImagePull"},
				{Class: ClassAuth, Code: CodeAuth401, Host: "probe.registry.example", Role: RoleRegistry, Message: "failed to authorize: 401 Unauthorized", Reason: "the registry refused the credentials"}}},
		{Pool: "g", Node: "g-1", Delivery: "image", Class: ClassOther, Error: "the probe pod on g-1 could not start: CreateContainerConfigError: …",
			Findings: []Finding{{Class: ClassOther, Code: CodeUnknown, Message: "Failed: configmap not found", Reason: "the probe pod's own events"}}},
		// delivered in ConfigMaps the pod pulls nothing: whatever its events say, no class of the path
		{Pool: "h", Node: "h-1", Delivery: "configmap", Class: ClassOther, Error: "the probe pod on h-1 could not start: CreateContainerError: …",
			Findings: []Finding{{Class: ClassOther, Code: CodeDiskFull, Message: "no space left on device", Reason: "the node's disk is full"}}},
	}}
	doc, b := readJUnit(t, v)
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites\n%s", len(doc.Suites), b)
	}
	s := doc.Suites[0]
	if s.Tests != 8 || s.Failures != 3 || s.Errors != 3 {
		t.Errorf("tests %d failures %d errors %d, want 8 3 3\n%s", s.Tests, s.Failures, s.Errors, b)
	}
	type want struct{ kind, typ, msg string }
	for i, w := range []want{
		{"pass", "", ""},
		{"failure", "auth", "class auth AUTH_401 on registry.cluster.test:5001 (registry) at manifest"},
		{"failure", "route", "class route TCP_TIMEOUT on registry.cluster.test:443 (registry) at tcp"},
		{"pass", "", ""},
		{"error", "no-probe", "no eligible node"},
		// the probe pod never started, and its events were classified: that class, code and host
		{"failure", "auth", "class auth AUTH_401 on probe.registry.example (registry)"},
		// events that name no pull failure leave it an error
		{"error", "no-probe", "the probe pod on g-1 could not start: CreateContainerConfigError: …"},
		{"error", "no-probe", "the probe pod on h-1 could not start: CreateContainerError: …"},
	} {
		c := s.Cases[i]
		kind, f := "pass", (*junitFailure)(nil)
		switch {
		case c.Failure != nil:
			kind, f = "failure", c.Failure
		case c.Error != nil:
			kind, f = "error", c.Error
		}
		if kind != w.kind || f != nil && (f.Type != w.typ || f.Message != w.msg) {
			t.Errorf("pool %s: %s %+v, want %s type %q message %q", v.Pools[i].Pool, kind, f, w.kind, w.typ, w.msg)
		}
	}
	if f := s.Cases[2].Failure; f == nil || !strings.Contains(f.Text, "termination message") || !strings.Contains(s.Cases[3].SystemOut, "termination message") {
		t.Errorf("a verdict from the termination message should say so: %+v / %q", f, s.Cases[3].SystemOut)
	}
}

// readJUnit renders v's JUnit report and reads it back: the document and its bytes.
func readJUnit(t *testing.T, v *Verification) (junitSuites, []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJUnit(&b, v); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.Bytes())
	}
	return doc, b.Bytes()
}
