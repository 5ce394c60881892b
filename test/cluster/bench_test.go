package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/report"
)

// TestDeliveryBenchmark measures verify's two deliveries side by side on a cluster of its own,
// eight one-node pools of real kubelets: what each run stores in the API, how long each node's
// probe took to start after its pod was created, and the wall time for 1, 4 and 8 pools. A
// benchmark, not a test of speed: scripts/bench-delivery.sh runs it (PULLPATH_BENCH=1).
func TestDeliveryBenchmark(t *testing.T) {
	if os.Getenv("PULLPATH_BENCH") == "" {
		t.Skip("a benchmark: scripts/bench-delivery.sh runs it")
	}
	if skipReason != "" {
		t.Skip("cluster tier skipped: " + skipReason)
	}
	var nodes []nodeSpec
	var pools []string
	for i := 1; i <= 8; i++ {
		p := fmt.Sprintf("bench%d", i)
		pools = append(pools, p)
		nodes = append(nodes, nodeSpec{Name: p + "-1", Pool: p, CanReachRegistry: true, CanReachBlobs: true})
	}
	c, err := startCluster(clusterSpec{Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	runNamespace(t, c)
	im := c.Push(t, "bench/app:v1")
	c.Run(t, "version") // the build, outside the timings
	var rows []string
	for _, mode := range []string{"attach", "configmap"} {
		for _, n := range []int{1, 4, 8} {
			args := []string{"verify", im.Ref, "--delivery", mode, "--run-namespace", runNS, "--probe-timeout", "120s", "-o", "json"}
			for _, p := range pools[:n] {
				args = append(args, "--pool", p)
			}
			start := time.Now()
			out, errOut, code := c.Run(t, args...)
			wall := time.Since(start)
			var v report.Verification
			if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
				t.Fatalf("%s, %d pools: exit %d (%v)\n%s\n%s", mode, n, code, err, out, errOut)
			}
			var starts []time.Duration
			for _, p := range v.Pools {
				if p.Delivery != mode || p.DeliveryStats == nil {
					t.Fatalf("%s, pool %s: delivery %s %+v", mode, p.Pool, p.Delivery, p.DeliveryStats)
				}
				starts = append(starts, time.Duration(p.DeliveryStats.Start))
			}
			slices.Sort(starts)
			rows = append(rows, fmt.Sprintf("%-9s  %5d  %7d  %11d  %9s  %9s  %9s  %7s", mode, n, v.Stored.Objects, v.Stored.Bytes,
				starts[0].Round(10*time.Millisecond), starts[len(starts)/2].Round(10*time.Millisecond), starts[len(starts)-1].Round(10*time.Millisecond), wall.Round(100*time.Millisecond)))
			assertNothingLeft(t, c)
		}
	}
	// a container's startedAt has whole seconds: ConfigMap starts are rounded so
	table := "delivery   pools  objects  bytes stored  start min  start med  start max  wall\n" + strings.Join(rows, "\n")
	t.Logf("verify's deliveries on %d one-node pools of real kubelets:\n%s", len(pools), table)
	fmt.Println(table)
}
