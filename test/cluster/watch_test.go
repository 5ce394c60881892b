package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/pullpath/pullpath/internal/watch"
	"github.com/pullpath/pullpath/test/internal/netnsdial"
)

// watcher is a `pullpath watch` running in the hub's network namespace.
type watcher struct {
	cmd    *exec.Cmd
	errOut *bytes.Buffer
	sw     *syncWriter
	done   chan struct{}
}

func (w *watcher) mu() *sync.Mutex { return &w.sw.mu }

func (c *cluster) startWatch(t *testing.T, args ...string) *watcher {
	t.Helper()
	// up: its signal handler is in place, and a killed watcher's leftovers are removed
	return c.startWatchSaying(t, "watch: probing every Ready node", args...)
}

// startWatchSaying starts a watcher and waits until its stderr says up.
func (c *cluster) startWatchSaying(t *testing.T, up string, args ...string) *watcher {
	t.Helper()
	c.Run(t, "version") // builds the binaries
	cmd := exec.Command("nsenter", append([]string{"--net=/run/netns/" + c.hub, "--", c.pullpath, "watch"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	w := &watcher{cmd: cmd, errOut: &bytes.Buffer{}, done: make(chan struct{})}
	w.sw = &syncWriter{w: w.errOut}
	cmd.Stderr = w.sw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(w.done) }()
	w.waitLog(t, up, 2*time.Minute)
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			_ = signalChild(cmd.Process.Pid, syscall.SIGKILL)
			<-w.done
		}
	})
	return w
}

// waitLog waits until the watcher's stderr has s.
func (w *watcher) waitLog(t *testing.T, s string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		w.mu().Lock()
		has := bytes.Contains(w.errOut.Bytes(), []byte(s))
		w.mu().Unlock()
		if has {
			return
		}
		select {
		case <-w.done:
			t.Fatalf("watch ended before it said %q:\n%s", s, w.errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch did not say %q within %s:\n%s", s, within, w.errOut.String())
		}
	}
}

// mark is where the watcher's stderr ends now: waitProbe reads only what follows.
func (w *watcher) mark() int {
	w.mu().Lock()
	defer w.mu().Unlock()
	return w.errOut.Len()
}

// waitProbe waits until the watcher says, after mark, that it probed node (its line "node N (pool
// P): STATUS REASON"), and returns the status and reason. The condition is written on a change
// only (and hourly), so the watcher's own line is what says a probe happened.
func (w *watcher) waitProbe(t *testing.T, node string, mark int, within time.Duration) (string, string) {
	t.Helper()
	re := regexp.MustCompile(`node ` + regexp.QuoteMeta(node) + ` \(pool [^)]*\): (\w+) (\w+)`)
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		w.mu().Lock()
		m := re.FindSubmatch(w.errOut.Bytes()[mark:])
		w.mu().Unlock()
		if m != nil {
			return string(m[1]), string(m[2])
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch did not probe %s within %s:\n%s", node, within, w.errOut.String())
		}
	}
}

// stopClean stops the watcher with SIGTERM: it must exit 0 and leave nothing in the cluster.
func (w *watcher) stopClean(t *testing.T, c *cluster) {
	t.Helper()
	if code := w.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("watch after SIGTERM: exit %d\n%s", code, w.errOut.String())
	}
	assertNothingLeft(t, c)
}

// stop sends sig to the pullpath process and waits for it to end.
func (w *watcher) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	if err := signalChild(w.cmd.Process.Pid, sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.done:
	case <-time.After(3 * time.Minute):
		_ = w.cmd.Process.Kill()
		t.Fatalf("watch did not end within 3 min of %v\n%s", sig, w.errOut.String())
	}
	return w.cmd.ProcessState.ExitCode()
}

// pathCondition is a node's ImagePullPathBroken condition, or nil.
func (c *cluster) pathCondition(t *testing.T, node string) *corev1.NodeCondition {
	t.Helper()
	n, err := c.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == "ImagePullPathBroken" {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// waitCondition waits until node's condition has status and reason, and returns when it did.
func (c *cluster) waitCondition(t *testing.T, node, status, reason string, within time.Duration, w *watcher) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if cond := c.pathCondition(t, node); cond != nil && string(cond.Status) == status && cond.Reason == reason {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: condition %+v after %s, want %s %s\n%s", node, c.pathCondition(t, node), within, status, reason, w.errOut.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// pathEvents counts the watcher's events on node by reason.
func (c *cluster) pathEvents(t *testing.T, node string) map[string]int {
	t.Helper()
	l, err := c.Client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + node})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range l.Items {
		if e.Source.Component == "pullpath-watch" {
			out[e.Reason]++
		}
	}
	return out
}

// watch on the shared cluster: the new node of pool B without a route turns True/Route, and so
// does its old node that runs the app from its cache (the cached image stops lying); pool A holds;
// a route given flips the new node to False, with one event each way; a watcher killed mid-probe
// leaves pods that the next one removes; a 30 s API server outage neither crashes it nor flips a
// broken node to healthy; SIGTERM leaves nothing.
func TestWatch(t *testing.T) {
	c := sharedCluster(t)
	runNamespace(t, c)
	im := c.Images[cachedImage]
	args := []string{"--image", im.Ref, "--interval", "10s", "--concurrency", "3", "--run-namespace", runNS, "--probe-timeout", "90s"}
	// as the Deployment runs it: the outage below must leave it a standby, never an exit
	w := c.startWatch(t, append(slices.Clone(args), "--leader-elect")...)
	start := time.Now() // the watcher is up: its first probes start now
	before := c.pathEvents(t, "poolb-2")
	for _, n := range []struct{ node, status, reason string }{
		{"poolb-2", "True", "Route"}, {"poolb-1", "True", "Route"}, {"poola-1", "False", "OK"}, {"poolc-1", "True", "Endpoint"}, {"poold-1", "True", "DNS"},
	} {
		at := c.waitCondition(t, n.node, n.status, n.reason, 90*time.Second, w)
		c.figure("watch: node %s %s/%s %s after the watcher was up (3 probes at once)", n.node, n.status, n.reason, at.Sub(start).Round(100*time.Millisecond))
	}
	broken := c.pathCondition(t, "poolb-2")
	if broken.Message == "" || !bytes.Contains([]byte(broken.Message), []byte("registry.cluster.test:443 (registry) step route ROUTE_NONE")) {
		t.Errorf("poolb-2 message %q", broken.Message)
	}

	// the fix: pool B's new node gets its routes
	n := c.node("poolb-2")
	for _, r := range []string{"10.81.0.0/24", "10.82.0.0/24"} {
		c.run("ip", "-n", n.netns, "route", "add", r, "via", hubIP)
	}
	fixed := time.Now()
	c.waitCondition(t, "poolb-2", "False", "OK", 90*time.Second, w)
	c.figure("watch: poolb-2 False/OK %s after its routes were added (interval 10s)", time.Since(fixed).Round(100*time.Millisecond))
	if cond := c.pathCondition(t, "poolb-2"); !cond.LastTransitionTime.After(broken.LastTransitionTime.Time) {
		t.Errorf("lastTransitionTime %v did not move past %v on the flip", cond.LastTransitionTime, broken.LastTransitionTime)
	}
	for _, r := range []string{"10.81.0.0/24", "10.82.0.0/24"} {
		c.run("ip", "-n", n.netns, "route", "del", r, "via", hubIP)
	}
	c.waitCondition(t, "poolb-2", "True", "Route", 90*time.Second, w)
	time.Sleep(2 * time.Second) // the event list may lag the node by a moment
	ev := c.pathEvents(t, "poolb-2")
	if got := ev["ImagePullPathBroken"] - before["ImagePullPathBroken"]; got != 2 {
		t.Errorf("poolb-2: %d broken events for two breaks, want 2 (%v)", got, ev)
	}
	if got := ev["ImagePullPathHealthy"] - before["ImagePullPathHealthy"]; got != 1 {
		t.Errorf("poolb-2: %d healthy events for one fix, want 1 (%v)", got, ev)
	}

	// the API server away for 30 s, past the lease's 20 s renew deadline: the leader stands by,
	// never exits, leads again once the API server answers, and poolb-2 does not turn healthy
	led := bytes.Count(w.output(), []byte("watch: probing every Ready node"))
	api := c.proc("kube-apiserver")
	if err := api.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Second)
	_ = api.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-w.done:
		t.Fatalf("the watcher ended during the API server outage\n%s", w.errOut.String())
	default:
	}
	back := time.Now()
	for bytes.Count(w.output(), []byte("watch: probing every Ready node")) == led {
		if time.Since(back) > 60*time.Second {
			t.Fatalf("the leader did not lead again within 60 s of the API server's return\n%s", w.output())
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.figure("watch --leader-elect: led again %s after a 30 s API server outage, no exit", time.Since(back).Round(100*time.Millisecond))
	if !bytes.Contains(w.output(), []byte("no longer the leader")) {
		t.Errorf("a 30 s outage past the 20 s renew deadline, and the watcher never said it stood by:\n%s", w.output())
	}
	time.Sleep(15 * time.Second) // a probe round after the outage
	if cond := c.pathCondition(t, "poolb-2"); cond == nil || cond.Status != "True" {
		t.Errorf("poolb-2 after the outage: %+v, want still True", cond)
	}

	// killed mid-probe: its probe pods stay until the next watcher removes them
	deadline := time.Now().Add(60 * time.Second)
	for !c.hasWatchPods(t) {
		if time.Now().After(deadline) {
			t.Fatalf("no probe pod of the watcher appeared\n%s", w.errOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.stop(t, syscall.SIGKILL)
	orphans := c.watchPods(t)
	if len(orphans) == 0 {
		t.Log("the probe pod ended before the kill: the restart has nothing to remove")
	}
	// the next watcher probes each node every 10 min: a node that becomes Ready again is probed
	// first, long before its turn
	args2 := append(slices.Clone(args), "--interval", "10m")
	w2 := c.startWatch(t, args2...)
	for _, p := range orphans {
		if _, err := c.Client.CoreV1().Pods(runNS).Get(context.Background(), p, metav1.GetOptions{}); err == nil {
			t.Errorf("the killed watcher's probe pod %s is still there after the next one started", p)
		}
	}
	c.figure("watch: SIGKILL mid-probe left %d probe pod(s); the next watcher removed them before it started", len(orphans))
	// every node carries a fresh condition from the first watcher: the second spreads their next
	// probes over its interval (10 min), and probes at once only what changes
	// poolc-1 turns NotReady (as a node controller would mark it), then its kubelet reports Ready
	notReady := w2.mark()
	patch := []byte(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"Test","message":"pullpath's cluster tier","lastHeartbeatTime":"` +
		time.Now().UTC().Format(time.RFC3339) + `","lastTransitionTime":"` + time.Now().UTC().Format(time.RFC3339) + `"}]}}`)
	if _, err := c.Client.CoreV1().Nodes().PatchStatus(context.Background(), "poolc-1", patch); err != nil {
		t.Fatal(err)
	}
	var readyAgain time.Time
	for deadline := time.Now().Add(2 * time.Minute); readyAgain.IsZero(); time.Sleep(200 * time.Millisecond) {
		if no, err := c.Client.CoreV1().Nodes().Get(context.Background(), "poolc-1", metav1.GetOptions{}); err == nil && nodeReady(no) {
			readyAgain = time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatal("poolc-1's kubelet did not report Ready again within 2 min")
		}
	}
	w2.waitProbe(t, "poolc-1", notReady, 90*time.Second)
	took := time.Since(readyAgain)
	c.figure("watch: poolc-1 probed %s after it became Ready again (interval 10m)", took.Round(100*time.Millisecond))
	if took > 60*time.Second {
		t.Errorf("poolc-1 probed %s after it became Ready, want within 60 s", took)
	}
	// a pod on poolb-2 that cannot pull the image: its kubelet's pull failure (an event) brings
	// the node's probe forward, long before its interval (10 min)
	podNS := c.Namespace(t, "pullfailure")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: podNS}, Spec: corev1.PodSpec{NodeName: "poolb-2", RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "app", Image: im.Ref, ImagePullPolicy: corev1.PullAlways}}}}
	created, mark := time.Now(), w2.mark()
	if _, err := c.Client.CoreV1().Pods(podNS).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w2.waitLog(t, "node poolb-2: its kubelet failed to pull", 90*time.Second)
	var failedAt time.Time
	if evs, err := c.Client.CoreV1().Events(podNS).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=Failed"}); err == nil && len(evs.Items) > 0 {
		failedAt = evs.Items[0].FirstTimestamp.Time
	}
	status, reason := w2.waitProbe(t, "poolb-2", mark, 2*time.Minute)
	from := created
	if !failedAt.IsZero() {
		from = failedAt
	}
	c.figure("watch: poolb-2 probed %s after its kubelet's pull failure (interval 10m)", time.Since(from).Round(time.Second))
	if took := time.Since(from); took > watch.TriggerWithin+30*time.Second {
		t.Errorf("poolb-2 probed %s after its kubelet's pull failure, want within %s and a probe", took, watch.TriggerWithin)
	}
	if status != "True" {
		t.Errorf("poolb-2 after its pull failure: %s/%s, want True (no route)", status, reason)
	}
	w2.stopClean(t, c)
	if cond := c.pathCondition(t, "poolb-2"); cond == nil || cond.Status != "True" {
		t.Errorf("the condition must stay after the watcher: %+v", cond)
	}
	t.Logf("watch stderr:\n%s", w2.errOut.String())
}

func (c *cluster) hasWatchPods(t *testing.T) bool { return len(c.watchPods(t)) > 0 }

// output is a copy of what the watcher wrote to stderr so far.
func (w *watcher) output() []byte {
	w.mu().Lock()
	defer w.mu().Unlock()
	return bytes.Clone(w.errOut.Bytes())
}

// watchPods are the names of the watchers' probe pods.
func (c *cluster) watchPods(t *testing.T) []string {
	l, err := c.Client.CoreV1().Pods(runNS).List(context.Background(), metav1.ListOptions{LabelSelector: "pullpath.dev/by=watch,pullpath.dev/role=probe"})
	if err != nil {
		return nil
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	return names
}

// syncWriter lets a test read a child's stderr while the child writes it.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// A real Prometheus (Debian's) scrapes the watcher in the hub's network namespace and evaluates
// deploy/watch/alerts.yaml (its "for" cut to 0s, the expressions as shipped): the pool alert fires
// for pool B, whose nodes have no route, and not for pool A; every expression of the Grafana
// dashboard (deploy/watch/dashboard.json) returns series.
func TestWatchMetricsInPrometheus(t *testing.T) {
	c := sharedCluster(t)
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not found (Debian's prometheus package; scripts/deps.sh installs it as root)")
	}
	runNamespace(t, c)
	im := c.Images[cachedImage]
	w := c.startWatch(t, "--image", im.Ref, "--interval", "30s", "--run-namespace", runNS, "--probe-timeout", "90s", "--metrics-address", "127.0.0.1:9464")
	dir := t.TempDir()
	rules, err := os.ReadFile(filepath.Join("..", "..", "deploy", "watch", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.yaml"), regexp.MustCompile(`for: \d+m`).ReplaceAll(rules, []byte("for: 0s")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "global: {scrape_interval: 2s, evaluation_interval: 2s}\nrule_files: [alerts.yaml]\n" +
		"scrape_configs:\n  - job_name: pullpath-watch\n    static_configs: [{targets: ['127.0.0.1:9464']}]\n"
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := c.start("prometheus", nil, "nsenter", "--net=/run/netns/"+c.hub, "--", prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address=127.0.0.1:9465")
	defer func() { _ = p.cmd.Process.Kill(); <-p.done }()
	hc := &http.Client{Transport: &http.Transport{DialContext: netnsdial.In(c.hub)}, Timeout: 5 * time.Second}
	// firingNow is every firing alert, as alertname/pool
	firingNow := func() []string {
		var out []string
		resp, err := hc.Get("http://127.0.0.1:9465/api/v1/alerts")
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var a struct {
			Data struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"data"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&a)
		for _, al := range a.Data.Alerts {
			if al.State == "firing" {
				out = append(out, al.Labels["alertname"]+"/"+al.Labels["pool"])
			}
		}
		return out
	}
	var firing []string
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(2 * time.Second) {
		firing = firingNow()
		if slices.Contains(firing, "PullPathBrokenInPool/poolb") || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Contains(firing, "PullPathBrokenInPool/poolb") || slices.Contains(firing, "PullPathBrokenInPool/poola") {
		t.Errorf("firing %v; want PullPathBrokenInPool for poolb, not poola\nprometheus: %s\nwatch: %s", firing, c.logTail("prometheus"), w.errOut.String())
	}
	c.figure("watch: a real Prometheus scraped pullpath_watch_* and fired %v", firing)

	// every expression of the Grafana dashboard returns series from the same Prometheus
	exprs := dashboardExprs(t)
	start := time.Now()
	empty := map[string]bool{}
	for _, e := range exprs {
		empty[e] = true
	}
	for deadline := time.Now().Add(90 * time.Second); len(empty) > 0 && time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		for e := range empty {
			resp, err := hc.Get("http://127.0.0.1:9465/api/v1/query?query=" + url.QueryEscape(e))
			if err != nil {
				continue
			}
			var q struct {
				Status string `json:"status"`
				Error  string `json:"error"`
				Data   struct {
					Result []json.RawMessage `json:"result"`
				} `json:"data"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&q)
			resp.Body.Close()
			if q.Status == "error" {
				t.Errorf("dashboard expression %q: %s", e, q.Error)
				delete(empty, e)
			} else if len(q.Data.Result) > 0 {
				delete(empty, e)
			}
		}
	}
	for e := range empty {
		t.Errorf("dashboard expression %q: no series from a Prometheus that scrapes a watcher", e)
	}
	c.figure("watch: the %d expressions of the Grafana dashboard returned series within %s (%d did not)", len(exprs), time.Since(start).Round(time.Second), len(empty))
	// the watcher's own health: quiet while it runs, and a stopped watcher fires
	// PullPathWatcherAbsent (its "for" cut to 0s), on the same Prometheus
	for _, quiet := range []string{"PullPathWatcherAbsent", "PullPathWatcherStuck", "PullPathNodesNotProbed"} {
		if slices.Contains(firingNow(), quiet+"/") {
			t.Errorf("%s fires while a healthy watcher runs", quiet)
		}
	}
	w.stopClean(t, c)
	stopped := time.Now()
	for !slices.Contains(firingNow(), "PullPathWatcherAbsent/") {
		if time.Since(stopped) > 60*time.Second {
			t.Fatalf("PullPathWatcherAbsent did not fire within 60 s of the watcher's stop: %v\nprometheus: %s", firingNow(), c.logTail("prometheus"))
		}
		time.Sleep(time.Second)
	}
	c.figure("watch: PullPathWatcherAbsent fired %s after the watcher stopped (scrape 2 s)", time.Since(stopped).Round(time.Second))
}

// dashboardExprs are the PromQL expressions of deploy/watch/dashboard.json's panels, Grafana's
// variables replaced by what "All" gives (internal/watch's test checks the file itself).
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "watch", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d panel
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	all := strings.NewReplacer("$__rate_interval", "1m", "$pool", ".*", "$image", ".*")
	var exprs []string
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatal(err)
			}
			for _, tg := range p.Targets {
				exprs = append(exprs, all.Replace(tg.Expr))
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(exprs) == 0 {
		t.Fatal("no expression in dashboard.json")
	}
	return exprs
}

// Two watchers with --leader-elect, as the Deployment runs them: only the holder of the Lease
// probes; the standby creates nothing while it waits; when the leader is killed mid-probe, the
// standby takes the Lease once it expires, removes the dead leader's probe pods, and probes.
func TestWatchLeaderElection(t *testing.T) {
	c := sharedCluster(t)
	runNamespace(t, c)
	im := c.Images[cachedImage]
	args := []string{"--image", im.Ref, "--interval", "10s", "--concurrency", "2", "--run-namespace", runNS, "--probe-timeout", "90s", "--leader-elect"}
	a := c.startWatch(t, args...)
	b := c.startWatchSaying(t, "waiting to lead", args...)
	lease, err := c.Client.CoordinationV1().Leases(runNS).Get(context.Background(), "pullpath-watch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id := *lease.Spec.HolderIdentity; !strings.HasSuffix(id, fmt.Sprintf("-%d", a.cmd.Process.Pid)) {
		t.Fatalf("lease held by %s, want the first watcher (pid %d)", id, a.cmd.Process.Pid)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !c.hasWatchPods(t) {
		if time.Now().After(deadline) {
			t.Fatalf("the leader created no probe pod\n%s", a.errOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.mu().Lock()
	standby := b.errOut.String()
	b.mu().Unlock()
	if strings.Contains(standby, "probing every Ready node") || strings.Contains(standby, "node ") {
		t.Errorf("the standby acted while the leader held the lease:\n%s", standby)
	}
	a.stop(t, syscall.SIGKILL)
	killed := time.Now()
	orphans := c.watchPods(t)
	b.waitLog(t, "watch: probing every Ready node", 90*time.Second)
	took := time.Since(killed)
	for _, p := range orphans {
		if _, err := c.Client.CoreV1().Pods(runNS).Get(context.Background(), p, metav1.GetOptions{}); err == nil {
			t.Errorf("the dead leader's probe pod %s is still there after the standby took over", p)
		}
	}
	c.waitCondition(t, "poola-1", "False", "OK", 90*time.Second, b)
	c.figure("watch --leader-elect: the standby led %s after the leader's SIGKILL (lease 30 s), removed its %d probe pod(s) and probed", took.Round(100*time.Millisecond), len(orphans))
	if took > 60*time.Second {
		t.Errorf("the standby took over %s after the leader died, want within the 30 s lease and a retry", took)
	}
	b.stopClean(t, c)
}

// The in-cluster manifests (`pullpath watch manifests`, deploy/watch/watch.yaml) are accepted by a
// real API server, then applied and deleted for real: every object is first created with a
// server-side dry run (schema, defaulting, admission, RBAC's escalation check on the roles, the
// CronJob's schedule, both admission policies' CEL), the watcher's pod is dry-run in its own
// namespace (Pod Security restricted enforced), then everything but the workloads is created and
// deleted, and verify's run namespace is still there. Namespaces and cluster-wide names are the
// test's own; the --secret roles are in.
func TestWatchManifestsAccepted(t *testing.T) {
	c := sharedCluster(t)
	runNamespace(t, c) // verify's, which deleting watch's install must leave
	own, run := "pullpath-watcher-"+fmt.Sprint(time.Now().UnixNano()%100000), "pullpath-watchrun-"+fmt.Sprint(time.Now().UnixNano()%100000)
	src := c.Namespace(t, "watchsecret")
	out, errOut, code := c.Run(t, "watch", "manifests", "--image", "registry.cluster.test/cached/app:v1",
		"--watcher-image", "registry.cluster.test/tools/pullpath:v1", "--namespace", own, "--run-namespace", run, "--secret", src+"/regcred",
		"--janitor-namespace", runNS)
	if code != 0 {
		t.Fatalf("watch manifests: exit %d\n%s", code, errOut)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	objs := installObjects(t, out, "-"+run)
	ri := func(u *unstructured.Unstructured) dynamic.ResourceInterface { return resourceFor(t, dyn, u) }
	ctx := context.Background()
	var kinds []string
	var made []*unstructured.Unstructured
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			_ = ri(made[i]).Delete(context.Background(), made[i].GetName(), metav1.DeleteOptions{})
		}
	})
	// the namespaces for real (a dry run in a namespace that does not exist is refused), then a
	// dry run of everything else
	for _, u := range objs {
		kinds = append(kinds, u.GetKind())
		if u.GetKind() == "Namespace" {
			if _, err := ri(u).Create(ctx, u, metav1.CreateOptions{}); err != nil {
				t.Fatalf("namespace %s: %v", u.GetName(), err)
			}
			made = append(made, u)
		}
	}
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			continue
		}
		if _, err := ri(u).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("%s %s: the API server refused it: %v", u.GetKind(), u.GetName(), err)
		}
	}
	if t.Failed() {
		return
	}
	// applied for real (no workloads: their image is a placeholder), then deleted as kubectl
	// delete -f would
	for _, u := range objs {
		if k := u.GetKind(); k == "Namespace" || k == "Deployment" || k == "CronJob" {
			continue
		}
		if _, err := ri(u).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		made = append(made, u)
	}
	// the watcher's and the janitor's pods, as their controllers would make them (their
	// ServiceAccounts exist now), in the watcher's namespace: Pod Security restricted admits them
	for _, u := range objs {
		path := map[string][]string{"Deployment": {"spec", "template"}, "CronJob": {"spec", "jobTemplate", "spec", "template"}}[u.GetKind()]
		if path == nil {
			continue
		}
		tmpl, _, _ := unstructured.NestedMap(u.Object, path...)
		pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "dry-" + strings.ToLower(u.GetKind()), "namespace": u.GetNamespace()}, "spec": tmpl["spec"]}}
		if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(u.GetNamespace()).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("the %s's pod in namespace %s: %v", u.GetKind(), u.GetNamespace(), err)
		}
	}
	for i := len(made) - 1; i >= 0; i-- {
		if err := ri(made[i]).Delete(ctx, made[i].GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s %s: %v", made[i].GetKind(), made[i].GetName(), err)
		}
	}
	made = nil
	if n, err := c.Client.CoreV1().Namespaces().Get(ctx, runNS, metav1.GetOptions{}); err != nil || n.DeletionTimestamp != nil {
		t.Errorf("verify's run namespace %s after deleting watch's install: %v", runNS, err)
	}
	for _, want := range []string{"Deployment", "ClusterRole", "NetworkPolicy", "CronJob", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("manifests hold %v, want a Deployment, its roles, the metrics NetworkPolicy, the janitor's CronJob and the admission policies", kinds)
			break
		}
	}
}

// installObjects decodes an install's objects, cluster-wide names given the suffix (and what
// refers to them): the tier's other tests never meet them.
func installObjects(t *testing.T, out, suffix string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetNamespace() == "" && u.GetKind() != "Namespace" {
			u.SetName(u.GetName() + suffix)
		}
		if kind, _, _ := unstructured.NestedString(u.Object, "roleRef", "kind"); kind == "ClusterRole" {
			name, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
			_ = unstructured.SetNestedField(u.Object, name+suffix, "roleRef", "name")
		}
		if p, ok, _ := unstructured.NestedString(u.Object, "spec", "policyName"); ok {
			_ = unstructured.SetNestedField(u.Object, p+suffix, "spec", "policyName")
		}
		objs = append(objs, u)
	}
	return objs
}

// resourceFor is the API of an install's object.
func resourceFor(t *testing.T, dyn dynamic.Interface, u *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvr, ok := manifestResources[u.GetKind()]
	if !ok {
		t.Fatalf("a %s in the manifests, which this test does not know", u.GetKind())
	}
	if u.GetNamespace() != "" {
		return dyn.Resource(gvr).Namespace(u.GetNamespace())
	}
	return dyn.Resource(gvr)
}

// manifestResources are the resources of the kinds `watch manifests` prints.
var manifestResources = map[string]schema.GroupVersionResource{
	"Namespace": {Version: "v1", Resource: "namespaces"}, "ServiceAccount": {Version: "v1", Resource: "serviceaccounts"},
	"ClusterRole":                      {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding":               {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"Role":                             {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":                      {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"Deployment":                       {Group: "apps", Version: "v1", Resource: "deployments"},
	"NetworkPolicy":                    {Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
	"CronJob":                          {Group: "batch", Version: "v1", Resource: "cronjobs"},
	"ValidatingAdmissionPolicy":        {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
	"ValidatingAdmissionPolicyBinding": {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
	"Service":                          {Version: "v1", Resource: "services"}, // the Helm chart's, for its ServiceMonitor
}

// helmBin is helm v4.3.2: $PULLPATH_HELM (scripts/deps.sh sets it), else scripts/helmbin.sh's
// newest cached build, else helm on the PATH.
func helmBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PULLPATH_HELM"); p != "" {
		return p
	}
	root := os.Getenv("PULLPATH_CACHE")
	if root == "" {
		root = "/var/cache/pullpath"
	}
	if m, _ := filepath.Glob(filepath.Join(root, "helm-v4.3.2-*", "helm")); len(m) > 0 {
		return m[len(m)-1]
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	t.Skip("no helm: bash scripts/helmbin.sh builds it (scripts/deps.sh does, and sets PULLPATH_HELM)")
	return ""
}

// The Helm chart (deploy/helm/pullpath-watch) with every addition on passes helm lint, renders for
// the tier's API server version (the chart's kubeVersion), and the API server admits each object
// (a dry run, in namespaces of the test's own created for real with the ServiceAccounts), and the
// workloads' pods with the chart's scheduling, pull secrets and resources under Pod Security
// restricted. The ServiceMonitor and the PrometheusRule are not sent: the tier has no Prometheus
// Operator CRDs.
func TestWatchHelmChartAccepted(t *testing.T) {
	c := sharedCluster(t)
	helm := helmBin(t)
	sv, err := c.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	n := fmt.Sprint(time.Now().UnixNano() % 100000)
	own, run := "pullpath-helm-"+n, "pullpath-helmrun-"+n
	src := c.Namespace(t, "helmsecret")
	chart := filepath.Join("..", "..", "deploy", "helm", "pullpath-watch")
	set := []string{"--set", "images={registry.cluster.test/cached/app:v1}", "--set", "watcherImage=registry.cluster.test/tools/pullpath:v1",
		"--set", "namespace=" + own, "--set", "runNamespace=" + run, "--set", "secret=" + src + "/regcred", "--set", "janitorNamespace=" + runNS,
		"--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true", "--set", "imagePullSecrets[0].name=regcred",
		"--set", "nodeSelector.pool=a", "--set", "tolerations[0].key=dedicated", "--set", "tolerations[0].operator=Exists",
		"--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=kubernetes.io/os",
		"--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=In",
		"--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values={linux}",
		"--set", "resources.limits.memory=300Mi"}
	helmRun := func(args ...string) string {
		home := t.TempDir()
		cmd := exec.Command(helm, args...)
		// no repositories, plugins or logins of the machine's; no cluster (rendered here, sent by the test)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/c", "HELM_CONFIG_HOME="+home+"/g", "HELM_DATA_HOME="+home+"/d", "KUBECONFIG="+home+"/none")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm %s: %v\n%s%s", args[0], err, out.String(), errOut.String())
		}
		return out.String()
	}
	start := time.Now()
	helmRun(append([]string{"lint", "--strict", "--kube-version", sv.GitVersion, chart}, set...)...)
	out := helmRun(append([]string{"template", "pullpath-watch", chart, "--kube-version", sv.GitVersion}, set...)...)
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var made []*unstructured.Unstructured
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			_ = resourceFor(t, dyn, made[i]).Delete(context.Background(), made[i].GetName(), metav1.DeleteOptions{})
		}
	})
	objs := installObjects(t, out, "-"+run)
	// the namespaces and the ServiceAccounts for real (a dry run in a namespace that does not exist
	// is refused, and so is a pod of an account that does not), the rest dry-run
	for _, kind := range []string{"Namespace", "ServiceAccount"} {
		for _, u := range objs {
			if u.GetKind() == kind {
				if _, err := resourceFor(t, dyn, u).Create(ctx, u, metav1.CreateOptions{}); err != nil {
					t.Fatalf("%s %s: %v", kind, u.GetName(), err)
				}
				made = append(made, u)
			}
		}
	}
	var skipped []string
	for _, u := range objs {
		switch u.GetKind() {
		case "Namespace", "ServiceAccount":
			continue
		case "ServiceMonitor", "PrometheusRule":
			skipped = append(skipped, u.GetKind())
			continue
		}
		if _, err := resourceFor(t, dyn, u).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("%s %s: the API server refused it: %v", u.GetKind(), u.GetName(), err)
		}
		path := map[string][]string{"Deployment": {"spec", "template"}, "CronJob": {"spec", "jobTemplate", "spec", "template"}}[u.GetKind()]
		if path == nil {
			continue
		}
		tmpl, _, _ := unstructured.NestedMap(u.Object, path...)
		if _, ok := tmpl["spec"].(map[string]any)["tolerations"]; !ok {
			t.Errorf("the %s's pod has no tolerations: the chart's values did not reach it", u.GetKind())
		}
		pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "dry-" + strings.ToLower(u.GetKind()), "namespace": u.GetNamespace()}, "spec": tmpl["spec"]}}
		if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(u.GetNamespace()).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("the %s's pod in namespace %s: %v", u.GetKind(), u.GetNamespace(), err)
		}
	}
	if !slices.Contains(skipped, "ServiceMonitor") || !slices.Contains(skipped, "PrometheusRule") {
		t.Errorf("the chart rendered no ServiceMonitor or PrometheusRule with both on: %v", skipped)
	}
	t.Logf("helm lint, helm template and %d objects dry-run in %s; not sent (no Prometheus Operator CRDs in the tier): %v", len(objs), time.Since(start).Round(10*time.Millisecond), skipped)
}
