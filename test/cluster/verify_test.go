package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/report"
)

const runNS = "pullpath-verify"

// verify on the scenario: pool A healthy; pool B's new node cannot reach the registry while its old
// node has the image cached (verify must choose the new node); pool C's blob host is blocked; pool
// D's resolver lacks the private zone. The canary's real pull agrees with each probe, the JUnit
// report parses, and nothing of the run is left.
func TestVerifyEveryPool(t *testing.T) {
	c := sharedCluster(t)
	runNamespace(t, c)
	im := c.Images[cachedImage]
	junit := filepath.Join(t.TempDir(), "verify.xml")
	start := time.Now()
	out, errOut, code := c.Run(t, "verify", im.Ref, "--runtime-pull", "--run-namespace", runNS, "--probe-timeout", "90s", "-o", "json", "--junit", junit)
	took := time.Since(start)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var v report.Verification
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s\n%s", err, out, errOut)
	}
	pools := map[string]report.PoolResult{}
	for _, p := range v.Pools {
		pools[p.Pool] = p
	}
	want := map[string]struct {
		node  string
		class report.Class
		host  string
		role  report.Role
	}{
		"poola": {"", report.ClassOK, "", ""},
		"poolb": {"poolb-2", report.ClassRoute, registry + ":443", report.RoleRegistry},
		"poolc": {"poolc-1", report.ClassEndpoint, "blobs." + zone + ":443", report.RoleBlob},
		"poold": {"poold-1", report.ClassDNS, registry + ":443", report.RoleRegistry},
	}
	for name, w := range want {
		p, ok := pools[name]
		if !ok {
			t.Errorf("pool %s missing", name)
			continue
		}
		if p.Probe == nil {
			t.Errorf("pool %s: no probe report: %s %+v", name, p.Error, p.Findings)
			continue
		}
		if w.node != "" && p.Node != w.node {
			t.Errorf("pool %s: node %s, want %s (%s)", name, p.Node, w.node, p.Choice)
		}
		if p.Class != w.class || p.Delivery != "attach" {
			t.Errorf("pool %s: class %s (%s) delivery %s, want %s by attach", name, p.Class, p.Probe.Summary, p.Delivery, w.class)
		}
		if d := p.DeliveryStats; d == nil || d.Source != "the probe-only build embedded in pullpath" || d.Bytes < 1<<20 || d.Start <= 0 || d.Fallback != "" {
			t.Errorf("pool %s: delivery stats %+v", name, d)
		} else {
			c.figure("verify: pool %s, attach delivery of %d bytes: probe started %s after its pod was created", name, d.Bytes, time.Duration(d.Start).Round(10*time.Millisecond))
		}
		if w.host != "" && (p.Probe.Failing == nil || p.Probe.Failing.Host != w.host || p.Probe.Failing.Role != w.role) {
			t.Errorf("pool %s: failing %+v, want %s (%s)", name, p.Probe.Failing, w.host, w.role)
		}
		if w.class == report.ClassOK && (!p.Probe.Download.Verified || p.Probe.Download.Blobs == 0) {
			t.Errorf("pool %s: ok without a complete download: %+v", name, p.Probe.Download)
		}
		rp := p.RuntimePull
		if rp == nil || rp.Result == "skipped" || rp.Agrees == nil || !*rp.Agrees {
			t.Errorf("pool %s: the kubelet's real pull and the probe must agree: %+v", name, rp)
		}
	}
	if pb := pools["poolb"]; pb.ImagePresentBefore == nil || *pb.ImagePresentBefore {
		t.Errorf("pool b: verify must choose the node without the cached image: %+v", pb)
	}
	if len(v.LeftBehind) != 0 {
		t.Errorf("left behind: %v", v.LeftBehind)
	}
	// the binary went through the stream: the API holds the owner and the loader, a few KB
	if v.Stored.Bytes > 64<<10 || v.Stored.Objects > 3 {
		t.Errorf("stored in the API: %+v; want the owner and the loader only", v.Stored)
	}
	c.figure("verify: %d objects, %d bytes stored in the API for the run (attach delivery)", v.Stored.Objects, v.Stored.Bytes)
	assertNothingLeft(t, c)
	// JUnit: one case per pool, the failures counted
	var ju struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Cases    []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b, err := os.ReadFile(junit)
	if err != nil || xml.Unmarshal(b, &ju) != nil || len(ju.Suites) != 1 || ju.Suites[0].Tests != len(v.Pools) || ju.Suites[0].Failures != 3 {
		t.Errorf("junit (%v): %+v\n%s", err, ju, b)
	}
	c.figure("verify: %d pools with --runtime-pull in %s (probes streamed by attach, canaries beside them)", len(v.Pools), took.Round(100*time.Millisecond))

	// text, as an operator reads it
	text, _, _ := c.Run(t, "verify", im.Ref, "--runtime-pull", "--run-namespace", runNS, "--probe-timeout", "90s")
	t.Logf("pullpath verify:\n%s", text)
	c.figure("pullpath verify on the tier:\n%s", text)
	if !strings.Contains(text, "BROKEN") || !strings.Contains(text, "poolc") {
		t.Errorf("text:\n%s", text)
	}
	assertNothingLeft(t, c)

	// after a fix (pool B's new node gets its routes), pool B passes and verify exits 0
	n := c.node("poolb-2")
	for _, r := range []string{"10.81.0.0/24", "10.82.0.0/24"} {
		c.run("ip", "-n", n.netns, "route", "add", r, "via", hubIP)
		defer c.run("ip", "-n", n.netns, "route", "del", r, "via", hubIP)
	}
	// (and the binary in ConfigMaps, the delivery for an identity without pods/attach)
	out, errOut, code = c.Run(t, "verify", im.Ref, "--pool", "poolb", "--delivery", "configmap", "--run-namespace", runNS, "--probe-timeout", "90s", "-o", "json")
	if code != 0 {
		t.Errorf("after the fix: exit %d\n%s\n%s", code, out, errOut)
	}
	var fixed report.Verification
	if err := json.Unmarshal([]byte(out), &fixed); err != nil || len(fixed.Pools) != 1 || fixed.Pools[0].Delivery != "configmap" || fixed.Pools[0].Class != report.ClassOK {
		t.Errorf("after the fix (%v): %s", err, out)
	} else {
		c.figure("verify: pool b by ConfigMaps: %d objects, %d bytes stored in the API; probe started %s after its pod was created",
			fixed.Stored.Objects, fixed.Stored.Bytes, time.Duration(fixed.Pools[0].DeliveryStats.Start).Round(10*time.Millisecond))
	}
	assertNothingLeft(t, c)
}

// Ctrl-C in the middle of a run: verify stops, deletes what it made, and exits 130.
func TestVerifyInterruptedLeavesNothing(t *testing.T) {
	c := sharedCluster(t)
	runNamespace(t, c)
	cmd, out, errOut := c.verifyUntilProbing(t)
	// nsenter forwards nothing: signal the pullpath process itself
	if err := signalChild(cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("verify did not end within 60s of SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130\n%s\n%s", code, out.String(), errOut.String())
	}
	var v report.Verification
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v.LeftBehind) != 0 {
		t.Errorf("report after SIGINT (%v): left behind %v\n%s", err, v.LeftBehind, out.String())
	}
	assertNothingLeft(t, c)
}

// The API server stops for 20 s in the middle of a run and verify is interrupted meanwhile: its
// cleanup retries until the API server answers again, and nothing is left, as the API says after.
func TestVerifyCleanupOutlastsAPIServerOutage(t *testing.T) {
	c := sharedCluster(t)
	runNamespace(t, c)
	cmd, out, errOut := c.verifyUntilProbing(t)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	api := c.proc("kube-apiserver")
	if err := api.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = api.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	defer resume()
	stopped := time.Now()
	if err := signalChild(cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second)
	select {
	case <-done:
		t.Fatalf("verify ended while the API server was stopped: its cleanup cannot have happened\n%s\n%s", out.String(), errOut.String())
	default:
	}
	resume()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("verify did not end within 3 min of the API server's return\n%s", errOut.String())
	}
	took := time.Since(stopped)
	if code := cmd.ProcessState.ExitCode(); code != 143 {
		t.Errorf("exit %d, want 143 (SIGTERM)\n%s\n%s", code, out.String(), errOut.String())
	}
	var v report.Verification
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v.LeftBehind) != 0 {
		t.Errorf("report after the outage (%v): left behind %v\n%s\n%s", err, v.LeftBehind, out.String(), errOut.String())
	}
	assertNothingLeft(t, c)
	c.figure("verify: SIGTERM during a 20 s API server outage: cleaned up %s after the outage began, nothing left", took.Round(100*time.Millisecond))
}

// verifyUntilProbing starts verify -o json on the shared image in the hub and returns once its
// probe pods exist: the moment to interrupt it.
func (c *cluster) verifyUntilProbing(t *testing.T) (cmd *exec.Cmd, out, errOut *bytes.Buffer) {
	t.Helper()
	c.Run(t, "version") // builds the binaries
	im := c.Images[cachedImage]
	cmd = exec.Command("nsenter", "--net=/run/netns/"+c.hub, "--", c.pullpath, "verify", im.Ref, "--run-namespace", runNS, "--probe-timeout", "90s", "-o", "json")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "PATH="+c.path("bin")+":"+os.Getenv("PATH"))
	out, errOut = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		l, err := c.Client.CoreV1().Pods(runNS).List(context.Background(), metav1.ListOptions{LabelSelector: "pullpath.dev/role=probe"})
		if err == nil && len(l.Items) > 0 {
			return cmd, out, errOut
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no probe pod appeared\n%s", errOut.String())
		}
	}
}

// signalChild signals nsenter's child (the pullpath process), found through /proc.
func signalChild(nsenter int, sig syscall.Signal) error {
	b, err := os.ReadFile("/proc/" + itoa(nsenter) + "/task/" + itoa(nsenter) + "/children")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			var pid int
			for _, ch := range f[0] {
				pid = pid*10 + int(ch-'0')
			}
			return syscall.Kill(pid, sig)
		}
	}
	return syscall.Kill(nsenter, sig)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// assertNothingLeft checks through the API that no object of any pullpath run remains.
func assertNothingLeft(t *testing.T, c *cluster) {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=pullpath"}
	var left []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		left = left[:0]
		if l, err := c.Client.CoreV1().Pods(runNS).List(ctx, sel); err == nil {
			for _, p := range l.Items {
				left = append(left, "pod/"+p.Name)
			}
		}
		if l, err := c.Client.CoreV1().ConfigMaps(runNS).List(ctx, sel); err == nil {
			for _, x := range l.Items {
				left = append(left, "configmap/"+x.Name)
			}
		}
		if l, err := c.Client.CoreV1().Secrets(runNS).List(ctx, sel); err == nil {
			for _, x := range l.Items {
				left = append(left, "secret/"+x.Name)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("left behind in %s: %v", runNS, left)
	}
}

// runNamespace makes the run namespace as deploy/rbac.yaml does (Pod Security level privileged),
// so that runs do not each create and delete it.
func runNamespace(t *testing.T, c *cluster) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: runNS, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}
	if _, err := c.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := c.prepareNamespace(context.Background(), runNS); err != nil {
		t.Fatal(err)
	}
}

// proc is the hub's process of that name (kube-apiserver, etcd…).
func (c *cluster) proc(name string) *proc {
	for _, p := range c.procs {
		if p.name == name {
			return p
		}
	}
	panic("no process " + name)
}
