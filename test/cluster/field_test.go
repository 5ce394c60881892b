package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/test/internal/netnsdial"
)

// fieldSpec is issue 32's cluster, apart from the scenario (whose pools other tests count): a
// pool per way a node trusts the registry through its system CA bundle alone, one whose bundle
// lacks the lab CA, and one that trusts it through certs.d, where a tenant runs a hostile "pause".
var fieldSpec = clusterSpec{Nodes: []nodeSpec{
	{Name: "debian-1", Pool: "debian", CanReachRegistry: true, CanReachBlobs: true, SystemBundle: bundleDebian},
	{Name: "suse-1", Pool: "suse", CanReachRegistry: true, CanReachBlobs: true, SystemBundle: bundleSUSE},
	{Name: "nolabca-1", Pool: "nolabca", CanReachRegistry: true, CanReachBlobs: true, SystemBundle: bundleWithoutLabCA},
	{Name: "tenant-1", Pool: "tenant", CanReachRegistry: true, CanReachBlobs: true},
	// the rest of issue 32 item 5's shapes (shapes_test.go), one node each
	{Name: "mirror-1", Pool: "mirror", HostsToml: hostsTomlMirror}, // routes to the mirror only
	{Name: "dockercfg-1", Pool: "dockercfg", CanReachRegistry: true, CanReachBlobs: true, KubeletDockerConfig: true},
	{Name: "proxy-1", Pool: "proxy", CanReachRegistry: true, CanReachBlobs: true, RuntimeProxy: true},
	{Name: "plainhttp-1", Pool: "plainhttp", CanReachRegistry: true, CanReachBlobs: true, PlainHTTP: true},
}}

// markerPort is where the hostile image's credential helper reports that it ran (testdata/credhelper.c).
const markerPort = 7781

// TestFieldCluster (issue 32) brings up fieldSpec's cluster, runs its cases and tears it down,
// checking that nothing is left, as TestMain does for the scenario.
func TestFieldCluster(t *testing.T) {
	if skipReason != "" {
		t.Skip("cluster tier skipped: " + skipReason)
	}
	start := time.Now()
	c, err := startCluster(fieldSpec)
	if err != nil {
		t.Fatalf("field cluster bring-up: %v", err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("field cluster: teardown left something behind: %v", err)
		}
		c.writeReport()
	}()
	t.Logf("field cluster: %d nodes Ready in %s", len(c.nodes), time.Since(start).Round(100*time.Millisecond))
	runNamespace(t, c)
	app := c.Push(t, "field/app:v1")
	c.Run(t, "version") // builds pullpath once, outside the cases' timings

	t.Run("SystemBundleVerify", func(t *testing.T) { testSystemBundleVerify(t, c, app) })
	t.Run("BundleWithoutLabCA", func(t *testing.T) { testBundleWithoutLabCA(t, c, app) })
	t.Run("ShapesVerify", func(t *testing.T) { testShapesVerify(t, c, app) })
	t.Run("SystemBundleWatch", func(t *testing.T) { testSystemBundleWatch(t, c, app) })
	t.Run("HostileTenantPause", func(t *testing.T) { testHostileTenantPause(t, c, app) })
	// last: its watch round leaves the broken nodes' conditions True
	t.Run("ShapesBroken", func(t *testing.T) { testShapesBroken(t, c, app) })
	t.Logf("field cluster: cases done %s after bring-up began", time.Since(start).Round(time.Second))
}

// A node that trusts the registry only through its system bundle pulls (the node's own runtime
// is the ground truth), and verify says ok, from the node's bundle: the probe must not judge
// by its container's /etc/ssl (the borrowed pause image has none).
func testSystemBundleVerify(t *testing.T, c *cluster, app pushedImage) {
	for _, s := range []struct{ name, node, pool, bundle string }{
		{"system bundle (Debian path)", "debian-1", "debian", "etc/ssl/certs/ca-certificates.crt"},
		{"system bundle (non-Debian path)", "suse-1", "suse", "etc/ssl/ca-bundle.pem"},
	} {
		t.Run(s.name, func(t *testing.T) {
			ns := c.Namespace(t, "trust")
			c.CreatePod(t, PodOn(ns, "app", s.node, app.Ref, corev1.PullAlways))
			c.WaitPod(t, ns, "app", 2*time.Minute, "Running", running)
			c.WaitEvent(t, ns, "app", "Pulled", 30*time.Second, "Successfully pulled image")

			begin := time.Now()
			v, out, errOut, code := c.verifyJSON(t, app.Ref, s.pool)
			c.figure("field: verify of pool %s (%s) in %s", s.pool, s.name, time.Since(begin).Round(100*time.Millisecond))
			p := onePool(t, v, s.pool, out, errOut)
			if code != 0 || p.Class != report.ClassOK {
				t.Errorf("%s: exit %d class %s %s (%s), want exit 0, class ok: the node's runtime pulled\n%s", s.node, code, p.Class, p.Probe.Code, p.Probe.Summary, errOut)
			}
			if rp := p.RuntimePull; rp == nil || rp.Agrees == nil || !*rp.Agrees {
				t.Errorf("%s: the kubelet's real pull and the probe must agree: %s", s.node, pullText(rp))
			}
			// the trust the probe used is the node's bundle, named in its report
			if raw, _ := json.Marshal(p.Probe); !strings.Contains(string(raw), s.bundle) {
				t.Errorf("%s: the probe report does not name the node's bundle %s; trust %+v", s.node, s.bundle, p.Probe.Trust)
			}
			assertNothingLeft(t, c)
		})
	}
}

// The shape broken: a node whose bundle lacks the lab CA (a second node, as containerd reads its
// system roots once). Its runtime fails on the certificate and verify says tls,
// TLS_UNKNOWN_AUTHORITY: probe and runtime agree.
func testBundleWithoutLabCA(t *testing.T, c *cluster, app pushedImage) {
	ns := c.Namespace(t, "trust")
	c.CreatePod(t, PodOn(ns, "app", "nolabca-1", app.Ref, corev1.PullAlways))
	c.WaitPod(t, ns, "app", 2*time.Minute, "ErrImagePull or ImagePullBackOff", func(p *corev1.Pod) bool {
		r := waitingReason(p)
		return r == "ErrImagePull" || r == "ImagePullBackOff"
	})
	c.WaitEvent(t, ns, "app", "Failed", 30*time.Second, "certificate signed by unknown authority")

	v, out, errOut, code := c.verifyJSON(t, app.Ref, "nolabca")
	p := onePool(t, v, "nolabca", out, errOut)
	if code != 1 || p.Class != report.ClassTLS || p.Probe.Code != report.CodeTLSUnknownAuthority {
		t.Errorf("exit %d class %s %s (%s), want exit 1, tls %s", code, p.Class, p.Probe.Code, p.Probe.Summary, report.CodeTLSUnknownAuthority)
	}
	if f := p.Probe.Failing; f == nil || f.Host != registry+":443" || f.Role != report.RoleRegistry {
		t.Errorf("failing %+v, want %s:443 (registry)", f, registry)
	}
	if rp := p.RuntimePull; rp == nil || rp.Agrees == nil || !*rp.Agrees {
		t.Errorf("the kubelet's real pull and the probe must agree: %s", pullText(rp))
	}
	assertNothingLeft(t, c)
}

// watch over the field cluster at its shortest interval (10s): every node trusting the registry
// (by bundle or certs.d) stays False/OK from its first probe, with no transition and no event;
// the node whose bundle lacks the lab CA is True/TLS. 4 rounds per node over the 8 nodes, about
// 70 s (7 took 1m57s on the 2-core machine under load; cut to keep the warm suite near 15 min).
// Issue 32 asks for 20: measured with
// PULLPATH_FIELD_WATCH_ROUNDS=20, 5m35s and zero flips, which would take the field cluster past
// its 5 min. Probing the nodes at once (--concurrency = nodes) does not shorten it: a node's
// rounds follow one another, each the 10 s --interval floor plus its probe (about 17 s here).
func testSystemBundleWatch(t *testing.T, c *cluster, app pushedImage) {
	rounds := 4
	if r, err := strconv.Atoi(os.Getenv("PULLPATH_FIELD_WATCH_ROUNDS")); err == nil && r > 0 {
		rounds = r // to measure a longer soak
	}
	healthy := []string{"debian-1", "suse-1", "tenant-1", "mirror-1", "dockercfg-1", "proxy-1", "plainhttp-1"}
	broken := "nolabca-1"
	begin := time.Now()
	w := c.startWatch(t, "--image", app.Ref, "--interval", "10s", "--concurrency", strconv.Itoa(len(c.nodes)), "--run-namespace", runNS, "--probe-timeout", "90s")
	results := func() map[string][]string { // each node's probe results so far, "Status Reason"
		w.mu().Lock()
		defer w.mu().Unlock()
		out := map[string][]string{}
		for _, line := range strings.Split(w.errOut.String(), "\n") {
			for _, n := range c.nodes {
				prefix := "node " + n.spec.Name + " (pool " + n.spec.Pool + "): "
				if i := strings.Index(line, prefix); i >= 0 {
					out[n.spec.Name] = append(out[n.spec.Name], line[i+len(prefix):])
				}
			}
		}
		return out
	}
	first := map[string]metav1.Time{} // each node's lastTransitionTime when first seen
	moved := map[string]int{}
	var got map[string][]string
	for deadline := time.Now().Add(time.Duration(rounds) * 35 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		for _, n := range append(slices.Clone(healthy), broken) {
			cond := c.pathCondition(t, n)
			if cond == nil {
				continue
			}
			if at, ok := first[n]; !ok {
				first[n] = cond.LastTransitionTime
			} else if !cond.LastTransitionTime.Equal(&at) {
				first[n] = cond.LastTransitionTime
				moved[n]++
			}
		}
		got = results()
		least := rounds
		for _, n := range append(slices.Clone(healthy), broken) {
			least = min(least, len(got[n]))
		}
		if least >= rounds {
			break
		}
		// a failure is plain after one round: no need to watch the rest
		if least >= 1 && t.Failed() || least >= 1 && !allEqual(got, healthy, "False OK") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("fewer than %d probe rounds per node in %s: %v\n%s", rounds, time.Duration(rounds)*35*time.Second, got, w.errOut.String())
			break
		}
	}
	c.figure("field: watch, %d rounds per node at --interval 10s over %d nodes in %s", rounds, len(c.nodes), time.Since(begin).Round(time.Second))
	t.Logf("watch soak: %d rounds per node at --interval 10s over %d nodes in %s", rounds, len(c.nodes), time.Since(begin).Round(time.Second))
	for _, n := range healthy {
		for i, r := range got[n] {
			if r != "False OK" {
				t.Errorf("%s: probe round %d said %q, want False OK every round (the node's runtime pulls)", n, i+1, r)
				break
			}
		}
		if cond := c.pathCondition(t, n); cond == nil || cond.Status != "False" || cond.Reason != "OK" || moved[n] > 0 {
			t.Errorf("%s: condition %+v, moved %d times, want False/OK and no transition", n, cond, moved[n])
		}
		if ev := c.pathEvents(t, n); len(ev) > 0 {
			t.Errorf("%s: watch events %v, want none on a node that stayed healthy", n, ev)
		}
	}
	for i, r := range got[broken] {
		if r != "True TLS" {
			t.Errorf("%s: probe round %d said %q, want True TLS every round", broken, i+1, r)
			break
		}
	}
	if cond := c.pathCondition(t, broken); cond == nil || cond.Status != "True" || cond.Reason != "TLS" ||
		!strings.Contains(cond.Message, string(report.CodeTLSUnknownAuthority)) || moved[broken] > 0 {
		t.Errorf("%s: condition %+v, moved %d times, want True/TLS (%s) throughout", broken, cond, moved[broken], report.CodeTLSUnknownAuthority)
	}
	w.stopClean(t, c)
	if t.Failed() {
		t.Logf("watch stderr:\n%s", w.errOut.String())
	}
}

func allEqual(got map[string][]string, nodes []string, want string) bool {
	for _, n := range nodes {
		for _, r := range got[n] {
			if r != want {
				return false
			}
		}
	}
	return true
}

// A tenant runs an image named …/pause:… that is larger than the real pause (so the kubelet lists
// it first) and carries a hostile environment, docker configs naming a credential helper, and that
// helper. verify and a watch round on its node must run the probe on the node's sandbox image
// (registry.k8s.io/pause:3.10), never run the helper, and say what they said before the tenant came.
func testHostileTenantPause(t *testing.T, c *cluster, app pushedImage) {
	const node, pool = "tenant-1", "tenant"
	mk := listenMarker(t, c)
	before, out, errOut, code := c.verifyJSON(t, app.Ref, pool)
	base := onePool(t, before, pool, out, errOut)
	baseCode := code

	var evil pushedImage
	if err := catch(func() { evil = c.pushImage("tenant/pause:evil", c.hostilePause()) }); err != nil {
		t.Fatal(err)
	}
	ns := c.Namespace(t, "tenant")
	c.CreatePod(t, PodOn(ns, "pause", node, evil.Ref, corev1.PullAlways))
	c.WaitPod(t, ns, "pause", 2*time.Minute, "Running", running)
	// the kubelet lists images largest first: the tenant's must come before the real pause, or
	// this proves nothing
	var listed []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		no, err := c.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		listed = listed[:0]
		for _, im := range no.Status.Images {
			listed = append(listed, strings.Join(im.Names, " "))
		}
		e := slices.IndexFunc(listed, func(s string) bool { return strings.Contains(s, evil.Ref) })
		p := slices.IndexFunc(listed, func(s string) bool { return strings.Contains(s, pauseRef) })
		if e >= 0 && p >= 0 && e < p {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not list %s before %s: %q", node, evil.Ref, pauseRef, listed)
		}
	}
	if got := mk.seen(); len(got) > 0 {
		t.Fatalf("the helper ran before any probe (the tenant pod itself?): %q", got)
	}

	probes := recordProbePods(t, c)
	after, out, errOut, code := c.verifyJSON(t, app.Ref, pool)
	time.Sleep(time.Second) // a helper's report in flight
	if got := mk.seen(); len(got) > 0 {
		t.Errorf("verify ran the tenant image's credential helper on %s: %q", node, got)
	}
	if imgs := probes.on(node); len(imgs) == 0 || slices.ContainsFunc(imgs, func(s string) bool { return s != pauseRef }) {
		t.Errorf("verify's probe pods on %s ran %q, want %s only", node, imgs, pauseRef)
	}
	p := onePool(t, after, pool, out, errOut)
	if code != baseCode || p.Class != base.Class || p.Probe.Code != base.Probe.Code || p.Probe.CredentialSource != base.Probe.CredentialSource {
		t.Errorf("with the tenant's image: exit %d class %s %s, identity %q (%s); without it: exit %d class %s %s, identity %q",
			code, p.Class, p.Probe.Code, p.Probe.CredentialSource, p.Probe.Summary, baseCode, base.Class, base.Probe.Code, base.Probe.CredentialSource)
	}
	raw, _ := json.Marshal(p.Probe)
	for _, s := range []string{"/evil", "evil-helper-ran", "10.78.0.1:9"} {
		if strings.Contains(string(raw), s) {
			t.Errorf("the probe report holds %q, from the tenant image's environment or files", s)
		}
	}
	assertNothingLeft(t, c)

	// one watch round
	ran := len(mk.seen())
	w := c.startWatch(t, "--image", app.Ref, "--interval", "10s", "--concurrency", "4", "--run-namespace", runNS, "--probe-timeout", "90s")
	w.waitLog(t, "node "+node+" (pool "+pool+"): ", 2*time.Minute)
	w.stopClean(t, c)
	time.Sleep(time.Second)
	if got := mk.seen()[ran:]; len(got) > 0 {
		t.Errorf("watch ran the tenant image's credential helper on %s: %q", node, got)
	}
	if cond := c.pathCondition(t, node); cond == nil || cond.Status != "False" || cond.Reason != "OK" {
		t.Errorf("%s after a watch round with the tenant's image: %+v, want False/OK as before", node, cond)
	}
	probes.stop()
	if imgs := probes.on(node); len(imgs) < 2 || slices.ContainsFunc(imgs, func(s string) bool { return s != pauseRef }) {
		t.Errorf("the probe pods (verify's, then watch's) on %s ran %q, want %s each", node, imgs, pauseRef)
	}
}

// hostilePause is the tenant's "pause": a 4 MB layer (larger than the real pause), the pause
// program, and what would steer a probe that ran on it: an environment (PATH, HOME, DOCKER_CONFIG,
// a proxy where nothing listens, a foreign CA file, GODEBUG, LD_PRELOAD), docker configs naming
// credsStore "evil" where $DOCKER_CONFIG, $HOME and root's home point, and the helper itself, on
// the image's PATH and on the usual one.
func (c *cluster) hostilePause() v1.Image {
	helper, err := os.ReadFile(c.progs["credhelper"])
	c.check(err, "credential helper")
	foreign, err := registrytest.NewCA("not the lab CA")
	c.check(err, "CA")
	cfg := []byte(`{"credsStore":"evil"}` + "\n")
	files, err := filesLayer(
		layerFile{"/evil/bin/docker-credential-evil", helper, 0o755},
		layerFile{"/usr/bin/docker-credential-evil", helper, 0o755},
		layerFile{"/evil/.docker/config.json", cfg, 0o644},
		layerFile{"/root/.docker/config.json", cfg, 0o644},
		layerFile{"/evil/ca.pem", foreign.PEM, 0o644},
	)
	c.check(err, "hostile layer")
	big, err := random.Image(4<<20, 1)
	c.check(err, "hostile image")
	img, err := mutate.AppendLayers(big, c.pauseLayer, files)
	c.check(err, "hostile image")
	img, err = withConfig(img, "/pause")
	c.check(err, "hostile image")
	cf, err := img.ConfigFile()
	c.check(err, "hostile image")
	cf = cf.DeepCopy()
	cf.Config.Env = []string{"PATH=/evil/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/evil",
		"DOCKER_CONFIG=/evil/.docker", "HTTPS_PROXY=http://" + hubIP + ":9", "https_proxy=http://" + hubIP + ":9",
		"SSL_CERT_FILE=/evil/ca.pem", "GODEBUG=x509ignoreCN=0", "LD_PRELOAD=/evil/lib.so"}
	img, err = mutate.ConfigFile(img, cf)
	c.check(err, "hostile image")
	return img
}

func pullText(rp *report.RuntimePull) string {
	if rp == nil {
		return "no runtime pull"
	}
	agrees := "unknown"
	if rp.Agrees != nil {
		agrees = fmt.Sprint(*rp.Agrees)
	}
	return fmt.Sprintf("result %s class %s code %s, agrees %s (%s)", rp.Result, rp.Class, rp.Code, agrees, rp.Message)
}

// verifyJSON runs verify -o json with the canary on one pool and decodes its report.
func (c *cluster) verifyJSON(t *testing.T, image, pool string) (v report.Verification, out, errOut string, code int) {
	t.Helper()
	out, errOut, code = c.Run(t, "verify", image, "--pool", pool, "--runtime-pull", "--run-namespace", runNS, "--probe-timeout", "90s", "-o", "json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("verify --pool %s: exit %d, not JSON: %v\n%s\n%s", pool, code, err, out, errOut)
	}
	return v, out, errOut, code
}

// onePool is the pool's result, with a probe report; the test ends without one.
func onePool(t *testing.T, v report.Verification, pool, out, errOut string) report.PoolResult {
	t.Helper()
	for _, p := range v.Pools {
		if p.Pool == pool {
			if p.Probe == nil {
				t.Fatalf("pool %s: no probe report: %s %+v\n%s", pool, p.Error, p.Findings, errOut)
			}
			return p
		}
	}
	t.Fatalf("pool %s missing\n%s\n%s", pool, out, errOut)
	return report.PoolResult{}
}

// marker counts what reached the helper's listener in the hub.
type marker struct {
	mu  sync.Mutex
	got []string
}

func listenMarker(t *testing.T, c *cluster) *marker {
	t.Helper()
	ln, err := netnsdial.Listen(c.hub, "tcp", fmt.Sprintf("%s:%d", hubIP, markerPort))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	m := &marker{}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func(conn net.Conn) {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				b, _ := io.ReadAll(io.LimitReader(conn, 256))
				m.mu.Lock()
				m.got = append(m.got, strings.TrimSpace(string(b))+" (from "+conn.RemoteAddr().String()+")")
				m.mu.Unlock()
			}(conn)
		}
	}()
	return m
}

func (m *marker) seen() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.got)
}

// probePods records the image of every probe pod created in the run namespace, by node.
type probePods struct {
	mu     sync.Mutex
	byNode map[string][]string
	seen   map[string]bool
	cancel context.CancelFunc
	done   chan struct{}
}

// recordProbePods lists and watches the probe pods until stop (the client's 30 s timeout ends
// each watch: it lists again and goes on).
func recordProbePods(t *testing.T, c *cluster) *probePods {
	ctx, cancel := context.WithCancel(context.Background())
	r := &probePods{byNode: map[string][]string{}, seen: map[string]bool{}, cancel: cancel, done: make(chan struct{})}
	sel := metav1.ListOptions{LabelSelector: "pullpath.dev/role=probe"}
	ready := make(chan struct{})
	go func() {
		defer close(r.done)
		once := sync.OnceFunc(func() { close(ready) })
		defer once()
		for ctx.Err() == nil {
			l, err := c.Client.CoreV1().Pods(runNS).List(ctx, sel)
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for i := range l.Items {
				r.add(&l.Items[i])
			}
			opts := sel
			opts.ResourceVersion = l.ResourceVersion
			opts.TimeoutSeconds = new(int64)
			*opts.TimeoutSeconds = 20
			wi, err := c.Client.CoreV1().Pods(runNS).Watch(ctx, opts)
			once()
			if err != nil {
				continue
			}
			for ev := range wi.ResultChan() {
				if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Error {
					r.add(p)
				}
			}
			wi.Stop()
		}
	}()
	<-ready
	t.Cleanup(r.stop)
	return r
}

func (r *probePods) add(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[string(p.UID)] {
		return
	}
	r.seen[string(p.UID)] = true
	for _, ct := range p.Spec.Containers {
		r.byNode[p.Spec.NodeName] = append(r.byNode[p.Spec.NodeName], ct.Image)
	}
}

func (r *probePods) stop() {
	r.cancel()
	<-r.done
}

func (r *probePods) on(node string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.byNode[node])
}
