package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/xml"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"

	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/test/internal/netnsdial"
)

// probeImages holds the probe image each cluster got pushed: the tests that run it share one push.
var probeImages struct {
	sync.Mutex
	ref map[*cluster]string
}

// pushProbeImage runs 'pullpath image push' inside the hub, with the hub's resolver (the process
// gets its own mount namespace so that its resolv.conf names it), and returns the digest
// reference as the nodes pull it (through registry.cluster.test:443).
func pushProbeImage(t *testing.T, c *cluster) string {
	t.Helper()
	probeImages.Lock()
	defer probeImages.Unlock()
	if ref := probeImages.ref[c]; ref != "" {
		return ref
	}
	c.Run(t, "version") // builds pullpath and the probe-only binary beside it
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+hubIP+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := c.Exec(t, "unshare", "--mount", "--propagation", "private", "sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, resolv,
		c.pullpath, "image", "push", registry+":5000/tools/pullpath-probe:v1", "--platform", "linux/"+runtime.GOARCH, "--ca-file", c.path("pki", "ca.pem"), "--add-ca", c.path("pki", "ca.pem"))
	if code != 0 {
		t.Fatalf("image push: exit %d\n%s\n%s", code, out, errOut)
	}
	ref := strings.TrimSpace(out)
	prefix := registry + ":5000/tools/pullpath-probe@sha256:"
	if !strings.HasPrefix(ref, prefix) {
		t.Fatalf("image push printed %q, want %s…", ref, prefix)
	}
	ref = registry + "/tools/pullpath-probe@" + strings.TrimPrefix(ref, registry+":5000/tools/pullpath-probe@")
	if probeImages.ref == nil {
		probeImages.ref = map[*cluster]string{}
	}
	probeImages.ref[c] = ref
	return ref
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

	// poolb-2 cannot reach the registry: it cannot pull the probe image either, and says why; the
	// pool is not verified, and its failed pull is its class in JSON, JUnit and the exit code alike
	junit := filepath.Join(t.TempDir(), "verify.xml")
	out, errOut, code = c.Run(t, "verify", im.Ref, "--pool", "poolb", "--probe-image", probe, "--run-namespace", runNS, "--probe-timeout", "60s", "-o", "json", "--junit", junit)
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
	if f := p.PodCause(); f == nil || p.Class != report.ClassRoute || v.Class != report.ClassRoute || !strings.HasPrefix(f.Host, registry) {
		t.Errorf("pool b: class %s, run class %s, cause %+v: want route on %s, the probe image's registry", p.Class, v.Class, f, registry)
	}
	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var ju struct {
		Cases []struct {
			Failure *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(raw, &ju); err != nil || len(ju.Cases) != 1 || ju.Cases[0].Failure == nil || ju.Cases[0].Failure.Type != string(p.Class) {
		t.Errorf("JUnit disagrees with the JSON's class %s: %v\n%s", p.Class, err, raw)
	}
	text, errOut, code := c.Run(t, "verify", im.Ref, "--pool", "poolb", "--probe-image", probe, "--run-namespace", runNS, "--probe-timeout", "60s")
	if code != 1 || !hasText(text, "(first: class route)") || !hasText(text, "NOT VERIFIED class route · "+registry) {
		t.Errorf("text: exit %d, want 1 and the JSON's class route as the pool's\n%s\n%s", code, text, errOut)
	}
	assertNothingLeft(t, c)
}

// --from-pod, the VPN-sidecar case: a pod on poolb-2 (whose node has no route to the registry)
// gets a route of its own to the registry, only in its network namespace (a veth to the hub, as
// a VPN sidecar would add). verify --from-pod probes from inside the pod as an ephemeral
// container: the pod reaches the registry, the node does not, and the pull is the node's.
func TestVerifyFromPod(t *testing.T) {
	c := sharedCluster(t)
	runNamespace(t, c)
	probe := pushProbeImage(t, c)
	// poolb-2 cannot pull the probe image: give it, as if pulled before, under a tag of its own
	tagRef := registry + "/tools/pullpath-probe:preloaded"
	c.ImportImage(t, "poolb-2", c.remoteImage(t, registry+":5000/tools/pullpath-probe@"+strings.SplitN(probe, "@", 2)[1]), tagRef)

	ns := c.Namespace(t, "vpn")
	p := PodOn(ns, "app-vpn", "poolb-2", pauseRef, corev1.PullNever)
	p.Spec.DNSPolicy = corev1.DNSDefault // the node's resolver, reached through the "VPN"
	c.CreatePod(t, p)
	p = c.WaitPod(t, ns, "app-vpn", 2*time.Minute, "Running", running)
	pid := podPID(t, string(p.UID))
	host := "ppvpn" + c.hub[len(c.hub)-4:]
	inPod := func(args ...string) {
		c.run(append([]string{"nsenter", "--net=/proc/" + pid + "/ns/net", "ip"}, args...)...)
	}
	inPod("link", "add", "vpn0", "type", "veth", "peer", "name", host, "netns", c.hub)
	defer c.run("ip", "-n", c.hub, "link", "del", host)
	c.run("ip", "-n", c.hub, "addr", "add", "10.86.0.1/30", "dev", host)
	c.run("ip", "-n", c.hub, "link", "set", host, "up")
	inPod("addr", "add", "10.86.0.2/30", "dev", "vpn0")
	inPod("link", "set", "vpn0", "up")
	for _, r := range []string{"10.81.0.0/24", "10.82.0.0/24", hubIP + "/32"} {
		inPod("route", "add", r, "via", "10.86.0.1")
	}

	out, errOut, code := c.Run(t, "verify", c.Images[cachedImage].Ref, "--pool", "poolb", "--probe-image", tagRef, "--from-pod", ns+"/app-vpn",
		"--run-namespace", runNS, "--probe-timeout", "60s", "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (pool b fails)\n%s\n%s", code, out, errOut)
	}
	var v report.Verification
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(v.Pools) != 1 || v.Pools[0].Class != report.ClassRoute || v.Pools[0].Node != "poolb-2" {
		t.Errorf("pool b: %+v", v.Pools)
	}
	fp := v.FromPod
	if fp == nil || fp.Probe == nil {
		t.Fatalf("no probe from the pod: %+v", fp)
	}
	if fp.Class != report.ClassOK || fp.NodeClass != report.ClassRoute || fp.Node != "poolb-2" || !strings.Contains(fp.Comparison, "the pod reaches the registry, the node does not") {
		t.Errorf("from pod: class %s (%s) node %s %s: %s", fp.Class, fp.Probe.Summary, fp.Node, fp.NodeClass, fp.Comparison)
	}
	assertNothingLeft(t, c)
	text, _, _ := c.Run(t, "verify", c.Images[cachedImage].Ref, "--pool", "poolb", "--probe-image", tagRef, "--from-pod", ns+"/app-vpn", "--run-namespace", runNS, "--probe-timeout", "60s")
	if !strings.Contains(text, "=> the pod reaches the registry, the node does not") {
		t.Errorf("text output:\n%s", text)
	}
	t.Logf("verify --from-pod:\n%s", text)
	assertNothingLeft(t, c)
}

// podPID is a process of the pod (its sandbox or container), found by the pod's cgroup.
func podPID(t *testing.T, uid string) string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err == nil && (strings.Contains(string(b), "pod"+uid) || strings.Contains(string(b), "pod"+strings.ReplaceAll(uid, "-", "_"))) {
			return strings.Split(f, "/")[2]
		}
	}
	t.Fatalf("no process of pod %s", uid)
	return ""
}

// remoteImage reads the image for this machine's platform from the tier's registry (dialing inside the hub).
func (c *cluster) remoteImage(t *testing.T, ref string) v1.Image {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	dial := netnsdial.In(c.hub)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.ca.Pool()}, DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dial(ctx, network, registryIP+":5000")
	}}
	img, err := remote.Image(r, remote.WithTransport(tr), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		t.Fatal(err)
	}
	return img
}
