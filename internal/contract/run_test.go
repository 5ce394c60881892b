package contract

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pullpath/pullpath/internal/cli"
	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/registrytest"
)

var (
	labOnce sync.Once
	labEnv  *demo.Env
	labErr  error
	labMu   sync.Mutex
)

// lab is the demo's loopback registry, token realm, blob host and DNS server, shared by the
// tests; each test holds it alone and leaves it without faults.
func lab(t *testing.T) *demo.Env {
	t.Helper()
	labOnce.Do(func() { labEnv, labErr = demo.Setup(context.Background(), 32<<10) })
	if labErr != nil {
		t.Fatal(labErr)
	}
	labMu.Lock()
	t.Cleanup(func() { labEnv.Lab.SetFaults(registrytest.Faults{}); labMu.Unlock() })
	return labEnv
}

func TestMain(m *testing.M) {
	code := m.Run()
	if labEnv != nil {
		labEnv.Close() // the shared lab's servers and its temp dir (CA files)
	}
	os.Exit(code)
}

type result struct {
	code        int
	out, errOut []byte
}

// run runs the pullpath command line in this process, as main does.
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return runCtx(t, context.Background(), stdin, args...)
}

func runCtx(t *testing.T, ctx context.Context, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cli.Run(ctx, cli.Streams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, args)
	code := cli.Code(err, &errOut)
	return result{code: code, out: out.Bytes(), errOut: errOut.Bytes()}
}

func (r result) wantExit(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, clip(r.out), r.errOut)
	}
}

// probeArgs points the probe at the lab, with the runtime's configuration off (--host-root none)
// so that the machine's own containerd does not change the walk.
func probeArgs(e *demo.Env, extra ...string) []string {
	return append([]string{"probe", "-o", "json", "--host-root", "none", "--dns-server", e.Lab.DNS.Addr, "--ca-file", e.Lab.CAFile,
		"--hosts-file", "", "--platform", demo.Platform, "--connect-timeout", "2s", "--stall-timeout", "1s"}, extra...)
}
