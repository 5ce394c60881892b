package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/report"
)

// TestVerifyHostMountNarrow runs verify on pool A's two nodes with the whole root mounted and with
// --host-mount narrow (only /etc, /usr and /lib, type Directory) on the real kubelets: the narrow
// probe pods start, and on poola-1 the verdict and the runtime's hosts are the root mount's (the
// version is the binary's, without dpkg's suffix).
// What narrow loses shows on poola-2, whose kubelet names a credential provider config under /var
// (in /etc/default/kubelet, as AKS does): with the root mount the probe runs the provider and
// pulls; with the narrow one the config the kubelet names is out of reach, and the probe stops
// (exit 2) rather than pull without the node's identity.
func TestVerifyHostMountNarrow(t *testing.T) {
	c := sharedCluster(t)
	start := time.Now()
	c.Run(t, "version") // builds pullpath
	runNamespace(t, c)
	im := c.Push(t, fmt.Sprintf("%s/narrow-%d:v1", strings.TrimPrefix(providerGood, authRegistry+"/"), time.Now().UnixNano()))
	ref := authRegistry + strings.TrimPrefix(im.Ref, registry)
	byMode := map[string]map[string]report.PoolResult{}
	for _, mode := range []string{"root", "narrow"} {
		out, errOut, code := c.Run(t, "verify", ref, "--pool", "poola", "--all-nodes", "--host-mount", mode, "--run-namespace", runNS, "--probe-timeout", "90s", "-o", "json")
		var v report.Verification
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("--host-mount %s: not JSON (exit %d): %v\n%s\n%s", mode, code, err, out, errOut)
		}
		if code != 1 || len(v.LeftBehind) != 0 {
			t.Errorf("--host-mount %s: exit %d left %v, want 1 (poola-1 has no identity) and nothing left\n%s", mode, code, v.LeftBehind, errOut)
		}
		byMode[mode] = map[string]report.PoolResult{}
		for _, p := range v.Pools {
			byMode[mode][p.Node] = p
		}
	}
	root, narrow := byMode["root"]["poola-1"].Probe, byMode["narrow"]["poola-1"].Probe
	if root == nil || narrow == nil || root.Runtime == nil || narrow.Runtime == nil {
		t.Fatalf("poola-1: no runtime in the reports: %+v %+v", byMode["root"]["poola-1"], byMode["narrow"]["poola-1"])
	}
	rh, _ := json.Marshal(root.Runtime.Hosts)
	nh, _ := json.Marshal(narrow.Runtime.Hosts)
	// the version: dpkg's under the root mount; the binary's, without the package's suffix, under narrow
	if string(rh) != string(nh) || narrow.Runtime.Version == "" || !strings.HasPrefix(root.Runtime.Version, narrow.Runtime.Version) ||
		root.Class != report.ClassAuth || narrow.Class != root.Class {
		t.Errorf("poola-1: the narrow mount reads other hosts, another version or another verdict:\nroot   %s %s %s\nnarrow %s %s %s", root.Class, root.Runtime.Version, rh, narrow.Class, narrow.Runtime.Version, nh)
	}
	t.Logf("poola-1: %s under both mounts (no identity), the same %d hosts; containerd %s under root, %s under narrow", root.Class, len(root.Runtime.Hosts), root.Runtime.Version, narrow.Runtime.Version)
	if p := byMode["root"]["poola-2"].Probe; p == nil || p.Class != report.ClassOK || !strings.HasPrefix(p.CredentialSource, "credential provider pullpath-good") {
		t.Errorf("root mount on poola-2: %+v, want ok with the node's provider", byMode["root"]["poola-2"])
	}
	if p := byMode["narrow"]["poola-2"]; p.Probe != nil || p.Summary != nil || !strings.Contains(p.Error, "left no report (exit 2") {
		t.Errorf("narrow mount on poola-2: %+v, want no report: the provider config the kubelet names is out of reach", p)
	} else {
		t.Logf("poola-2: root ok (%s); narrow: %s", byMode["root"]["poola-2"].Probe.CredentialSource, p.Error)
	}
	assertNothingLeft(t, c)
	took := fmt.Sprintf("verify --host-mount root and narrow on pool A's 2 nodes: poola-1 the same verdict and runtime hosts, the version without its package suffix; poola-2 (credential provider config under /var) ok with root, no probe with narrow; %s", time.Since(start).Round(100*time.Millisecond))
	t.Log(took)
	c.figure("%s", took)
}
