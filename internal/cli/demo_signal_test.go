package cli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// cancelOn is stdout that sends SIGINT's cancellation once it has seen mark.
type cancelOn struct {
	mu     sync.Mutex
	b      bytes.Buffer
	mark   string
	cancel context.CancelCauseFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.b.Write(p)
	if strings.Contains(c.b.String(), c.mark) {
		c.cancel(&SignalError{Signal: syscall.SIGINT})
	}
	return n, err
}

// TestDemoInterrupted is Ctrl-C during the demo: exit 130 with the summary of the scenarios that
// finished, not "context canceled" and 2, and no advice about a --timeout demo does not have.
func TestDemoInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	out := &cancelOn{mark: "── 2/", cancel: cancel}
	var errOut bytes.Buffer
	err := Run(ctx, Streams{In: strings.NewReader(""), Out: out, ErrOut: &errOut}, []string{"demo", "--full", "--color", "never"})
	code := Code(signalCause(ctx, err), &errOut)
	got := out.b.String()
	if code != 130 || !strings.Contains(errOut.String(), "interrupted by SIGINT after ") {
		t.Fatalf("exit %d, stderr %q; want 130 and where it stopped", code, errOut.String())
	}
	if !strings.Contains(got, "SCENARIO") && !strings.Contains(got, "✓") {
		t.Fatalf("no partial summary:\n%s", got)
	}
	if strings.Contains(got+errOut.String(), "--timeout") || strings.Contains(errOut.String(), "context canceled") {
		t.Fatalf("advice about --timeout or a bare context canceled:\n%s\n%s", got, errOut.String())
	}
}

// TestDemoOnlyAnyCase is --only in another case than the scenario's name, matching one scenario:
// it runs, and the summary does not say "all 1 diagnoses".
func TestDemoOnlyAnyCase(t *testing.T) {
	r := run(t, "", "demo", "--only", "HEALTHY, BLOBS SERVED")
	if r.code != 0 || !strings.Contains(r.out, "the diagnosis matches the staged fault") || strings.Contains(r.out, "all 1 ") {
		t.Fatalf("exit %d\n%s%s", r.code, r.out, r.errOut)
	}
}
