package cluster

import (
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/test/internal/netnsdial"
	"github.com/pullpath/pullpath/test/internal/promtext"
)

// TestWatchBudget measures what `pullpath watch` costs per node: API requests (by method and
// resource, from the watcher's own metrics) and bytes, registry requests by
// host role, and the probe binary delivered, on four one-node pools of real kubelets. The first
// round is a full download on every node; the window after it holds only quick probes, so the
// two give the cost of each kind, and the hourly budget at the default interval (15m, a full
// download every 6th probe) follows from them. A benchmark: scripts/bench-watch.sh runs it
// (PULLPATH_BENCH=1); PULLPATH_BENCH_WINDOW sets the window (default 5m, interval 1m).
func TestWatchBudget(t *testing.T) {
	if os.Getenv("PULLPATH_BENCH") == "" {
		t.Skip("a benchmark: scripts/bench-watch.sh runs it")
	}
	if skipReason != "" {
		t.Skip("cluster tier skipped: " + skipReason)
	}
	window := 5 * time.Minute
	if v := os.Getenv("PULLPATH_BENCH_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		window = d
	}
	const nodes = 4
	var spec []nodeSpec
	for i := 1; i <= nodes; i++ {
		spec = append(spec, nodeSpec{Name: fmt.Sprintf("wb%d-1", i), Pool: fmt.Sprintf("wb%d", i), CanReachRegistry: true, CanReachBlobs: true})
	}
	c, err := startCluster(clusterSpec{Nodes: spec})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	runNamespace(t, c)
	im := c.Push(t, "bench/app:v1")
	layers, err := im.Image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	w := c.startWatch(t, "--image", im.Ref, "--interval", "1m", "--full-every", "6", "--run-namespace", runNS,
		"--probe-timeout", "90s", "--metrics-address", "127.0.0.1:9466")
	hc := &http.Client{Transport: &http.Transport{DialContext: netnsdial.In(c.hub)}, Timeout: 5 * time.Second}
	scrape := func() map[string]float64 { return promtext.Scrape(t, hc, "http://127.0.0.1:9466/metrics") }
	// the first round: every node has a result
	var first map[string]float64
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(time.Second) {
		first = scrape()
		if promtext.Sum(first, `pullpath_watch_probes_total{`) >= nodes {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result from every node within 3 min\n%s", w.errOut.String())
		}
	}
	firstAt := time.Now()
	detect := firstAt.Sub(start)
	time.Sleep(window)
	last := scrape()
	w.stopClean(t, c)

	probesFull := promtext.Sum(first, `pullpath_watch_probes_total{`)
	probesQuick := promtext.Sum(last, `pullpath_watch_probes_total{`) - probesFull
	if probesQuick < nodes {
		t.Fatalf("only %v quick probes in the window of %s", probesQuick, window)
	}
	per := func(m map[string]float64, prefix string, probes float64) float64 {
		return promtext.Sum(m, prefix) / probes
	}
	delta := func(prefix string) float64 { return promtext.Sum(last, prefix) - promtext.Sum(first, prefix) }
	type cost struct{ api, sent, recv, reg, deliv float64 }
	// the first round includes the watcher's start (informer list, leftovers, the run's objects)
	full := cost{per(first, `pullpath_watch_api_requests_total{`, probesFull), per(first, `pullpath_watch_api_bytes_total{direction="sent"}`, probesFull),
		per(first, `pullpath_watch_api_bytes_total{direction="received"}`, probesFull), per(first, `pullpath_watch_registry_requests_total{`, probesFull),
		per(first, `pullpath_watch_delivered_bytes_total{`, probesFull)}
	quick := cost{delta(`pullpath_watch_api_requests_total{`) / probesQuick, delta(`pullpath_watch_api_bytes_total{direction="sent"}`) / probesQuick,
		delta(`pullpath_watch_api_bytes_total{direction="received"}`) / probesQuick, delta(`pullpath_watch_registry_requests_total{`) / probesQuick,
		delta(`pullpath_watch_delivered_bytes_total{`) / probesQuick}
	// the default: 4 probes an hour, one in six a full download
	hour := func(f func(cost) float64) float64 { return 4 * (f(quick)*5/6 + f(full)/6) }
	// by method and resource in the window, from the watcher's own counter
	var vs []string
	for k, v := range last {
		if strings.HasPrefix(k, `pullpath_watch_api_requests_total{`) {
			if d := v - first[k]; d > 0 {
				vs = append(vs, fmt.Sprintf("%s %.2f", strings.NewReplacer(`pullpath_watch_api_requests_total{method="`, "", `",resource="`, " ", `"}`, "").Replace(k), d/probesQuick))
			}
		}
	}
	sort.Strings(vs)
	rss := last["process_resident_memory_bytes"] / (1 << 20)
	table := fmt.Sprintf(`watch on %d one-node pools of real kubelets, one image (%d layers); window %s at --interval 1m
                               first round   steady state   per node per hour
                               per node      per node-probe (15m, --full-every 6)
API requests                   %9.1f   %11.1f   %9.1f
API bytes sent                 %9.0f   %11.0f   %9.0f
API bytes received             %9.0f   %11.0f   %9.0f
registry requests              %9.1f   %11.1f   %9.1f
probe binary delivered (bytes) %9.0f   %11.0f   %9.0f
steady state, per node and probe, by method and resource: %s
first result from every node %s after the watcher started; watcher RSS %.0f MiB`,
		nodes, len(layers), window, full.api, quick.api, hour(func(c cost) float64 { return c.api }),
		full.sent, quick.sent, hour(func(c cost) float64 { return c.sent }), full.recv, quick.recv, hour(func(c cost) float64 { return c.recv }),
		full.reg, quick.reg, hour(func(c cost) float64 { return c.reg }), full.deliv, quick.deliv, hour(func(c cost) float64 { return c.deliv }),
		strings.Join(vs, ", "), detect.Round(100*time.Millisecond), rss)
	t.Log(table)
	fmt.Println(table)
}
