package cluster

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/pullpath/pullpath/internal/report"
)

// Issue 19 item 5: a hosts.toml [host] that repeats the server is the registry, not a mirror.
// poolb-2 has containerd's documented hosts.toml for a private CA, poolb-1 and poola-2 kubespray's;
// pool B has no route to the registry. For each pool B node, `pod` on a failing pod and `verify`
// say route on the registry, and the kubelet's real pull agrees; on poola-2 verify passes. The
// probe lists the [host] and the server, both registry.
func TestSelfMirrorHostsToml(t *testing.T) {
	c := sharedCluster(t)
	runNamespace(t, c)
	ns := c.Namespace(t, "selfmirror")
	im := c.Images[cachedImage]
	nodes := []string{"poolb-1", "poolb-2"}
	for _, n := range nodes {
		// poolb-1 has the image cached: Always makes the kubelet pull it
		c.CreatePod(t, PodOn(ns, "app-"+n, n, im.Ref, corev1.PullAlways))
	}
	for _, n := range nodes {
		c.WaitPod(t, ns, "app-"+n, 2*time.Minute, "ErrImagePull or ImagePullBackOff", func(p *corev1.Pod) bool {
			r := waitingReason(p)
			return r == "ErrImagePull" || r == "ImagePullBackOff"
		})
		out, errOut, code := c.Run(t, "pod", "app-"+n, "-n", ns, "-o", "json")
		var d report.PodDiagnosis
		if err := json.Unmarshal([]byte(out), &d); err != nil || code != 1 {
			t.Fatalf("pod on %s: exit %d: %v\n%s\n%s", n, code, err, out, errOut)
		}
		if f := d.Findings; d.Class != report.ClassRoute || len(f) == 0 || !strings.HasPrefix(f[0].Host, registry) || f[0].Role != report.RoleRegistry {
			t.Errorf("pod on %s: class %s findings %+v, want route on the registry", n, d.Class, f)
		}
	}

	out, errOut, code := c.Run(t, "verify", im.Ref, "--pool", "poola", "--pool", "poolb", "--all-nodes", "--runtime-pull",
		"--run-namespace", runNS, "--probe-timeout", "90s", "-o", "json")
	var v report.Verification
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 1 {
		t.Fatalf("verify: exit %d, want 1: %v\n%s\n%s", code, err, out, errOut)
	}
	want := map[string]report.Class{"poola-2": report.ClassOK, "poolb-1": report.ClassRoute, "poolb-2": report.ClassRoute}
	for _, p := range v.Pools {
		class, ok := want[p.Node]
		if !ok {
			continue
		}
		delete(want, p.Node)
		if p.Probe == nil {
			t.Errorf("%s: no probe report: %s", p.Node, p.Error)
			continue
		}
		if p.Class != class {
			t.Errorf("%s: class %s (%s), want %s", p.Node, p.Class, p.Probe.Summary, class)
		}
		if f := p.Probe.Failing; class == report.ClassRoute && (f == nil || f.Host != registry+":443" || f.Role != report.RoleRegistry) {
			t.Errorf("%s: failing %+v, want %s:443 (registry)", p.Node, f, registry)
		}
		var roles []string
		if rt := p.Probe.Runtime; rt != nil {
			for _, h := range rt.Hosts {
				roles = append(roles, string(h.Role))
			}
		}
		if strings.Join(roles, " ") != "registry registry" {
			t.Errorf("%s: the runtime's hosts have roles %v, want the [host] and the server, both registry: %+v", p.Node, roles, p.Probe.Runtime)
		}
		if rp := p.RuntimePull; rp == nil || rp.Agrees == nil || !*rp.Agrees {
			t.Errorf("%s: the kubelet's real pull and the probe must agree: %+v", p.Node, rp)
		}
	}
	if len(want) > 0 {
		t.Errorf("verify --all-nodes probed no %v: %s", want, out)
	}
	assertNothingLeft(t, c)
}
