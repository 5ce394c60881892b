// Package watch keeps a pull-path guarantee on every node, all the time: it probes each Ready
// node with verify's probe pod (new nodes first, then every interval, staggered), and reports
// where operators already look: the node condition ImagePullPathBroken, an Event per transition,
// Prometheus metrics, and a status ConfigMap that `pullpath watch status` reads.
package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/pullpath/pullpath/internal/agent"
	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/nodeprobe"
	"github.com/pullpath/pullpath/internal/report"
)

// Options configure a watcher.
type Options struct {
	Images      []string
	Interval    time.Duration // between two probes of a node (default 15m)
	Concurrency int           // probe pods at once across the cluster (default 5)
	// FullEvery makes every Nth probe of a node a complete download; the others stop after the
	// manifest and the first byte of every layer, which still reaches every blob host. 1: always full.
	FullEvery int
	Probe     nodeprobe.VerifyOptions // run namespace, delivery, pull secret, probe timeout
	Progress  func(string)
	// API, when set, counts the client's requests and bytes (its transport wraps through it) and
	// is served with the other metrics.
	API     *APICounter
	Version string // pullpath's, for pullpath_watch_build_info
	// IncludeCordoned probes cordoned nodes too (default: skipped, as verify skips them)
	IncludeCordoned bool
	// Resident places an agent pod on every node that probes it locally (pullpath agent), and
	// reads the agents instead of running a probe pod per probe. AgentPort is theirs on the node.
	Resident    bool
	AgentPort   int
	AgentBudget int // each agent's registry requests an hour per registry; 0: the agent's default
}

// Watcher is one running watch.
type Watcher struct {
	cs      *cluster.Client
	o       Options
	quick   *nodeprobe.Prober
	full    *nodeprobe.Prober
	metrics *metrics

	mu    sync.Mutex
	nodes map[string]*nodeState
	dirty bool // the status ConfigMap lags behind a transition

	agentPods cache.Store   // the agents' pods (resident), from their informer
	agents    *agent.Client // reads them

	refusedOnce sync.Once // the events watch was refused: said once
	statusErr   string    // the last status write's refusal, said once
}

type nodeState struct {
	node     *corev1.Node
	pool     string
	runs     int
	next     time.Time
	last     time.Time // the last probe's end
	probed   bool      // at least once by this watcher
	busy     bool
	gone     bool
	cond     Condition
	since    time.Time // the condition's lastTransitionTime
	statuses map[string]*ImageStatus
	results  map[string]ImageResult // the newest of each image
	skip     string                 // why it gets no probe now (cluster.Ineligible's words), "" when it does
	// written is the condition last written to the node, at writtenAt
	written   Condition
	writtenAt time.Time
	agent     agentState // resident: its agent
}

// ImageStatus is one node × image in `watch status` (report.WatchImage).
type ImageStatus = report.WatchImage

// StartTimeout bounds the start: removing what earlier watchers left, before any probe (a
// variable for the tests of a silent API server).
var StartTimeout = 2 * time.Minute

// New prepares a watcher: the probe runs (owner, loader, secret copies) in the run namespace.

func New(ctx context.Context, cs *cluster.Client, o Options) (*Watcher, error) {
	if o.Interval <= 0 {
		o.Interval = 15 * time.Minute
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 5
	}
	if o.FullEvery <= 0 {
		o.FullEvery = 6
	}
	if o.AgentPort <= 0 {
		o.AgentPort = agent.Port
	}
	quick := o.Probe
	quick.ProbeArgs = append(slices.Clone(quick.ProbeArgs), "--no-download")
	w := &Watcher{cs: cs, o: o, metrics: newMetrics(o.Interval, o.API, o.Version), nodes: map[string]*nodeState{}}
	// a watcher killed before its cleanup (SIGKILL, a lost node) left probe pods: removed first
	// bounded: an API server that never answers is "could not run", not a silent wait
	sctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	if err := nodeprobe.RemoveWatchLeftovers(sctx, cs, o.Probe.Namespace, o.Progress); err != nil {
		return nil, err
	}
	var err error
	if w.full, err = nodeprobe.NewProber(ctx, cs, o.Probe, o.Images); err != nil {
		return nil, err
	}
	if o.Resident {
		// the agents choose full or quick probes themselves; the watcher only reads them
		w.agents = agent.NewClient(o.Probe.Timeout + 30*time.Second)
		return w, nil
	}
	if o.FullEvery > 1 {
		if w.quick, err = nodeprobe.NewProber(ctx, cs, quick, o.Images); err != nil {
			w.full.Close(ctx)
			return nil, err
		}
	}
	return w, nil
}

// Metrics is the registry to serve on /metrics.
func (w *Watcher) Metrics() *metricsHandler { return &metricsHandler{w.metrics} }

// Run watches the nodes until ctx ends, then deletes what it made and returns what is left.
func (w *Watcher) Run(ctx context.Context) []string {
	// an informer: one list, then a watch; no polling, whatever the number of nodes
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return w.cs.Core.Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			return w.cs.Core.Nodes().Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, w.cs), &corev1.Node{}, 0, cache.Indexers{})
	// the cache keeps what a probe reads of each node, not the whole object: at 5,000 nodes the
	// image lists and managedFields would be most of the watcher's memory
	_ = inf.SetTransform(func(obj any) (any, error) {
		if n, ok := obj.(*corev1.Node); ok {
			return cluster.SlimNode(n, w.o.Probe.SandboxImages), nil
		}
		return obj, nil
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.upsert(obj) },
		UpdateFunc: func(_, obj any) { w.upsert(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				w.forget(n.Name)
			}
		},
	})
	go inf.Run(ctx.Done())
	go w.watchPullFailures(ctx, time.Now())
	// probes at once: at most Concurrency; a node due while every slot is busy waits a tick
	var g errgroup.Group
	g.SetLimit(w.o.Concurrency)
	step := w.probe
	if w.o.Resident {
		w.startAgents(ctx)
		// reading an agent is one small HTTP request: many at once
		g.SetLimit(max(w.o.Concurrency, residentReads))
		step = w.collect
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastStatus := time.Time{}
	for {
		select {
		case <-ctx.Done():
			_ = g.Wait() // the probes return no error
			left := w.full.Close(ctx)
			if w.quick != nil {
				left = append(left, w.quick.Close(ctx)...)
			}
			// the status goes too: nothing of a watcher stays after it (the node conditions do)
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cluster.CleanupTimeout)
			defer cancel()
			if err := nodeprobe.RemoveWatchLeftovers(cctx, w.cs, w.o.Probe.Namespace, w.o.Progress); err != nil {
				left = append(left, "configmap/"+w.o.Probe.Namespace+"/"+StatusConfigMap+" ("+err.Error()+")")
			}
			return left
		case <-tick.C:
		}
		w.metrics.heartbeat.Set(float64(time.Now().Unix()))
		// on a change (at most every 10 s), and at least every Heartbeat(interval): the status
		// ages (its updated and lastProbed say whether a watcher is there and keeps up), and its
		// heartbeat annotation tells cleanup this watcher runs
		w.mu.Lock()
		dirty := w.dirty // probes set it under the lock
		w.mu.Unlock()
		if (dirty && time.Since(lastStatus) > 10*time.Second) || time.Since(lastStatus) >= Heartbeat(w.o.Interval) {
			lastStatus = time.Now()
			w.writeStatus(ctx)
		}
		for _, ns := range w.due(time.Now()) {
			if !g.TryGo(func() error { step(ctx, ns); return nil }) {
				w.release(ns) // every slot busy: due again at the next tick
			}
		}
	}
}

// upsert records a node the informer saw: a node that is new to the watcher, and Ready, is due
// at once; one with a condition from an earlier watcher is due within the interval, staggered.
func (w *Watcher) upsert(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ns := w.nodes[n.Name]
	if ns == nil {
		pool, _ := cluster.Pool(n)
		ns = &nodeState{pool: pool, statuses: map[string]*ImageStatus{}, results: map[string]ImageResult{}, next: time.Now()}
		if c := condition(n); c != nil && c.Status != corev1.ConditionUnknown && time.Since(c.LastHeartbeatTime.Time) < max(w.o.Interval, ConditionHeartbeat) {
			ns.next = time.Now().Add(stagger(n.Name, w.o.Interval))
			ns.cond = Condition{Status: string(c.Status), Reason: reasonOf(c.Reason), Message: line(c.Message, MaxMessage)}
			ns.since = c.LastTransitionTime.Time
			ns.written, ns.writtenAt = ns.cond, c.LastHeartbeatTime.Time
		}
		w.nodes[n.Name] = ns
	} else if ns.node != nil && !cluster.NodeReady(ns.node) && cluster.NodeReady(n) {
		// became Ready again (a reboot, a repaired kubelet, a node image upgrade in place): as
		// good as new, so probed first
		ns.next, ns.probed = time.Now(), false
	}
	ns.node = n // the informer's slim copy, never changed in place: no DeepCopy
}

// stagger spreads the nodes a watcher finds already probed over the interval, the same way on
// every restart.
func stagger(name string, interval time.Duration) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return time.Duration(h.Sum64() % uint64(interval))
}

func (w *Watcher) forget(name string) {
	w.mu.Lock()
	if ns := w.nodes[name]; ns != nil {
		ns.gone = true
		delete(w.nodes, name)
		w.dirty = true
		if w.o.Resident {
			go w.stopAgent(context.Background(), name)
		}
	}
	live := map[string]bool{}
	for _, ns := range w.nodes {
		live[ns.pool] = true
	}
	w.mu.Unlock()
	w.metrics.forget(name, live)
}

// due takes the nodes to probe now: Ready nodes never probed by this watcher first (newest
// first), then those whose time has come, earliest first. They are marked busy.
func (w *Watcher) due(now time.Time) []*nodeState {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*nodeState
	for name, ns := range w.nodes {
		if ns.node == nil {
			continue
		}
		if why := w.skipOf(ns.node); why != ns.skip {
			ns.skip = why
			w.metrics.setSkipped(name, ns.pool, why)
			w.dirty = true
		}
		if !ns.busy && ns.skip == "" && !now.Before(ns.next) {
			out = append(out, ns)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.probed != b.probed {
			return !a.probed
		}
		if !a.probed {
			return a.node.CreationTimestamp.After(b.node.CreationTimestamp.Time)
		}
		return a.next.Before(b.next)
	})
	for _, ns := range out {
		ns.busy = true
	}
	return out
}

// skipOf is why watch probes no pod on n now, the rule verify applies: not Linux, a virtual
// node, NotReady; cordoned too unless Options.IncludeCordoned.
func (w *Watcher) skipOf(n *corev1.Node) string {
	if why := cluster.Ineligible(n, true); why != "" {
		return why
	}
	switch {
	case !cluster.NodeReady(n):
		return cluster.SkipNotReady
	case n.Spec.Unschedulable && !w.o.IncludeCordoned:
		return cluster.SkipCordoned
	}
	return ""
}

func (w *Watcher) release(ns *nodeState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ns.busy = false
}

// probe runs every image's probe on one node and reports the result.
func (w *Watcher) probe(ctx context.Context, ns *nodeState) {
	w.mu.Lock()
	n := ns.node.DeepCopy()
	ns.runs++
	full := w.quick == nil || ns.runs%w.o.FullEvery == 1
	w.mu.Unlock()
	prober := w.full
	if !full {
		prober = w.quick
	}
	var results []ImageResult
	var probes []*report.PoolResult
	for _, img := range w.o.Images {
		res := prober.Probe(ctx, n, img)
		if ctx.Err() != nil {
			// cut by the watcher's own end: not a result, and the condition stays as it was
			w.release(ns)
			return
		}
		results = append(results, intake(img, full, &res))
		probes = append(probes, &res)
	}
	now := time.Now()
	if conditionOf(results).Status == "Unknown" && w.apiAway(ctx, n.Name) {
		// the API server, not the node, failed the probe: no result, and the condition stays
		w.mu.Lock()
		ns.busy, ns.next = false, now.Add(10*time.Second)
		w.mu.Unlock()
		w.progress(fmt.Sprintf("node %s: the API server did not answer; probed again shortly", n.Name))
		return
	}
	w.record(ctx, ns, n, results, probes, now)
}

// record takes the newest results of some or all images of node n (a round of probe pods, or
// what its agent served) and reports them: metrics, the status, the condition and, on a
// transition, an Event. The condition is written on a change, and otherwise once per
// ConditionHeartbeat: a steady node costs the API server one write an hour.
func (w *Watcher) record(ctx context.Context, ns *nodeState, n *corev1.Node, results []ImageResult, probes []*report.PoolResult, now time.Time) {
	w.export(ctx, ns, w.decide(ns, n, results, probes, now))
}

// decision is what one node's newest results decide: its condition and the one before, whether
// the condition is written and an Event said. Made once, under the lock; every exporter (the
// metrics, the Event, the condition, the status, the log) reads the same value.
type decision struct {
	node       *corev1.Node
	pool       string
	results    []ImageResult
	probes     []*report.PoolResult
	cond, prev Condition
	since, now time.Time
	event      bool // a transition: the Event
	write      bool // the condition changed, or its hourly heartbeat is due
}

// decide records results in the node's state (the status reads it) and says what they decide.
func (w *Watcher) decide(ns *nodeState, n *corev1.Node, results []ImageResult, probes []*report.PoolResult, now time.Time) decision {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range results {
		ns.results[r.Image] = r
	}
	var all []ImageResult
	for _, img := range w.o.Images {
		if r, ok := ns.results[img]; ok {
			all = append(all, r)
		}
	}
	d := decision{node: n, pool: ns.pool, results: results, probes: probes, cond: conditionOf(all), prev: ns.cond, now: now}
	ns.busy, ns.probed = false, true
	ns.next, ns.last = now.Add(w.o.Interval), now
	changed := d.prev.Status != d.cond.Status
	if changed || ns.since.IsZero() {
		ns.since = now
	}
	d.since = ns.since
	d.event = changed && d.prev.Status != "" || changed && d.cond.Status == "True"
	for _, r := range results {
		st := ns.statuses[r.Image]
		if st == nil {
			st = &ImageStatus{Image: r.Image}
			ns.statuses[r.Image] = st
		}
		class, code, host, role, step := "", "", "", "", ""
		if v := r.Verdict; v != nil {
			class, code, host, role = string(v.Class), string(v.Code), v.Host, string(v.Role)
			if v.Host != "" {
				step = stepOf(v.Step)
			}
		}
		if st.Class != class || st.Since.IsZero() {
			st.Since = now
			w.dirty = true
		}
		st.Class, st.Code, st.Host, st.Role, st.Step, st.LastProbed, st.Full, st.Error = class, code, host, role, step, now, r.Full, r.Error
	}
	ns.cond = d.cond
	d.write = d.cond != ns.written || now.Sub(ns.writtenAt) >= ConditionHeartbeat
	return d
}

// export feeds a decision to the metrics, the Event, the node's condition and the log.
func (w *Watcher) export(ctx context.Context, ns *nodeState, d decision) {
	n := d.node
	for i, r := range d.results {
		w.metrics.observe(n.Name, d.pool, r, d.probes[i], d.now)
	}
	w.metrics.setCondition(n.Name, d.pool, d.cond)
	// the event first: who sees the condition flip finds its event
	if d.event {
		w.event(ctx, n, d.prev, d.cond)
	}
	if d.write {
		if err := w.setCondition(ctx, n, d.cond, d.since, d.now); err != nil {
			w.progress(fmt.Sprintf("node %s: the condition could not be written: %v", n.Name, err))
		} else {
			w.mu.Lock()
			ns.written, ns.writtenAt = d.cond, d.now
			w.mu.Unlock()
		}
	}
	w.progress(fmt.Sprintf("node %s (pool %s): %s %s", n.Name, d.pool, d.cond.Status, d.cond.Reason))
}

// residentReads is how many agents the watcher reads at once.
const residentReads = 50

// ConditionHeartbeat is how often the condition of a node whose verdict did not change is
// written again (its lastHeartbeatTime moves): hourly, the API budget of a node.
const ConditionHeartbeat = time.Hour

// apiAway reports whether the API server fails to answer for the node now, in a way that passes.
func (w *Watcher) apiAway(ctx context.Context, node string) bool {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := w.cs.Core.Nodes().Get(actx, node, metav1.GetOptions{})
	return err != nil && cluster.Transient(err)
}

func (w *Watcher) progress(s string) {
	if w.o.Progress != nil {
		w.o.Progress(s)
	}
}

// setCondition patches the node's ImagePullPathBroken condition (a strategic merge by type, so
// the kubelet's own conditions are untouched). lastTransitionTime moves only with the status.
func (w *Watcher) setCondition(ctx context.Context, n *corev1.Node, c Condition, since, now time.Time) error {
	cond := map[string]any{"type": ConditionType, "status": c.Status, "reason": c.Reason, "message": c.Message,
		"lastHeartbeatTime": now.UTC().Format(time.RFC3339), "lastTransitionTime": since.UTC().Format(time.RFC3339)}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []any{cond}}})
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	_, err = w.cs.Core.Nodes().PatchStatus(pctx, n.Name, patch)
	return err
}

// event records a transition on the node, where `kubectl describe node` shows it.
func (w *Watcher) event(ctx context.Context, n *corev1.Node, prev, c Condition) {
	typ, reason := corev1.EventTypeNormal, "ImagePullPathHealthy"
	switch c.Status {
	case "True":
		typ, reason = corev1.EventTypeWarning, "ImagePullPathBroken"
	case "Unknown":
		typ, reason = corev1.EventTypeWarning, "ImagePullPathUnknown"
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: n.Name + ".pullpath-", Namespace: metav1.NamespaceDefault},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: n.Name, UID: types.UID(n.Name), APIVersion: "v1"},
		Reason:         reason, Message: c.Message, Type: typ, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "pullpath-watch"}, ReportingController: "pullpath.dev/watch", ReportingInstance: "pullpath-watch",
	}
	if prev.Status != "" {
		ev.Message = fmt.Sprintf("%s (was %s %s)", c.Message, prev.Status, prev.Reason)
	}
	ev.Message = line(ev.Message, MaxMessage) // prev may be an earlier watcher's, read from the node
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if _, err := w.cs.Core.Events(metav1.NamespaceDefault).Create(ectx, ev, metav1.CreateOptions{}); err != nil {
		w.progress(fmt.Sprintf("node %s: the event could not be written: %v", n.Name, err))
	}
}

func condition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == ConditionType {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// StatusConfigMap is where the watcher keeps `watch status` (in the run namespace).
const StatusConfigMap = cluster.WatchStatusConfigMap

// Status is the JSON contract of `pullpath watch status -o json` (report.WatchStatus).
type Status = report.WatchStatus

// SkippedNode is a node watch does not probe, and why (report.WatchSkipped).
type SkippedNode = report.WatchSkipped

// NodeStatus is one node in Status (report.WatchNode).
type NodeStatus = report.WatchNode

// Heartbeat is how often a watcher with interval writes its status when nothing changed: every
// minute (every interval, when shorter); one object, whatever the number of nodes, so 60 writes
// an hour, and a watcher that is gone shows within two minutes.
func Heartbeat(interval time.Duration) time.Duration { return min(interval, cluster.WatchHeartbeat) }

// Stale says what is stale in a status read at now, "" when nothing: a status not written for two
// heartbeats (no watcher, or a stuck one), or nodes whose last probe is older than two intervals
// and the probe's time (a watcher that does not keep up).
func Stale(s *Status, now time.Time, probeTimeout time.Duration) string {
	interval, err := time.ParseDuration(s.Interval)
	if err != nil {
		return ""
	}
	hb := Heartbeat(interval)
	if s.Heartbeat != "" {
		if d, err := time.ParseDuration(s.Heartbeat); err == nil {
			hb = d
		}
	}
	if age := now.Sub(s.Updated); age > 2*hb {
		return fmt.Sprintf("the watcher last wrote its status %s ago (it writes one at least every %s): it is gone or stuck", age.Round(time.Second), hb)
	}
	var behind []string
	for _, n := range s.Nodes {
		for _, im := range n.Images {
			if !im.LastProbed.IsZero() && now.Sub(im.LastProbed) > 2*interval+probeTimeout {
				behind = append(behind, n.Node)
				break
			}
		}
	}
	if s.Held > 0 && !s.OldestHeld.IsZero() && now.Sub(s.OldestHeld) > 2*interval+probeTimeout {
		behind = append([]string{fmt.Sprintf("a node of the %d counted ones", s.Held)}, behind...)
	}
	if len(behind) > 0 {
		return fmt.Sprintf("%d node(s) not probed for more than two intervals (%s): the watcher does not keep up", len(behind), strings.Join(behind[:min(len(behind), 5)], ", "))
	}
	return ""
}

// StatusBudget bounds the status ConfigMap's JSON: the API server refuses an object over 1 MiB,
// which a full status passes at about 2,200 nodes. Past it, nodes whose path holds are counted
// rather than listed (Status.Held); what is broken or unknown is always listed.
var StatusBudget = 768 << 10

// fit returns s's JSON within StatusBudget when it can: whole, else with the nodes that hold
// counted, not listed.
func fit(s *Status) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil || len(b) <= StatusBudget {
		return b, err
	}
	kept := s.Nodes[:0:0]
	for _, n := range s.Nodes {
		if n.Condition != "False" {
			kept = append(kept, n)
			continue
		}
		s.Held++
		for _, im := range n.Images {
			if s.OldestHeld.IsZero() || im.LastProbed.Before(s.OldestHeld) {
				s.OldestHeld = im.LastProbed
			}
		}
	}
	s.Nodes = kept
	return json.Marshal(s)
}

// Snapshot is the watcher's status now.
func (w *Watcher) Snapshot() *Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &Status{APIVersion: report.APIVersion, Kind: "WatchStatus", Updated: time.Now().UTC(), Interval: w.o.Interval.String(),
		Heartbeat: Heartbeat(w.o.Interval).String(), Images: w.o.Images, Nodes: []NodeStatus{}}
	for name, ns := range w.nodes {
		if ns.skip != "" {
			s.Skipped = append(s.Skipped, SkippedNode{Node: name, Pool: ns.pool, Reason: ns.skip})
		}
		if !ns.probed {
			continue
		}
		nst := NodeStatus{Node: name, Pool: ns.pool, Condition: ns.cond.Status, Reason: ns.cond.Reason, Message: ns.cond.Message, Since: ns.since.UTC(), Images: []ImageStatus{}}
		for _, img := range w.o.Images {
			if st := ns.statuses[img]; st != nil {
				c := *st
				c.Since, c.LastProbed = c.Since.UTC(), c.LastProbed.UTC()
				nst.Images = append(nst.Images, c)
			}
		}
		s.Nodes = append(s.Nodes, nst)
	}
	sort.Slice(s.Nodes, func(i, j int) bool {
		if s.Nodes[i].Pool != s.Nodes[j].Pool {
			return s.Nodes[i].Pool < s.Nodes[j].Pool
		}
		return s.Nodes[i].Node < s.Nodes[j].Node
	})
	return s
}

// writeStatus stores the snapshot in the status ConfigMap, at most every 10 s after a transition
// and once a WatchHeartbeat: the API writes stay bounded by the changes, not the nodes.
func (w *Watcher) writeStatus(ctx context.Context) {
	b, err := fit(w.Snapshot())
	if err != nil {
		return
	}
	ns := w.o.Probe.Namespace
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: StatusConfigMap, Namespace: ns,
		Labels:      map[string]string{cluster.LabelManaged: "pullpath", cluster.LabelBy: cluster.ByWatch, cluster.LabelRole: "status"},
		Annotations: map[string]string{cluster.AnnotationHeartbeat: strconv.FormatInt(time.Now().Unix(), 10)}},
		Data: map[string]string{"status.json": string(b)}}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err = w.cs.Core.ConfigMaps(ns).Update(wctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = w.cs.Core.ConfigMaps(ns).Create(wctx, cm, metav1.CreateOptions{})
	}
	w.mu.Lock()
	if err == nil {
		w.dirty, w.statusErr = false, ""
	}
	// a refusal is said once, with the API server's words, and retried at the next change or
	// heartbeat: never a silent loop, never a line a minute
	say := err != nil && err.Error() != w.statusErr
	if say {
		w.statusErr = err.Error()
	}
	w.mu.Unlock()
	if say {
		w.progress(fmt.Sprintf("the status ConfigMap %s/%s was not written (%d bytes): %v; retried at the next change or heartbeat", ns, StatusConfigMap, len(b), err))
	}
}

// ReadStatus reads the status a watcher stored in namespace ns.
func ReadStatus(ctx context.Context, cs *cluster.Client, ns string) (*Status, error) {
	cm, err := cs.Core.ConfigMaps(ns).Get(ctx, StatusConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var s Status
	if err := json.Unmarshal([]byte(cm.Data["status.json"]), &s); err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %v", ns, StatusConfigMap, err)
	}
	return &s, nil
}
