package watch

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pullpath/pullpath/internal/report"
)

// The watcher's own load on the API server is counted by method, a watch apart, with the bytes.
func TestResourceOf(t *testing.T) {
	for in, want := range map[string]string{
		"/api/v1/nodes": "nodes", "/api/v1/nodes/n1/status": "nodes/status", "/api/v1/namespaces/x/pods/p/attach": "pods/attach",
		"/apis/coordination.k8s.io/v1/namespaces/x/leases/pullpath-watch": "leases", "/api/v1/namespaces/x": "namespaces",
		"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": "selfsubjectaccessreviews", "/version": "other", "/api/v1": "other",
	} {
		if got := resourceOf(in); got != want {
			t.Errorf("resourceOf(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestAPICounterCountsRequestsAndBytes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, strings.Repeat("x", 1000))
	}))
	defer srv.Close()
	a := NewAPICounter()
	c := &http.Client{Transport: a.Wrap(http.DefaultTransport)}
	for _, u := range []string{"/api/v1/nodes", "/api/v1/namespaces/pullpath/pods?watch=true", "/api/v1/namespaces/pullpath/pods?watch=true", "/api/v1/namespaces/pullpath/pods/probe-1/log"} {
		resp, err := c.Get(srv.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp, err := c.Post(srv.URL+"/api/v1/namespaces/x/pods", "application/json", strings.NewReader(strings.Repeat("y", 250)))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	want := `
# HELP pullpath_watch_api_bytes_total Bytes the watcher exchanged with the API server (bodies; the attach stream is pullpath_watch_delivered_bytes_total).
# TYPE pullpath_watch_api_bytes_total counter
pullpath_watch_api_bytes_total{direction="received"} 5000
pullpath_watch_api_bytes_total{direction="sent"} 250
# HELP pullpath_watch_api_requests_total Requests the watcher sent to the API server, by HTTP method (WATCH: a watch) and resource.
# TYPE pullpath_watch_api_requests_total counter
pullpath_watch_api_requests_total{method="GET",resource="nodes"} 1
pullpath_watch_api_requests_total{method="GET",resource="pods/log"} 1
pullpath_watch_api_requests_total{method="POST",resource="pods"} 1
pullpath_watch_api_requests_total{method="WATCH",resource="pods"} 2
`
	if err := testutil.CollectAndCompare(a, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// Every registry request of a probe is counted by the role of its host, and the delivered binary
// by its delivery.
func TestRegistryRequestsAndDeliveryCounted(t *testing.T) {
	m := newMetrics(time.Minute, nil, "test")
	res := &report.PoolResult{Delivery: "attach", DeliveryStats: &report.DeliveryStats{Bytes: 4096},
		Probe: &report.Probe{Hops: []report.Hop{{Role: report.RoleRegistry}, {Role: report.RoleToken}, {Role: report.RoleRegistry}, {Role: report.RoleBlob}}}}
	v := report.ProbeSummary{Class: report.ClassOK}
	m.observe("n1", "pool-a", ImageResult{Image: "registry.example/app:1", Verdict: &v}, res, time.Now())
	for role, want := range map[string]float64{"registry": 2, "token": 1, "blob": 1} {
		if got := testutil.ToFloat64(m.registryReq.WithLabelValues("pool-a", "registry.example", role)); got != want {
			t.Errorf("registry requests of role %s: %v, want %v", role, got, want)
		}
	}
	if got := testutil.ToFloat64(m.delivered.WithLabelValues("attach")); got != 4096 {
		t.Errorf("delivered bytes %v, want 4096", got)
	}
}
