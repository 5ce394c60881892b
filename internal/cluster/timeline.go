package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/pullpath/pullpath/internal/report"
)

// maxTimeline bounds the timeline; how many entries were cut is the diagnosis's timelineOmitted.
const maxTimeline = 40

// scaleReasons are the events autoscalers write when they add nodes.
var scaleReasons = []string{"TriggeredScaleUp", "ScaledUpGroup", "Launched", "Nominated"}

// timeline orders node creations, pool upgrades, scale-ups, the image running and the pull
// failures into one story.
func (c *census) timeline(ctx context.Context, pod *corev1.Pod, evs []corev1.Event) (entries []report.TimelineEntry, omitted int) {
	var t []report.TimelineEntry
	add := func(at time.Time, kind, format string, args ...any) {
		if !at.IsZero() {
			t = append(t, report.TimelineEntry{Time: at.UTC(), Kind: kind, Event: fmt.Sprintf(format, args...)})
		}
	}
	// nodes of the pools concerned, oldest first; a change of node image version within a pool is an upgrade
	byPool := map[string][]*corev1.Node{}
	concerned := map[string]bool{}
	for i := range c.nodes {
		n := &c.nodes[i]
		p, _ := Pool(n)
		byPool[p] = append(byPool[p], n)
		if n.Name == pod.Spec.NodeName || c.inNodeList(imageNames(n)) {
			concerned[p] = true
		}
	}
	for i := range c.pods {
		if c.failing(&c.pods[i]) {
			if n := c.nodeOf(c.pods[i].Spec.NodeName); n != nil {
				p, _ := Pool(n)
				concerned[p] = true
			}
		}
	}
	for _, p := range sortedKeys(concerned) {
		ns := byPool[p]
		sort.Slice(ns, func(i, j int) bool { return ns[i].CreationTimestamp.Before(&ns[j].CreationTimestamp) })
		prev := ""
		for k, n := range ns {
			v := imageVersion(n)
			has := "without the image"
			switch {
			case c.inNodeList(imageNames(n)):
				has = "with the image in its cache now"
			case len(n.Status.Images) >= c.o.MaxImages:
				has = "its image list is full: the image may be cached"
			}
			add(n.CreationTimestamp.Time, "node-created", "node %s created in pool %s (%s)", n.Name, p, has)
			if k > 0 && v != "" && prev != "" && v != prev {
				add(n.CreationTimestamp.Time, "pool-upgrade", "pool %s: node image %s → %s (first node: %s)", p, prev, v, n.Name)
			}
			if v != "" {
				prev = v
			}
		}
	}
	// scale-ups the autoscalers reported
	for _, r := range scaleReasons {
		l, err := c.cs.Core.Events("").List(ctx, metav1.ListOptions{FieldSelector: fields.Set{"reason": r}.AsSelector().String(), Limit: 100})
		if err != nil {
			// no cluster-wide event rights: the node creations above still tell the story, but
			// the timeline says what it lacks, not an autoscaler that never ran
			*c.notes = append(*c.notes, "scale-ups are not on the timeline: the autoscalers' events could not be read ("+
				ShortErr(APIError(err, "list", "events", "", ""))+" at cluster scope); node creations still are")
			break
		}
		for i := range l.Items {
			e := &l.Items[i]
			if e.Reason != r {
				continue // as asked: the selector is not trusted to be applied
			}
			add(eventTime(e), "scale-up", "%s %s/%s: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, clip(e.Message, 160))
		}
	}
	// the image running elsewhere: the first start of each pod that runs it
	for i := range c.pods {
		p := &c.pods[i]
		for _, s := range runningStatuses(p) {
			if !c.sameImage(specImage(p, s.Name)) {
				continue
			}
			at := time.Time{}
			if s.State.Running != nil {
				at = s.State.Running.StartedAt.Time
			} else if s.State.Terminated != nil {
				at = s.State.Terminated.StartedAt.Time
			}
			add(at, "image-running", "pod %s/%s runs the image on node %s", p.Namespace, p.Name, p.Spec.NodeName)
			break
		}
	}
	add(pod.CreationTimestamp.Time, "pod-created", "pod %s/%s created, scheduled to %s", pod.Namespace, pod.Name, pod.Spec.NodeName)
	var first, last *corev1.Event
	for i := range evs {
		e := &evs[i]
		if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Message, "pull") {
			continue
		}
		if first == nil {
			first = e
		}
		if last == nil || lastTime(e).After(lastTime(last)) {
			last = e
		}
	}
	if first != nil {
		add(eventTime(first), "first-failure", "first pull failure on %s: %s", pod.Spec.NodeName, clip(first.Message, 200))
		if last != first || last.Count > 1 {
			add(lastTime(last), "last-failure", "last pull failure (%d events)", countEvents(evs))
		}
	}
	sort.SliceStable(t, func(i, j int) bool { return t[i].Time.Before(t[j].Time) })
	if len(t) > maxTimeline {
		cut := len(t) - maxTimeline
		return append(t[:1], t[cut+1:]...), cut // keep the oldest entry and the most recent ones
	}
	return t, 0
}

func countEvents(evs []corev1.Event) int {
	n := 0
	for _, e := range evs {
		if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "pull") {
			n += max(int(e.Count), 1)
		}
	}
	return n
}

// clip is s on one line, clipped to n bytes (report.Clip).
func clip(s string, n int) string {
	return report.Clip(strings.Join(strings.Fields(s), " "), n)
}

// next is the verify command that proves the diagnosis: a fresh, complete pull on a node of each
// pool concerned, with the credentials the pod uses.
func (c *census) next(d *report.PodDiagnosis, pod *corev1.Pod) *report.NextStep {
	pools := map[string]bool{}
	for _, n := range d.Nodes {
		if len(n.FailingPods) > 0 || len(n.RunningPods) > 0 || (n.ImagePresent != nil && *n.ImagePresent) || n.Name == pod.Spec.NodeName {
			pools[n.Pool] = true
		}
	}
	ns := &report.NextStep{Pools: sortedKeys(pools)}
	cmd := []string{"pullpath", "verify", c.image, "--fresh"}
	for _, p := range ns.Pools {
		cmd = append(cmd, "--pool", shellQuote(p))
	}
	if d.Credentials != nil && len(d.Credentials.PullSecrets) > 0 {
		cmd = append(cmd, "--pod", pod.Namespace+"/"+pod.Name)
		for _, s := range d.Credentials.PullSecrets {
			if s.CoversRegistry != nil && *s.CoversRegistry && s.From == "pod" {
				ns.Secret = s.Name
				break
			}
		}
	}
	ns.Command = strings.Join(cmd, " ")
	ns.Why = "a fresh, complete pull on a node of each pool concerned, chosen among nodes without the image, with the credentials the pod uses: it proves the path where the cache cannot hide it"
	return ns
}

func shellQuote(s string) string {
	if strings.ContainsAny(s, " \t'\"$`\\|&;<>()*?[]{}!#~") || s == "" {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}
