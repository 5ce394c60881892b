package agent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/report"
)

type fakeProbe struct {
	calls atomic.Int32
	full  atomic.Int32
	class report.Class
	err   error
}

func (f *fakeProbe) probe(_ context.Context, image string, full bool) (*report.Probe, error) {
	f.calls.Add(1)
	if full {
		f.full.Add(1)
	}
	if f.err != nil {
		return nil, f.err
	}
	return &report.Probe{Kind: "ProbeReport", Image: image, Class: f.class}, nil
}

func serve(t *testing.T, a *Agent) string {
	t.Helper()
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRoundsProbeEveryImageFullFirstAndServeNewerResults(t *testing.T) {
	fp := &fakeProbe{class: report.ClassOK}
	a, err := New(Options{Node: "n1", Images: []string{"r.test/a:1", "r.test/b:1"}, Interval: 10 * time.Second, FullEvery: 4, Probe: fp.probe})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	for deadline := time.Now().Add(5 * time.Second); fp.calls.Load() < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	cancel()
	<-done
	if fp.calls.Load() != 2 || fp.full.Load() != 2 {
		t.Fatalf("first round: %d probes, %d full; want 2 and 2", fp.calls.Load(), fp.full.Load())
	}
	c := NewClient(5 * time.Second)
	base := serve(t, a)
	all, err := c.Results(context.Background(), base, "n1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if all.Node != "n1" || all.Seq != 2 || len(all.Results) != 2 || all.Results[0].Image != "r.test/a:1" || !all.Results[0].Full {
		t.Fatalf("results: %+v", all)
	}
	if all.Next.IsZero() || all.Next.Before(time.Now().Add(8*time.Second)) {
		t.Errorf("next round at %v: want about 10s ahead", all.Next)
	}
	newer, err := c.Results(context.Background(), base, "n1", 1)
	if err != nil || len(newer.Results) != 1 || newer.Results[0].Seq != 2 {
		t.Fatalf("after=1: %+v %v", newer, err)
	}
	none, err := c.Results(context.Background(), base, "n1", 2)
	if err != nil || len(none.Results) != 0 {
		t.Fatalf("after=2: %+v %v", none, err)
	}
}

func TestAskProbesAfterTheFailureAtMostOncePerGapAndOnlyItsImages(t *testing.T) {
	fp := &fakeProbe{class: report.ClassRoute}
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	a, err := New(Options{Node: "n1", Images: []string{"r.test/a:1"}, Interval: time.Minute, Probe: fp.probe, now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(5 * time.Second)
	base := serve(t, a)
	r, err := c.Ask(context.Background(), base, "n1", "r.test/a:1", time.Time{})
	if err != nil || len(r.Results) != 1 || r.Results[0].Report.Class != report.ClassRoute || !r.Results[0].Asked || r.Results[0].Full {
		t.Fatalf("ask: %+v %v", r, err)
	}
	first := r.Results[0].At
	now = now.Add(5 * time.Second)
	if _, err := c.Ask(context.Background(), base, "n1", "r.test/a:1", time.Time{}); err != nil {
		t.Fatal(err)
	}
	// a failure before the newest result: that result answers it
	if _, err := c.Ask(context.Background(), base, "n1", "r.test/a:1", first.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if n := fp.calls.Load(); n != 1 {
		t.Errorf("asks within %s, or answered by a newer result, ran %d probes, want 1", MinGap, n)
	}
	// a failure after it, past the gap: a new probe
	now = now.Add(6 * time.Second)
	r, err = c.Ask(context.Background(), base, "n1", "r.test/a:1", now.Add(-time.Second))
	if err != nil || fp.calls.Load() != 2 || !r.Results[0].At.After(now.Add(-time.Second)) {
		t.Errorf("an ask after a failure newer than the last result: %d probes (%v), want 2", fp.calls.Load(), err)
	}
	_, err = c.Ask(context.Background(), base, "n1", "evil.test/x:1", time.Time{})
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("an image the agent does not probe: %v, want 404", err)
	}
	if _, err = c.Ask(context.Background(), base, "n2", "r.test/a:1", time.Time{}); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("an ask for another node: %v, want 409", err)
	}
	if fp.calls.Load() != 2 {
		t.Errorf("a refused ask was probed")
	}
}

// Within the gap, an ask for a result newer than a failure waits for the gap, then probes.
func TestAskWaitsForTheGap(t *testing.T) {
	fp := &fakeProbe{class: report.ClassOK}
	a, _ := New(Options{Node: "n1", Images: []string{"r.test/a:1"}, Interval: time.Minute, Probe: fp.probe})
	r, _ := a.Ask(context.Background(), "r.test/a:1", time.Time{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := a.Ask(ctx, "r.test/a:1", r.At.Add(time.Millisecond)); err == nil {
		t.Errorf("an ask within the gap did not wait")
	}
	if fp.calls.Load() != 1 {
		t.Errorf("%d probes within the gap, want 1", fp.calls.Load())
	}
}

func TestAProbeThatCannotRunIsAnErrorResult(t *testing.T) {
	fp := &fakeProbe{err: errors.New("--host-root /host: no such directory")}
	a, _ := New(Options{Node: "n1", Images: []string{"r.test/a:1"}, Interval: time.Minute, Probe: fp.probe})
	r, err := a.Ask(context.Background(), "r.test/a:1", time.Time{})
	if err != nil || r.Report != nil || !strings.Contains(r.Error, "no such directory") {
		t.Fatalf("%+v %v", r, err)
	}
	m := httptest.NewRecorder()
	a.Handler().ServeHTTP(m, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(m.Body.String(), `pullpath_agent_probes_total{image="r.test/a:1",class="other"} 1`) {
		t.Errorf("metrics:\n%s", m.Body)
	}
}

func TestNewRefusesWhatCannotRun(t *testing.T) {
	fp := &fakeProbe{}
	for _, o := range []Options{
		{Interval: time.Minute, Probe: fp.probe},
		{Images: []string{"a"}, Interval: time.Second, Probe: fp.probe},
		{Images: []string{"a"}, Interval: time.Minute},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

func TestJitterStaysWithinTenPercentAndSpreads(t *testing.T) {
	seen := map[time.Duration]bool{}
	for i := range 200 {
		d := jitter("node-"+string(rune('a'+i%26)), i, 15*time.Minute)
		if d < 13*time.Minute+30*time.Second || d > 16*time.Minute+30*time.Second {
			t.Fatalf("jitter %s outside ±10%% of 15m", d)
		}
		seen[d.Round(time.Second)] = true
	}
	if len(seen) < 100 {
		t.Errorf("200 rounds gave only %d distinct waits", len(seen))
	}
}

// A hostile agent (a node is hostile input): a huge body, another kind, a redirect, a stall.
func TestClientRefusesHostileAnswers(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/huge/v1/results", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"kind":"AgentResults","node":"`))
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range 10 {
			w.Write(chunk)
		}
	})
	mux.HandleFunc("/kind/v1/results", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"kind":"ProbeReport"}`))
	})
	mux.HandleFunc("/inner/v1/results", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"kind":"AgentResults","results":[{"image":"a","report":{"kind":"Secret"}}]}`))
	})
	mux.HandleFunc("/empty/v1/results", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"kind":"AgentResults","results":[{"image":"a"}]}`))
	})
	mux.HandleFunc("/redirect/v1/results", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
	})
	mux.HandleFunc("/stall/v1/results", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := NewClient(500 * time.Millisecond)
	for path, want := range map[string]string{
		"/huge": "more than 8 MiB", "/kind": `kind "ProbeReport"`, "/inner": "not a probe report",
		"/empty": "neither a report nor an error", "/redirect": "does not redirect", "/stall": "Timeout",
	} {
		_, err := c.Results(context.Background(), srv.URL+path, "n1", 0)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", path, err, want)
		}
	}
}

func TestServeStopsWithItsContext(t *testing.T) {
	fp := &fakeProbe{class: report.ClassOK}
	a, _ := New(Options{Node: "n1", Images: []string{"r.test/a:1"}, Interval: time.Minute, Probe: fp.probe})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, l, time.Second) }()
	if _, err := NewClient(time.Second).Results(context.Background(), "http://"+l.Addr().String(), "n1", 0); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not stop")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"kind":"AgentResults","node":"n","results":[{"seq":1,"image":"a","report":{"kind":"ProbeReport","class":"ok"}}]}`))
	f.Add([]byte(`{"kind":"AgentResults","results":[{"error":"x"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err == nil && r.Kind != Kind {
			t.Fatalf("decoded a %q", r.Kind)
		}
	})
}

func TestMetricsSayTheAgentsOwnCost(t *testing.T) {
	fp := &fakeProbe{class: report.ClassOK}
	a, _ := New(Options{Node: "n1", Images: []string{"r.test/a:1"}, Interval: time.Minute, Probe: fp.probe})
	// some CPU time first: the kernel counts it in 10 ms ticks
	x := 0
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; x++ {
	}
	m := httptest.NewRecorder()
	a.Handler().ServeHTTP(m, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var rss, cpu float64
	for _, l := range strings.Split(m.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "process_resident_memory_bytes "); ok {
			rss, _ = strconv.ParseFloat(v, 64)
		}
		if v, ok := strings.CutPrefix(l, "process_cpu_seconds_total "); ok {
			cpu, _ = strconv.ParseFloat(v, 64)
		}
	}
	if rss < 1<<20 || rss > 4<<30 || cpu <= 0 {
		t.Errorf("rss %v, cpu %v:\n%s", rss, cpu, m.Body)
	}
}

// A registry's budget: once the last hour's requests reach it, the next round waits until the
// oldest leave the hour; the metrics say how much is used.
func TestBudgetStretchesTheNextRound(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	probe := func(_ context.Context, image string, full bool) (*report.Probe, error) {
		return &report.Probe{Kind: "ProbeReport", Image: image, Class: report.ClassOK, Reference: report.Ref{Registry: "r.test"},
			Hops: make([]report.Hop, 10)}, nil
	}
	a, err := New(Options{Node: "n1", Images: []string{"r.test/a:1"}, Interval: 15 * time.Minute, Budget: 25, Probe: probe, now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		a.probe(context.Background(), "r.test/a:1", false, false)
		now = now.Add(15 * time.Minute)
	}
	if w := a.overBudget(); w != 0 {
		t.Errorf("20 of 25 requests used: waits %s, want 0", w)
	}
	a.probe(context.Background(), "r.test/a:1", false, false) // 30 in the hour
	if w := a.overBudget(); w != 30*time.Minute {
		t.Errorf("30 of 25 used: waits %s, want 30m (until the first round leaves the hour)", w)
	}
	m := httptest.NewRecorder()
	a.Handler().ServeHTTP(m, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{`pullpath_agent_registry_requests_total{registry="r.test"} 30`, `pullpath_agent_registry_budget_used_ratio{registry="r.test"} 1.2`} {
		if !strings.Contains(m.Body.String(), want) {
			t.Errorf("metrics lack %s:\n%s", want, m.Body)
		}
	}
}

// Asks count in the registry's budget: once spent, an ask is answered with the newest result.
func TestAskRespectsTheBudget(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	var calls int
	probe := func(_ context.Context, image string, full bool) (*report.Probe, error) {
		calls++
		return &report.Probe{Kind: "ProbeReport", Image: image, Class: report.ClassOK, Reference: report.Ref{Registry: "r.test"}, Hops: make([]report.Hop, 10)}, nil
	}
	a, _ := New(Options{Node: "n1", Images: []string{"r.test/a:1"}, Interval: 15 * time.Minute, Budget: 20, Probe: probe, now: func() time.Time { return now }})
	for range 3 {
		if _, err := a.Ask(context.Background(), "r.test/a:1", now.Add(-time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
	}
	if calls != 2 {
		t.Errorf("%d probes for three asks a minute apart with a budget of 20 (10 a probe), want 2", calls)
	}
}

// A result answers a failure only when its probe started after the failure's second: one that
// ended after it but started before may not have seen it.
func TestStartedAfterTheFailure(t *testing.T) {
	failure := time.Date(2026, 12, 5, 10, 0, 1, 0, time.UTC) // an Event's time, to the second
	for _, tc := range []struct {
		end  time.Time
		took time.Duration
		want bool
	}{
		{failure.Add(1500 * time.Millisecond), time.Second, false}, // started 10:00:01.5, the failure's second
		{failure.Add(3 * time.Second), time.Second, true},          // started 10:00:03
		{failure.Add(2 * time.Second), 2 * time.Second, false},     // started 10:00:01, the failure's second
		{failure.Add(2*time.Second + time.Millisecond), time.Second, true},
	} {
		r := &Result{At: tc.end, Took: report.Duration(tc.took)}
		if got := r.StartedAfter(failure); got != tc.want {
			t.Errorf("ended %s after %s: StartedAfter = %t, want %t", tc.end.Format("15:04:05.000"), tc.took, got, tc.want)
		}
	}
}
