package hoptrace

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"time"

	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/report"
)

// Hop is one round trip in progress. The dialer and the trace hooks fill it; the caller reads it
// after RoundTrip returns to classify a failure by the phase it reached. Hooks of a cancelled
// request may still fire from the transport's dial goroutine, so read it only through its methods.
type Hop struct {
	mu       sync.Mutex
	Role     report.Role
	Method   string
	URL      string // redacted
	Host     string // host:port
	Phase    report.StepName
	dials    []report.Dial
	Addr     string // the address of the connection dialed for this hop ("" when reused)
	Reused   bool   // the hop went over a kept-alive connection: no dial, no handshake of its own
	tlsState *tls.ConnectionState
	tlsErr   error
	Status   int
	Err      error
	Start    time.Time
	Duration time.Duration
}

// SetPhase records the layer the round trip has reached.
func (h *Hop) SetPhase(l report.StepName) { h.mu.Lock(); h.Phase = l; h.mu.Unlock() }

// AddDial records one connection attempt; the dialer calls it once per address tried.
func (h *Hop) AddDial(d report.Dial) {
	h.mu.Lock()
	h.dials = append(h.dials, d)
	if d.Error == "" {
		h.Addr = d.Addr
	}
	h.mu.Unlock()
}

// Snapshot returns the hop's report form.
func (h *Hop) Snapshot() report.Hop {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := report.Hop{Role: h.Role, Method: h.Method, URL: h.URL, Host: h.Host, Addr: h.Addr, Reused: h.Reused,
		Status: h.Status, Phase: h.Phase, Duration: report.Duration(h.Duration)}
	if h.tlsState != nil {
		r.TLS = tls.VersionName(h.tlsState.Version)
	}
	if h.Err != nil {
		r.Error = h.Err.Error()
	}
	return r
}

// Dials returns a copy of the connection attempts.
func (h *Hop) Dials() []report.Dial {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]report.Dial(nil), h.dials...)
}

// TLS returns the handshake's state (nil when none completed far enough to see certificates) and error.
func (h *Hop) TLS() (*tls.ConnectionState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tlsState, h.tlsErr
}

type hopKey struct{}

// Start returns a context that carries a new Hop for one round trip, with the endpoint role.
func Start(ctx context.Context, role report.Role) (context.Context, *Hop) {
	h := &Hop{Role: role}
	return context.WithValue(ctx, hopKey{}, h), h
}

// FromContext returns the Hop of this round trip, or nil.
func FromContext(ctx context.Context) *Hop {
	h, _ := ctx.Value(hopKey{}).(*Hop)
	return h
}

// Recorder keeps every hop of a probe in order. Safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	hops []*Hop
}

// Hops returns the recorded hops, numbered in the order they started.
func (r *Recorder) Hops() []report.Hop {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]report.Hop, len(r.hops))
	for i, h := range r.hops {
		out[i] = h.Snapshot()
		out[i].Seq = i + 1
	}
	return out
}

// Transport records a Hop for every RoundTrip of Inner. A hop that reuses a kept-alive connection is
// marked Reused and carries no dial or TLS evidence of its own.
type Transport struct {
	Inner http.RoundTripper
	Rec   *Recorder
}

var _ http.RoundTripper = (*Transport)(nil)

// RoundTrip runs one request with a per-request trace, so redirect hops and token calls never mix.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	h := FromContext(ctx)
	if h == nil {
		ctx, h = Start(ctx, "")
	}
	h.mu.Lock()
	h.Method = req.Method
	h.URL = redact.URL(req.URL)
	h.Host = hostPort(req)
	h.Start = time.Now()
	h.Phase = report.StepTCP
	h.mu.Unlock()
	if t.Rec != nil {
		t.Rec.mu.Lock()
		t.Rec.hops = append(t.Rec.hops, h)
		t.Rec.mu.Unlock()
	}
	trace := &httptrace.ClientTrace{
		TLSHandshakeStart: func() {
			h.mu.Lock()
			h.Phase = report.StepTLS
			h.mu.Unlock()
		},
		TLSHandshakeDone: func(cs tls.ConnectionState, err error) {
			h.mu.Lock()
			if len(cs.PeerCertificates) > 0 || err == nil {
				h.tlsState = &cs
			}
			h.tlsErr = err
			h.mu.Unlock()
		},
		GotConn: func(i httptrace.GotConnInfo) {
			h.mu.Lock()
			h.Phase, h.Reused = report.StepHTTP, i.Reused
			h.mu.Unlock()
		},
	}
	resp, err := t.Inner.RoundTrip(req.WithContext(httptrace.WithClientTrace(ctx, trace)))
	h.mu.Lock()
	h.Duration = time.Since(h.Start)
	h.Err = err
	if resp != nil {
		h.Status = resp.StatusCode
	}
	h.mu.Unlock()
	return resp, err
}

func hostPort(req *http.Request) string { return HostPort(req.URL) }

// HostPort returns u's host:port with the scheme's default port filled in.
func HostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
