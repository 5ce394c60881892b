package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/cluster/clustertest"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"github.com/pullpath/pullpath/internal/report"
)

// checkResult fails when what the watcher would write from r is outside its bounds and sets.
func checkResult(t testing.TB, r ImageResult) {
	t.Helper()
	c := conditionOf([]ImageResult{r})
	if len(c.Message) > MaxMessage || !printable(c.Message) {
		t.Fatalf("condition message of %d bytes: %.200q", len(c.Message), c.Message)
	}
	if reasonOf(c.Reason) != c.Reason || c.Reason == "" {
		t.Fatalf("reason %q outside the closed set", c.Reason)
	}
	if len(r.Error) > maxError+3 || !printable(r.Error) {
		t.Fatalf("error of %d bytes: %.200q", len(r.Error), r.Error)
	}
	if v := r.Verdict; v != nil {
		if !v.Class.Valid() || !v.Code.Known() || roleOf(v.Role) != v.Role || len(v.Host) > 260 || !printable(v.Host) ||
			len(v.Summary) > MaxMessage || !printable(v.Summary) {
			t.Fatalf("verdict outside its sets or bounds: class %q code %q role %q host %.80q (%d bytes)", v.Class, v.Code, v.Role, v.Host, len(v.Host))
		}
		if s := stepOf(v.Step); s != "other" && s != v.Step.String() {
			t.Fatalf("step %q", s)
		}
	}
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x202e || r == 0x2066 {
			return false
		}
	}
	return true
}

// A node's report is untrusted: the reproduction (a 200,000-character failing host) made a
// 200 KB condition message and status entry; unknown class, role, step and code went through as
// written.
func TestTamperedReportIsBounded(t *testing.T) {
	huge := strings.Repeat("a", 200_000) + ":443"
	for _, p := range []*report.Probe{
		{Class: report.ClassEndpoint, Code: report.CodeBlobRedirectFailed, Summary: huge,
			Failing: &report.Failing{Host: huge, Role: report.RoleBlob, Step: report.StepDNS, Code: report.CodeBlobRedirectFailed}},
		{Class: "pwned\x1b[2J", Code: "EVIL\r\n", Summary: "\x1b]0;x\x07",
			Failing: &report.Failing{Host: "h\x1b[31m:1", Role: report.Role("role-" + strings.Repeat("r", 5000)), Step: 42, Code: "EVIL"}},
	} {
		r := intake("reg.example/app:1", true, &report.PoolResult{Probe: p})
		checkResult(t, r)
		c := conditionOf([]ImageResult{r})
		t.Logf("condition %s %s, message of %d bytes", c.Status, c.Reason, len(c.Message))
		if p.Class == report.ClassEndpoint && (c.Reason != "Endpoint" || !strings.HasPrefix(c.Message, "reg.example/app:1: aaaa")) {
			t.Errorf("a valid verdict keeps its meaning: %+v", c)
		}
		if p.Class != report.ClassEndpoint && (c.Reason != "Other" || r.Verdict.Role != "other" || r.Verdict.Code != report.CodeUnknown || !strings.Contains(c.Message, "step other")) {
			t.Errorf("unknown values: %+v, verdict %+v", c, r.Verdict)
		}
	}
	r := intake("reg.example/app:1", true, &report.PoolResult{Error: strings.Repeat("the node says \x1b[2J ", 10_000)})
	checkResult(t, r)
	if Reason("evil\x1b") != "Other" || reasonOf("Evil") != "Other" || reasonOf("RateLimit") != "RateLimit" {
		t.Errorf("Reason and reasonOf keep to the closed set")
	}
}

// The Event note has the condition's cap, whatever an earlier condition read from the node says.
func TestEventNoteIsBounded(t *testing.T) {
	fc := fake.NewClientset()
	w := &Watcher{cs: &cluster.Client{Core: kubefake.Core(fc.CoreV1())}}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	big := strings.Repeat("x", 300_000)
	w.event(context.Background(), n, Condition{Status: "True", Reason: "Endpoint", Message: big}, Condition{Status: "True", Reason: "Route", Message: "b\x1b[2J" + big})
	evs, err := fc.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(evs.Items) != 1 {
		t.Fatalf("events %v, %v", evs, err)
	}
	if m := evs.Items[0].Message; len(m) > MaxMessage || !printable(m) {
		t.Errorf("event note of %d bytes", len(m))
	}
}

func seriesCount(t *testing.T, m *metrics, name string) int {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}

// One tampered report made a series per role it named (300,000 of them, never deleted): labels
// come from closed sets, and a pool's series go with its last node.
func TestTamperedReportMakesBoundedSeries(t *testing.T) {
	m := newMetrics(time.Minute, nil, "test")
	p := &report.Probe{Class: "x", Code: "y"}
	for i := range 10_000 {
		role := report.Role(fmt.Sprintf("role-%d", i))
		p.Steps = append(p.Steps, report.Step{Role: role, Step: report.StepName(i), Verdict: report.Pass})
		p.Hops = append(p.Hops, report.Hop{Role: role})
	}
	r := intake("reg.example/app:1", true, &report.PoolResult{Probe: p, Delivery: "evil"})
	m.observe("n1", "pool1", r, &report.PoolResult{Probe: p, Delivery: "evil", DeliveryStats: &report.DeliveryStats{Bytes: 1}}, time.Now())
	steps, reqs, probes := seriesCount(t, m, "pullpath_watch_step_duration_seconds"), seriesCount(t, m, "pullpath_watch_registry_requests_total"), seriesCount(t, m, "pullpath_watch_probes_total")
	t.Logf("series: %d step, %d requests, %d probes", steps, reqs, probes)
	if steps != 10 || reqs != 1 || probes != 1 || seriesCount(t, m, "pullpath_watch_delivered_bytes_total") != 1 {
		t.Errorf("series: %d step, %d requests, %d probes: want role other, and the 9 steps and other", steps, reqs, probes)
	}
	names := []string{"pullpath_watch_step_duration_seconds", "pullpath_watch_registry_requests_total", "pullpath_watch_probes_total", "pullpath_watch_path_ok", "pullpath_watch_last_result_timestamp_seconds"}
	m.observe("n2", "pool2", r, &report.PoolResult{Probe: p}, time.Now())
	both := map[string]int{}
	for _, name := range names {
		both[name] = seriesCount(t, m, name)
	}
	m.forget("n1", map[string]bool{"pool2": true})
	for _, name := range names {
		if got := seriesCount(t, m, name); got*2 != both[name] || got == 0 {
			t.Errorf("%s: %d series after pool1's last node went, %d before: want pool2's only", name, got, both[name])
		}
	}
}

// FuzzIntake feeds the watcher's intake what a node may write: its log (a report) and its
// termination message (a compact verdict). Nothing it writes may leave its sets and bounds.
func FuzzIntake(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"ProbeReport","class":"ok","code":"OK","failing":null}`,
		`{"kind":"ProbeReport","class":"endpoint","code":"DNS_NXDOMAIN","summary":"s","failing":{"host":"cdn.example:443","role":"blob","step":"dns","code":"DNS_NXDOMAIN"},"steps":[{"step":"dns","role":"blob","verdict":"fail"}],"hops":[{"role":"blob"}]}`,
		`{"kind":"ProbeReport","class":"pwned\u001b[2J","code":"EVIL","failing":{"host":"` + strings.Repeat("a", 3000) + `:443","role":"x\u202e","step":"blob","code":"X"}}`,
		`{"class":"route","code":"ROUTE_NONE","host":"r.example:443","role":"registry","step":"route","summary":"\r\u009b2J"}`,
		`{"class":"","code":""}`,
		`not json`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p report.Probe
		if json.Unmarshal(b, &p) == nil {
			r := intake("img", true, &report.PoolResult{Probe: &p})
			checkResult(t, r)
			m := newMetrics(time.Minute, nil, "test")
			m.observe("n", "p", r, &report.PoolResult{Probe: &p}, time.Now())
		}
		var s report.ProbeSummary
		if json.Unmarshal(b, &s) == nil && s.Class != "" {
			checkResult(t, intake("img", false, &report.PoolResult{Summary: &s}))
		}
		checkResult(t, intake("img", false, &report.PoolResult{Error: string(b)}))
	})
}

// A watcher whose probes cannot run is not blind: path_ok goes, and probe_ran says 0 with why,
// so PullPathNodesNotProbed can fire; a probe that ran says 1 with its class (issue 34 item 1).
func TestProbeRanSaysWhenProbesCannotRun(t *testing.T) {
	m := newMetrics(time.Minute, nil, "v9")
	value := func(node string) (float64, string, bool) {
		mfs, _ := m.reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() != "pullpath_watch_probe_ran" {
				continue
			}
			for _, s := range mf.GetMetric() {
				l := map[string]string{}
				for _, p := range s.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				if l["node"] == node {
					return s.GetGauge().GetValue(), l["reason"], true
				}
			}
		}
		return 0, "", false
	}
	ran := intake("reg.example/app:1", true, &report.PoolResult{Probe: &report.Probe{Class: report.ClassTLS, Code: report.CodeTLSUnknownAuthority}})
	m.observe("n1", "p", ran, &report.PoolResult{}, time.Now())
	if v, why, ok := value("n1"); !ok || v != 1 || why != "tls" {
		t.Errorf("a probe that ran: probe_ran %v %q %v, want 1 tls", v, why, ok)
	}
	notRun := ImageResult{Image: "reg.example/app:1", Error: "the probe pod could not start"}
	m.observe("n1", "p", notRun, &report.PoolResult{Error: "refused by an admission policy"}, time.Now())
	if v, why, ok := value("n1"); !ok || v != 0 || why != "other" || seriesCount(t, m, "pullpath_watch_path_ok") != 0 {
		t.Errorf("a probe that could not run: probe_ran %v %q %v, path_ok series %d; want 0 other and no path_ok", v, why, ok, seriesCount(t, m, "pullpath_watch_path_ok"))
	}
	if seriesCount(t, m, "pullpath_watch_probe_ran") != 1 || seriesCount(t, m, "pullpath_watch_build_info") != 1 {
		t.Errorf("want one probe_ran series for the node (the old reason gone) and the build info")
	}
	m.forget("n1", map[string]bool{})
	if seriesCount(t, m, "pullpath_watch_probe_ran") != 0 {
		t.Errorf("a forgotten node keeps its probe_ran series")
	}
}

// A status ages: not written for two heartbeats (a SIGKILLed watcher), or a node not probed for
// two intervals, is stale (issue 34 item 2).
func TestStatusStale(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	fresh := func() *Status {
		return &Status{Interval: "15m0s", Heartbeat: Heartbeat(15 * time.Minute).String(), Updated: now.Add(-time.Minute),
			Nodes: []NodeStatus{{Node: "a1", Images: []ImageStatus{{Image: "i", LastProbed: now.Add(-10 * time.Minute)}}}}}
	}
	if s := Stale(fresh(), now, 3*time.Minute); s != "" {
		t.Errorf("a fresh status: %q", s)
	}
	gone := fresh()
	gone.Updated = now.Add(-150 * time.Second)
	if s := Stale(gone, now, 3*time.Minute); !strings.Contains(s, "gone or stuck") || !strings.Contains(s, "2m30s ago") {
		t.Errorf("a watcher gone 150 s (heartbeat 1m): %q", s)
	}
	behind := fresh()
	behind.Nodes[0].Images[0].LastProbed = now.Add(-40 * time.Minute)
	if s := Stale(behind, now, 3*time.Minute); !strings.Contains(s, "a1") || !strings.Contains(s, "does not keep up") {
		t.Errorf("a node not probed for 40 minutes at 15m: %q", s)
	}
	old := fresh() // a status from before the heartbeat field: the interval decides
	old.Heartbeat = ""
	old.Interval = "1m0s"
	old.Updated = now.Add(-3 * time.Minute)
	if s := Stale(old, now, 0); !strings.Contains(s, "gone or stuck") {
		t.Errorf("a status without heartbeat, 3m old at 1m: %q", s)
	}
}

// watch probes the nodes verify would, and says why it skips the others (issue 34 item 4).
func TestWatchSkipsWhatVerifySkips(t *testing.T) {
	mk := func(name string, f func(n *corev1.Node)) *corev1.Node {
		n := clustertest.Node(name, "p", clustertest.T0, "v", "registry.k8s.io/pause:3.10")
		f(n)
		return n
	}
	nodes := []*corev1.Node{
		mk("linux", func(*corev1.Node) {}),
		mk("win", func(n *corev1.Node) { n.Labels["kubernetes.io/os"] = "windows" }),
		mk("aci", func(n *corev1.Node) { n.Labels["type"] = "virtual-kubelet" }),
		mk("fargate", func(n *corev1.Node) { n.Labels["eks.amazonaws.com/compute-type"] = "fargate" }),
		mk("cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		mk("down", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }),
	}
	for _, include := range []bool{false, true} {
		w := &Watcher{o: Options{Interval: time.Minute, IncludeCordoned: include}, metrics: newMetrics(time.Minute, nil, "test"), nodes: map[string]*nodeState{}}
		for _, n := range nodes {
			w.upsert(n)
		}
		var due []string
		for _, ns := range w.due(time.Now()) {
			due = append(due, ns.node.Name)
		}
		slices.Sort(due)
		want := []string{"linux"}
		skipped := 5
		if include {
			want, skipped = []string{"cordoned", "linux"}, 4
		}
		st := w.Snapshot()
		if !slices.Equal(due, want) || len(st.Skipped) != skipped || seriesCount(t, w.metrics, "pullpath_watch_node_skipped") != skipped {
			t.Errorf("include cordoned %v: due %v, status skipped %+v, %d series; want %v and %d skipped", include, due, st.Skipped, seriesCount(t, w.metrics, "pullpath_watch_node_skipped"), want, skipped)
		}
		for _, s := range st.Skipped {
			if s.Node == "aci" && s.Reason != "virtual" || s.Node == "win" && s.Reason != "not_linux" || s.Node == "down" && s.Reason != "not_ready" {
				t.Errorf("skipped %+v: wrong reason", s)
			}
		}
	}
}
