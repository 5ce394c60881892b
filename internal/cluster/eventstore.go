package cluster

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// maxEventsPerObject bounds the distinct events kept per object: a pod with 10,000 events (a
// message with a request ID in it is new every retry) keeps the newest of its distinct messages,
// and the counts of all of them.
const maxEventsPerObject = 12

// eventSet is an object's events, folded: one entry per reason and message (counts summed, first
// and last times widened), at most maxEventsPerObject of them, the newest kept.
type eventSet struct {
	evs     []corev1.Event
	folded  int // events folded into an entry of the same reason and message
	dropped int // distinct events left out past the bound (their counts are in dropCount)
	dropCnt int
}

// add folds e in. Only what explain and the timeline read is kept of it.
func (s *eventSet) add(e *corev1.Event) {
	for i := range s.evs {
		k := &s.evs[i]
		if k.Reason == e.Reason && k.Message == e.Message && k.Type == e.Type {
			k.Count = max(k.Count, 1) + max(e.Count, 1)
			if t := eventTime(e); t.Before(eventTime(k)) {
				k.FirstTimestamp = metav1.NewTime(t)
			}
			if t := lastTime(e); t.After(lastTime(k)) {
				k.LastTimestamp = metav1.NewTime(t)
			}
			s.folded++
			return
		}
	}
	c := slim(e)
	if len(s.evs) < maxEventsPerObject {
		s.evs = append(s.evs, c)
		return
	}
	oldest := 0
	for i := range s.evs {
		if lastTime(&s.evs[i]).Before(lastTime(&s.evs[oldest])) {
			oldest = i
		}
	}
	s.dropped++
	if lastTime(&c).After(lastTime(&s.evs[oldest])) {
		s.dropCnt += int(max(s.evs[oldest].Count, 1))
		s.evs[oldest] = c
		return
	}
	s.dropCnt += int(max(c.Count, 1))
}

// sorted is the kept events, oldest first.
func (s *eventSet) sorted() []corev1.Event {
	out := append([]corev1.Event(nil), s.evs...)
	sort.SliceStable(out, func(i, j int) bool { return eventTime(&out[i]).Before(eventTime(&out[j])) })
	return out
}

// slim is what of an event explain and the timeline read: no managed fields, no annotations.
func slim(e *corev1.Event) corev1.Event {
	c := corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace, CreationTimestamp: e.CreationTimestamp},
		InvolvedObject: e.InvolvedObject, Reason: e.Reason, Message: e.Message, Type: e.Type, Count: e.Count,
		FirstTimestamp: e.FirstTimestamp, LastTimestamp: e.LastTimestamp, EventTime: e.EventTime, Source: e.Source,
		ReportingController: e.ReportingController}
	if e.Series != nil {
		s := *e.Series
		c.Series = &s
	}
	if c.FirstTimestamp.IsZero() {
		c.FirstTimestamp = metav1.NewTime(eventTime(e))
	}
	if c.LastTimestamp.IsZero() {
		c.LastTimestamp = metav1.NewTime(lastTime(e))
	}
	return c
}

// objectEvents lists the events about uid in ns, paged, folded into a bounded set (a pod with
// 10,000 events costs two requests and a dozen entries in memory).
func objectEvents(ctx context.Context, cs *Client, ns string, uid types.UID) (*eventSet, listed, error) {
	s := &eventSet{}
	sel := "involvedObject.uid=" + string(uid)
	l, err := paged(ctx, metav1.ListOptions{FieldSelector: sel}, func(ctx context.Context, o metav1.ListOptions) (metav1.ListMeta, int, error) {
		el, err := cs.lists().Events(ns).List(ctx, o)
		if err != nil {
			return metav1.ListMeta{}, 0, err
		}
		for i := range el.Items {
			// as asked: a server (or a proxy) that ignores selectors must not mix in other objects
			if el.Items[i].InvolvedObject.UID == uid {
				s.add(&el.Items[i])
			}
		}
		return el.ListMeta, len(el.Items), nil
	})
	return s, l, err
}
