package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pullpath/pullpath/internal/agent"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/test/internal/promtext"
)

// Resident is the preset of the resident watcher's benchmark (issue 35): 5,000 nodes in 100 pools,
// few pods (the watcher reads no pod but its agents').
var Resident = Preset{Name: "resident", Nodes: 5000, Pools: 100, Pods: 200, Failing: 20, Images: 120, FailingImages: 12, Namespaces: 4, NoisyEvents: 10}

// fleetAgents answers as every node's agent on the KWOK nodes' one address: a round per node every
// interval from an offset fixed by its name, each a healthy probe. It records when each node was
// read, to show that the watcher reads each agent about once a round.
type fleetAgents struct {
	start    time.Time
	interval time.Duration
	image    string
	mu       sync.Mutex
	reads    map[string][]time.Time
	first    map[string]time.Time // when the node's first result was read
	refused  int
}

func (f *fleetAgents) offset(node string) time.Duration {
	return time.Duration(hash(node) % uint64(f.interval))
}

func (f *fleetAgents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	node := r.URL.Query().Get("node")
	if node == "" || r.URL.Path != "/v1/results" {
		f.mu.Lock()
		f.refused++
		f.mu.Unlock()
		http.Error(w, "want GET /v1/results?node=", http.StatusBadRequest)
		return
	}
	after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	now := time.Now()
	f.mu.Lock()
	f.reads[node] = append(f.reads[node], now)
	f.mu.Unlock()
	// rounds done so far: the first at the start plus the node's offset, one every interval
	first := f.start.Add(f.offset(node))
	var seq uint64
	if now.After(first) {
		seq = 1 + uint64(now.Sub(first)/f.interval)
	}
	at := first.Add(time.Duration(max(int(seq)-1, 0)) * f.interval)
	res := agent.Results{Kind: agent.Kind, Node: node, Started: f.start, Seq: seq, Next: at.Add(f.interval), Results: []agent.Result{}}
	if seq > after && seq > 0 {
		f.mu.Lock()
		if _, ok := f.first[node]; !ok {
			f.first[node] = now
		}
		f.mu.Unlock()
		res.Results = append(res.Results, agent.Result{Seq: seq, Image: f.image, Full: seq == 1, At: at, Took: report.Duration(400 * time.Millisecond),
			Report: &report.Probe{APIVersion: report.APIVersion, Kind: "ProbeReport", Node: node, Image: f.image, Class: report.ClassOK, Code: report.CodeOK, Summary: "the pull path holds"}})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

// TestResidentWatchAtScale runs `pullpath watch --resident` against 5,000 KWOK nodes (100 pools)
// whose agents answer on the KWOK node address (127.0.0.2): the first round (an agent pod created
// per node, each node's first result), then a steady window in which the API server must count no
// pod creation, the watcher must write no condition (they hold; hourly heartbeat), and its memory
// stays within 200 MiB. Reports P50/P90/P99 and peaks. A benchmark: scripts/bench-fleet.sh runs
// it (PULLPATH_BENCH=1); PULLPATH_BENCH_NODES sets the fleet size (default 5000),
// PULLPATH_BENCH_WINDOW the window (default 3m).
func TestResidentWatchAtScale(t *testing.T) {
	if os.Getenv("PULLPATH_BENCH") == "" {
		t.Skip("a benchmark: scripts/bench-fleet.sh runs it")
	}
	if skipReason != "" {
		t.Skip("fleet tier skipped: " + skipReason)
	}
	p := Resident
	if v := os.Getenv("PULLPATH_BENCH_NODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			t.Fatalf("PULLPATH_BENCH_NODES %q", v)
		}
		p.Nodes, p.Pools = n, max(n/50, 2)
	}
	window := 3 * time.Minute
	if v := os.Getenv("PULLPATH_BENCH_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		window = d
	}
	tr, err := startTier(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tr.close(); err != nil {
			t.Error(err)
		}
	})
	bin := tr.dir + "/pullpath"
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/pullpath").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	kc, err := tr.srv.Kubeconfig("pullpath")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(tr.srv.Config("admin"))
	if err != nil {
		t.Fatal(err)
	}
	// the watcher's interval is the default; the agents' rounds come every minute, 15 times as
	// often, so that the window holds reads of every agent
	const interval, rounds = 15 * time.Minute, time.Minute
	image := tr.fleet.Images[len(tr.fleet.Images)-1]
	fa := &fleetAgents{start: time.Now(), interval: rounds, image: image, reads: map[string][]time.Time{}, first: map[string]time.Time{}}
	al, err := net.Listen("tcp", "127.0.0.2:0") // the KWOK nodes' address
	if err != nil {
		t.Fatal(err)
	}
	agentSrv := &http.Server{Handler: fa, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = agentSrv.Serve(al) }()
	t.Cleanup(func() { agentSrv.Close() }) // after the watcher's (cleanups run last first)
	start := time.Now()
	w := startWatchProc(t, bin, kc, 5*time.Minute, "--image", image, "--resident", "--agent-image", "registry.fleet.test/tools/pullpath@sha256:"+strings.Repeat("ab", 32),
		"--agent-port", strconv.Itoa(al.Addr().(*net.TCPAddr).Port), "--interval", interval.String(), "--probe-timeout", "30s",
		"--run-namespace", "pullpath-watch")
	maddr := w.metrics
	scrape := func() map[string]float64 { return promtext.Scrape(t, nil, "http://"+maddr+"/metrics") }
	// the first round: every node has its first result
	var peakRSS float64
	var firstRound time.Duration
	for deadline := time.Now().Add(30 * time.Minute); ; time.Sleep(2 * time.Second) {
		select {
		case err := <-w.done:
			t.Fatalf("watch ended: %v\n%s", err, w.stderr())
		default:
		}
		m, err := scrapeMaybe(maddr)
		if err == nil {
			peakRSS = max(peakRSS, m["process_resident_memory_bytes"])
			// every node read, and its first condition written (the writes trail the reads)
			if promtext.Sum(m, "pullpath_watch_probes_total{") >= float64(p.Nodes) &&
				m[`pullpath_watch_api_requests_total{method="PATCH",resource="nodes/status"}`] >= float64(p.Nodes) {
				firstRound = time.Since(start)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every node had a result within 30 min (%.0f): %s", promtext.Sum(m, "pullpath_watch_probes_total{"), tail(w.stderr(), 3000))
		}
	}
	pods, err := admin.CoreV1().Pods("pullpath-watch").List(context.Background(), metav1.ListOptions{LabelSelector: "pullpath.dev/role=agent"})
	if err != nil {
		t.Fatal(err)
	}
	// each node's first result: when its agent's first read gave it
	var firsts []float64
	fa.mu.Lock()
	for _, at := range fa.first {
		firsts = append(firsts, at.Sub(start).Seconds())
	}
	fa.mu.Unlock()
	m1, at1 := scrape(), time.Now()
	time.Sleep(window)
	m2, at2 := scrape(), time.Now()
	peakRSS = max(peakRSS, m2["process_resident_memory_bytes"])
	minutes := at2.Sub(at1).Minutes()
	delta := func(k string) float64 { return m2[k] - m1[k] }
	var rows []string
	writes, total := 0.0, 0.0
	for k, v := range m2 {
		if strings.HasPrefix(k, `pullpath_watch_api_requests_total{`) {
			if d := v - m1[k]; d > 0 {
				total += d
				rows = append(rows, fmt.Sprintf("%s %.1f", strings.NewReplacer(`pullpath_watch_api_requests_total{method="`, "", `",resource="`, " ", `"}`, "").Replace(k), d/minutes))
				if !strings.Contains(k, `method="GET"`) && !strings.Contains(k, `method="WATCH"`) {
					writes += d
				}
			}
		}
	}
	sort.Strings(rows)
	podCreates := delta(`pullpath_watch_api_requests_total{method="POST",resource="pods"}`)
	// reads of each agent in the window: about a round's worth each
	var gaps []float64
	fa.mu.Lock()
	for _, rs := range fa.reads {
		for i := 1; i < len(rs); i++ {
			if rs[i].After(at1) {
				gaps = append(gaps, rs[i].Sub(rs[i-1]).Seconds())
			}
		}
	}
	refused := fa.refused
	fa.mu.Unlock()
	q := func(xs []float64, p float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		slices.Sort(xs)
		return xs[min(len(xs)-1, int(p*float64(len(xs))))]
	}
	table := fmt.Sprintf(`watch --resident on %d KWOK nodes in %d pools (agents answered by one loopback server, a round a minute), interval %s
first round: %d agent pods, every node's first result and condition %s after start; a node's first result read P50 %.0fs P90 %.0fs P99 %.0fs max %.0fs
steady state over %s: %.0f pod creations, %.2f API writes a minute in all (%.3f per node per hour), %.1f API requests a minute: %s
agent reads in the window: %d, seconds between two reads of one agent P50 %.0f P90 %.0f P99 %.0f max %.0f; %d malformed requests
watcher RSS peak %.0f MiB (steady %.0f MiB, Go heap in use %.0f MiB)`,
		p.Nodes, p.Pools, interval, len(pods.Items), firstRound.Round(time.Second), q(firsts, .5), q(firsts, .9), q(firsts, .99), q(firsts, 1),
		at2.Sub(at1).Round(time.Second), podCreates, writes/minutes, writes/minutes*60/float64(p.Nodes), total/minutes,
		strings.Join(rows, ", "), len(gaps), q(gaps, .5), q(gaps, .9), q(gaps, .99), q(gaps, 1), refused,
		peakRSS/(1<<20), m2["process_resident_memory_bytes"]/(1<<20), m2["go_memstats_heap_inuse_bytes"]/(1<<20))
	figure(t, "%s", table)
	fmt.Println(table)
	if len(pods.Items) != p.Nodes {
		t.Errorf("%d agent pods for %d nodes", len(pods.Items), p.Nodes)
	}
	if podCreates != 0 {
		t.Errorf("%.0f pods created in the steady window, want 0", podCreates)
	}
	if perNode := writes / minutes * 60 / float64(p.Nodes); perNode > 1 {
		t.Errorf("%.2f API writes per node per hour, want at most 1", perNode)
	}
	if peakRSS > 200<<20 {
		t.Errorf("watcher RSS peaked at %.0f MiB, over the 200 MiB target", peakRSS/(1<<20))
	}
	if refused > 0 {
		t.Errorf("%d requests to the agents were not GET /v1/results?node=", refused)
	}
}

func scrapeMaybe(addr string) (map[string]float64, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return promtext.Parse(resp.Body)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
