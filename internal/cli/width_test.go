//go:build !probeonly

package cli

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pullpath/pullpath/internal/events"
	"github.com/pullpath/pullpath/internal/report"
)

// longRegistry makes host names as long as real ones (private endpoints, Karpenter node names).
const longRegistry = "platformteam-prod-westeurope.privatelink.azurecr.io"

// longVerification is a verification as verify reports one on real pools: long node names,
// hosts, summaries and a note.
func longVerification() *report.Verification {
	img := longRegistry + "/shop/checkout-service:2024.11.3-build.4711"
	fail := &report.Probe{Class: report.ClassEndpoint, Code: report.CodeBlobRedirectFailed,
		Summary:     "the blob host prodweu0blobs.z6.blob.storage.azure.net:443 (a redirect target of the registry) did not answer within 30s from node aks-nodepool2-31415926-vmss00000b",
		WhereToLook: "every hostname the registry hands out during the pull (the allowlist): the firewall's application rules for *.blob.storage.azure.net",
		Failing:     &report.Failing{Host: "prodweu0blobs.z6.blob.storage.azure.net:443", Role: report.RoleBlob, Step: report.StepTCP}}
	return &report.Verification{Image: img, Class: report.ClassEndpoint, Run: "3f9c04ab", Namespace: "pullpath",
		Pools: []report.PoolResult{
			{Pool: "nodepool1-general-purpose-d8sv5", Node: "aks-nodepool1-general-purpose-d8sv5-27182818-vmss000003", Class: report.ClassOK,
				NodeCreated: time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC), Choice: "the newest Ready node without the image", Probe: &report.Probe{Class: report.ClassOK, Summary: "pulled " + img + " completely: manifest, config and 14 layers (412 MB), every digest verified"}},
			{Pool: "nodepool2-memory-optimized-e16sv5", Node: "aks-nodepool2-memory-optimized-e16sv5-31415926-vmss00000b", Class: report.ClassEndpoint,
				NodeCreated: time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC), Choice: "the newest Ready node without the image", Probe: fail},
		},
		Notes: []string{"the run namespace pullpath was made for this run and deleted after it; its objects carried pullpath.dev/run=3f9c04ab and pullpath.dev/expires"}}
}

// longPodDiagnosis is a pod diagnosis with a real containerd message, long names and a timeline.
func longPodDiagnosis() *report.PodDiagnosis {
	img := longRegistry + "/shop/checkout-service:2024.11.3-build.4711"
	msg := `Failed to pull image "` + img + `": rpc error: code = Unknown desc = failed to pull and unpack image "` + img + `": failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://prodweu0blobs.z6.blob.storage.azure.net/docker/registry/v2/blobs/sha256/4f/4f4fb700ef54461cfa02571ae0db9a0dc1e0cdb5577484a6d75e68dc38e8acc1/data?se=2026-11-04T10%3A00%3A00Z&sig=REDACTED": dial tcp 20.60.1.1:443: i/o timeout`
	msgs, _, _ := events.Parse(strings.NewReader(msg))
	node := "aks-nodepool2-memory-optimized-e16sv5-31415926-vmss00000b"
	return &report.PodDiagnosis{Kind: "PodDiagnosis",
		Pod:      report.PodRef{Namespace: "shop-production-westeurope", Name: "checkout-service-7d9f8b6c5-x2x7q", Node: node, Phase: "Pending", Owner: "ReplicaSet/checkout-service-7d9f8b6c5", Containers: []report.ContainerRef{{Name: "checkout-service", Image: img, State: "waiting", Reason: "ImagePullBackOff", Message: "Back-off pulling image \"" + img + "\""}}},
		Class:    report.ClassEndpoint,
		Findings: events.Explain(msgs),
		Nodes:    []report.NodeImage{{Name: node, Pool: "nodepool2-memory-optimized-e16sv5", PoolLabel: "kubernetes.azure.com/agentpool", Created: time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC), Ready: true, Schedulable: true, ImageVersion: "AKSUbuntu-2204gen2containerd-202611.01.0", Runtime: "containerd://1.7.27-1", Kubelet: "v1.37.2", Arch: "amd64"}},
		Timeline: []report.TimelineEntry{{Time: time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC), Kind: "scale-up", Event: "cluster-autoscaler: pod triggered scale-up: [{aks-nodepool2-memory-optimized-e16sv5-31415926-vmss 3->4 (max: 20)}]"}},
		Notes:    []string{"scale-ups are not on the timeline: the identity may not list events at cluster scope (needs RBAC verb \"list\" on \"events\" at cluster scope)"}}
}

// Text written to a pipe fits the README's 80 columns, counted in runes (issue 34: verify
// reached 232 columns, pod 358); nothing of it is lost in the folding.
func TestPipedTextFits80(t *testing.T) {
	for name, render := range map[string]func(io.Writer) error{
		"verify": func(w io.Writer) error { return report.WriteVerifyText(w, longVerification()) },
		"pod":    func(w io.Writer) error { return report.WritePodText(w, longPodDiagnosis()) },
		"pod --all": func(w io.Writer) error {
			return report.WritePullFailuresText(w, &report.PullFailures{Kind: "PullFailureList", PodsSeen: 1})
		},
	} {
		var raw, out bytes.Buffer
		if err := render(&raw); err != nil {
			t.Fatal(err)
		}
		if err := writeFitted(nil, &out, render); err != nil {
			t.Fatal(err)
		}
		if name != "pod --all" && !slices.ContainsFunc(strings.Split(raw.String(), "\n"), func(l string) bool { return utf8.RuneCountInString(l) > 80 }) {
			t.Errorf("%s: the renderer's own text fits 80 columns: the case checks nothing", name)
		}
		for i, l := range strings.Split(out.String(), "\n") {
			if n := utf8.RuneCountInString(l); n > 80 {
				t.Errorf("%s: line %d is %d columns: %q", name, i+1, n, l)
			}
		}
		if got, want := strings.Join(strings.Fields(out.String()), ""), strings.Join(strings.Fields(raw.String()), ""); got != want {
			t.Errorf("%s: folding changed the text:\n%s\nwant\n%s", name, out.String(), raw.String())
		}
	}
}

// Fit folds at a space, inside a word longer than the line, keeps short lines and the last newline.
func TestFit(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"short\n", "short\n"},
		{"  aaaa bbbb cccc\n", "  aaaa\n     bbbb\n     cccc\n"}, // the indent stops at half the width
		{"xxxxxxxxxxxxxx", "xxxxxxxxxx\n    xxxx"},
		{"é é é é é é\n", "é é é é é\n    é\n"},
	} {
		if got := report.Fit(tc.in, 10); got != tc.want {
			t.Errorf("Fit(%q, 10) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
