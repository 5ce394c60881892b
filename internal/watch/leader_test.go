package watch

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/pullpath/pullpath/internal/kube/kubefake"
)

func election(fc *fake.Clientset, id string) *Election {
	return &Election{Leases: kubefake.Leases(fc.CoordinationV1()).Leases("run"), Name: "pullpath-watch", Identity: id,
		Duration: 2 * time.Second, Deadline: 400 * time.Millisecond, Retry: 40 * time.Millisecond}
}

// One leader at a time; the standby leads at once after the leader releases the lease, and the
// lease names who holds it.
func TestElectionOneLeaderThenHandOver(t *testing.T) {
	fc := fake.NewClientset()
	var leading atomic.Int32
	var both atomic.Bool
	actx, stopA := context.WithCancel(context.Background())
	aLed := make(chan struct{})
	aDone := make(chan bool)
	go func() {
		aDone <- election(fc, "a").Run(actx, func(ctx context.Context) {
			if leading.Add(1) > 1 {
				both.Store(true)
			}
			close(aLed)
			<-ctx.Done()
			leading.Add(-1)
		})
	}()
	<-aLed
	bctx, stopB := context.WithCancel(context.Background())
	defer stopB()
	bLed := make(chan time.Time, 1)
	bDone := make(chan bool)
	go func() {
		bDone <- election(fc, "b").Run(bctx, func(ctx context.Context) {
			if leading.Add(1) > 1 {
				both.Store(true)
			}
			bLed <- time.Now()
			<-ctx.Done()
			leading.Add(-1)
		})
	}()
	select {
	case <-bLed:
		t.Fatal("b led while a held the lease")
	case <-time.After(300 * time.Millisecond):
	}
	stopped := time.Now()
	stopA()
	if !<-aDone {
		t.Error("a's Run says it never led")
	}
	select {
	case at := <-bLed:
		// the lease's duration is 2 s: a released lease is taken at the next attempt
		if d := at.Sub(stopped); d > time.Second {
			t.Errorf("b took %s to lead after a released", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("b never led")
	}
	if both.Load() {
		t.Error("two leaders at once")
	}
	l, err := fc.CoordinationV1().Leases("run").Get(context.Background(), "pullpath-watch", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "b" || *l.Spec.LeaseTransitions != 1 {
		t.Fatalf("lease: %v %+v", err, l)
	}
	stopB()
	<-bDone
	l, _ = fc.CoordinationV1().Leases("run").Get(context.Background(), "pullpath-watch", metav1.GetOptions{})
	if *l.Spec.HolderIdentity != "" {
		t.Errorf("b did not release the lease: holder %q", *l.Spec.HolderIdentity)
	}
}

// A leader that can no longer renew (another took the lease) stops leading within the deadline;
// a process whose context ends before it leads never runs lead.
func TestElectionLostLease(t *testing.T) {
	fc := fake.NewClientset()
	led := make(chan struct{})
	lost := make(chan time.Time, 1)
	go election(fc, "a").Run(context.Background(), func(ctx context.Context) {
		close(led)
		<-ctx.Done()
		lost <- time.Now()
	})
	<-led
	takeLease(t, fc, "x")
	taken := time.Now()
	select {
	case at := <-lost:
		if d := at.Sub(taken); d > 2*time.Second {
			t.Errorf("a kept leading %s after losing the lease", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a kept leading after another took the lease")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if election(fc, "c").Run(ctx, func(context.Context) { t.Error("c led while x held the lease") }) {
		t.Error("c's Run says it led")
	}
}

// A leader that lost the lease stands by and leads again once the lease is free; it never exits
// while its context lives (issue 34 item 3).
func TestElectionStandsByAfterALostLease(t *testing.T) {
	fc := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	var leads atomic.Int32
	led := make(chan int32, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		election(fc, "a").RunForever(ctx, func(lctx context.Context) {
			led <- leads.Add(1)
			<-lctx.Done()
		})
	}()
	if n := <-led; n != 1 {
		t.Fatalf("lead %d", n)
	}
	// another takes the lease, and lets it lapse (it stops renewing)
	takeLease(t, fc, "x")
	select {
	case n := <-led:
		if n != 2 {
			t.Errorf("lead %d, want the second", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a did not lead again after x's lease lapsed")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("RunForever did not return after its context ended")
	}
}

// takeLease makes holder the lease's holder, renewed now, as another replica would.
func takeLease(t *testing.T, fc *fake.Clientset, holder string) {
	t.Helper()
	leases := fc.CoordinationV1().Leases("run")
	l, err := leases.Get(context.Background(), "pullpath-watch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	l.Spec.HolderIdentity, l.Spec.RenewTime = &holder, &now
	if _, err := leases.Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
