package cli

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/pullpath/pullpath/internal/agent"
	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/report"
)

// agentMemoryLimit is the agent's soft memory limit (GOMEMLIMIT overrides it).
const agentMemoryLimit = 20 << 20

type agentOptions struct {
	probeOptions
	images    []string
	listen    string
	interval  time.Duration
	fullEvery int
	budget    int
	noted     sync.Once
	memo      *probe.Memo // what quick rounds reuse: the token, the manifests
}

func newAgentCmd(s Streams) *cobra.Command {
	o := &agentOptions{probeOptions: probeOptions{base: base{streams: s}, output: "json", quiet: true}}
	cmd := &cobra.Command{
		Use:   "agent --image IMAGE [--image IMAGE...]",
		Short: "Stay on this node: probe its pull path every interval and serve the results to the watcher",
		Long: `Stay on the node as the resident probe of "pullpath watch --resident": probe each
IMAGE now, then every interval, as "pullpath probe" does from the node's own resolver,
trust, credentials and runtime configuration (read again at every probe), and serve
the newest results over HTTP to the watcher. No Kubernetes credential; runs until SIGTERM.
Exit codes: 0 stopped by a signal, 2 could not run.
` + manual("agent.md"),
		Example: `  pullpath agent --image myreg.azurecr.io/team/app:1.4 --host-root /host --node "$NODE_NAME"
  pullpath agent --image reg.example/app:1 --image reg.example/db:2 --interval 5m --listen 127.0.0.1:9477`,
		Args: cobra.NoArgs,
	}
	lifecycle(cmd, o)
	f := cmd.Flags()
	f.StringArrayVar(&o.images, "image", nil, "an image to probe; repeatable")
	f.StringVar(&o.listen, "listen", ":"+strconv.Itoa(agent.Port), "address the results are served on")
	f.DurationVar(&o.interval, "interval", 15*time.Minute, "between two probes of an image")
	f.IntVar(&o.fullEvery, "full-every", 4, "every Nth probe downloads every blob (the first always does); the others stop at each layer's first byte, which still reaches every blob host")
	f.IntVar(&o.budget, "registry-budget", agent.DefaultBudget, "requests a registry may get from this node in an hour; when spent, the next round waits (0: no bound)")
	nodeViewFlags(f, &o.probeOptions)
	groupFlags(f, "Timeouts", "connect-timeout", "tls-timeout", "header-timeout", "stall-timeout", "timeout")
	groupFlags(f, "More", "anonymous", "expect-private", "concurrency", "node", "dns-server", "hosts-file", "resolv-conf", "platform", "runtime", "insecure", "registry-budget")
	return cmd
}

// Complete takes no argument: the images are flags.
func (o *agentOptions) Complete([]string) error { return nil }

// Validate checks the agent's flags and every image as probe would, before it listens.
func (o *agentOptions) Validate() error {
	if len(o.images) == 0 {
		return errors.New("agent: give at least one --image")
	}
	if o.interval < 10*time.Second {
		return fmt.Errorf("--interval %s: want at least 10s", o.interval)
	}
	if o.fullEvery < 1 {
		return fmt.Errorf("--full-every %d: want 1 or more", o.fullEvery)
	}
	if o.budget < 0 {
		return fmt.Errorf("--registry-budget %d: want 0 (no bound) or more", o.budget)
	}
	if o.pullSecret == "-" {
		return errors.New("--pull-secret -: the agent runs for long, and stdin is read once: give a file or --pull-secret-env")
	}
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return fmt.Errorf("--listen %q: want HOST:PORT or :PORT", o.listen)
	}
	for _, img := range o.images {
		p := o.probeOptions
		p.image = img
		if err := p.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Run listens, probes every interval and serves until ctx ends (SIGTERM): then it exits 0.
func (o *agentOptions) Run(ctx context.Context) error {
	l, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	logger := log.New(o.streams.ErrOut, "pullpath agent: ", log.LstdFlags|log.LUTC)
	o.memo = probe.NewMemo()
	if os.Getenv("GOMEMLIMIT") == "" {
		// resident on every node: the GC works harder rather than let the heap grow between
		// probes (the budget is 30 MiB of RSS)
		debug.SetMemoryLimit(agentMemoryLimit)
	}
	a, err := agent.New(agent.Options{Node: o.node, Images: o.images, Interval: o.interval, FullEvery: o.fullEvery, Budget: o.budget,
		Probe: o.probeOnce, Version: versionInfo().Version, Logf: logger.Printf})
	if err != nil {
		l.Close()
		return err
	}
	logger.Printf("serving on %s; probing %d image(s) every %s", l.Addr(), len(o.images), o.interval)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Run(ctx)
	}()
	err = a.Serve(ctx, l, o.timeout)
	<-done
	logger.Printf("stopped")
	return err
}

// probeOnce is one probe of image, prepared afresh: the node's files are read again each time.
func (o *agentOptions) probeOnce(ctx context.Context, image string, full bool) (*report.Probe, error) {
	p := o.probeOptions
	p.image, p.noDownload, p.notes, p.kubelet = image, !full, nil, nil
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := p.prepare(); err != nil {
		return nil, err
	}
	// a quick round reads the config blob alone (its redirect reaches the blob host), with the
	// token and manifests of earlier rounds while they hold
	p.probe.Sample, p.probe.Memo = !full, o.memo
	o.noted.Do(func() {
		for _, n := range p.notes {
			fmt.Fprintln(o.streams.ErrOut, n)
		}
	})
	return runBounded(ctx, p.timeout, func(ctx context.Context) (*report.Probe, error) { return probe.Run(ctx, p.probe) })
}
