package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/pullpath/pullpath/internal/nodeprobe"
	"github.com/pullpath/pullpath/internal/report"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// run is one measured command: wall time, peak RSS, API requests by verb and resource.
type run struct {
	wall   time.Duration
	rssKB  int64
	reqs   map[string]int
	out    []byte
	code   int
	stderr string
}

// measure runs args as user (its kubeconfig) and reads its requests from the audit log. The
// command runs under a fresh copy of this test binary (measureRole): a process's peak RSS counts
// the memory of the process it was forked from, and this one holds the whole generated fleet.
func (tr *tier) measure(t *testing.T, user string, args ...string) run {
	t.Helper()
	kc, err := tr.srv.Kubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stats := filepath.Join(tr.dir, "measure.json")
	argv, _ := json.Marshal(args)
	off := tr.srv.AuditOffset()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kc, "PULLPATH_FLEET_ROLE=measure", "PULLPATH_FLEET_ARGV="+string(argv), "PULLPATH_FLEET_STATS="+stats)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	var st struct {
		WallNs int64
		RSSKB  int64
		Code   int
	}
	b, err := os.ReadFile(stats)
	if err != nil || json.Unmarshal(b, &st) != nil {
		t.Fatalf("%s: no measure (%v)", strings.Join(args, " "), err)
	}
	r := run{wall: time.Duration(st.WallNs), rssKB: st.RSSKB, code: st.Code, out: []byte(out.String()), stderr: errb.String()}
	time.Sleep(200 * time.Millisecond) // the audit backend writes as it answers; a margin for the last line
	if r.reqs, err = tr.srv.Requests(off, user); err != nil {
		t.Fatal(err)
	}
	return r
}

// measureRole runs PULLPATH_FLEET_ARGV and writes its wall time, peak RSS and exit code to
// PULLPATH_FLEET_STATS.
func measureRole() int {
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv("PULLPATH_FLEET_ARGV")), &args); err != nil || len(args) == 0 {
		fmt.Fprintln(os.Stderr, "measure: no PULLPATH_FLEET_ARGV")
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, "measure:", err)
		return 2
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss
	}
	b, _ := json.Marshal(map[string]int64{"WallNs": int64(wall), "RSSKB": rss, "Code": int64(code)})
	if err := os.WriteFile(os.Getenv("PULLPATH_FLEET_STATS"), b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		return 2
	}
	return 0
}

func (r run) String() string {
	return fmt.Sprintf("%8s  %6d MB  %4d  %s", r.wall.Round(10*time.Millisecond), r.rssKB>>10, total(r.reqs), byVerb(r.reqs))
}

// median of rounds by wall time; its RSS and requests are that round's.
func median(rs []run) run {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b run) int { return int(a.wall - b.wall) })
	return s[len(s)/2]
}

// benchTier is a benchmark's own fleet (the full preset, or PULLPATH_BENCH_PRESET=small) with a
// pullpath binary built into its folder; the fleet is torn down when the test ends.
func benchTier(t *testing.T) (*tier, Preset, string) {
	t.Helper()
	if os.Getenv("PULLPATH_BENCH") == "" {
		t.Skip("a benchmark: scripts/bench-fleet.sh runs it")
	}
	if skipReason != "" {
		t.Skip("fleet tier skipped: " + skipReason)
	}
	p := Full
	if os.Getenv("PULLPATH_BENCH_PRESET") == "small" {
		p = Small
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
	bin := filepath.Join(tr.dir, "pullpath")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/pullpath").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return tr, p, bin
}

// TestFleetBenchmark measures pod --all -A, pod NAME and verify's node choice on the full preset
// (1,000 nodes, 50 pools, 30,000 pods, 2,000 failing), side by side in the same run with
// kubectl get pods -A -o json plus kubectl get events -A -o json. A benchmark, not a test of speed:
// scripts/bench-fleet.sh runs it (PULLPATH_BENCH=1); PULLPATH_BENCH_PRESET=small for a dry run.
func TestFleetBenchmark(t *testing.T) {
	tr, p, bin := benchTier(t)
	f := tr.fleet
	fmt.Printf("fleet %s preset, seed %d: %d nodes in %d pools, %d pods (%d failing on %d images, %d causes), one pod with %d events\n",
		p.Name, seed, len(f.Nodes), p.Pools, len(f.Pods), p.Failing, p.FailingImages, len(Causes), p.NoisyEvents)
	fmt.Printf("load: %d objects created in %s with 16 parallel requests, kwok settled every node Ready and every other pod Running %s later (%d pods it left Pending); whole bring-up %s\n",
		tr.loaded.Objects, tr.loaded.Create.Round(100*time.Millisecond), tr.loaded.Settled.Round(100*time.Millisecond), tr.loaded.Stuck, tr.up.Round(100*time.Millisecond))
	kubectl, kerr := os.Getenv("PULLPATH_KUBECTL"), error(nil)
	if kubectl == "" {
		kubectl, kerr = exec.LookPath("kubectl")
	}
	rounds := 3
	var all, pods, evs []run
	for range rounds {
		r := tr.measure(t, "pullpath", bin, "pod", "--all", "-A", "-o", "json")
		if r.code != 1 {
			t.Fatalf("pod --all -A: exit %d\n%s", r.code, r.stderr)
		}
		all = append(all, r)
		if kerr == nil {
			pods = append(pods, tr.measure(t, "kubectl", kubectl, "get", "pods", "-A", "-o", "json"))
			evs = append(evs, tr.measure(t, "kubectl", kubectl, "get", "events", "-A", "-o", "json"))
		}
	}
	var l report.PullFailures
	if err := json.Unmarshal(all[0].out, &l); err != nil {
		t.Fatal(err)
	}
	compareGroups(t, f, &l)
	if l.Partial {
		t.Errorf("partial: %q", l.Notes)
	}
	head := "command                                     wall      peak RSS  reqs  requests by verb and resource"
	lines := []string{head, "pullpath pod --all -A -o json            " + median(all).String()}
	if kerr == nil {
		kp, ke := median(pods), median(evs)
		sum := run{wall: kp.wall + ke.wall, rssKB: max(kp.rssKB, ke.rssKB), reqs: map[string]int{}}
		for _, m := range []map[string]int{kp.reqs, ke.reqs} {
			for k, v := range m {
				sum.reqs[k] += v
			}
		}
		lines = append(lines, "kubectl get pods -A -o json               "+kp.String(),
			"kubectl get events -A -o json             "+ke.String(),
			"kubectl, both                             "+sum.String(),
			fmt.Sprintf("ratio pullpath/kubectl: wall %.2f, peak RSS %.2f, requests %d/%d; output %d vs %d+%d bytes",
				float64(median(all).wall)/float64(sum.wall), float64(median(all).rssKB)/float64(sum.rssKB),
				total(median(all).reqs), total(sum.reqs), len(all[0].out), len(kp.out), len(ke.out)))
	} else {
		lines = append(lines, "kubectl not found: no comparison ("+kerr.Error()+")")
	}
	// pod NAME: the noisy pod and a plain failing one
	for _, gp := range []*Pod{f.Noisy, &f.Pods[p.Failing-1]} {
		var rs []run
		for range rounds {
			r := tr.measure(t, "pullpath", bin, "pod", gp.Obj.Name, "-n", gp.Obj.Namespace, "-o", "json")
			if r.code != 1 {
				t.Fatalf("pod %s: exit %d\n%s", gp.Obj.Name, r.code, r.stderr)
			}
			rs = append(rs, r)
		}
		lines = append(lines, fmt.Sprintf("pullpath pod %s (%5d events)      %s", gp.Obj.Name, len(gp.Events), median(rs)))
	}
	// verify's choice of nodes, in-process (nothing is created: the choosing phase only); the pools
	// pullpath must see: those without a pool label share one per instance type
	pools := map[string]bool{}
	for _, n := range f.Nodes {
		pools[n.Pool] = true
	}
	var cs []run
	for range rounds {
		off := tr.srv.AuditOffset()
		start := time.Now()
		res, _, err := nodeprobe.ChooseNodes(context.Background(), tr.client(t, "pullpath"), nodeprobe.VerifyOptions{Image: f.Images[0], Namespace: "pullpath"})
		wall := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		reqs, _ := tr.srv.Requests(off, "pullpath")
		if len(res) != len(pools) {
			t.Errorf("%d pools chosen of %d", len(res), len(pools))
		}
		cs = append(cs, run{wall: wall, reqs: reqs})
	}
	mc := median(cs)
	lines = append(lines, fmt.Sprintf("verify's node choice, %d pools (in-process, choosing only)  %s  %4d  %s", len(pools), mc.wall.Round(10*time.Millisecond), total(mc.reqs), byVerb(mc.reqs)))
	table := strings.Join(lines, "\n")
	fmt.Println(table)
}
