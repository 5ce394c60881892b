package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/report"
)

// pushProbeImage runs 'pullpath image push' inside the hub, with the hub's resolver (the process
// gets its own mount namespace so that its resolv.conf names it), and returns the digest
// reference as the nodes pull it (through registry.cluster.test:443).
func pushProbeImage(t *testing.T, c *cluster) string {
	t.Helper()
	c.Run(t, "version") // builds pullpath and the probe-only binary beside it
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+hubIP+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := c.Exec(t, "unshare", "--mount", "--propagation", "private", "sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, resolv,
		c.pullpath, "image", "push", registry+":5000/tools/pullpath-probe:v1", "--platform", "linux/"+runtime.GOARCH, "--ca-file", c.path("pki", "ca.pem"))
	if code != 0 {
		t.Fatalf("image push: exit %d\n%s\n%s", code, out, errOut)
	}
	ref := strings.TrimSpace(out)
	prefix := registry + ":5000/tools/pullpath-probe@sha256:"
	if !strings.HasPrefix(ref, prefix) {
		t.Fatalf("image push printed %q, want %s…", ref, prefix)
	}
	return registry + "/tools/pullpath-probe@" + strings.TrimPrefix(ref, registry+":5000/tools/pullpath-probe@")
}

// verify --probe-image: the probe pods run the pushed probe image (the node pulls it), no binary
// travels in ConfigMaps; a healthy pool passes, and a node that cannot pull the probe image is a
// finding explained from the pod's events. Nothing is left.
func TestVerifyWithProbeImage(t *testing.T) {
	c := sharedCluster(t)
	runNamespace(t, c)
	probe := pushProbeImage(t, c)
	im := c.Images[cachedImage]

	out, errOut, code := c.Run(t, "verify", im.Ref, "--pool", "poola", "--probe-image", probe, "--run-namespace", runNS, "--probe-timeout", "90s", "-o", "json")
	if code != 0 {
		t.Fatalf("pool a with --probe-image: exit %d\n%s\n%s", code, out, errOut)
	}
	var v report.Verification
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(v.Pools) != 1 || v.Pools[0].Delivery != "image" || v.Pools[0].Class != report.ClassOK || v.Pools[0].Probe == nil || !v.Pools[0].Probe.Download.Verified {
		t.Errorf("pool a: %+v", v.Pools)
	}
	assertNothingLeft(t, c)

	// poolb-2 cannot reach the registry: it cannot pull the probe image either, and says why
	out, errOut, code = c.Run(t, "verify", im.Ref, "--pool", "poolb", "--probe-image", probe, "--run-namespace", runNS, "--probe-timeout", "60s", "-o", "json")
	if code != 1 {
		t.Fatalf("pool b with --probe-image: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	v = report.Verification{}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	p := v.Pools[0]
	if p.Node != "poolb-2" || p.Delivery != "image" || p.Probe != nil || !strings.Contains(p.Error, "could not start: ErrImagePull") {
		t.Errorf("pool b: node %s delivery %s error %q", p.Node, p.Delivery, p.Error)
	}
	if len(p.Findings) == 0 || p.Findings[0].Class != report.ClassRoute {
		t.Errorf("pool b: findings %+v, want class route from the pod's events", p.Findings)
	}
	assertNothingLeft(t, c)
}
