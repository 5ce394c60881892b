package fleet

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/test/internal/promtext"
)

// TestWatchAtScale runs `pullpath watch` against the fleet (1,000 KWOK nodes in 50 pools with the
// full preset) and measures its steady state: memory, and API requests by method and resource per
// minute from the watcher's own counter (pullpath_watch_api_requests_total). KWOK nodes have no kubelet, so a probe pod never reports: each probe
// ends Unknown at --probe-timeout, which keeps --concurrency probes always in flight — more API
// work than a real fleet whose probes end in seconds. A benchmark: scripts/bench-fleet.sh runs it
// (PULLPATH_BENCH=1); PULLPATH_BENCH_PRESET=small for a dry run, PULLPATH_BENCH_WINDOW for the
// window (default 3m).
func TestWatchAtScale(t *testing.T) {
	window := 3 * time.Minute
	if v := os.Getenv("PULLPATH_BENCH_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		window = d
	}
	tr, p, bin := benchTier(t)
	kc, err := tr.srv.Kubeconfig("pullpath")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	w := startWatchProc(t, bin, kc, 3*time.Minute, "--image", tr.fleet.Images[len(tr.fleet.Images)-1], "--interval", "15m",
		"--probe-timeout", "20s", "--concurrency", "5", "--run-namespace", "pullpath-watch")
	addr := w.metrics
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(w.stderr(), "probing every Ready node"); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("watch did not start within 3 min\n%s", w.stderr())
		}
	}
	synced := time.Since(start)
	time.Sleep(time.Minute) // past the start: the informer's list, the run's objects
	m1, at1 := promtext.Scrape(t, nil, "http://"+addr+"/metrics"), time.Now()
	time.Sleep(window)
	m2, at2 := promtext.Scrape(t, nil, "http://"+addr+"/metrics"), time.Now()
	minutes := at2.Sub(at1).Minutes()
	var rows []string
	totalReqs := 0.0
	for k, v := range m2 {
		if strings.HasPrefix(k, `pullpath_watch_api_requests_total{`) {
			if d := v - m1[k]; d > 0 {
				totalReqs += d
				rows = append(rows, fmt.Sprintf("%s %.1f", strings.NewReplacer(`pullpath_watch_api_requests_total{method="`, "", `",resource="`, " ", `"}`, "").Replace(k), d/minutes))
			}
		}
	}
	sort.Strings(rows)
	getNodes := m2[`pullpath_watch_api_requests_total{method="GET",resource="nodes"}`] - m1[`pullpath_watch_api_requests_total{method="GET",resource="nodes"}`]
	probes := promtext.Sum(m2, "pullpath_watch_probes_total{") - promtext.Sum(m1, "pullpath_watch_probes_total{")
	table := fmt.Sprintf(`watch on the %s fleet (%d nodes in %d pools): informer synced and probing %s after start
steady state over %s: RSS %.0f MiB (Go heap in use %.0f MiB), %d probes, %.1f API requests a minute
requests a minute by method and resource: %s
requests since the start: %.0f (the informer's list and the run's objects included)`,
		p.Name, len(tr.fleet.Nodes), p.Pools, synced.Round(100*time.Millisecond), at2.Sub(at1).Round(time.Second),
		m2["process_resident_memory_bytes"]/(1<<20), m2["go_memstats_heap_inuse_bytes"]/(1<<20), int(probes), totalReqs/minutes,
		strings.Join(rows, ", "), promtext.Sum(m2, "pullpath_watch_api_requests_total{"))
	figure(t, "%s", table)
	fmt.Println(table)
	// a node is read alone only to tell an API outage from a probe that could not run: at most
	// once a probe, never a poll of the fleet
	if getNodes > probes {
		t.Errorf("%.0f GETs of nodes for %.0f probes: the informer's cache must serve the fleet", getNodes, probes)
	}
}
