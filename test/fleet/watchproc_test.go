package fleet

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// watchProc is a `pullpath watch` a fleet benchmark runs, with its stderr kept and its metrics
// on a loopback port of its own.
type watchProc struct {
	metrics string // host:port of /metrics
	mu      sync.Mutex
	errOut  bytes.Buffer
	done    chan error
}

// startWatchProc starts bin watch with args and --metrics-address; SIGTERM ends it at the test's
// cleanup, killed if it has not ended within stopWithin (it deletes what it made first).
func startWatchProc(t *testing.T, bin, kubeconfig string, stopWithin time.Duration, args ...string) *watchProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &watchProc{metrics: ln.Addr().String(), done: make(chan error, 1)}
	ln.Close()
	cmd := exec.Command(bin, append(append([]string{"watch"}, args...), "--metrics-address", w.metrics)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stderr = writerFunc(func(b []byte) (int, error) { w.mu.Lock(); defer w.mu.Unlock(); return w.errOut.Write(b) })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(stopWithin):
			_ = cmd.Process.Kill()
			<-w.done
		}
	})
	return w
}

// stderr is what the watcher said so far.
func (w *watchProc) stderr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.errOut.String()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
