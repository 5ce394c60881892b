//go:build !probeonly

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pullpath/pullpath/internal/capped"
	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/nodeprobe"
	"github.com/pullpath/pullpath/internal/report"
)

type verifyOptions struct {
	base
	kube           *kubeFlags
	image          string
	pools          []string
	allNodes       bool
	fresh          bool
	secret         string
	pod            string
	runNamespace   string
	includeUnready bool
	runtimePull    bool
	probeBinary    string
	probeImage     string
	delivery       string
	fromPod        string
	hostMount      string
	sandboxImages  []string
	timeout        time.Duration
	probeTimeout   time.Duration
	concurrency    int
	output         string
	junit          string
	maxImages      int
}

func newVerifyCmd(s Streams) *cobra.Command {
	o := &verifyOptions{base: base{streams: s}, kube: newKubeFlags()}
	cmd := &cobra.Command{
		Use:   "verify IMAGE",
		Short: "Prove the pull path with a fresh, complete probe on a node of every pool, run through Kubernetes",
		Long: `Prove the pull path on a node of every pool, chosen without the image in its
cache: a complete probe in a hostNetwork pod, delivered without any pull, reading the
node's files read-only (--host-mount); --runtime-pull puts the kubelet's pull beside
it. What a run makes is deleted on every exit path ('pullpath cleanup' after a kill).

Exit codes: 0 every pool passes, 1 a pool fails (diagnosed), 2 could not run.
` + manual("verify.md"),
		Example: `  pullpath verify myreg.azurecr.io/team/app:1.4
  pullpath verify myreg.azurecr.io/team/app:1.4 --fresh --pool nodepool2 --pod shop/web-7d9f8b6c5-x2x7q --runtime-pull`,
		Args: oneImage("pullpath verify myreg.azurecr.io/team/app:1.4"),
	}
	lifecycle(cmd, o)
	f := cmd.Flags()
	o.kube.addFlags(f)
	f.StringArrayVar(&o.pools, "pool", nil, "only this pool (repeatable); default every pool")
	f.BoolVar(&o.allNodes, "all-nodes", false, "probe every eligible node, not one per pool")
	f.BoolVar(&o.fresh, "fresh", false, "insist on a node without the image cached")
	f.StringVar(&o.secret, "secret", "", "pull with this pull Secret (in -n)")
	f.StringVar(&o.pod, "pod", "", "pull with this pod's pull secrets (NS/NAME)")
	f.StringVar(&o.runNamespace, "run-namespace", "pullpath", "the run's namespace")
	f.BoolVar(&o.includeUnready, "include-unready", false, "also probe NotReady and cordoned nodes")
	f.BoolVar(&o.runtimePull, "runtime-pull", false, "a canary pod: the kubelet's real pull beside")
	f.StringVar(&o.probeBinary, "probe-binary", "", "the static linux pullpath binary to ship to the nodes (default: pullpath-probe-linux-<arch> next to this program, else the probe-only build embedded in pullpath)")
	f.StringVar(&o.delivery, "delivery", "auto", "attach, configmap or auto")
	f.StringVar(&o.probeImage, "probe-image", "", "run this probe image (pullpath image push)")
	f.StringVar(&o.hostMount, "host-mount", nodeprobe.HostMountRoot, "root (/) or narrow")
	f.StringArrayVar(&o.sandboxImages, "sandbox-image", nil, "a repository your nodes' sandbox image comes from, beside the known ones (repeatable): the probe runs on no other image")
	f.StringVar(&o.fromPod, "from-pod", "", "also probe from this pod's network (NS/NAME)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on the whole run")
	f.DurationVar(&o.probeTimeout, "probe-timeout", 3*time.Minute, "bound on each probe pod, from creation to its report")
	f.IntVar(&o.concurrency, "concurrency", 10, "pools probed at once")
	f.StringVarP(&o.output, "output", "o", "text", "text or json")
	f.StringVar(&o.junit, "junit", "", "also write a JUnit XML report here")
	f.IntVar(&o.maxImages, "node-max-images", cluster.DefaultMaxImages, "the kubelets' nodeStatusMaxImages: a node listing this many images is 'unknown', never 'without the image'")
	groupFlags(f, "More", "include-unready", "probe-binary", "sandbox-image", "timeout", "probe-timeout", "concurrency", "node-max-images")
	return cmd
}

// Complete takes IMAGE.
func (o *verifyOptions) Complete(args []string) error {
	o.image = args[0]
	return nil
}

// Validate checks the flags.
func (o *verifyOptions) Validate() error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if _, err := parseImage(o.image); err != nil {
		return err
	}
	if o.probeImage != "" {
		if _, err := parseImage(o.probeImage); err != nil {
			return fmt.Errorf("--probe-image: %w", err)
		}
		if o.probeBinary != "" {
			return errors.New("give --probe-image or --probe-binary, not both")
		}
	}
	switch {
	case o.fromPod != "" && o.probeImage == "":
		return errors.New("--from-pod runs the probe inside the pod as an ephemeral container of the probe image: give --probe-image too (pullpath image push builds and pushes it)")
	case o.secret != "" && o.pod != "":
		return errors.New("give --secret or --pod, not both")
	case o.concurrency < 1 || o.concurrency > 100:
		return fmt.Errorf("--concurrency %d: want 1 to 100", o.concurrency)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout %s: want a positive duration, e.g. 10m", o.timeout)
	case o.probeTimeout <= 0:
		return fmt.Errorf("--probe-timeout %s: want a positive duration, e.g. 3m", o.probeTimeout)
	case o.fresh && o.allNodes:
		return errors.New("--fresh chooses one fresh node per pool; --all-nodes probes every node: give one")
	case o.maxImages < 1:
		return fmt.Errorf("--node-max-images %d: want 1 or more", o.maxImages)
	case slices.Contains(o.pools, ""):
		return errors.New("--pool: an empty pool name (give the pool's name, as pullpath pod shows it)")
	case o.delivery != "auto" && o.delivery != nodeprobe.ModeAttach && o.delivery != nodeprobe.ModeConfigMap:
		return fmt.Errorf("--delivery %q: want auto, attach or configmap", o.delivery)
	case o.probeImage != "" && o.delivery != "auto":
		return errors.New("--probe-image runs the probe image itself: --delivery attach and configmap ship the binary instead; give one")
	}
	if err := checkNamespace("--run-namespace", o.runNamespace); err != nil {
		return err
	}
	if err := nodeprobe.CheckSandboxRepos(o.sandboxImages); err != nil {
		return err
	}
	if err := nodeprobe.CheckHostMount(o.hostMount); err != nil {
		return err
	}
	if err := checkPodRef("--pod", o.pod); err != nil {
		return err
	}
	if err := checkPodRef("--from-pod", o.fromPod); err != nil {
		return err
	}
	// found after the run, a JUnit file that cannot be written would cost the report
	if err := checkOutFile("--junit", o.junit); err != nil {
		return err
	}
	if o.probeBinary != "" {
		if err := checkExecutable("--probe-binary", o.probeBinary); err != nil {
			return err
		}
	}
	return o.kube.validate()
}

// checkExecutable refuses a file that cannot be a linux program: the nodes would only say so later.
func checkExecutable(flag, path string) error {
	// stat first: opening a FIFO blocks, and a device is not a program
	if fi, err := os.Stat(path); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	} else if fi.IsDir() {
		return fmt.Errorf("%s %s is a directory: give the static linux pullpath binary", flag, path)
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s %s is a %s, not a file: give the static linux pullpath binary", flag, path, capped.Kind(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != "\x7fELF" {
		return fmt.Errorf("%s %s is not a linux executable (scripts/build.sh writes dist/pullpath-probe-linux-<arch>)", flag, path)
	}
	return nil
}

// binary returns the static linux binary for goarch that the nodes will run, and where it came from.
func (o *verifyOptions) binary(goarch string) ([]byte, string, error) {
	b, src, err := probeBinary(o.probeBinary, "", goarch)
	if err != nil && o.probeBinary != "" {
		return nil, "", fmt.Errorf("--probe-binary: %w", err)
	}
	return b, src, err
}

// Run verifies, renders, and maps the verdict to the exit code.
func (o *verifyOptions) Run(runCtx context.Context) error {
	cs, err := o.kube.client()
	if err != nil {
		return err
	}
	ns, err := o.kube.namespace()
	if err != nil {
		return err
	}
	podRef := o.pod
	if podRef != "" && !strings.Contains(podRef, "/") {
		podRef = ns + "/" + podRef
	}
	fromPod := o.fromPod
	if fromPod != "" && !strings.Contains(fromPod, "/") {
		fromPod = ns + "/" + fromPod
	}
	ctx, cancel := context.WithTimeout(runCtx, o.timeout)
	defer cancel()
	vo := nodeprobe.VerifyOptions{Image: o.image, Pools: o.pools, AllNodes: o.allNodes, Fresh: o.fresh, Namespace: o.runNamespace,
		SecretNamespace: ns, Secret: o.secret, FromPod: podRef, IncludeUnready: o.includeUnready, RuntimePull: o.runtimePull,
		Binary: o.binary, Delivery: o.delivery, ProbeImage: o.probeImage, ProbeFromPod: fromPod, HostMount: o.hostMount, SandboxImages: o.sandboxImages, Timeout: o.probeTimeout, Concurrency: o.concurrency, MaxImages: o.maxImages,
		ProbeArgs: []string{"--timeout", probeBudget(o.probeTimeout).String()}}
	if isTerminal(o.streams.ErrOut) && o.output == "text" {
		vo.Progress = func(s string) { fmt.Fprintln(o.streams.ErrOut, "verify:", s) }
	}
	stopNotice := noticeInterrupt(runCtx, o.streams.ErrOut, o.runNamespace)
	v, err := nodeprobe.Verify(ctx, cs, vo)
	stopNotice()
	if v == nil {
		return err
	}
	var se *SignalError
	if errors.As(context.Cause(runCtx), &se) {
		v.Interrupted = signalName(se.Signal)
		fmt.Fprintf(o.streams.ErrOut, "verify: cleanup of run %s done: %s\n", v.Run, leftLine(v.LeftBehind))
	}
	runErr := err
	if runErr != nil {
		// the run could not start its probes: the report says what was cleaned up, the exit says 2
		v.Class = report.ClassOther
		v.Notes = append(v.Notes, "the run stopped before its probes: "+runErr.Error())
	}
	if o.junit != "" {
		if jerr := writeJUnit(o.junit, v); jerr != nil {
			return jerr
		}
	}
	if err := emit(o.streams.Out, o.output, v, func(w io.Writer) error {
		return writeFitted(o.cmd, w, func(w io.Writer) error { return report.WriteVerifyText(w, v) })
	}); err != nil {
		return err
	}
	if se != nil {
		return &ExitError{Code: se.ExitCode()}
	}
	if runErr != nil {
		return runErr
	}
	return verifyExit(v)
}

// noticeInterrupt says on errOut, when a signal cancels ctx, that the run stops and deletes what
// it made (which takes up to cluster.CleanupTimeout): a run silent after Ctrl-C reads as hung.
// stop ends the watch.
func noticeInterrupt(ctx context.Context, errOut io.Writer, ns string) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case <-ctx.Done():
			var se *SignalError
			if errors.As(context.Cause(ctx), &se) {
				fmt.Fprintf(errOut, "verify: interrupted by %s: stopping the probes, then deleting the pods, ConfigMaps and Secrets this run made in namespace %s (a second %s kills at once and leaves them for pullpath cleanup)\n",
					signalName(se.Signal), ns, signalName(se.Signal))
			}
		case <-done:
		}
	}()
	return func() { close(done); <-ended }
}

// leftLine says what a run's cleanup left.
func leftLine(left []string) string {
	if len(left) == 0 {
		return "nothing left"
	}
	return "left behind " + strings.Join(left, ", ") + " (pullpath cleanup deletes them)"
}

// verifyExit is 1 when a pool is not ok — a broken path, or a pool not verified (report.PoolResult.PodCause's
// rule: never ok) — or something was left behind; 2 is only for a run that could not start its probes.
func verifyExit(v *report.Verification) error {
	if v.Class != report.ClassOK || len(v.LeftBehind) > 0 {
		return &ExitError{Code: ExitBroken}
	}
	return nil
}

// writeJUnit writes v's JUnit XML report (report.WriteJUnit) to path.
func writeJUnit(path string, v *report.Verification) error {
	var b bytes.Buffer
	if err := report.WriteJUnit(&b, v); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	return nil
}

// probeBudget is the probe's own --timeout inside a probe pod: most of the pod's budget, the rest
// left for the pod to start and the report to be read back.
func probeBudget(pod time.Duration) time.Duration {
	return max(pod*4/5, pod-30*time.Second)
}
