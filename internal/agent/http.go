package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pullpath/pullpath/internal/report"
)

// MaxBody bounds what the watcher reads from one agent: the agent's bytes are a node's, and a
// node may be hostile.
const MaxBody = 8 << 20

// Handler serves the agent's API:
//
//	GET  /v1/results?after=SEQ  the newest result of each image newer than SEQ
//	POST /v1/probe?image=IMAGE&since=T  a result newer than T: probe IMAGE now (at most once a
//	                            MinGap), and answer with it
//	GET  /healthz               200 while the agent runs
//	GET  /metrics               the agent's own counters, for Prometheus
//
// Nothing it serves is secret: reports are redacted where they are made. What a neighbour can
// do with it is read this node's verdicts and cost the registry a probe of each image per MinGap.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/results", func(w http.ResponseWriter, r *http.Request) {
		if !a.mine(w, r) {
			return
		}
		after, err := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
		if err != nil && r.URL.Query().Get("after") != "" {
			http.Error(w, "after: want the sequence number of the last result read", http.StatusBadRequest)
			return
		}
		writeJSON(w, a.Since(after))
	})
	mux.HandleFunc("POST /v1/probe", func(w http.ResponseWriter, r *http.Request) {
		if !a.mine(w, r) {
			return
		}
		var since time.Time
		if v := r.URL.Query().Get("since"); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				http.Error(w, "since: want an RFC 3339 time", http.StatusBadRequest)
				return
			}
			since = t
		}
		res, err := a.Ask(r.Context(), r.URL.Query().Get("image"), since)
		switch {
		case errors.Is(err, errUnknownImage):
			http.Error(w, "image: "+err.Error(), http.StatusNotFound)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		a.mu.Lock()
		out := a.header()
		a.mu.Unlock()
		if res != nil {
			out.Results = append(out.Results, *res)
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /metrics", a.metrics)
	return mux
}

// mine refuses a request for another node (?node=NAME): an address reused by another node must
// not pass this node's verdicts off as that one's.
func (a *Agent) mine(w http.ResponseWriter, r *http.Request) bool {
	if n := r.URL.Query().Get("node"); n != "" && n != a.o.Node {
		http.Error(w, "this agent probes node "+a.o.Node+", not "+report.Clip(n, 253), http.StatusConflict)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (a *Agent) metrics(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	type row struct {
		image, class string
		n            int
	}
	var rows []row
	for k, n := range a.counts {
		rows = append(rows, row{k[0], k[1], n})
	}
	latest := make([]Result, 0, len(a.latest))
	for _, r := range a.latest {
		latest = append(latest, *r)
	}
	a.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool { return rows[i].image+rows[i].class < rows[j].image+rows[j].class })
	sort.Slice(latest, func(i, j int) bool { return latest[i].Image < latest[j].Image })
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# HELP pullpath_agent_probes_total Probes this agent ran, by image and class.")
	fmt.Fprintln(w, "# TYPE pullpath_agent_probes_total counter")
	for _, r := range rows {
		fmt.Fprintf(w, "pullpath_agent_probes_total{image=%q,class=%q} %d\n", r.image, r.class, r.n)
	}
	a.mu.Lock()
	regs := make([]string, 0, len(a.sent))
	for r := range a.sent {
		regs = append(regs, r)
	}
	sort.Strings(regs)
	sent, used := map[string]int{}, map[string]int{}
	for _, r := range regs {
		sent[r], used[r] = a.sent[r], a.used(r, a.o.now())
	}
	a.mu.Unlock()
	fmt.Fprintln(w, "# HELP pullpath_agent_registry_requests_total Requests this agent's probes sent, by registry.")
	fmt.Fprintln(w, "# TYPE pullpath_agent_registry_requests_total counter")
	for _, r := range regs {
		fmt.Fprintf(w, "pullpath_agent_registry_requests_total{registry=%q} %d\n", r, sent[r])
	}
	if a.o.Budget > 0 {
		fmt.Fprintln(w, "# HELP pullpath_agent_registry_budget_used_ratio The last hour's requests to the registry over the agent's budget (1: spent, rounds wait).")
		fmt.Fprintln(w, "# TYPE pullpath_agent_registry_budget_used_ratio gauge")
		for _, r := range regs {
			fmt.Fprintf(w, "pullpath_agent_registry_budget_used_ratio{registry=%q} %g\n", r, float64(used[r])/float64(a.o.Budget))
		}
	}
	if rss, cpu, ok := self(); ok {
		// the agent's own cost, as Prometheus' process collector names it (no client library in
		// the probe-only build)
		fmt.Fprintln(w, "# HELP process_resident_memory_bytes Resident memory size in bytes.")
		fmt.Fprintln(w, "# TYPE process_resident_memory_bytes gauge")
		fmt.Fprintf(w, "process_resident_memory_bytes %d\n", rss)
		fmt.Fprintln(w, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.")
		fmt.Fprintln(w, "# TYPE process_cpu_seconds_total counter")
		fmt.Fprintf(w, "process_cpu_seconds_total %g\n", cpu)
	}
	fmt.Fprintln(w, "# HELP pullpath_agent_last_probe_seconds How long the newest probe of each image took.")
	fmt.Fprintln(w, "# TYPE pullpath_agent_last_probe_seconds gauge")
	for _, r := range latest {
		fmt.Fprintf(w, "pullpath_agent_last_probe_seconds{image=%q} %g\n", r.Image, time.Duration(r.Took).Seconds())
	}
}

// self reads this process's resident memory and CPU time from /proc.
func self() (rss int64, cpu float64, ok bool) {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, 0, false
	}
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(statm))
	// after the command name, which may hold spaces: state is field 3, utime 14, stime 15
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	g := strings.Fields(rest)
	if len(f) < 2 || len(g) < 13 {
		return 0, 0, false
	}
	pages, err1 := strconv.ParseInt(f[1], 10, 64)
	ut, err2 := strconv.ParseFloat(g[11], 64)
	st, err3 := strconv.ParseFloat(g[12], 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	// USER_HZ is 100 on every Linux the kubelet runs on
	return pages * int64(os.Getpagesize()), (ut + st) / 100, true
}

// Serve runs the agent's API on addr until ctx ends.
func (a *Agent) Serve(ctx context.Context, l net.Listener, probeTimeout time.Duration) error {
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: probeTimeout + 30*time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 8 << 10}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Client reads agents, for the watcher.
type Client struct {
	HTTP *http.Client
}

// NewClient returns a client whose every request is bounded by timeout.
func NewClient(timeout time.Duration) *Client {
	t := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, IdleConnTimeout: 30 * time.Second,
		ResponseHeaderTimeout: timeout, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
	return &Client{HTTP: &http.Client{Transport: t, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("an agent does not redirect") }}}
}

// Addr is the base URL of the agent at ip:port.
func Addr(ip string, port int) string {
	return "http://" + net.JoinHostPort(ip, strconv.Itoa(port))
}

// Results reads the agent of node at base: the newest results newer than after.
func (c *Client) Results(ctx context.Context, base, node string, after uint64) (*Results, error) {
	return c.do(ctx, http.MethodGet, base+"/v1/results?after="+strconv.FormatUint(after, 10)+"&node="+url.QueryEscape(node))
}

// Ask has the agent of node at base probe image (after a pull failure at since) and answers with
// a result newer than since.
func (c *Client) Ask(ctx context.Context, base, node, image string, since time.Time) (*Results, error) {
	q := "image=" + url.QueryEscape(image) + "&node=" + url.QueryEscape(node)
	if !since.IsZero() {
		q += "&since=" + url.QueryEscape(since.UTC().Format(time.RFC3339))
	}
	return c.do(ctx, http.MethodPost, base+"/v1/probe?"+q)
}

func (c *Client) do(ctx context.Context, method, u string) (*Results, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading the agent's answer: %w", err)
	}
	if len(body) > MaxBody {
		return nil, fmt.Errorf("the agent answered more than %d MiB: refused", MaxBody>>20)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the agent answered %s: %s", resp.Status, report.Clip(strings.TrimSpace(string(body)), 200))
	}
	return Decode(body)
}

// Decode reads an agent's answer, refusing what is not one.
func Decode(body []byte) (*Results, error) {
	var r Results
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("the agent's answer is not JSON: %v", err)
	}
	if r.Kind != Kind {
		return nil, fmt.Errorf("the answer is not an agent's (kind %q)", report.Clip(r.Kind, 40))
	}
	for i, res := range r.Results {
		if res.Report != nil && res.Report.Kind != "ProbeReport" {
			return nil, fmt.Errorf("result %d is not a probe report (kind %q)", i, report.Clip(res.Report.Kind, 40))
		}
		if res.Report == nil && res.Error == "" {
			return nil, fmt.Errorf("result %d has neither a report nor an error", i)
		}
	}
	return &r, nil
}
