package kube

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestAnswerTimeout: a server that takes the request and never answers ends it with a SilentError
// naming the server; one that answers streams its body past the bound.
func TestAnswerTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/silent" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond) // a body that outlasts the bound: a watch
		_, _ = io.WriteString(w, "streamed")
	}))
	defer srv.Close()
	defer close(release)
	c := &http.Client{Transport: AnswerTimeout(100*time.Millisecond, srv.URL)(http.DefaultTransport)}

	start := time.Now()
	_, err := c.Get(srv.URL + "/silent")
	var se *SilentError
	if !errors.As(err, &se) || se.Server != srv.URL || time.Since(start) > 5*time.Second {
		t.Fatalf("silent server: %v after %s, want a SilentError naming %s", err, time.Since(start), srv.URL)
	}
	resp, err := c.Get(srv.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "streamed" {
		t.Errorf("a body past the bound: %q, %v; want it whole", b, err)
	}
}
