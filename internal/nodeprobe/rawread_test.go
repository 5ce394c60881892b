package nodeprobe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/pullpath/pullpath/internal/cluster"
)

// A node's log is read with a client-side cap, whatever the server does with LimitBytes: a 64 MiB
// report was read whole (a 32 MiB one OOM-killed the watcher on every restart).
func TestProbeLogReadIsCapped(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 1024 { // 64 MiB, LimitBytes ignored
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	cs, err := cluster.NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cluster.RawRead(context.Background(), cs.Core.Pods("pullpath").GetLogs("pp-1", &corev1.PodLogOptions{Container: "probe"}), "get", "pods/log", "pullpath", "pp-1")
	if err == nil || raw != nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("RawRead: %d bytes, error %v; want refused", len(raw), err)
	}
	r := &run{cs: cs, o: VerifyOptions{Namespace: "pullpath"}}
	if p := r.fullReport(context.Background(), "pp-1"); p != nil {
		t.Errorf("fullReport of an oversized log: %+v", p)
	}
}
