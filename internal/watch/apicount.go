package watch

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// APICounter counts what the watcher asks of the API server: requests by method (a GET with
// watch=true is WATCH) and bytes each way, so the load it puts on a cluster is a metric, not a
// guess. The attach stream that carries the probe binary is counted apart, by its size.
type APICounter struct {
	mu       sync.Mutex
	requests map[string]*atomic.Int64
	sent     atomic.Int64
	received atomic.Int64
}

// NewAPICounter returns an empty counter; Wrap it into the client's transport.
func NewAPICounter() *APICounter { return &APICounter{requests: map[string]*atomic.Int64{}} }

// Wrap counts every round trip of rt.
func (a *APICounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		m := r.Method
		if m == http.MethodGet && r.URL.Query().Get("watch") == "true" {
			m = "WATCH"
		}
		a.counter(m + " " + resourceOf(r.URL.Path)).Add(1)
		if r.ContentLength > 0 {
			a.sent.Add(r.ContentLength)
		}
		resp, err := rt.RoundTrip(r)
		if resp != nil && resp.Body != nil {
			resp.Body = &countingBody{ReadCloser: resp.Body, n: &a.received}
		}
		return resp, err
	})
}

func (a *APICounter) counter(method string) *atomic.Int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.requests[method]
	if !ok {
		c = &atomic.Int64{}
		a.requests[method] = c
	}
	return c
}

var (
	apiRequestsDesc = prometheus.NewDesc("pullpath_watch_api_requests_total",
		"Requests the watcher sent to the API server, by HTTP method (WATCH: a watch) and resource.", []string{"method", "resource"}, nil)
	apiBytesDesc = prometheus.NewDesc("pullpath_watch_api_bytes_total",
		"Bytes the watcher exchanged with the API server (bodies; the attach stream is pullpath_watch_delivered_bytes_total).", []string{"direction"}, nil)
)

// Describe and Collect make the counter a Prometheus collector.
func (a *APICounter) Describe(ch chan<- *prometheus.Desc) { ch <- apiRequestsDesc; ch <- apiBytesDesc }

func (a *APICounter) Collect(ch chan<- prometheus.Metric) {
	a.mu.Lock()
	for k, c := range a.requests {
		m, res, _ := strings.Cut(k, " ")
		ch <- prometheus.MustNewConstMetric(apiRequestsDesc, prometheus.CounterValue, float64(c.Load()), m, res)
	}
	a.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(apiBytesDesc, prometheus.CounterValue, float64(a.sent.Load()), "sent")
	ch <- prometheus.MustNewConstMetric(apiBytesDesc, prometheus.CounterValue, float64(a.received.Load()), "received")
}

// resourceOf is the resource a request path names, with its subresource ("pods/log"): a label
// with a bounded set of values, never a name.
func resourceOf(path string) string {
	p := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(p) >= 2 && p[0] == "api":
		p = p[2:]
	case len(p) >= 3 && p[0] == "apis":
		p = p[3:]
	default:
		return "other"
	}
	if len(p) >= 3 && p[0] == "namespaces" {
		p = p[2:] // namespaces/NS/RESOURCE…; "namespaces/NS" alone is the namespace itself
	}
	switch len(p) {
	case 0:
		return "other"
	case 1, 2:
		return p[0]
	default:
		return p[0] + "/" + p[2]
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
