//go:build !probeonly

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/pullpath/pullpath/internal/agent"
	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/nodeprobe"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/watch"
)

type watchOptions struct {
	base
	kube            *kubeFlags
	images          []string
	sandboxImages   []string
	includeCordoned bool
	interval        time.Duration
	concurrency     int
	fullEvery       int
	runNamespace    string
	metricsAddr     string
	probeTimeout    time.Duration
	delivery        string
	leaderElect     bool
	secret          string // NAMESPACE/NAME
	serviceAccount  string // NAMESPACE/NAME
	resident        bool
	agentImage      string
	agentPort       int
	registryBudget  int
}

func newWatchCmd(s Streams) *cobra.Command {
	o := &watchOptions{base: base{streams: s}, kube: newKubeFlags()}
	cmd := &cobra.Command{
		Use:   "watch --image IMAGE [--image IMAGE ...]",
		Short: "Probe every Ready node's pull path all the time, new nodes first, and report it on the node",
		Long: `Probe the pull path of each --image from every Ready node with verify's probe pod
(the node's network, resolver, runtime configuration and identity; no pull): new nodes
first, then every --interval, staggered. Results: the node condition ImagePullPathBroken
(True broken, False holds, Unknown could not run; reason the class in CamelCase), a node
Event per transition, Prometheus metrics (--metrics-address) and 'pullpath watch status'.
--resident: an agent pod per node probes it, no pod per probe. SIGTERM cleans up.

Exit codes: 0 stopped by a signal after cleaning up, 1 something left behind, 2 could not run.
` + manual("watch.md"),
		Example: `  pullpath watch --image registry.corp.example/shop/web:1.4 --metrics-address :9464`,
		Args:    cobra.NoArgs,
	}
	lifecycle(cmd, o)
	f := cmd.Flags()
	o.kube.addFlags(f)
	f.StringArrayVar(&o.images, "image", nil, "an image every node must pull (repeatable)")
	f.DurationVar(&o.interval, "interval", 15*time.Minute, "between two probes of a node")
	f.IntVar(&o.concurrency, "concurrency", 5, "probe pods at once")
	f.IntVar(&o.fullEvery, "full-every", 6, "every Nth probe downloads every layer")
	f.StringVar(&o.runNamespace, "run-namespace", cluster.WatchRunNamespace, "where the probes, lease and status live")
	f.StringVar(&o.metricsAddr, "metrics-address", "", "serve /metrics on host:port, e.g. :9464")
	f.DurationVar(&o.probeTimeout, "probe-timeout", 3*time.Minute, "bound on each probe pod")
	f.StringVar(&o.delivery, "delivery", "auto", "attach, configmap or auto")
	f.BoolVar(&o.leaderElect, "leader-elect", false, "probe only while holding the Lease")
	f.StringArrayVar(&o.sandboxImages, "sandbox-image", nil, "a repository your nodes' sandbox image comes from, beside the known ones (repeatable)")
	f.BoolVar(&o.includeCordoned, "include-cordoned", false, "also probe cordoned nodes (skipped by default, as verify skips them)")
	f.StringVar(&o.secret, "secret", "", "NAMESPACE/NAME: present this pull secret, as its pods do")
	f.StringVar(&o.serviceAccount, "service-account", "", "NAMESPACE/NAME: present that ServiceAccount's pull secrets, as its pods do")
	f.BoolVar(&o.resident, "resident", false, "an agent pod on every node probes it locally; no probe pod per probe")
	f.StringVar(&o.agentImage, "agent-image", "", "with --resident: a pullpath image pinned by digest for the agents (default: the binary in ConfigMaps on the node's sandbox image)")
	f.IntVar(&o.agentPort, "agent-port", agent.Port, "with --resident: the agents' port on the nodes")
	f.IntVar(&o.registryBudget, "registry-budget", agent.DefaultBudget, "with --resident: requests a registry may get from a node in an hour; when spent, the agent's next round waits")
	groupFlags(f, "More", "concurrency", "full-every", "probe-timeout", "delivery", "leader-elect", "sandbox-image", "include-cordoned", "service-account", "secret", "resident", "agent-image", "agent-port", "registry-budget")
	cmd.AddCommand(newWatchStatusCmd(s), newWatchManifestsCmd(s))
	return cmd
}

// Complete takes no arguments.
func (o *watchOptions) Complete([]string) error { return nil }

// Validate checks the flags.
func (o *watchOptions) Validate() error {
	if len(o.images) == 0 {
		return errors.New("give at least one --image: the image whose pull path every node must hold")
	}
	for _, img := range o.images {
		if _, err := parseImage(img); err != nil {
			return fmt.Errorf("--image: %w", err)
		}
	}
	switch {
	case o.interval < 10*time.Second:
		return fmt.Errorf("--interval %s: want 10s or more", o.interval)
	case o.concurrency < 1 || o.concurrency > 100:
		return fmt.Errorf("--concurrency %d: want 1 to 100", o.concurrency)
	case o.fullEvery < 1:
		return fmt.Errorf("--full-every %d: want 1 or more", o.fullEvery)
	case o.probeTimeout <= 0:
		return fmt.Errorf("--probe-timeout %s: want a positive duration", o.probeTimeout)
	case o.delivery != "auto" && o.delivery != nodeprobe.ModeAttach && o.delivery != nodeprobe.ModeConfigMap:
		return fmt.Errorf("--delivery %q: want auto, attach or configmap", o.delivery)
	}
	if o.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.metricsAddr); err != nil {
			return fmt.Errorf("--metrics-address %q: want host:port, e.g. :9090", o.metricsAddr)
		}
	}
	if err := checkNamespace("--run-namespace", o.runNamespace); err != nil {
		return err
	}
	if err := o.checkResident(); err != nil {
		return err
	}
	if err := watch.CheckIdentity(o.secret, o.serviceAccount); err != nil {
		return err
	}
	if err := nodeprobe.CheckSandboxRepos(o.sandboxImages); err != nil {
		return err
	}
	return o.kube.validate()
}

// checkResident refuses the agents' flags without --resident, a port outside 1–65535, and an
// agent image not pinned by digest (the admission policy runs no other).
func (o *watchOptions) checkResident() error {
	if !o.resident {
		for _, f := range []string{"agent-image", "agent-port", "registry-budget"} {
			if o.flagChanged(f) {
				return fmt.Errorf("--%s is for the resident agents: add --resident", f)
			}
		}
		return nil
	}
	if o.agentPort < 1 || o.agentPort > 65535 {
		return fmt.Errorf("--agent-port %d: want 1 to 65535", o.agentPort)
	}
	if o.registryBudget < 0 {
		return fmt.Errorf("--registry-budget %d: want 0 (no bound) or more", o.registryBudget)
	}
	if o.agentImage != "" {
		ref, err := parseImage(o.agentImage)
		if err != nil {
			return fmt.Errorf("--agent-image: %w", err)
		}
		if ref.Digest == "" {
			return fmt.Errorf("--agent-image %s: pin it by digest (IMAGE@sha256:…, as pullpath image push prints): the node runs what the digest names, nothing a tag was moved to", o.agentImage)
		}
	}
	return nil
}

// Run watches until ctx ends, then deletes what it made; something left is ExitError{1}.
func (o *watchOptions) Run(ctx context.Context) error {
	api := watch.NewAPICounter()
	o.kube.wrap = api.Wrap
	if o.resident {
		// the first round places an agent and writes a condition per node: at client-go's 5 a
		// second that is 33 min at 5,000 nodes; the API server's priority and fairness still
		// bounds the watcher, and in the steady state it writes about one object a minute
		o.kube.qps, o.kube.burst = 25, 50
	}
	cs, err := o.kube.client()
	if err != nil {
		return err
	}
	var ln net.Listener
	if o.metricsAddr != "" {
		// bound before anything is created: a port in use is "could not run"
		if ln, err = net.Listen("tcp", o.metricsAddr); err != nil {
			return fmt.Errorf("--metrics-address: %w", err)
		}
		defer ln.Close()
	}
	vo := nodeprobe.VerifyOptions{Namespace: o.runNamespace, Delivery: o.delivery, Timeout: o.probeTimeout, Binary: probeBinaryFor(""), SandboxImages: o.sandboxImages,
		ProbeArgs: []string{"--timeout", probeBudget(o.probeTimeout).String()}, FromServiceAccount: o.serviceAccount, ProbeImage: o.agentImage}
	if o.secret != "" {
		vo.SecretNamespace, vo.Secret, _ = strings.Cut(o.secret, "/")
	}
	var current atomic.Pointer[watch.Watcher]
	standby := watch.StandbyMetrics(Version)
	if ln != nil {
		mux := http.NewServeMux()
		mux.HandleFunc("/metrics", func(rw http.ResponseWriter, r *http.Request) {
			if w := current.Load(); w != nil {
				w.Metrics().ServeHTTP(rw, r)
				return
			}
			standby.ServeHTTP(rw, r) // not the leader: no probes here, its build info only
		})
		mux.HandleFunc("/healthz", func(rw http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(rw, "ok\n") })
		srv := metricsServer(mux)
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
	}
	logf := func(s string) {
		fmt.Fprintf(o.streams.ErrOut, "%s watch: %s\n", time.Now().UTC().Format("15:04:05"), s)
	}
	// lead prepares the probes and watches until ctx ends: only the leader does, so that a
	// standby never removes what the leader's probes use
	var left []string
	var leadErr error
	ectx, stopLeading := context.WithCancel(ctx)
	defer stopLeading()
	lead := func(ctx context.Context) {
		w, err := watch.New(ctx, cs, watch.Options{Images: o.images, Interval: o.interval, Concurrency: o.concurrency, FullEvery: o.fullEvery, Probe: vo, Progress: logf, API: api, Version: Version,
			IncludeCordoned: o.includeCordoned, Resident: o.resident, AgentPort: o.agentPort, AgentBudget: o.registryBudget})
		if err != nil {
			if ctx.Err() == nil { // not a lost lease: the watcher cannot run
				leadErr = err
				stopLeading()
			}
			return
		}
		current.Store(w)
		defer current.Store(nil) // a standby serves its build info only
		fmt.Fprintf(o.streams.ErrOut, "watch: probing every Ready node for %s every %s (run namespace %s)\n", strings.Join(o.images, ", "), o.interval, o.runNamespace)
		left = w.Run(ctx)
	}
	if o.leaderElect {
		host, _ := os.Hostname()
		id := fmt.Sprintf("%s-%d", host, os.Getpid())
		logf("waiting to lead (lease " + o.runNamespace + "/pullpath-watch, identity " + id + ")")
		e := &watch.Election{Leases: cs.Leases.Leases(o.runNamespace), Name: cluster.WatchLease, Identity: id,
			Duration: 30 * time.Second, Deadline: 20 * time.Second, Retry: 5 * time.Second, Logf: logf}
		// a lost lease (an API outage past the deadline, a control-plane upgrade) makes this a
		// standby, not an exit; it returns once ctx ends and lead's cleanup is over
		e.RunForever(ectx, lead)
	} else {
		lead(ctx)
	}
	if leadErr != nil {
		return leadErr
	}
	if len(left) > 0 {
		fmt.Fprintf(o.streams.ErrOut, "watch: left behind: %s (pullpath cleanup -n %s removes them)\n", strings.Join(left, ", "), o.runNamespace)
		return &ExitError{Code: ExitBroken}
	}
	fmt.Fprintf(o.streams.ErrOut, "watch: stopped; every probe pod and object it made is deleted\n")
	return nil
}

// probeBinaryFor gives verify's probe binary lookup to a command without --probe-binary.
// Each architecture's binary is read (or decompressed) once and shared: a watcher holds a run per
// image and probe kind, and each would otherwise keep its own 12 MB copy for the attach stream.
func probeBinaryFor(file string) func(string) ([]byte, string, error) {
	type loaded struct {
		b   []byte
		src string
		err error
	}
	var mu sync.Mutex
	byArch := map[string]*loaded{}
	return func(goarch string) ([]byte, string, error) {
		mu.Lock()
		defer mu.Unlock()
		l, ok := byArch[goarch]
		if !ok {
			l = &loaded{}
			l.b, l.src, l.err = probeBinary(file, "", goarch)
			byArch[goarch] = l
		}
		return l.b, l.src, l.err
	}
}

type watchStatusOptions struct {
	base
	kube         *kubeFlags
	runNamespace string
	output       string
	probeTimeout time.Duration
}

func newWatchStatusCmd(s Streams) *cobra.Command {
	o := &watchStatusOptions{base: base{streams: s}, kube: newKubeFlags()}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show what watch found, per pool, node and image",
		Long: `Show the status the running watcher keeps in its run namespace (ConfigMap
pullpath-watch-status): per pool, node and image, the class, since when, and the last probe.

STALE (exit 1): the watcher has not written its status for two heartbeats (gone or stuck),
or a node's last probe is older than two intervals (it does not keep up).

Exit codes: 0 every probed path holds, 1 a path is broken or unknown, or the status is stale,
2 could not run (no watcher status in the namespace, no cluster, no rights).
` + manual("watch.md"),
		Example: `  pullpath watch status
  pullpath watch status -o json --run-namespace pullpath-watch`,
		Args: cobra.NoArgs,
	}
	lifecycle(cmd, o)
	o.kube.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.runNamespace, "run-namespace", cluster.WatchRunNamespace, "the namespace pullpath watch runs its probes in")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	cmd.Flags().DurationVar(&o.probeTimeout, "probe-timeout", 3*time.Minute, "the watcher's --probe-timeout: a node is behind when its last probe is older than two intervals and this")
	return cmd
}

// Complete takes no arguments.
func (o *watchStatusOptions) Complete([]string) error { return nil }

// Validate checks the flags.
func (o *watchStatusOptions) Validate() error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if err := checkNamespace("--run-namespace", o.runNamespace); err != nil {
		return err
	}
	return o.kube.validate()
}

// Run reads the watcher's status and renders it; a broken, unknown or stale path is ExitError{1}.
func (o *watchStatusOptions) Run(ctx context.Context) error {
	cs, err := o.kube.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := watch.ReadStatus(ctx, cs, o.runNamespace)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("no watch status in namespace %s: is pullpath watch running there? (--run-namespace)", o.runNamespace)
	case err != nil:
		return fmt.Errorf("watch status: %w", err)
	}
	stale := watch.Stale(st, time.Now(), o.probeTimeout)
	if err := emit(o.streams.Out, o.output, st, func(w io.Writer) error {
		return report.WriteWatchStatusText(w, st, stale, textOptions(o.cmd, w, false))
	}); err != nil {
		return err
	}
	if stale != "" {
		if o.output == "json" {
			fmt.Fprintln(o.streams.ErrOut, "pullpath: watch status is STALE: "+stale)
		}
		return &ExitError{Code: ExitBroken}
	}
	for _, n := range st.Nodes {
		if n.Condition != "False" {
			return &ExitError{Code: ExitBroken}
		}
	}
	return nil
}

type watchManifestsOptions struct {
	base
	m watch.ManifestOptions
}

func newWatchManifestsCmd(s Streams) *cobra.Command {
	wo := &watchManifestsOptions{base: base{streams: s}, m: watch.DefaultManifestOptions()}
	o := &wo.m
	cmd := &cobra.Command{
		Use:   "manifests --image IMAGE --watcher-image REF",
		Short: "Print the in-cluster install: namespaces, RBAC, Deployment, janitor, admission",
		Long: `Print what runs watch in the cluster, for kubectl apply -f -: the watcher in a namespace
of its own (restricted), its probes in the run namespace (privileged), exactly watch's rights,
the janitor CronJob, and admission policies for the probe pods and the node condition.
Deleting it never removes verify's install. deploy/watch/watch.yaml is this output.

Exit codes: 0 printed, 2 a bad flag.
` + manual("watch.md"),
		Example: `  pullpath watch manifests --image registry.corp.example/shop/web:1.4 --watcher-image registry.corp.example/tools/pullpath:v1 | kubectl apply -f -
  pullpath watch manifests --image registry.corp.example/shop/web:1.4 --watcher-image registry.corp.example/tools/pullpath:v1 --secret shop/regcred`,
		Args: cobra.NoArgs,
	}
	lifecycle(cmd, wo)
	f := cmd.Flags()
	f.StringArrayVar(&o.Images, "image", nil, "an image whose pull path every node must hold (repeatable)")
	f.StringVar(&o.WatcherImage, "watcher-image", "", "the image the watcher runs: the full pullpath binary at /pullpath (required)")
	f.StringVar(&o.Namespace, "namespace", o.Namespace, "the watcher's own namespace: its Deployment and ServiceAccount")
	f.StringVar(&o.RunNamespace, "run-namespace", o.RunNamespace, "namespace of the probe pods, the lease and the status")
	f.StringVar(&o.Interval, "interval", o.Interval, "between two probes of a node")
	f.IntVar(&o.MetricsPort, "metrics-port", o.MetricsPort, "the port of the Prometheus metrics")
	f.IntVar(&o.Replicas, "replicas", o.Replicas, "replicas; one leads, the others wait")
	f.StringVar(&o.ServiceAccount, "watcher-service-account", o.ServiceAccount, "the ServiceAccount the watcher runs as")
	f.StringVar(&o.Secret, "secret", "", "NAMESPACE/NAME: the pull secret the probes present (watch --secret)")
	f.StringVar(&o.PullServiceAccount, "service-account", "", "NAMESPACE/NAME: present that ServiceAccount's pull secrets (watch --service-account)")
	f.StringVar(&o.JanitorNamespace, "janitor-namespace", o.JanitorNamespace, "verify's run namespace, whose expired leftovers the janitor deletes (\"\" leaves it out)")
	f.BoolVar(&o.Resident, "resident", false, "the watcher runs watch --resident: an agent pod on every node")
	f.StringVar(&o.AgentImage, "agent-image", "", "with --resident: the agents' pullpath image, pinned by digest")
	groupFlags(f, "More", "namespace", "run-namespace", "metrics-port", "replicas", "watcher-service-account", "janitor-namespace", "service-account", "resident", "agent-image")
	_ = cmd.MarkFlagRequired("watcher-image")
	return cmd
}

// Complete takes no arguments.
func (o *watchManifestsOptions) Complete([]string) error { return nil }

// Validate checks the images, then the rest (watch.ManifestOptions.Validate).
func (o *watchManifestsOptions) Validate() error {
	if len(o.m.Images) == 0 {
		return errors.New("give at least one --image: the image whose pull path every node must hold")
	}
	for _, img := range append(slices.Clone(o.m.Images), o.m.WatcherImage) {
		if _, err := parseImage(img); err != nil {
			return fmt.Errorf("--image/--watcher-image: %w", err)
		}
	}
	return o.m.Validate()
}

// Run prints the manifests.
func (o *watchManifestsOptions) Run(context.Context) error {
	_, err := io.WriteString(o.streams.Out, watch.Manifests(o.m))
	return err
}

// metricsServer serves /metrics with every timeout set: a scraper (or anyone who reaches the port)
// that holds a connection open must not pin the watcher's goroutines and memory.
func metricsServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 15 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10}
}
