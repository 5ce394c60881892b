//go:build !probeonly

package cli

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pullpath/pullpath/internal/capped"
	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/report"
)

type verifyOptions struct {
	streams        Streams
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
	timeout        time.Duration
	probeTimeout   time.Duration
	concurrency    int
	output         string
	junit          string
	maxImages      int
}

func newVerifyCmd(s Streams) *cobra.Command {
	o := &verifyOptions{streams: s, kube: newKubeFlags()}
	cmd := &cobra.Command{
		Use:   "verify IMAGE",
		Short: "Prove the pull path with a fresh, complete probe on a node of every pool, run through Kubernetes",
		Long: `Prove the pull path where it matters: on a node of every node pool, chosen among
the nodes that do not have the image in their cache (the newest Ready one), with a
complete probe of every layer, the node's resolver, routes and runtime configuration
(hostNetwork, dnsPolicy: Default, the host's files read-only for --host-root).

The probe reaches the node without any pull, on an image the node already has (the
sandbox image first, imagePullPolicy: Never): a 3 KB static loader in a ConfigMap
reads the probe-only build (12.8 MB, embedded in every pullpath build) from the pod's
stdin, streamed through the attach API into a memory volume, and runs it. Nothing but
the loader is stored in the API. Without create on pods/attach, or when a node's
stream fails, the binary goes in ConfigMaps instead (--delivery configmap: 13 of them).
A probe pod that cannot start is itself a finding, in the kubelet's words.

With --probe-image REF the probe pods run that image instead (built and pushed by
'pullpath image push'; pulled by the node with imagePullPolicy: IfNotPresent): no
ConfigMaps, no loader. The node must be able to pull it, so put it where the node's
pull path surely works, or pre-load it; a node that cannot pull it is a finding.
With --from-pod POD (and --probe-image) the probe also runs inside that pod's own
network namespace, as an ephemeral container, and its verdict is set beside the
node's: a pod that reaches the registry through a route of its own (a VPN sidecar)
while its node does not still cannot pull, because the node pulls. Kubernetes cannot
remove an ephemeral container: it stays, exited, in the pod's spec.

With --runtime-pull, a canary pod beside each probe asks the kubelet for a real pull
of the image (pull policy Always, the same credentials, a command that never runs):
its result is explained and compared with the probe's verdict. A pull that succeeds
because the layers were cached proves nothing about the network, and is said so.

Everything a run creates carries the label pullpath.dev/run=<id>, an owner and an
expiry; it is deleted on every exit path (success, failure, Ctrl-C, SIGTERM, timeout),
retrying while the API server is away; 'pullpath cleanup' removes what a killed run left. Rights are checked first: a missing
permission is named before anything is created (deploy/rbac.yaml has them all).

Exit codes: 0 every pool passes, 1 a pool fails (diagnosed), 2 could not run.`,
		Example: `  pullpath verify myreg.azurecr.io/team/app:1.4
  pullpath verify myreg.azurecr.io/team/app:1.4 --fresh --pool nodepool2 --pod shop/web-7d9f8b6c5-x2x7q --runtime-pull
  kubectl pullpath verify registry.corp.example/app:1 --all-nodes -o json --junit verify.xml`,
		Args: oneImage("pullpath verify myreg.azurecr.io/team/app:1.4"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.image = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	f := cmd.Flags()
	o.kube.addFlags(f)
	f.StringArrayVar(&o.pools, "pool", nil, "verify only this pool (repeatable); default every pool")
	f.BoolVar(&o.allNodes, "all-nodes", false, "probe every eligible node, not one per pool")
	f.BoolVar(&o.fresh, "fresh", false, "insist on a node without the image in its cache; a pool without one fails with how to get one")
	f.StringVar(&o.secret, "secret", "", "pull with this kubernetes.io/dockerconfigjson (or legacy kubernetes.io/dockercfg) Secret (in -n's namespace)")
	f.StringVar(&o.pod, "pod", "", "pull with the credentials the kubelet uses for this pod (NAMESPACE/NAME, or NAME in -n's namespace): every pull secret of the pod that covers the image, tried in turn")
	f.StringVar(&o.runNamespace, "run-namespace", "pullpath", "namespace for the run's pods and ConfigMaps (Pod Security level privileged: hostNetwork and hostPath); created when missing and allowed")
	f.BoolVar(&o.includeUnready, "include-unready", false, "also probe NotReady and cordoned nodes")
	f.BoolVar(&o.runtimePull, "runtime-pull", false, "beside each probe, a canary pod with the image: the kubelet's real pull, compared with the probe")
	f.StringVar(&o.probeBinary, "probe-binary", "", "the static linux pullpath binary to ship to the nodes (default: pullpath-probe-linux-<arch> next to this program, else the probe-only build embedded in pullpath)")
	f.StringVar(&o.delivery, "delivery", "auto", "how the probe binary reaches the nodes: attach (streamed into the probe pod, nothing stored), configmap (stored in ConfigMaps), or auto (attach when allowed, else ConfigMaps)")
	f.StringVar(&o.probeImage, "probe-image", "", "run the probe pods on this probe image (pullpath image push) instead of shipping the binary in ConfigMaps")
	f.StringVar(&o.fromPod, "from-pod", "", "also probe from this pod's own network namespace (NAMESPACE/NAME, or NAME in -n's namespace), as an ephemeral container of --probe-image")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on the whole run")
	f.DurationVar(&o.probeTimeout, "probe-timeout", 3*time.Minute, "bound on each probe pod, from creation to its report")
	f.IntVar(&o.concurrency, "concurrency", 10, "pools probed at once")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	f.StringVar(&o.junit, "junit", "", "also write a JUnit XML report to this file (a test case per pool)")
	f.IntVar(&o.maxImages, "node-max-images", cluster.DefaultMaxImages, "the kubelets' nodeStatusMaxImages: a node listing this many images is 'unknown', never 'without the image'")
	return cmd
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
	case o.delivery != "auto" && o.delivery != cluster.ModeAttach && o.delivery != cluster.ModeConfigMap:
		return fmt.Errorf("--delivery %q: want auto, attach or configmap", o.delivery)
	case o.probeImage != "" && o.delivery != "auto":
		return errors.New("--probe-image runs the probe image itself: --delivery attach and configmap ship the binary instead; give one")
	}
	if err := checkNamespace("--run-namespace", o.runNamespace); err != nil {
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
func (o *verifyOptions) Run(cmd *cobra.Command) error {
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
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	vo := cluster.VerifyOptions{Image: o.image, Pools: o.pools, AllNodes: o.allNodes, Fresh: o.fresh, Namespace: o.runNamespace,
		SecretNamespace: ns, Secret: o.secret, FromPod: podRef, IncludeUnready: o.includeUnready, RuntimePull: o.runtimePull,
		Binary: o.binary, Delivery: o.delivery, ProbeImage: o.probeImage, ProbeFromPod: fromPod, Timeout: o.probeTimeout, Concurrency: o.concurrency, MaxImages: o.maxImages,
		ProbeArgs: []string{"--timeout", probeBudget(o.probeTimeout).String()}}
	if isTerminal(o.streams.ErrOut) && o.output == "text" {
		vo.Progress = func(s string) { fmt.Fprintln(o.streams.ErrOut, "verify:", s) }
	}
	v, err := cluster.Verify(ctx, cs, vo)
	if v == nil {
		return err
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
	if o.output == "json" {
		err = report.WriteJSON(o.streams.Out, v)
	} else {
		err = writeVerifyText(o.streams.Out, v)
	}
	if err != nil {
		return err
	}
	var se *SignalError
	if errors.As(context.Cause(cmd.Context()), &se) {
		return &ExitError{Code: se.ExitCode()}
	}
	if runErr != nil {
		return runErr
	}
	return verifyExit(v)
}

// verifyExit is 1 when a pool is not ok — a broken path, or a pool not verified (report.PoolResult.PodCause's
// rule: never ok) — or something was left behind; 2 is only for a run that could not start its probes.
func verifyExit(v *report.Verification) error {
	if v.Class != report.ClassOK || len(v.LeftBehind) > 0 {
		return &ExitError{Code: ExitBroken}
	}
	return nil
}

// verifySteps are the columns of the pool × step matrix.
var verifySteps = []struct {
	name  string
	steps []report.StepName
}{
	{"DNS", []report.StepName{report.StepDNS}}, {"ROUTE", []report.StepName{report.StepRoute}}, {"TCP", []report.StepName{report.StepTCP}},
	{"TLS", []report.StepName{report.StepTLS}}, {"AUTH", []report.StepName{report.StepHTTP, report.StepAuth}},
	{"MANIFEST", []report.StepName{report.StepManifest}}, {"BLOBS", []report.StepName{report.StepBlob}},
}

// cell is one pool's verdict on a step, over every endpoint the pull touched.
func cell(p *report.Probe, steps []report.StepName) string {
	if p == nil {
		return "·"
	}
	seen, fail, skip := false, false, false
	for _, e := range p.Endpoints {
		for _, s := range steps {
			switch e.Steps[s] {
			case report.Fail:
				fail = true
			case report.Pass, report.Warn:
				seen = true
			case report.Skip:
				skip = true
			}
		}
	}
	switch {
	case fail:
		return "FAIL"
	case seen:
		return "pass"
	case skip:
		return "skip"
	}
	return "·"
}

func writeVerifyText(w io.Writer, v *report.Verification) error {
	b := &strings.Builder{}
	failing := 0
	for _, p := range v.Pools {
		if p.Class != report.ClassOK {
			failing++
		}
	}
	if v.Class == report.ClassOK {
		fmt.Fprintf(b, "OK  %s pulls completely on a node of every pool (%d)\n\n", v.Image, len(v.Pools))
	} else {
		fmt.Fprintf(b, "BROKEN  %s: %d of %d pools fail (first: class %s)\n\n", v.Image, failing, len(v.Pools), v.Class)
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "POOL\tNODE")
	for _, s := range verifySteps {
		fmt.Fprint(tw, "\t"+s.name)
	}
	fmt.Fprintln(tw, "\tCLASS\tFAILING HOST (ROLE)")
	for _, p := range v.Pools {
		node := p.Node
		if node == "" {
			node = "-"
		}
		fmt.Fprintf(tw, "%s\t%s", p.Pool, node)
		for _, s := range verifySteps {
			fmt.Fprint(tw, "\t"+cell(p.Probe, s.steps))
		}
		host, cause := "-", p.PodCause()
		switch {
		case p.Probe != nil && p.Probe.Failing != nil:
			host = p.Probe.Failing.Host + " (" + string(p.Probe.Failing.Role) + ")"
		case p.Summary != nil && p.Summary.Host != "":
			host = p.Summary.Host + " (" + string(p.Summary.Role) + ")"
		case cause != nil && cause.Host != "":
			host = cause.Host + " (" + string(cause.Role) + ")"
		}
		fmt.Fprintf(tw, "\t%s\t%s\n", p.Class, host)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range v.Pools {
		fmt.Fprintf(b, "\npool %s", p.Pool)
		if p.Node != "" {
			cache := "unknown (image list full)"
			if p.ImagePresentBefore != nil {
				cache = map[bool]string{true: "cached", false: "not cached"}[*p.ImagePresentBefore]
			}
			fmt.Fprintf(b, " · node %s (created %s, image %s before) · %s", p.Node, p.NodeCreated.Format("2006-01-02 15:04Z"), cache, p.Choice)
		}
		b.WriteString("\n")
		cause := p.PodCause()
		switch {
		case p.Probe != nil && p.Probe.Class == report.ClassOK:
			fmt.Fprintf(b, "  OK      %s\n", p.Probe.Summary)
		case p.Probe != nil:
			f := p.Probe.Failing
			where := ""
			if f != nil {
				where = fmt.Sprintf(" · %s (%s) · step %s", f.Host, f.Role, f.Step)
			}
			fmt.Fprintf(b, "  BROKEN  class %s%s · %s\n          %s\n", p.Probe.Class, where, p.Probe.Code, p.Probe.Summary)
			if p.Probe.WhereToLook != "" {
				fmt.Fprintf(b, "          look at: %s\n", p.Probe.WhereToLook)
			}
		case p.Summary != nil:
			writeTermVerdict(b, p.Summary)
		case cause != nil:
			fmt.Fprintf(b, "  NOT VERIFIED  class %s%s · %s · the probe pod could not pull its own image: %s was not probed on this node\n          %s\n          %s\n",
				cause.Class, hostRole(cause), cause.Code, v.Image, cause.Reason, p.Error)
		default:
			fmt.Fprintf(b, "  NO PROBE  %s\n", p.Error)
			for _, f := range p.Findings {
				fmt.Fprintf(b, "          %s %s: %s\n", f.Class, f.Code, f.Reason)
			}
		}
		if len(v.PullSecrets) > 0 || triedInTurn(p.Probe) {
			writeIdentity(b, p.Probe)
		}
		if rp := p.RuntimePull; rp != nil && rp.Result != "skipped" {
			agree := "—"
			if rp.Agrees != nil {
				agree = map[bool]string{true: "agrees with the probe", false: "DISAGREES with the probe"}[*rp.Agrees]
			}
			line := rp.Result
			if rp.Result == "failed" {
				line = fmt.Sprintf("failed: class %s · %s (%s) · %s", rp.Class, rp.Host, rp.Role, rp.Code)
			}
			fmt.Fprintf(b, "  runtime pull (kubelet)  %s · %s · %s\n", line, rp.Took.Std().Round(time.Millisecond), agree)
			if rp.Note != "" {
				fmt.Fprintf(b, "          %s\n", rp.Note)
			}
		}
	}
	if len(v.PullSecrets) > 0 {
		b.WriteString("\nnode probes and canaries\n")
		writeSecrets(b, v.PullSecrets, "they pull with the node's own configuration")
	}
	if fp := v.FromPod; fp != nil {
		fmt.Fprintf(b, "\nfrom pod %s (node %s, pool %s, ephemeral container %s)\n", fp.Pod, fp.Node, fp.Pool, fp.Container)
		switch {
		case fp.Probe == nil && fp.Summary != nil:
			writeTermVerdict(b, fp.Summary)
		case fp.Probe == nil:
			fmt.Fprintf(b, "  NO PROBE  %s\n", fp.Error)
			if f := report.Cause(fp.Findings); f != nil {
				fmt.Fprintf(b, "            the probe image's pull, as explain reads it: class %s%s · %s\n", f.Class, hostRole(f), f.Code)
			}
		case fp.Probe.Class == report.ClassOK:
			fmt.Fprintf(b, "  OK      %s\n", fp.Probe.Summary)
		default:
			where := ""
			if f := fp.Probe.Failing; f != nil {
				where = fmt.Sprintf(" · %s (%s) · step %s", f.Host, f.Role, f.Step)
			}
			fmt.Fprintf(b, "  BROKEN  class %s%s · %s\n          %s\n", fp.Probe.Class, where, fp.Probe.Code, fp.Probe.Summary)
		}
		writeSecrets(b, fp.PullSecrets, "the probe in the pod is anonymous")
		writeIdentity(b, fp.Probe)
		fmt.Fprintf(b, "  => %s\n", fp.Comparison)
	}
	for _, n := range v.Notes {
		fmt.Fprintf(b, "\nnote  %s", n)
	}
	if len(v.Notes) > 0 {
		b.WriteString("\n")
	}
	if len(v.LeftBehind) > 0 {
		fmt.Fprintf(b, "\nLEFT BEHIND (run 'pullpath cleanup --run %s'): %s\n", v.Run, strings.Join(v.LeftBehind, ", "))
	} else {
		fmt.Fprintf(b, "\nrun %s in namespace %s: every object it made is deleted (%s)\n", v.Run, v.Namespace, v.Duration.Std().Round(time.Millisecond))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTermVerdict renders a probe's compact verdict, all that is left when its log (the full report)
// could not be read: it is the probe's verdict, not a missing one.
func writeTermVerdict(b *strings.Builder, s *report.ProbeSummary) {
	verdict, where := "BROKEN", ""
	if s.Class == report.ClassOK {
		verdict = "OK    "
	}
	if s.Host != "" {
		where = fmt.Sprintf(" · %s (%s) · step %s", s.Host, s.Role, s.Step)
	}
	fmt.Fprintf(b, "  %s  class %s%s · %s · from the probe's termination message (its log could not be read)\n          %s\n", verdict, s.Class, where, s.Code, s.Summary)
}

// writeSecrets says which pull secrets a probe presented, which it could not and why.
func writeSecrets(b *strings.Builder, secrets []report.PodPullSecret, none string) {
	var given, not []string
	for _, ps := range secrets {
		if ps.HandedOver {
			given = append(given, ps.Name)
		} else {
			not = append(not, ps.Name+" ("+ps.Problem+")")
		}
	}
	switch {
	case len(given) == 1:
		fmt.Fprintf(b, "  pull secrets  presented: %s\n", given[0])
	case len(given) > 1:
		fmt.Fprintf(b, "  pull secrets  presented, tried in turn as the kubelet does: %s\n", strings.Join(given, ", "))
	case len(secrets) > 0:
		fmt.Fprintf(b, "  pull secrets  none presented: %s\n", none)
	}
	if len(not) > 0 {
		fmt.Fprintf(b, "  not presented %s\n", strings.Join(not, "; "))
	}
}

// triedInTurn reports whether a probe had several credentials for the image (the kubelet tries each).
func triedInTurn(p *report.Probe) bool {
	if p == nil {
		return false
	}
	return slices.ContainsFunc(p.Warnings, inTurn)
}

// inTurn reports whether w tells what each of several credentials got.
func inTurn(w report.Warning) bool {
	return w.Code == report.CodePullSecretMore || w.Code == report.CodeCredentialProviderMore
}

// writeIdentity says what a probe pulled with, and what each credential got when it tried several
// in turn: the pod's pull secrets, the kubelet's docker config and its providers' answers
// (PULL_SECRET_MORE), or several answers of its providers alone (CREDENTIAL_PROVIDER_MORE).
func writeIdentity(b *strings.Builder, p *report.Probe) {
	if p == nil {
		return
	}
	if p.CredentialSource != "" {
		fmt.Fprintf(b, "  identity  %s\n", p.CredentialSource)
	}
	for _, w := range p.Warnings {
		if inTurn(w) {
			fmt.Fprintf(b, "  in turn   %s\n", w.Message)
		}
	}
}

// JUnit XML: a test suite per run, a test case per pool.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junitVerdict is a pool's broken path as a JUnit failure: its class as the type, and the class,
// code and failing host in the message.
func junitVerdict(v report.ProbeSummary, text string) *junitFailure {
	msg := fmt.Sprintf("class %s %s", v.Class, v.Code)
	if v.Host != "" {
		msg += fmt.Sprintf(" on %s (%s) at %s", v.Host, v.Role, v.Step)
	}
	return &junitFailure{Message: msg, Type: string(v.Class), Text: text}
}

// junitFinding is a pool whose probe pod could not pull its own image (report.PoolResult.PodCause):
// the class as the type, the class, code and host in the message, as junitVerdict.
func junitFinding(f *report.Finding, why string) *junitFailure {
	msg := fmt.Sprintf("class %s %s", f.Class, f.Code)
	if f.Host != "" {
		msg += fmt.Sprintf(" on %s (%s)", f.Host, f.Role)
	}
	return &junitFailure{Message: msg, Type: string(f.Class), Text: why + " (the probe pod's events, as explain reads them; the image under test was not probed)\n" + f.Reason + "\n" + f.Message}
}

func writeJUnit(path string, v *report.Verification) error {
	s := junitSuite{Name: "pullpath verify " + v.Image, Time: fmt.Sprintf("%.3f", v.Duration.Std().Seconds())}
	for _, p := range v.Pools {
		c := junitCase{Name: "pool " + p.Pool + " node " + p.Node, Classname: "pullpath.verify", Time: "0"}
		cause := p.PodCause()
		switch {
		case p.Probe != nil:
			c.Time = fmt.Sprintf("%.3f", p.Probe.Duration.Std().Seconds())
			if p.Probe.Class != report.ClassOK {
				c.Failure = junitVerdict(report.Summarize(p.Probe), p.Probe.Summary+"\n"+p.Probe.WhereToLook)
				s.Failures++
			} else {
				c.SystemOut = p.Probe.Summary
			}
		case p.Summary != nil:
			// the probe ran and gave its verdict; only its full report (the log) is missing
			const from = " (from the probe's termination message: its log could not be read)"
			if p.Summary.Class != report.ClassOK {
				c.Failure = junitVerdict(*p.Summary, p.Summary.Summary+from)
				s.Failures++
			} else {
				c.SystemOut = p.Summary.Summary + from
			}
		case cause != nil:
			// the probe pod could not pull its own image: the pool's class (PodCause's rule)
			c.Failure = junitFinding(cause, p.Error)
			s.Failures++
		default:
			text := p.Error
			for _, f := range p.Findings {
				text += "\n" + f.Message
			}
			c.Error = &junitFailure{Message: p.Error, Type: "no-probe", Text: text}
			s.Errors++
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	out, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append([]byte(xml.Header), append(out, '\n')...), 0o644); err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	return nil
}

type cleanupOptions struct {
	streams      Streams
	kube         *kubeFlags
	run          string
	runNamespace string
	expired      bool
	timeout      time.Duration
	output       string
}

func newCleanupCmd(s Streams) *cobra.Command {
	o := &cleanupOptions{streams: s, kube: newKubeFlags()}
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete what verify runs left behind (pods, ConfigMaps, Secrets labelled app.kubernetes.io/managed-by=pullpath)",
		Long: `Delete every object pullpath verify made in the run namespace — of one run (--run ID)
or of all — and wait until they are gone. verify cleans up after itself on every exit
path, retrying while the API server is away; this is for a run that was killed (SIGKILL,
a lost machine). Every object carries pullpath.dev/expires (a Unix time after which its
run is surely over): --expired deletes only those, so a schedule cannot disturb a run.

The run namespace is --run-namespace, or -n when only -n is given (default pullpath).

Exit codes: 0 nothing left, 1 something could not be deleted (listed), 2 could not run
(no cluster, refused credentials, no rights, an API that answers an error, a bad flag).`,
		Example: `  pullpath cleanup
  pullpath cleanup --expired -n pullpath
  kubectl pullpath cleanup --run 3f9c04ab --run-namespace pullpath`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.run != "" {
				if errs := validation.IsValidLabelValue(o.run); len(errs) > 0 {
					return fmt.Errorf("--run %q: not a run id (verify prints it: pullpath.dev/run=ID)", o.run)
				}
			}
			if n := o.kube.overrides.Context.Namespace; n != "" {
				if cmd.Flags().Changed("run-namespace") && n != o.runNamespace {
					return fmt.Errorf("-n %s and --run-namespace %s name two namespaces: give one", n, o.runNamespace)
				}
				o.runNamespace = n
			}
			if err := checkNamespace("--run-namespace", o.runNamespace); err != nil {
				return err
			}
			if o.output != "text" && o.output != "json" {
				return fmt.Errorf("-o %q: want text or json", o.output)
			}
			if o.timeout <= 0 {
				return fmt.Errorf("--timeout %s: want a positive duration", o.timeout)
			}
			if err := o.kube.validate(); err != nil {
				return err
			}
			cs, err := o.kube.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			// a cluster that cannot be asked is "could not run" (2), not objects left behind (1):
			// one question first, answered at once, never retried
			if _, err := cs.Core.Pods(o.runNamespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return cleanupRefusal(err, o.runNamespace)
			}
			left, err := cluster.Cleanup(ctx, cs, cluster.CleanupOptions{Namespace: o.runNamespace, Run: o.run, Expired: o.expired})
			if err != nil {
				return cleanupRefusal(err, o.runNamespace)
			}
			if o.output == "json" {
				if err := report.WriteJSON(o.streams.Out, &report.Cleanup{APIVersion: report.APIVersion, Kind: "Cleanup",
					Namespace: o.runNamespace, Run: o.run, LeftBehind: left}); err != nil {
					return err
				}
			} else if len(left) > 0 {
				fmt.Fprintf(o.streams.Out, "left behind: %s\n", strings.Join(left, ", "))
			} else {
				fmt.Fprintf(o.streams.Out, "nothing of pullpath is left in namespace %s\n", o.runNamespace)
			}
			if len(left) > 0 {
				return &ExitError{Code: ExitBroken}
			}
			return nil
		},
	}
	o.kube.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.run, "run", "", "only this run's objects (the id verify prints); default every run")
	cmd.Flags().StringVar(&o.runNamespace, "run-namespace", "pullpath", "the namespace verify ran in (-n alone means the same)")
	cmd.Flags().BoolVar(&o.expired, "expired", false, "only objects whose run is surely over (label pullpath.dev/expires in the past)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", time.Minute, "bound on the whole cleanup, retries while the API server is away included")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	return cmd
}

// cleanupRefusal is cleanup's exit 2: why the cluster could not be asked, in one line.
func cleanupRefusal(err error, ns string) error {
	var se apierrors.APIStatus
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("cleanup: the kubeconfig's identity may not list pods in namespace %s (deploy/rbac.yaml has the rights) — nothing was deleted", ns)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("cleanup: the API server refused the kubeconfig's credentials (401 Unauthorized): log in again — nothing was deleted")
	case errors.As(err, &se):
		st := se.Status()
		return fmt.Errorf("cleanup: the API server answered %d %s to a list of pods in namespace %s (is the kubeconfig's server a Kubernetes API server?) — nothing was deleted", st.Code, http.StatusText(int(st.Code)), ns)
	}
	return fmt.Errorf("cleanup: cannot reach the cluster to list pods in namespace %s: %w — nothing was deleted", ns, err)
}

// probeBudget is the probe's own --timeout inside a probe pod: most of the pod's budget, the rest
// left for the pod to start and the report to be read back.
func probeBudget(pod time.Duration) time.Duration {
	return max(pod*4/5, pod-30*time.Second)
}

// hostRole is " · HOST (ROLE)" for a finding that names its host, else "".
func hostRole(f *report.Finding) string {
	if f.Host == "" {
		return ""
	}
	return fmt.Sprintf(" · %s (%s)", f.Host, f.Role)
}
