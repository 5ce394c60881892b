// Package agent is the resident probe: one process per node that probes its own node on an
// interval, keeps the latest report per image, and serves them over HTTP to the watcher, which
// decides and writes. It holds no API credential: a node that is taken over gains nothing from
// it, and the watcher stays the one writer of the fleet's conditions.
//
// The agent links into the probe-only build, so it imports no Kubernetes client.
package agent

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"
	"time"

	"github.com/pullpath/pullpath/internal/report"
)

// Kind is the kind of what the agent serves.
const Kind = "AgentResults"

// Port is the agent's default port on the node (hostNetwork).
const Port = 9477

// DefaultBudget is the agent's default registry budget an hour: five times what the default
// schedule sends an image of a few layers (18), so that only a loop or a huge image meets it.
const DefaultBudget = 100

// MinGap is the shortest time between two probes of one image that a request can cause: a
// neighbour that asks in a loop costs the registry one probe of each image per MinGap.
const MinGap = 10 * time.Second

// Probe runs one probe of image on this node: full downloads every blob, else the probe stops
// at the first byte of each layer. The agent re-reads nothing itself: Probe reads the node's
// files each time, so a changed trust store or credential counts at the next probe.
type Probe func(ctx context.Context, image string, full bool) (*report.Probe, error)

// Options configure an agent.
type Options struct {
	Node      string
	Images    []string
	Interval  time.Duration // between two rounds (each jittered by ±10 %, by node and round)
	FullEvery int           // every Nth round downloads every blob; the first always does
	// Budget bounds the requests this node's rounds send each registry in an hour: when spent, the
	// next round waits until the hour's requests fall below it (0: no bound).
	Budget  int
	Probe   Probe
	Version string
	Logf    func(format string, args ...any)
	now     func() time.Time
}

// Result is one probe's outcome.
type Result struct {
	Seq    uint64          `json:"seq"`
	Image  string          `json:"image"`
	Full   bool            `json:"full"`
	At     time.Time       `json:"at"` // when it ended
	Took   report.Duration `json:"took"`
	Asked  bool            `json:"asked,omitempty"` // by the watcher (a pull failure), not the interval
	Error  string          `json:"error,omitempty"` // the probe could not run: no report
	Report *report.Probe   `json:"report,omitempty"`
}

// Results is what GET /v1/results and POST /v1/probe answer.
type Results struct {
	Kind    string    `json:"kind"`
	Node    string    `json:"node"`
	Version string    `json:"version,omitempty"`
	Started time.Time `json:"started"`
	Seq     uint64    `json:"seq"`  // the newest result's
	Next    time.Time `json:"next"` // when the next round starts
	Results []Result  `json:"results"`
}

// Agent is one running agent.
type Agent struct {
	o       Options
	started time.Time

	probing sync.Mutex // one probe at a time on the node: memory and the registry's share stay flat

	mu      sync.Mutex
	seq     uint64
	round   int
	next    time.Time
	latest  map[string]*Result
	counts  map[[2]string]int // image, class → probes
	waiting map[string]chan struct{}
	spent   map[string][]spend // registry → its requests in the last hour
	sent    map[string]int     // registry → requests since the start
}

// spend is one probe's requests to a registry.
type spend struct {
	at time.Time
	n  int
}

// New checks o and returns an agent that has not started.
func New(o Options) (*Agent, error) {
	switch {
	case len(o.Images) == 0:
		return nil, errors.New("no image to probe")
	case o.Interval < 10*time.Second:
		return nil, fmt.Errorf("interval %s: want at least 10s", o.Interval)
	case o.Probe == nil:
		return nil, errors.New("no probe")
	}
	if o.FullEvery < 1 {
		o.FullEvery = 1
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return &Agent{o: o, started: o.now(), latest: map[string]*Result{}, counts: map[[2]string]int{}, waiting: map[string]chan struct{}{},
		spent: map[string][]spend{}, sent: map[string]int{}}, nil
}

// Run probes every image now, then every interval, until ctx ends.
func (a *Agent) Run(ctx context.Context) {
	for {
		a.mu.Lock()
		round := a.round
		a.round++
		a.mu.Unlock()
		full := round%a.o.FullEvery == 0
		for _, img := range a.o.Images {
			if ctx.Err() != nil {
				return
			}
			a.probe(ctx, img, full, false)
		}
		wait := max(jitter(a.o.Node, round, a.o.Interval), a.overBudget())
		a.mu.Lock()
		a.next = a.o.now().Add(wait)
		a.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// jitter is the wait after round: the interval ±10 %, fixed by node and round, so that agents
// started together (a rollout) spread over the registry instead of arriving at once.
func jitter(node string, round int, interval time.Duration) time.Duration {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", node, round)
	f := 0.9 + 0.2*float64(h.Sum32()%1000)/1000
	return time.Duration(float64(interval) * f)
}

// Ask probes image now for the watcher: a pull failure at since was seen. A result that ended
// after since answers at once; otherwise the agent probes, but not sooner than MinGap after its
// last probe of image (it waits for that), so that whoever reaches the port costs the registry
// at most one probe per image per MinGap. A zero since asks for a result newer than MinGap.
func (a *Agent) Ask(ctx context.Context, image string, since time.Time) (*Result, error) {
	if !a.known(image) {
		return nil, errUnknownImage
	}
	for {
		a.mu.Lock()
		r, ch := a.latest[image], a.waiting[image]
		now := a.o.now()
		a.mu.Unlock()
		switch {
		case r != nil && !since.IsZero() && r.StartedAfter(since):
			return r, nil
		case r != nil && since.IsZero() && now.Sub(r.At) < MinGap:
			return r, nil
		case ch != nil:
			// a probe runs: its result may be new enough
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case r != nil && now.Sub(r.At) < MinGap:
			t := time.NewTimer(MinGap - now.Sub(r.At))
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
		if r != nil && a.budgetSpent(r) {
			return r, nil // the registry's budget is spent: asks wait for the hour, as rounds do
		}
		return a.probe(ctx, image, false, true), nil
	}
}

// budgetSpent reports whether the registry of r's image has had its budget this hour.
func (a *Agent) budgetSpent(r *Result) bool {
	if a.o.Budget <= 0 || r.Report == nil || r.Report.Reference.Registry == "" {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.used(r.Report.Reference.Registry, a.o.now()) >= a.o.Budget
}

var errUnknownImage = errors.New("not an image this agent probes")

// StartedAfter reports whether r's probe started after t, a time to the second (an Event's): a
// probe that ended after a failure but started before it may not have seen it.
func (r *Result) StartedAfter(t time.Time) bool {
	return !r.At.Add(-time.Duration(r.Took)).Before(t.Truncate(time.Second).Add(time.Second))
}

func (a *Agent) known(image string) bool {
	for _, i := range a.o.Images {
		if i == image {
			return true
		}
	}
	return false
}

// probe runs one probe and keeps its result.
func (a *Agent) probe(ctx context.Context, image string, full, asked bool) *Result {
	a.mu.Lock()
	ch := make(chan struct{})
	a.waiting[image] = ch
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.waiting, image)
		a.mu.Unlock()
		close(ch)
	}()
	a.probing.Lock()
	start := a.o.now()
	rep, err := a.o.Probe(ctx, image, full)
	a.probing.Unlock()
	r := &Result{Image: image, Full: full, At: a.o.now(), Asked: asked}
	r.Took = report.Duration(r.At.Sub(start))
	switch {
	case err != nil:
		r.Error = err.Error()
	case rep == nil:
		r.Error = "the probe returned no report"
	default:
		r.Report = rep
	}
	if ctx.Err() != nil && r.Report == nil {
		return r // cut by the agent's own end: not a result
	}
	class := string(report.ClassOther)
	if r.Report != nil {
		class = string(r.Report.Class)
	}
	a.mu.Lock()
	a.seq++
	r.Seq = a.seq
	a.latest[image] = r
	a.counts[[2]string{image, class}]++
	if rep := r.Report; rep != nil && rep.Reference.Registry != "" {
		reg := rep.Reference.Registry
		a.spent[reg] = append(a.spent[reg], spend{at: r.At, n: len(rep.Hops)})
		a.sent[reg] += len(rep.Hops)
	}
	a.mu.Unlock()
	a.o.Logf("probed %s (full %t, %s): %s in %s", image, full, map[bool]string{true: "asked", false: "interval"}[asked], class, time.Duration(r.Took).Round(time.Millisecond))
	return r
}

// used is the requests sent to registry reg in the hour before now (the caller holds mu).
func (a *Agent) used(reg string, now time.Time) int {
	kept := a.spent[reg][:0]
	n := 0
	for _, s := range a.spent[reg] {
		if now.Sub(s.at) < time.Hour {
			kept = append(kept, s)
			n += s.n
		}
	}
	a.spent[reg] = kept
	return n
}

// overBudget is how long the next round must wait for every registry's last hour to fall below
// the budget; 0 when none is spent.
func (a *Agent) overBudget() time.Duration {
	if a.o.Budget <= 0 {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.o.now()
	var wait time.Duration
	for reg := range a.spent {
		n, regWait := a.used(reg, now), time.Duration(0)
		for _, s := range a.spent[reg] { // oldest first: each that leaves the hour frees its share
			if n < a.o.Budget {
				break
			}
			n -= s.n
			regWait = max(regWait, s.at.Add(time.Hour).Sub(now))
		}
		if regWait > 0 {
			a.o.Logf("the budget of %d requests an hour to %s is spent: the next round waits %s", a.o.Budget, reg, regWait.Round(time.Second))
		}
		wait = max(wait, regWait)
	}
	return wait
}

// Since returns the newest result of every image newer than seq; all of them when seq is ahead
// of the agent's (the reader knew an earlier life of the agent: its pod restarted).
func (a *Agent) Since(seq uint64) *Results {
	a.mu.Lock()
	defer a.mu.Unlock()
	if seq > a.seq {
		seq = 0
	}
	out := a.header()
	for _, r := range a.latest {
		if r.Seq > seq {
			out.Results = append(out.Results, *r)
		}
	}
	sort.Slice(out.Results, func(i, j int) bool { return out.Results[i].Seq < out.Results[j].Seq })
	return out
}

func (a *Agent) header() *Results {
	return &Results{Kind: Kind, Node: a.o.Node, Version: a.o.Version, Started: a.started.UTC(), Seq: a.seq, Next: a.next.UTC(), Results: []Result{}}
}
