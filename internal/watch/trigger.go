package watch

import (
	"context"
	"fmt"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/pullpath/pullpath/internal/registry"
)

// TriggerWithin bounds how soon a node whose kubelet reported a pull failure of a watched image
// is probed: the next tick picks it (every second) unless every probe slot is busy.
const TriggerWithin = 30 * time.Second

// minRetrigger spaces the probes a node's failures trigger: the kubelet's back-off repeats the
// event every few seconds to five minutes, and one probe answers them all.
var minRetrigger = time.Minute

// rePulledImage is the image in the kubelet's pull failure events: `Failed to pull image "X": …`
// (reason Failed; kubelet's events.FailedToPullImage).
var rePulledImage = regexp.MustCompile(`(?i)\bpull(?:ing)? image "([^"]{1,512})"`)

// pullFailure is what the watcher keeps of a kubelet's pull failure event.
type pullFailure struct {
	node, image string
	at          time.Time
}

// watchPullFailures follows the kubelets' Warning events of reason Failed on pods, cluster-wide
// (one watch, field-selected by the API server), and has a node that failed to pull a watched
// image probed at once. Without the right to list and watch events it says so once and the nodes
// keep their interval.
func (w *Watcher) watchPullFailures(ctx context.Context, started time.Time) {
	// the watched images, parsed once: every Failed event of the cluster is compared with them
	watched := map[string]string{} // name@identifier → the image as given
	for _, img := range w.o.Images {
		if ref, err := registry.ParseReference(img); err == nil {
			watched[ref.Name()+"@"+ref.Identifier()] = img
		}
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.kind", "Pod"), fields.OneTermEqualSelector("reason", "Failed"),
		fields.OneTermEqualSelector("type", corev1.EventTypeWarning)).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			l, err := w.cs.Core.Events(metav1.NamespaceAll).List(ctx, o)
			if apierrors.IsForbidden(err) {
				w.eventsRefused(err)
				stop() // a refusal stays one: no list retried forever
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			o.FieldSelector = sel
			return w.cs.Core.Events(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, w.cs), &corev1.Event{}, 0, cache.Indexers{})
	// the cache keeps what a trigger needs (the store wants an object with its metadata), not
	// the message and object of every failure in the cluster
	_ = inf.SetTransform(func(obj any) (any, error) {
		e, ok := obj.(*corev1.Event)
		if !ok {
			return obj, nil
		}
		slim := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace, UID: e.UID, ResourceVersion: e.ResourceVersion},
			Source: corev1.EventSource{Host: e.Source.Host}, ReportingInstance: e.ReportingInstance, LastTimestamp: e.LastTimestamp, EventTime: e.EventTime}
		if m := rePulledImage.FindString(e.Message); m != "" {
			slim.Message = m
		}
		return slim, nil
	})
	handle := func(obj any) {
		if e, ok := obj.(*corev1.Event); ok {
			if f := pullFailureOf(e, watched); f.node != "" && f.at.After(started) {
				w.trigger(f)
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: handle, UpdateFunc: func(_, obj any) { handle(obj) }})
	inf.Run(ctx.Done())
}

// pullFailureOf reads the node, the watched image and the time of a kubelet's event; node is ""
// when it is not a pull failure of an image of watched (name@identifier → image).
func pullFailureOf(e *corev1.Event, watched map[string]string) *pullFailure {
	f := &pullFailure{at: e.LastTimestamp.Time}
	if e.EventTime.After(f.at) {
		f.at = e.EventTime.Time
	}
	node := e.Source.Host
	if node == "" {
		node = e.ReportingInstance
	}
	m := rePulledImage.FindStringSubmatch(e.Message)
	if m == nil || node == "" || len(node) > 253 {
		return f
	}
	got, err := registry.ParseReference(m[1])
	if err != nil {
		return f
	}
	if img, ok := watched[got.Name()+"@"+got.Identifier()]; ok {
		f.node, f.image = node, img
	}
	return f
}

// trigger makes a node whose kubelet failed to pull a watched image due now (bringForward), and
// says so.
func (w *Watcher) trigger(f *pullFailure) {
	w.mu.Lock()
	brought := w.bringForward(f, time.Now())
	w.mu.Unlock()
	if !brought {
		return
	}
	w.metrics.triggered.Inc()
	w.progress(fmt.Sprintf("node %s: its kubelet failed to pull %s; probing it now", f.node, f.image))
}

// bringForward (under mu) makes f's node due now, unless it is skipped. With probe pods: unless
// it is being probed or was probed within minRetrigger. With agents: its agent is asked for a
// result newer than the failure, unless its newest probe started after it or an ask is pending
// (it answers both).
func (w *Watcher) bringForward(f *pullFailure, now time.Time) bool {
	ns := w.nodes[f.node]
	if ns == nil || ns.skip != "" {
		return false
	}
	if !w.o.Resident {
		if ns.busy || now.Sub(ns.last) < minRetrigger || !ns.next.After(now) {
			return false
		}
		ns.next = now
		return true
	}
	if !ns.agent.asked[f.image].IsZero() {
		return false
	}
	if r, ok := ns.agent.newest[f.image]; ok && r.StartedAfter(f.at) {
		return false
	}
	if ns.agent.asked == nil {
		ns.agent.asked = map[string]time.Time{}
	}
	ns.agent.asked[f.image] = f.at
	if !ns.busy {
		ns.next = now
	}
	return true
}

// eventsRefused says once that pull failures are not followed, and why.
func (w *Watcher) eventsRefused(err error) {
	w.refusedOnce.Do(func() {
		w.progress("pull failures are not followed (" + err.Error() + "): grant list and watch on events cluster-wide (the manifests' pullpath-watch role does); nodes are probed on their interval only")
	})
}
