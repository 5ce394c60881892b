package watch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/kube"
)

// Election is leader election on a coordination.k8s.io Lease, with client-go's rules (tools/
// leaderelection): a lease is free when its holder is empty or when it has not changed for its
// duration, measured on this process's clock from when this process saw it change, so that the
// replicas' clocks need not agree. client-go's own package links every API group of its clientset
// (8 MiB in every command), for the three requests this needs: get, create and update a lease.
type Election struct {
	Leases   kube.LeaseClient
	Name     string
	Identity string
	Duration time.Duration // how long a lease that stopped changing keeps others out
	Deadline time.Duration // the leader gives up leading when it could not renew for this long
	Retry    time.Duration // between attempts to take or renew the lease
	Logf     func(string)
	seenRec  string // the lease's record when this process last saw it change, and when
	seenAt   time.Time
}

// Run waits until this process holds the lease, then runs lead with a context that ends when
// ctx ends or the lease is lost, and releases the lease once lead has returned. It reports
// whether lead ran.
func (e *Election) Run(ctx context.Context, lead func(context.Context)) bool {
	for !e.try(ctx) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(jitter(e.Retry)):
		}
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		lead(lctx)
	}()
	renewed := time.Now()
	for {
		select {
		case <-done:
			e.release()
			return true
		case <-time.After(e.Retry):
		}
		if lctx.Err() != nil {
			continue // lead is stopping: wait for it, then release
		}
		rctx, rcancel := context.WithTimeout(lctx, e.Deadline)
		ok := e.try(rctx)
		rcancel()
		switch {
		case ok:
			renewed = time.Now()
		case time.Since(renewed) >= e.Deadline:
			e.logf("lease " + e.Name + " not renewed for " + e.Deadline.String() + ": no longer the leader")
			cancel()
		}
	}
}

// RunForever runs Run again each time lead ends with ctx alive: a leader that lost the lease (an
// API outage longer than the deadline, a control-plane upgrade, another took it) becomes a
// standby and leads again when it can; only ctx's end stops it.
func (e *Election) RunForever(ctx context.Context, lead func(context.Context)) {
	for e.Run(ctx, lead) && ctx.Err() == nil {
		e.logf("standing by: waiting for the lease " + e.Name + " again")
	}
}

// try takes the lease if it is free, or renews it if it is ours.
func (e *Election) try(ctx context.Context) bool {
	now := time.Now()
	secs := int32(e.Duration / time.Second)
	l, err := e.Leases.Get(ctx, e.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: e.Name}, Spec: coordinationv1.LeaseSpec{
			HolderIdentity: &e.Identity, LeaseDurationSeconds: &secs, AcquireTime: &metav1.MicroTime{Time: now},
			RenewTime: &metav1.MicroTime{Time: now}, LeaseTransitions: new(int32)}}
		l, err = e.Leases.Create(ctx, l, metav1.CreateOptions{})
		if err == nil {
			e.seen(l, now)
		}
		return err == nil
	}
	if err != nil {
		return false
	}
	if record(l) != e.seenRec || e.seenAt.IsZero() {
		e.seen(l, now)
	}
	holder, dur := "", e.Duration
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if l.Spec.LeaseDurationSeconds != nil {
		dur = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	if holder != "" && holder != e.Identity && now.Before(e.seenAt.Add(dur)) {
		return false // another holds it and renews it
	}
	spec := l.Spec.DeepCopy()
	if holder != e.Identity {
		spec.AcquireTime = &metav1.MicroTime{Time: now}
		n := int32(0)
		if spec.LeaseTransitions != nil {
			n = *spec.LeaseTransitions
		}
		n++
		spec.LeaseTransitions = &n
	}
	spec.HolderIdentity, spec.LeaseDurationSeconds, spec.RenewTime = &e.Identity, &secs, &metav1.MicroTime{Time: now}
	l.Spec = *spec
	l, err = e.Leases.Update(ctx, l, metav1.UpdateOptions{}) // a conflict: another wrote first
	if err != nil {
		return false
	}
	e.seen(l, now)
	return true
}

func (e *Election) seen(l *coordinationv1.Lease, now time.Time) { e.seenRec, e.seenAt = record(l), now }

// record is what changes when a holder takes or renews the lease (client-go compares the same
// fields, as its LeaderElectionRecord).
func record(l *coordinationv1.Lease) string {
	s := l.Spec
	return fmt.Sprint(deref(s.HolderIdentity), "|", deref(s.LeaseDurationSeconds), "|", s.AcquireTime, "|", s.RenewTime, "|", deref(s.LeaseTransitions))
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// release empties the holder, as client-go's ReleaseOnCancel does, so that a standby takes over
// at its next attempt instead of after the lease's duration.
func (e *Election) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := e.Leases.Get(ctx, e.Name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != e.Identity {
		return
	}
	one, now := int32(1), metav1.NewMicroTime(time.Now())
	empty := ""
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &empty, &one, &now
	if _, err := e.Leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		e.logf("lease " + e.Name + " not released: " + err.Error())
	}
}

func (e *Election) logf(s string) {
	if e.Logf != nil {
		e.Logf(s)
	}
}

// jitter spreads the standbys' attempts, as client-go's JitterFactor 1.2.
func jitter(d time.Duration) time.Duration { return d + time.Duration(rand.Float64()*1.2*float64(d)) }
