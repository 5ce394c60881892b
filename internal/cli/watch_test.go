package cli

import (
	"net/http"
	"testing"
)

// TestMetricsServerHasTimeouts: a slow or stuck client of watch's /metrics is cut (issue 33 item 7).
func TestMetricsServerHasTimeouts(t *testing.T) {
	s := metricsServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 || s.MaxHeaderBytes > 64<<10 {
		t.Errorf("metrics server %+v: want every timeout and a small header cap", s)
	}
}
