package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/pullpath/pullpath/internal/report"
)

// apiSim is a tiny API server for the lists pod --all and pod NAME make: a virtual event list of
// any length served in pages (nothing of it is held in memory), continue tokens that expire on the
// pages named, namespaces refused, and every request counted.
type apiSim struct {
	t        *testing.T
	pods     []corev1.Pod
	events   int // the virtual event list's length
	eventOf  func(i int) corev1.Event
	expireAt map[int]bool    // a continue token of this page number (1 = the second page) is refused with 410
	refuse   map[string]bool // namespaces whose pods and events are refused ("" for the cluster scope)
	mu       sync.Mutex
	requests map[string]int // "list events", "list pods in shop", ...
	pages    int
}

func (s *apiSim) client(t *testing.T) *Client {
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cs, err := NewClient(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func (s *apiSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/"), "/")
	ns, res := "", parts[0]
	if parts[0] == "namespaces" && len(parts) >= 3 {
		ns, res = parts[1], parts[2]
	}
	s.mu.Lock()
	s.requests[fmt.Sprintf("list %s %s", res, where(ns))]++
	s.mu.Unlock()
	if s.refuse[ns] && (res == "pods" || res == "events") {
		writeStatus(w, metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
			Message: fmt.Sprintf(`%s is forbidden: User "dev" cannot list resource %q in API group "" in the namespace %q`, res, res, ns)})
		return
	}
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	from := 0
	if c := q.Get("continue"); c != "" {
		from, _ = strconv.Atoi(strings.TrimPrefix(c, "inconsistent-"))
		s.mu.Lock()
		s.pages++
		page := s.pages
		s.mu.Unlock()
		if s.expireAt[page] {
			writeStatus(w, metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
				ListMeta: metav1.ListMeta{Continue: "inconsistent-" + strconv.Itoa(from)},
				Message:  "The provided continue parameter is too old to display a consistent list result."})
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	switch res {
	case "events":
		l := corev1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}}
		to := min(s.events, from+limit)
		for i := from; i < to; i++ {
			l.Items = append(l.Items, s.eventOf(i))
		}
		if to < s.events {
			l.Continue = strconv.Itoa(to)
			rest := int64(s.events - to)
			l.RemainingItemCount = &rest
		}
		_ = json.NewEncoder(w).Encode(l)
	case "pods":
		l := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		phase, _ := strings.CutPrefix(q.Get("fieldSelector"), "status.phase=")
		for _, p := range s.pods {
			if (ns == "" || p.Namespace == ns) && (phase == "" || string(p.Status.Phase) == phase) {
				l.Items = append(l.Items, p)
			}
		}
		_ = json.NewEncoder(w).Encode(l)
	case "namespaces":
		l := corev1.NamespaceList{TypeMeta: metav1.TypeMeta{Kind: "NamespaceList", APIVersion: "v1"}}
		for _, n := range []string{"shop", "locked"} {
			l.Items = append(l.Items, corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		_ = json.NewEncoder(w).Encode(l)
	case "nodes":
		_ = json.NewEncoder(w).Encode(metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"},
			Items: []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Name: "b2"}}}})
	default:
		http.NotFound(w, r)
	}
}

func writeStatus(w http.ResponseWriter, st metav1.Status) {
	st.Kind, st.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

func (s *apiSim) total() int {
	n := 0
	for _, v := range s.requests {
		n += v
	}
	return n
}

// hostileEvents is a virtual event list where every 7th event is a pull failure of the failing
// pod (with a request ID: no two messages alike) and the rest are other pods' warnings.
func hostileEvents(p *corev1.Pod) func(i int) corev1.Event {
	return func(i int) corev1.Event {
		at := t0.Add(time.Duration(i) * time.Second)
		if i%7 == 0 {
			e := *event(p, "Failed", "Warning", fmt.Sprintf(`Failed to pull image "%s": rpc error: code = NotFound desc = failed to pull and unpack image "%s": failed to resolve reference "%s": %s: not found (request %d)`, img, img, img, img, i), at, 1)
			e.Name = fmt.Sprintf("%s.%d", p.Name, i)
			return e
		}
		other := pod("shop", fmt.Sprintf("other-%d", i%500), "b2", false)
		return *event(other, "Failed", "Warning", "Error: CreateContainerConfigError", at, 1)
	}
}

// A million-entry event list whose continue token expires: the list goes on once with the
// inconsistent token the server offers, stops at the second expiry, and the answer says it is
// partial; it never starts over.
func TestDiagnoseAllEventListExpires(t *testing.T) {
	failing := pod("shop", "web-new", "b2", false)
	s := &apiSim{t: t, pods: []corev1.Pod{*failing}, events: 1_000_000, eventOf: hostileEvents(failing),
		expireAt: map[int]bool{2: true, 4: true}, requests: map[string]int{}}
	start := time.Now()
	l, err := DiagnoseAll(context.Background(), s.client(t), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s, %d requests: %v; notes %q", time.Since(start).Round(time.Millisecond), s.total(), s.requests, l.Notes)
	if !l.Partial || !strings.Contains(strings.Join(l.Notes, "\n"), "expired after") || !strings.Contains(strings.Join(l.Notes, "\n"), "twice") {
		t.Errorf("partial %v, notes %q: want the expiry said", l.Partial, l.Notes)
	}
	if s.requests["list events in all namespaces"] > 6 {
		t.Errorf("%d event list requests: the expired list went on past its second expiry", s.requests["list events in all namespaces"])
	}
	if len(l.Groups) != 1 || l.Groups[0].Class != report.ClassNotFound {
		t.Errorf("groups %+v", l.Groups)
	}
}

// A list that never expires is still bounded: past maxListed it stops and says so.
func TestDiagnoseAllEventListBounded(t *testing.T) {
	old := maxListed
	maxListed = 4 * listPage
	t.Cleanup(func() { maxListed = old })
	failing := pod("shop", "web-new", "b2", false)
	s := &apiSim{t: t, pods: []corev1.Pod{*failing}, events: 1_000_000, eventOf: hostileEvents(failing), requests: map[string]int{}}
	l, err := DiagnoseAll(context.Background(), s.client(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.requests["list events in all namespaces"]; got != 4 || !l.Partial || !strings.Contains(strings.Join(l.Notes, "\n"), "reads at most") {
		t.Errorf("%d event pages, partial %v, notes %q", got, l.Partial, l.Notes)
	}
}

// A namespace whose pods the identity may not list: with -A, the namespaces are read one by one,
// the refused one is named, and the answer is partial, at once.
func TestDiagnoseAllNamespaceRefused(t *testing.T) {
	failing := pod("shop", "web-new", "b2", false)
	locked := pod("locked", "web-x", "b2", false)
	s := &apiSim{t: t, pods: []corev1.Pod{*failing, *locked}, events: 0, eventOf: nil,
		refuse: map[string]bool{"": true, "locked": true}, requests: map[string]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := DiagnoseAll(ctx, s.client(t), "")
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(l.Notes, "\n")
	if !l.Partial || !strings.Contains(notes, "locked") || len(l.Groups) != 1 || l.Groups[0].Pods[0] != "shop/web-new" {
		t.Errorf("partial %v, groups %+v, notes %q", l.Partial, l.Groups, notes)
	}
	// -n of the refused namespace: a clear refusal naming the right
	if _, err := DiagnoseAll(ctx, s.client(t), "locked"); err == nil || !strings.Contains(err.Error(), `"list" on "pods" in namespace locked`) {
		t.Errorf("-n locked: %v", err)
	}
}

// A pod with 10,000 events, each message unique: pod NAME folds them into a bounded set, counts
// them all, and says what it folded away.
func TestDiagnosePodTenThousandEvents(t *testing.T) {
	failing := pod("shop", "web-new", "b2", false)
	failing.UID = types.UID("uid-web-new")
	s := &apiSim{t: t, pods: []corev1.Pod{*failing}, events: 10_000, requests: map[string]int{},
		eventOf: func(i int) corev1.Event {
			e := *event(failing, "Failed", "Warning", fmt.Sprintf(`Failed to pull image "%s": rpc error: code = NotFound desc = failed to pull and unpack image "%s": failed to resolve reference "%s": %s: not found (request %d)`, img, img, img, img, i), t0.Add(time.Duration(i)*time.Second), 1)
			e.Name = fmt.Sprintf("web-new.%d", i)
			return e
		}}
	cs := s.client(t)
	start := time.Now()
	set, l, err := objectEvents(context.Background(), cs, "shop", failing.UID)
	if err != nil || l.cut != "" {
		t.Fatal(err, l.cut)
	}
	if len(set.evs) != maxEventsPerObject || set.dropped != 10_000-maxEventsPerObject {
		t.Errorf("kept %d, dropped %d", len(set.evs), set.dropped)
	}
	if s.total() != 2 {
		t.Errorf("%d requests for 10,000 events: %v", s.total(), s.requests)
	}
	for _, e := range set.evs {
		if eventTime(&e).Before(t0.Add(9_000 * time.Second)) {
			t.Errorf("kept an old event %s: the newest are kept", e.Name)
		}
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Logf("slow: %s", d) // a benchmark's figure, not a test of speed
	}
}

// A Running pod whose container restarts into a failed pull is not among the Pending pods: its
// Failed event names it, and one list of the Running pods finds it.
func TestDiagnoseAllRunningPodFoundByItsEvent(t *testing.T) {
	pending := pod("shop", "web-new", "b2", false)
	restarted := pod("shop", "web-old", "b1", false)
	restarted.Status.Phase = corev1.PodRunning
	healthy := pod("shop", "web-a", "a1", true)
	evs := []corev1.Event{
		*event(pending, "Failed", "Warning", `Failed to pull image "`+img+`": rpc error: code = NotFound desc = failed to pull and unpack image "`+img+`": failed to resolve reference "`+img+`": `+img+`: not found`, t0, 1),
		*event(restarted, "Failed", "Warning", `Failed to pull image "`+img+`": rpc error: code = NotFound desc = failed to pull and unpack image "`+img+`": failed to resolve reference "`+img+`": `+img+`: not found`, t0, 1),
	}
	s := &apiSim{t: t, pods: []corev1.Pod{*pending, *restarted, *healthy}, events: len(evs), eventOf: func(i int) corev1.Event { return evs[i] }, requests: map[string]int{}}
	l, err := DiagnoseAll(context.Background(), s.client(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Groups) != 1 || len(l.Groups[0].Pods) != 2 || l.Groups[0].Class != report.ClassNotFound {
		t.Errorf("groups %+v", l.Groups)
	}
	if s.requests["list pods in all namespaces"] != 2 {
		t.Errorf("requests %v: want the Pending list, then the Running list once", s.requests)
	}
}
