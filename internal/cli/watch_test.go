//go:build !probeonly

package cli

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/pullpath/pullpath/internal/watch"
)

// TestMetricsServerHasTimeouts: a slow or stuck client of watch's /metrics is cut (issue 33 item 7).
func TestMetricsServerHasTimeouts(t *testing.T) {
	s := metricsServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 || s.MaxHeaderBytes > 64<<10 {
		t.Errorf("metrics server %+v: want every timeout and a small header cap", s)
	}
}

// TestSilentAPIServer: an API server that takes requests and never answers gets one line naming
// it and exit 2 from every command that talks to it, within the bound (issue 34 item 8).
func TestSilentAPIServer(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	api := []string{"--server", srv.URL, "--token", "not-a-secret", "--request-timeout", "1s"}
	start := watch.StartTimeout
	watch.StartTimeout = 3 * time.Second // watch retries its start, saying so, for that long
	defer func() { watch.StartTimeout = start }()
	for _, args := range [][]string{
		{"verify", "registry.example/app:1"},
		{"pod", "web", "-n", "shop"},
		{"pod", "--all", "-A"},
		{"cleanup"},
		{"watch", "status"},
		{"watch", "--image", "registry.example/app:1"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			start := time.Now()
			r := run(t, "", append(args, api...)...)
			took := time.Since(start)
			lines := strings.Split(strings.TrimSpace(r.errOut), "\n")
			if r.code != 2 || took > 20*time.Second || !strings.Contains(r.errOut, srv.URL) || !strings.Contains(r.errOut, "no answer within 1s") || len(lines) > 3 {
				t.Errorf("exit %d after %s, stderr:\n%s\nwant exit 2 within the bound and one line naming %s", r.code, took.Round(time.Millisecond), r.errOut, srv.URL)
			}
		})
	}
}

// TestClientGoLogsAreSilenced: client-go's klog lines ("E1205 … reflector.go …") never reach
// stderr; the commands say what failed themselves.
func TestClientGoLogsAreSilenced(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	klog.ErrorS(errors.New("connection refused"), "Failed to watch", "reflector", "k8s.io/client-go/tools/cache/reflector.go:569")
	klog.Flush()
	os.Stderr = stderr
	w.Close()
	b, _ := io.ReadAll(r)
	if len(b) > 0 {
		t.Errorf("klog wrote %q to stderr", b)
	}
}
