package watch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/pullpath/pullpath/internal/agent"
	"github.com/pullpath/pullpath/internal/nodeprobe"
	"github.com/pullpath/pullpath/internal/report"
)

// The resident mode: an agent pod on every node probes it locally on its interval; the watcher
// reads the agents over HTTP and writes what changed. After the first round no pod is created,
// no binary crosses the API server, and a steady node costs one condition write an hour.

// agentPoll is how soon the watcher looks again at an agent that is starting, or whose round is
// not over yet (a variable for the tests).
var agentPoll = 5 * time.Second

// agentQuiet is how long an agent may not answer, or not run, before its node turns Unknown.
func (w *Watcher) agentQuiet() time.Duration { return max(w.o.Probe.Timeout, 2*time.Minute) }

// agentState is what the watcher knows of one node's agent.
type agentState struct {
	seq      uint64                  // the newest result read
	started  time.Time               // when the agent read started: another start is another life, seq anew
	asked    map[string]time.Time    // image → when a pull failure of it was seen: probe it now
	newest   map[string]agent.Result // image → the newest result read (its report dropped)
	noPull   bool                    // its image could not be pulled: the no-pull agent, from now on
	failing  time.Time               // since when it does not run or answer; zero while it does
	failWhy  string
	lastTook time.Duration
}

// startAgents runs the informer of the agents' pods: one list and a watch in the run namespace,
// by label, kept slim; the watcher reads a node's agent from it, never with a GET.
func (w *Watcher) startAgents(ctx context.Context) {
	ns := w.o.Probe.Namespace
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = nodeprobe.AgentSelector
			return w.cs.Core.Pods(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			o.LabelSelector = nodeprobe.AgentSelector
			return w.cs.Core.Pods(ns).Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, w.cs), &corev1.Pod{}, 0, cache.Indexers{})
	_ = inf.SetTransform(func(obj any) (any, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			return slimAgent(p), nil
		}
		return obj, nil
	})
	w.agentPods = inf.GetStore()
	go inf.Run(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
}

// slimAgent keeps of an agent's pod what the watcher reads: name, labels, node, phase, address
// and the container's state.
func slimAgent(p *corev1.Pod) *corev1.Pod {
	s := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion, Labels: p.Labels,
			CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp},
		Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName},
		Status: corev1.PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP, HostIP: p.Status.HostIP, ContainerStatuses: p.Status.ContainerStatuses},
	}
	if len(p.Spec.Containers) > 0 {
		s.Spec.Containers = []corev1.Container{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image}}
	}
	return s
}

func (w *Watcher) agentPod(node string) *corev1.Pod {
	obj, ok, err := w.agentPods.GetByKey(w.o.Probe.Namespace + "/" + nodeprobe.AgentName(node))
	if err != nil || !ok {
		return nil
	}
	p, _ := obj.(*corev1.Pod)
	return p
}

// unpullable are the waiting reasons of a container whose image the node cannot pull.
var unpullable = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}

// collect reads node ns's agent: it starts the agent when there is none, replaces an image-mode
// agent the node cannot pull by a no-pull one, and records what the agent probed since the last
// read (or asks it to probe now, after a pull failure).
func (w *Watcher) collect(ctx context.Context, ns *nodeState) {
	w.mu.Lock()
	n, as := ns.node, &ns.agent
	asked, after, noPull := as.asked, as.seq, as.noPull
	as.asked = nil
	w.mu.Unlock()
	now := time.Now()
	later := func(d time.Duration) {
		w.mu.Lock()
		ns.busy, ns.next = false, now.Add(d)
		w.mu.Unlock()
	}
	pod := w.agentPod(n.Name)
	switch {
	case pod == nil:
		mode, err := w.full.StartAgent(ctx, n, nodeprobe.AgentOptions{Interval: w.o.Interval, FullEvery: w.o.FullEvery, Port: w.o.AgentPort, Budget: w.o.AgentBudget, NoPull: noPull})
		if err != nil {
			w.agentDown(ctx, ns, n, "its agent could not be started: "+err.Error(), now)
			return
		}
		w.progress(fmt.Sprintf("node %s: agent started (%s)", n.Name, mode))
		later(agentPoll)
		return
	case pod.DeletionTimestamp != nil:
		later(agentPoll)
		return
	}
	if st := nodeprobe.Waiting(pod); st != nil {
		if nodeprobe.AgentMode(pod) == nodeprobe.AgentImage && slices.Contains(unpullable, st.Reason) {
			// the node cannot pull the agent's image: a finding of its own, and the no-pull agent
			w.progress(fmt.Sprintf("node %s: cannot pull the agent image %s (%s: %s); the agent runs from the node's sandbox image instead",
				n.Name, pod.Spec.Containers[0].Image, st.Reason, line(st.Message, maxError)))
			w.metrics.agentFallbacks.Inc()
			w.mu.Lock()
			as.noPull = true
			w.mu.Unlock()
			if err := w.full.StopAgent(ctx, n.Name); err != nil {
				w.progress(fmt.Sprintf("node %s: %v", n.Name, err))
			}
			later(agentPoll)
			return
		}
	}
	if pod.Status.PodIP == "" || !nodeprobe.Running(pod) {
		why := "its agent is not running"
		if st := nodeprobe.Waiting(pod); st != nil {
			why += ": " + st.Reason + ": " + line(st.Message, maxError)
		}
		if now.Sub(pod.CreationTimestamp.Time) > w.agentQuiet() {
			w.agentDown(ctx, ns, n, why, now)
			return
		}
		later(agentPoll)
		return
	}
	if !nodeAddress(n, pod.Status.PodIP) {
		// a host-network pod's address is its node's: any other would send the watcher elsewhere
		w.agentDown(ctx, ns, n, fmt.Sprintf("its agent's address %s is none of the node's", line(pod.Status.PodIP, 64)), now)
		return
	}
	base := agent.Addr(pod.Status.PodIP, w.o.AgentPort)
	var got []*agent.Results
	var err error
	if len(asked) > 0 {
		for _, img := range slices.Sorted(maps.Keys(asked)) {
			w.progress(fmt.Sprintf("node %s: asked its agent to probe %s now", n.Name, img))
			var r *agent.Results
			if r, err = w.agents.Ask(ctx, base, n.Name, img, asked[img]); err != nil {
				break
			}
			got = append(got, r)
		}
	} else {
		var r *agent.Results
		if r, err = w.agents.Results(ctx, base, n.Name, after); err == nil && after > 0 && !r.Started.Equal(w.agentStarted(ns)) {
			// a new life of the agent (its pod restarted): its numbers start again
			r, err = w.agents.Results(ctx, base, n.Name, 0)
		}
		if err == nil {
			got = append(got, r)
		}
	}
	if err == nil {
		for _, r := range got {
			if r.Node != n.Name {
				err = fmt.Errorf("the agent at %s answered for node %q", pod.Status.PodIP, line(r.Node, 80))
			}
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			later(0)
			return
		}
		w.mu.Lock()
		if as.failing.IsZero() {
			as.failing = now
		}
		since := as.failing
		w.mu.Unlock()
		if now.Sub(since) > w.agentQuiet() {
			w.agentDown(ctx, ns, n, "its agent does not answer: "+line(err.Error(), maxError), now)
			return
		}
		later(2 * agentPoll)
		return
	}
	w.agentResults(ctx, ns, n, got, nodeprobe.AgentMode(pod), now)
}

// agentResults records what the agent answered, and when to read it again: just after its
// next round ends.
func (w *Watcher) agentResults(ctx context.Context, ns *nodeState, n *corev1.Node, got []*agent.Results, mode string, now time.Time) {
	pool := ns.pool // set once, when the node was first seen
	var results []ImageResult
	var probes []*report.PoolResult
	var seq uint64
	var next time.Time
	var took time.Duration
	for _, r := range got {
		seq, next = max(seq, r.Seq), r.Next
		for _, res := range r.Results {
			if !slices.Contains(w.o.Images, res.Image) || slices.ContainsFunc(results, func(x ImageResult) bool { return x.Image == res.Image }) {
				continue // not asked of it: a hostile agent's extra
			}
			pr := &report.PoolResult{Pool: pool, Node: n.Name, NodeCreated: n.CreationTimestamp.UTC(), Choice: "every node (resident agent)",
				Delivery: "agent " + mode, Class: report.ClassOther, Probe: res.Report, Error: res.Error}
			if res.Report != nil {
				pr.Class = res.Report.Class
			}
			results = append(results, intake(res.Image, res.Full, pr))
			w.mu.Lock()
			if ns.agent.newest == nil {
				ns.agent.newest = map[string]agent.Result{}
			}
			kept := res
			kept.Report = nil
			ns.agent.newest[res.Image] = kept
			w.mu.Unlock()
			probes = append(probes, pr)
			took = max(took, time.Duration(res.Took))
		}
	}
	w.mu.Lock()
	as := &ns.agent
	as.failing, as.failWhy = time.Time{}, ""
	if started := got[len(got)-1].Started; !started.Equal(as.started) {
		as.started, as.seq = started, 0
	}
	as.seq = max(as.seq, seq)
	if took > 0 {
		as.lastTook = took
	}
	// read again when the agent's next round should be over; while it is starting, soon
	wait := agentPoll
	if !next.IsZero() {
		wait = min(max(next.Add(as.lastTook*time.Duration(len(w.o.Images))+3*time.Second).Sub(now), agentPoll), w.o.Interval+time.Minute)
	}
	w.mu.Unlock()
	if len(results) == 0 {
		w.mu.Lock()
		ns.busy, ns.next = false, now.Add(wait)
		w.mu.Unlock()
		return
	}
	w.record(ctx, ns, n, results, probes, now)
	w.mu.Lock()
	ns.next = now.Add(wait)
	w.mu.Unlock()
}

// agentDown records that node n's agent gives no result: every image is Unknown, with why.
func (w *Watcher) agentDown(ctx context.Context, ns *nodeState, n *corev1.Node, why string, now time.Time) {
	w.mu.Lock()
	ns.agent.failWhy = why
	w.mu.Unlock()
	var results []ImageResult
	var probes []*report.PoolResult
	pool := ns.pool
	for _, img := range w.o.Images {
		pr := &report.PoolResult{Pool: pool, Node: n.Name, Class: report.ClassOther, Error: why}
		results = append(results, intake(img, false, pr))
		probes = append(probes, pr)
	}
	w.record(ctx, ns, n, results, probes, now)
	w.mu.Lock()
	ns.next = now.Add(agentPoll * 6)
	w.mu.Unlock()
}

func (w *Watcher) agentStarted(ns *nodeState) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return ns.agent.started
}

// nodeAddress reports whether ip is one of n's addresses.
func nodeAddress(n *corev1.Node, ip string) bool {
	for _, a := range n.Status.Addresses {
		if a.Address == ip && (a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP) {
			return true
		}
	}
	return false
}

// stopAgent deletes a node's agent when the node leaves the watch (gone, cordoned, NotReady).
func (w *Watcher) stopAgent(ctx context.Context, node string) {
	if w.agentPods == nil || w.agentPod(node) == nil {
		return
	}
	if err := w.full.StopAgent(ctx, node); err != nil {
		w.progress(fmt.Sprintf("node %s: %v", node, err))
	}
}
