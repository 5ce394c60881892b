package cluster

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/nodeprobe"
	"github.com/pullpath/pullpath/test/internal/netnsdial"
	"github.com/pullpath/pullpath/test/internal/promtext"
)

// apiCounts is what the API server itself counted so far: pod creations and attach streams.
func (c *cluster) apiCounts(t *testing.T) (creates, attaches float64) {
	t.Helper()
	raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("the API server's metrics: %v", err)
	}
	m, err := promtext.Parse(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	sub := regexp.MustCompile(`subresource="([^"]*)"`)
	for k, v := range m {
		if !strings.HasPrefix(k, "apiserver_request_total{") || !strings.Contains(k, `resource="pods"`) {
			continue
		}
		s := ""
		if m := sub.FindStringSubmatch(k); m != nil {
			s = m[1]
		}
		switch {
		case s == "attach":
			attaches += v
		case s == "" && strings.Contains(k, `verb="POST"`):
			creates += v
		}
	}
	return creates, attaches
}

// agentPods are the resident agents' pods in runNS, by node.
func (c *cluster) agentPods(t *testing.T) map[string]corev1.Pod {
	t.Helper()
	l, err := c.Client.CoreV1().Pods(runNS).List(context.Background(), metav1.ListOptions{LabelSelector: nodeprobe.AgentSelector})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range l.Items {
		out[p.Spec.NodeName] = p
	}
	return out
}

// watch --resident on the shared cluster (issue 35): an agent pod per node, from the agent image
// where the node can pull it and from the node's sandbox image where it cannot; the same verdicts
// as the probe pods; after the first round a window of three intervals in which the API server
// counts no pod creation and no attach stream, the same agent pod on every node and no condition
// written; the route heal flips the condition within an interval, one event each way; a kubelet's
// pull failure has the node's agent probe within 30 s; SIGTERM leaves nothing.
func TestWatchResident(t *testing.T) {
	c := sharedCluster(t)
	runNamespace(t, c)
	agentImage := pushProbeImage(t, c)
	im := c.Images[cachedImage]
	const interval = 15 * time.Second
	w := c.startWatch(t, "--image", im.Ref, "--resident", "--agent-image", agentImage, "--interval", interval.String(),
		"--run-namespace", runNS, "--probe-timeout", "90s", "--metrics-address", "127.0.0.1:9467")
	start := time.Now()
	hc := &http.Client{Transport: &http.Transport{DialContext: netnsdial.In(c.hub)}, Timeout: 5 * time.Second}
	scrape := func() map[string]float64 { return promtext.Scrape(t, hc, "http://127.0.0.1:9467/metrics") }
	for _, n := range []struct{ node, status, reason string }{
		{"poolb-2", "True", "Route"}, {"poolb-1", "True", "Route"}, {"poola-1", "False", "OK"}, {"poolc-1", "True", "Endpoint"}, {"poold-1", "True", "DNS"},
	} {
		status, reason := w.waitProbe(t, n.node, 0, 3*time.Minute)
		if status != n.status || reason != n.reason {
			t.Errorf("node %s from its agent: %s/%s, want %s/%s (as its probe pod says)", n.node, status, reason, n.status, n.reason)
		}
		c.figure("watch --resident: node %s %s/%s %s after the watcher was up", n.node, status, reason, time.Since(start).Round(100*time.Millisecond))
	}
	// the agents: the image where the node pulls it, the sandbox image where it cannot
	var agents map[string]corev1.Pod
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		agents = c.agentPods(t)
		running := 0
		for _, p := range agents {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running == len(c.nodes) && len(agents) == len(c.nodes) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d agents, %d running; want one running on each of %d nodes\n%s", len(agents), running, len(c.nodes), w.errOut.String())
		}
	}
	if p := agents["poola-1"]; nodeprobe.AgentMode(&p) != nodeprobe.AgentImage || p.Spec.Containers[0].Image != agentImage {
		t.Errorf("poola-1 reaches the registry: its agent %s runs %s, want the agent image %s", nodeprobe.AgentMode(&p), p.Spec.Containers[0].Image, agentImage)
	}
	if p := agents["poolb-2"]; nodeprobe.AgentMode(&p) != nodeprobe.AgentNoPull || !strings.HasPrefix(p.Spec.Containers[0].Image, "registry.k8s.io/pause") {
		t.Errorf("poolb-2 cannot pull: its agent %s runs %s, want the sandbox image", nodeprobe.AgentMode(&p), p.Spec.Containers[0].Image)
	}
	if !hasText(w.errOut.String(), "node poolb-2: cannot pull the agent image") {
		t.Errorf("the node that cannot pull the agent image is not said:\n%s", w.errOut.String())
	}
	if v := scrape()["pullpath_watch_agent_image_unpullable_total"]; v < 1 {
		t.Errorf("pullpath_watch_agent_image_unpullable_total %v, want ≥ 1", v)
	}

	// the steady window: three intervals, once every agent runs and was read once more
	read := promtext.Sum(scrape(), `pullpath_watch_probes_total{`)
	for deadline := time.Now().Add(2 * interval); promtext.Sum(scrape(), `pullpath_watch_probes_total{`) < read+float64(len(c.nodes)); time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("the agents were not read again within %s\n%s", 2*interval, w.errOut.String())
		}
	}
	uids := map[string]string{}
	for n, p := range c.agentPods(t) {
		uids[n] = string(p.UID)
	}
	conds := map[string]metav1.Time{}
	for _, n := range c.nodes {
		if cond := c.pathCondition(t, n.spec.Name); cond != nil {
			conds[n.spec.Name] = cond.LastHeartbeatTime
		}
	}
	agentCost := func() map[string]map[string]float64 {
		out := map[string]map[string]float64{}
		for n, p := range c.agentPods(t) {
			out[n] = promtext.Scrape(t, hc, "http://"+p.Status.PodIP+":9477/metrics")
		}
		return out
	}
	creates0, attaches0 := c.apiCounts(t)
	m0, a0 := scrape(), agentCost()
	window := 3 * interval
	time.Sleep(window)
	creates1, attaches1 := c.apiCounts(t)
	m1, a1 := scrape(), agentCost()
	var maxRSS, maxCPU float64
	for n, m := range a1 {
		maxRSS = max(maxRSS, m["process_resident_memory_bytes"])
		maxCPU = max(maxCPU, (m["process_cpu_seconds_total"]-a0[n]["process_cpu_seconds_total"])/window.Seconds())
	}
	// an agent probes every interval: at 15m its CPU is this window's times 20s/15m
	c.figure("watch --resident: agents at interval %s: peak RSS %.1f MiB, peak CPU %.1f mCPU (%.2f mCPU at the default 15m)",
		interval, maxRSS/(1<<20), maxCPU*1000, maxCPU*1000*interval.Seconds()/(15*60))
	if maxRSS > 30<<20 {
		t.Errorf("an agent's RSS is %.1f MiB, over the 30 MiB budget", maxRSS/(1<<20))
	}
	delta := func(prefix string) float64 { return promtext.Sum(m1, prefix) - promtext.Sum(m0, prefix) }
	if creates1 != creates0 || attaches1 != attaches0 {
		t.Errorf("in the steady window the API server counted %v pod creations and %v attach streams, want 0 and 0", creates1-creates0, attaches1-attaches0)
	}
	for n, p := range c.agentPods(t) {
		if uids[n] != string(p.UID) {
			t.Errorf("node %s's agent pod changed in the steady window", n)
		}
	}
	for n, hb := range conds {
		if cond := c.pathCondition(t, n); cond == nil || !cond.LastHeartbeatTime.Equal(&hb) {
			t.Errorf("node %s's condition was written in the steady window: %+v", n, cond)
		}
	}
	probes := delta(`pullpath_watch_probes_total{`)
	if probes < float64(len(c.nodes)*2) {
		t.Errorf("only %v agent results read in the steady window of %s, want at least 2 per node", probes, window)
	}
	var writes float64
	for k := range m1 {
		if strings.HasPrefix(k, `pullpath_watch_api_requests_total{`) && !strings.Contains(k, `method="GET"`) && !strings.Contains(k, `method="WATCH"`) {
			writes += m1[k] - m0[k]
		}
	}
	condWrites := delta(`pullpath_watch_api_requests_total{method="PATCH",resource="nodes/status"}`)
	c.figure("watch --resident: %.1f registry requests per agent round in the window (quick rounds: the manifest and the config blob through its redirect; every 6th a full download)",
		delta(`pullpath_watch_registry_requests_total{`)/probes)
	c.figure("watch --resident: steady window %s on %d nodes: %v pod creations, %v attach streams, %v agent results read, %.0f condition writes, %.0f API writes by the watcher in all (its status ConfigMap, every min(interval, 1m): %.0f an hour whatever the number of nodes), watcher RSS %.0f MiB",
		window, len(c.nodes), creates1-creates0, attaches1-attaches0, probes, condWrites, writes, writes*float64(time.Hour)/float64(window), m1["process_resident_memory_bytes"]/(1<<20))
	if condWrites != 0 {
		t.Errorf("%.0f condition writes in the steady window, want 0 (no verdict changed)", condWrites)
	}

	// the heal: poolb-2 gets its routes, and its agent's next round says so
	n := c.node("poolb-2")
	before := c.pathEvents(t, "poolb-2")
	mark := w.mark()
	for _, r := range []string{"10.81.0.0/24", "10.82.0.0/24"} {
		c.run("ip", "-n", n.netns, "route", "add", r, "via", hubIP)
	}
	fixed := time.Now()
	status, reason := w.waitProbe(t, "poolb-2", mark, interval+2*time.Minute)
	healed := time.Since(fixed)
	c.figure("watch --resident: poolb-2 %s/%s %s after its routes were added (interval %s)", status, reason, healed.Round(100*time.Millisecond), interval)
	if status != "False" {
		t.Errorf("poolb-2 after its routes: %s/%s, want False/OK", status, reason)
	}
	if healed > interval+30*time.Second {
		t.Errorf("poolb-2 healed %s after its routes, want within the interval (%s) and a probe", healed, interval)
	}
	// broken again, and a pod that cannot pull: the kubelet's failure has the agent probe now
	for _, r := range []string{"10.81.0.0/24", "10.82.0.0/24"} {
		c.run("ip", "-n", n.netns, "route", "del", r, "via", hubIP)
	}
	if after := c.pathEvents(t, "poolb-2"); after["ImagePullPathHealthy"] != before["ImagePullPathHealthy"]+1 {
		t.Errorf("events on poolb-2 %v then %v: want one ImagePullPathHealthy for the heal", before, after)
	}
	podNS := c.Namespace(t, "residentpull")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: podNS}, Spec: corev1.PodSpec{NodeName: "poolb-2", RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "app", Image: im.Ref, ImagePullPolicy: corev1.PullAlways}}}}
	mark = w.mark()
	if _, err := c.Client.CoreV1().Pods(podNS).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitLog(t, "node poolb-2: asked its agent to probe "+im.Ref+" now", 90*time.Second)
	var failedAt time.Time
	if evs, err := c.Client.CoreV1().Events(podNS).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=Failed"}); err == nil && len(evs.Items) > 0 {
		failedAt = evs.Items[0].FirstTimestamp.Time
	}
	status, reason = w.waitProbe(t, "poolb-2", mark, 90*time.Second)
	if failedAt.IsZero() {
		t.Fatal("no Failed event of the kubelet's pull")
	}
	took := time.Since(failedAt)
	c.figure("watch --resident: poolb-2 %s/%s %s after its kubelet's pull failure", status, reason, took.Round(time.Second))
	if took > 30*time.Second+time.Second { // the event's time is to the second
		t.Errorf("poolb-2 probed %s after its kubelet's pull failure, want within 30 s", took)
	}
	if status != "True" {
		t.Errorf("poolb-2 after its pull failure: %s/%s, want True (no route)", status, reason)
	}
	w.stopClean(t, c)
	if left := c.agentPods(t); len(left) != 0 {
		t.Errorf("agents left after SIGTERM on nodes %v", slices.Sorted(maps.Keys(left)))
	}
	t.Logf("watch --resident stderr:\n%s", w.errOut.String())
}
