package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
