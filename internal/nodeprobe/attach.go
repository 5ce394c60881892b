package nodeprobe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/pullpath/pullpath/internal/cluster"
)

// attachStream is the probe binary on its way into a probe pod's stdin, through the API server's
// attach endpoint: nothing is stored in the API, and the node reads it into a memory volume.
type attachStream struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	e       error
	started time.Time
	sent    time.Time // when the last byte left
}

// attachStall bounds the stream: 13 MB take seconds; a stream that has not sent the whole binary
// by then hangs somewhere (a proxy that holds upgrades, a wedged connection to the kubelet), and
// the node is probed the other way.
const attachStall = 45 * time.Second

// attach starts streaming bin into container "probe" of pod name. The loader there reads to the
// end of stdin, which the kubelet closes when the stream's stdin ends (stdinOnce), checks the size
// and execs the probe. The stream itself lasts until the container ends or stop is called.
func (r *run) attach(ctx context.Context, name string, bin []byte) *attachStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &attachStream{cancel: cancel, done: make(chan struct{}), started: time.Now()}
	go func() {
		defer close(s.done)
		err := r.stream(ctx, name, &sentReader{r: bytes.NewReader(bin), s: s})
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil && ctx.Err() == nil && s.sent.IsZero() {
			s.e = err
		}
	}()
	return s
}

func (r *run) stream(ctx context.Context, name string, in io.Reader) error {
	if r.cs.Attach != nil {
		return r.cs.Attach(ctx, r.o.Namespace, name, "probe", in)
	}
	if r.cs.Config == nil {
		return errors.New("no REST configuration to dial the attach stream with")
	}
	req := r.cs.Core.RESTClient().Post().Namespace(r.o.Namespace).Resource("pods").Name(name).SubResource("attach").
		Param("container", "probe").Param("stdin", "true")
	u := req.URL()
	// WebSocket first (what the API server speaks natively since 1.31), SPDY when the upgrade is
	// refused on the way (an older server, a proxy)
	ws, err := remotecommand.NewWebSocketExecutor(r.cs.Config, "GET", u.String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(r.cs.Config, "POST", u)
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in}); err != nil {
		return fmt.Errorf("attach to pod %s/%s: %s", r.o.Namespace, name, cluster.ShortErr(cluster.APIError(err, "create", "pods/attach", r.o.Namespace, name)))
	}
	return nil
}

// failed reports whether the stream ended before the whole binary was sent. Nil-safe: a pod
// without a stream never fails one.
func (s *attachStream) failed() bool { return s != nil && s.err() != nil }

func (s *attachStream) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.e == nil && s.sent.IsZero() && time.Since(s.started) > attachStall {
		s.e = fmt.Errorf("the attach stream had not delivered the binary after %s", attachStall)
	}
	return s.e
}

func (s *attachStream) sentAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// stop ends the stream (the probe has finished, or will not start) and waits for it, a while: a
// stream stuck in a write to a connection that never drains does not see its context, and must
// not hold the probe of the node with it.
func (s *attachStream) stop() {
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
	}
}

// sentReader notes when the last byte of the binary has been read for sending.
type sentReader struct {
	r *bytes.Reader
	s *attachStream
}

func (sr *sentReader) Read(p []byte) (int, error) {
	n, err := sr.r.Read(p)
	if err == io.EOF {
		sr.s.mu.Lock()
		if sr.s.sent.IsZero() {
			sr.s.sent = time.Now()
		}
		sr.s.mu.Unlock()
	}
	return n, err
}
