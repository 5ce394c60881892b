package watch

import (
	"runtime"
	"sync"
	"time"

	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/report"
)

// metrics are watch's Prometheus series. Labels are bounded: node, pool, image, registry, role,
// step and a class; never error text (kuberhealthy's raw error label grows a series per message).
type metrics struct {
	reg         *prometheus.Registry
	pathOK      *prometheus.GaugeVec
	stepSeconds *prometheus.HistogramVec
	probes      *prometheus.CounterVec
	lastSuccess *prometheus.GaugeVec
	lastResult  *prometheus.GaugeVec
	interval    prometheus.Gauge
	condition   *prometheus.GaugeVec
	registryReq *prometheus.CounterVec
	delivered   *prometheus.CounterVec
	probeRan    *prometheus.GaugeVec
	heartbeat   prometheus.Gauge
	skipped     *prometheus.GaugeVec
	triggered   prometheus.Counter
	// agentFallbacks counts nodes that could not pull the agent's image (resident)
	agentFallbacks prometheus.Counter

	// credExpiry is the earliest expiry over a pool's nodes, from expiries: pool → node and image →
	// what expires when
	credExpiry *prometheus.GaugeVec
	expiries   map[string]map[nodeImage]map[expiryKey]time.Time

	mu    sync.Mutex
	pools map[string]bool // the pools with per-pool series
}

type nodeImage struct{ node, image string }

type expiryKey struct{ registry, source string }

// buildInfo is the watcher's version: a series that is there while a watcher runs, leader or
// standby, for an alert on its absence (a dead, crash-looping or unscheduled watcher).
func buildInfo(version string) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pullpath_watch_build_info",
		Help: "1 while a watcher runs (the leader, and each standby): its version and Go."}, []string{"version", "goversion"})
	g.WithLabelValues(version, runtime.Version()).Set(1)
	return g
}

// StandbyMetrics is what a watcher that does not lead serves: its build info only.
func StandbyMetrics(version string) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(buildInfo(version))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

func newMetrics(interval time.Duration, api *APICounter, version string) *metrics {
	m := &metrics{
		pools: map[string]bool{}, expiries: map[string]map[nodeImage]map[expiryKey]time.Time{},
		credExpiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pullpath_watch_credential_expiry_timestamp_seconds",
			Help: "When the pool's pull credentials die, earliest over its nodes (Unix time), where the probe saw evidence (a JWT's exp, the token answer's expires_in, a provider's cacheDuration); source: credential, registry-token (renewed at every pull), provider-cache."},
			[]string{"pool", "registry", "source"}),
		reg: prometheus.NewRegistry(),
		pathOK: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pullpath_watch_path_ok",
			Help: "1 when the node's pull path for the image holds, 0 when it is broken; absent until probed or when the probe could not run."},
			[]string{"node", "pool", "image", "registry"}),
		stepSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pullpath_watch_step_duration_seconds",
			Help: "How long each step of the pull path took on the probed nodes.", Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}},
			[]string{"pool", "registry", "role", "step"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pullpath_watch_probes_total",
			Help: "Probes run, by pool and result: a class, or not_run when the probe could not run."}, []string{"pool", "result"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pullpath_watch_last_success_timestamp_seconds",
			Help: "When the node's pull path for the image last held (Unix time)."}, []string{"node", "pool", "image"}),
		lastResult: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pullpath_watch_last_result_timestamp_seconds",
			Help: "When the node last got a probe result of any kind (Unix time)."}, []string{"node", "pool"}),
		interval: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pullpath_watch_interval_seconds", Help: "The interval between two probes of a node."}),
		condition: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pullpath_watch_node_broken",
			Help: "1 when the node's ImagePullPathBroken condition is True, 0 when False; absent when Unknown."}, []string{"node", "pool", "reason"}),
		registryReq: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pullpath_watch_registry_requests_total",
			Help: "HTTP requests the probes sent to registries, by pool, registry and the role of the host (registry, token, blob, mirror)."},
			[]string{"pool", "registry", "role"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pullpath_watch_delivered_bytes_total",
			Help: "Bytes of the probe binary delivered to nodes, by delivery (attach: streamed; configmap: read by the kubelet)."}, []string{"delivery"}),
		probeRan: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pullpath_watch_probe_ran",
			Help: "1 when the node's last probe of the image ran (reason: its class), 0 when it could not run (reason: why, as a class); present from the first probe on, so a watcher whose probes cannot run is seen."},
			[]string{"node", "pool", "image", "reason"}),
		skipped: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pullpath_watch_node_skipped",
			Help: "1 for a node watch probes no pod on, by reason: not_linux, virtual, not_ready, cordoned (--include-cordoned probes those)."},
			[]string{"node", "pool", "reason"}),
		triggered: prometheus.NewCounter(prometheus.CounterOpts{Name: "pullpath_watch_pull_failure_triggers_total",
			Help: "Probes brought forward because a node's kubelet reported a pull failure of a watched image."}),
		agentFallbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "pullpath_watch_agent_image_unpullable_total",
			Help: "Nodes that could not pull the resident agent's image (a finding of its own); each then runs the agent from its sandbox image."}),
		heartbeat: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pullpath_watch_heartbeat_timestamp_seconds",
			Help: "When the leading watcher's loop last turned (Unix time): it turns every second, probes or not."}),
	}
	if api != nil {
		m.reg.MustRegister(api)
	}
	m.reg.MustRegister(m.credExpiry, m.registryReq, m.delivered, m.probeRan, m.heartbeat, m.skipped, m.triggered, m.agentFallbacks, buildInfo(version))
	m.reg.MustRegister(m.pathOK, m.stepSeconds, m.probes, m.lastSuccess, m.lastResult, m.interval, m.condition,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	m.interval.Set(interval.Seconds())
	return m
}

// observe records one node's probe of one image.
func (m *metrics) observe(node, pool string, r ImageResult, res *report.PoolResult, now time.Time) {
	reg := cluster.ImageRegistry(r.Image)
	var probe *report.Probe
	if res != nil {
		probe = res.Probe
		if d := res.DeliveryStats; d != nil && d.Bytes > 0 {
			m.delivered.WithLabelValues(deliveryOf(res.Delivery)).Add(float64(d.Bytes))
		}
	}
	m.mu.Lock()
	m.pools[pool] = true
	m.mu.Unlock()
	if probe != nil {
		for _, h := range probe.Hops {
			m.registryReq.WithLabelValues(pool, reg, string(roleOf(h.Role))).Inc()
		}
	}
	m.lastResult.WithLabelValues(node, pool).Set(float64(now.Unix()))
	m.probeRan.DeletePartialMatch(prometheus.Labels{"node": node, "image": r.Image})
	if r.Verdict == nil {
		m.probes.WithLabelValues(pool, "not_run").Inc()
		m.pathOK.DeleteLabelValues(node, pool, r.Image, reg)
		why := report.ClassOther
		if res != nil {
			if f := res.PodCause(); f != nil {
				why = f.Class
			}
		}
		m.probeRan.WithLabelValues(node, pool, r.Image, string(classOf(why))).Set(0)
		return
	}
	m.probeRan.WithLabelValues(node, pool, r.Image, string(classOf(r.Verdict.Class))).Set(1)
	if probe != nil {
		m.setExpiries(node, pool, r.Image, reg, probe.CredentialExpiry)
	}
	m.probes.WithLabelValues(pool, string(classOf(r.Verdict.Class))).Inc()
	ok := 0.0
	if r.Verdict.Class == report.ClassOK {
		ok = 1
		m.lastSuccess.WithLabelValues(node, pool, r.Image).Set(float64(now.Unix()))
	}
	m.pathOK.WithLabelValues(node, pool, r.Image, reg).Set(ok)
	if probe != nil {
		for _, s := range probe.Steps {
			if s.Verdict == report.Skip {
				continue
			}
			m.stepSeconds.WithLabelValues(pool, reg, string(roleOf(s.Role)), stepOf(s.Step)).Observe(time.Duration(s.Duration).Seconds())
		}
	}
}

// setSkipped says why a node gets no probe ("": it does again).
func (m *metrics) setSkipped(node, pool, why string) {
	m.skipped.DeletePartialMatch(prometheus.Labels{"node": node})
	if why != "" {
		m.skipped.WithLabelValues(node, pool, why).Set(1)
	}
}

// setCondition mirrors a node's condition.
func (m *metrics) setCondition(node, pool string, c Condition) {
	m.condition.DeletePartialMatch(prometheus.Labels{"node": node})
	switch c.Status {
	case "True":
		m.condition.WithLabelValues(node, pool, c.Reason).Set(1)
	case "False":
		m.condition.WithLabelValues(node, pool, c.Reason).Set(0)
	}
}

// forget drops a deleted node's series, and the per-pool series of every pool no node of live
// is in any more: a series goes when its label set does.
func (m *metrics) forget(node string, live map[string]bool) {
	l := prometheus.Labels{"node": node}
	m.pathOK.DeletePartialMatch(l)
	m.lastSuccess.DeletePartialMatch(l)
	m.lastResult.DeletePartialMatch(l)
	m.condition.DeletePartialMatch(l)
	m.probeRan.DeletePartialMatch(l)
	m.skipped.DeletePartialMatch(l)
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, byNode := range m.expiries {
		gone := false
		for k := range byNode {
			if k.node == node {
				delete(byNode, k)
				gone = true
			}
		}
		if gone {
			m.poolExpiries(p)
		}
	}
	for p := range m.pools {
		if live[p] {
			continue
		}
		delete(m.pools, p)
		pl := prometheus.Labels{"pool": p}
		m.stepSeconds.DeletePartialMatch(pl)
		m.probes.DeletePartialMatch(pl)
		m.registryReq.DeletePartialMatch(pl)
		delete(m.expiries, p)
		m.credExpiry.DeletePartialMatch(pl)
	}
}

// setExpiries keeps what a node's probe of an image saw expire, and sets its pool's earliest.
// A probe that saw nothing clears the node's: a credential it no longer presents is not dying.
func (m *metrics) setExpiries(node, pool, image, registry string, xs []report.Expiry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.expiries[pool] == nil {
		m.expiries[pool] = map[nodeImage]map[expiryKey]time.Time{}
	}
	seen := map[expiryKey]time.Time{}
	for _, x := range xs {
		k := expiryKey{registry, string(x.What)}
		if t, ok := seen[k]; !ok || x.Expires.Before(t) {
			seen[k] = x.Expires
		}
	}
	ni := nodeImage{node, image}
	if len(seen) == 0 {
		delete(m.expiries[pool], ni)
	} else {
		m.expiries[pool][ni] = seen
	}
	m.poolExpiries(pool)
}

// poolExpiries sets the pool's series to the earliest expiry over its nodes; m.mu is held.
func (m *metrics) poolExpiries(pool string) {
	earliest := map[expiryKey]time.Time{}
	for _, seen := range m.expiries[pool] {
		for k, t := range seen {
			if e, ok := earliest[k]; !ok || t.Before(e) {
				earliest[k] = t
			}
		}
	}
	m.credExpiry.DeletePartialMatch(prometheus.Labels{"pool": pool})
	for k, t := range earliest {
		m.credExpiry.WithLabelValues(pool, k.registry, k.source).Set(float64(t.Unix()))
	}
}

// deliveryOf is a delivery label: the watcher's own words, checked all the same.
func deliveryOf(d string) string {
	switch d {
	case "attach", "configmap", "image":
		return d
	}
	return "other"
}

// metricsHandler serves the watcher's metrics.
type metricsHandler struct{ m *metrics }

func (h *metricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(h.m.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}
