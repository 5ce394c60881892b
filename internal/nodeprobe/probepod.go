package nodeprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/loader"
	"github.com/pullpath/pullpath/internal/report"
)

// verifyNode runs the probe pod (and the canary) on one node and fills its result.
func (r *run) verifyNode(ctx context.Context, n *corev1.Node, res *report.PoolResult) {
	res.Class = report.ClassOther
	if r.mode == ModeImage {
		r.verifyWith(ctx, n, res, func() { r.probePod(ctx, n, nil, r.o.ProbeImage, res) })
		return
	}
	arch := n.Status.NodeInfo.Architecture
	if arch == "" {
		arch = n.Labels["kubernetes.io/arch"]
	}
	images := borrowable(n, r.o.SandboxImages)
	if len(images) == 0 {
		res.Error = noSandbox(n, r.o.SandboxImages)
		return
	}
	r.verifyWith(ctx, n, res, func() {
		mode, fallback := r.mode, ""
		for {
			d := r.deliver(ctx, arch, mode)
			if d.err != nil {
				res.Error = "cannot deliver the probe to " + n.Name + " (linux/" + arch + "): " + d.err.Error()
				return
			}
			res.Delivery = mode
			broke := r.onImages(ctx, n, d, images, res)
			if res.DeliveryStats != nil {
				res.DeliveryStats.Fallback = fallback
			}
			// one retry the other way, unless the user chose attach: a stream that breaks (a proxy
			// in front of the API server that cuts upgrades, a kubelet without streaming) is not
			// the node's pull path
			if broke != "" && (r.o.Delivery == ModeAttach || ctx.Err() != nil) {
				res.Error = "the probe binary could not be streamed to " + n.Name + ": " + broke
			}
			if broke == "" || mode != ModeAttach || r.o.Delivery == ModeAttach || ctx.Err() != nil {
				return
			}
			fallback = "the attach stream failed (" + broke + "): retried with ConfigMaps"
			r.note("node %s: the attach stream failed (%s); its probe was delivered in ConfigMaps instead", n.Name, broke)
			*res = report.PoolResult{Pool: res.Pool, Node: res.Node, NodeCreated: res.NodeCreated, Choice: res.Choice,
				ImagePresentBefore: res.ImagePresentBefore, Class: report.ClassOther}
			mode = ModeConfigMap
		}
	})
}

// onImages runs the probe pod on the first of images the node still has (a listed image may be
// gone: ErrImageNeverPull), and returns why the attach stream broke, if it did.
func (r *run) onImages(ctx context.Context, n *corev1.Node, d *delivery, images []string, res *report.PoolResult) (broke string) {
	var gone []string
	for _, img := range images[:min(len(images), 3)] {
		out := r.probePod(ctx, n, d, img, res)
		if !out.imageGone {
			return out.broke
		}
		gone = append(gone, img)
		r.note("node %s: image %s is listed but gone (ErrImageNeverPull); trying the next", n.Name, img)
	}
	res.Error = fmt.Sprintf("node %s: every image tried to run the probe on without a pull is listed in status.images but gone (ErrImageNeverPull): %s", n.Name, strings.Join(gone, ", "))
	return ""
}

// verifyWith runs probe on n, with the canary beside it when asked.
func (r *run) verifyWith(ctx context.Context, n *corev1.Node, res *report.PoolResult, probe func()) {
	var canary chan *report.RuntimePull
	if r.o.RuntimePull {
		canary = make(chan *report.RuntimePull, 1)
		go func() { canary <- r.runtimePull(ctx, n, res.ImagePresentBefore) }()
	}
	probe()
	if canary != nil {
		res.RuntimePull = <-canary
		res.RuntimePull.Agrees = agrees(res)
	} else {
		res.RuntimePull = &report.RuntimePull{Result: "skipped", Note: "--runtime-pull not given"}
	}
}

// agrees compares the kubelet's real pull with the probe.
func agrees(res *report.PoolResult) *bool {
	rp := res.RuntimePull
	if rp == nil || rp.Result == "skipped" || res.Probe == nil {
		return nil
	}
	okProbe := res.Probe.Class == report.ClassOK
	if rp.Result == "ok" {
		if rp.Cached && !okProbe {
			return nil // a cached pull proves nothing about the network
		}
		return boolp(okProbe)
	}
	return boolp(!okProbe && rp.Class == res.Probe.Class)
}

func (r *run) probeArgs(n *corev1.Node) []string {
	args := []string{"probe", r.o.Image, "--host-root", "/host", "-o", "json", "--summary-file", "/dev/termination-log", "--node", n.Name}
	args = append(args, secretArgs(r.secretEnv)...)
	return append(args, r.o.ProbeArgs...)
}

// podOutcome is what a probe pod's run means for the caller: try the next image, or the other
// delivery.
type podOutcome struct {
	imageGone bool   // the image is listed in status.images but gone (ErrImageNeverPull)
	broke     string // why the attach stream failed before the probe started
}

// probePod runs one probe pod on n with image img and fills res.
func (r *run) probePod(ctx context.Context, n *corev1.Node, d *delivery, img string, res *report.PoolResult) podOutcome {
	name := fmt.Sprintf("pullpath-%s-probe-%s", r.id, shortName(n.Name))
	pod := r.probeSpec(name, n, d, img)
	created := time.Now()
	if _, err := r.cs.Core.Pods(r.o.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		res.Error = "cannot create the probe pod: " + cluster.APIError(err, "create", "pods", r.o.Namespace, name).Error()
		return podOutcome{}
	}
	defer r.deletePod(name)
	finished := func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || waitingOn(p, "ErrImageNeverPull", "CreateContainerError", "CreateContainerConfigError", "RunContainerError",
			"ErrImagePull", "ImagePullBackOff", "InvalidImageName")
	}
	// one budget from creation to the report, however many waits
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	var stream *attachStream
	var p *corev1.Pod
	var err error
	if d != nil && d.mode == ModeAttach {
		// one wait: the stream starts when the loader runs, and the wait ends when the pod does
		// or the stream breaks
		p, err = r.waitPod(ctx, name, func(p *corev1.Pod) bool {
			if finished(p) {
				return true
			}
			if stream == nil && Running(p) {
				stream = r.attach(ctx, name, d.bin)
			}
			return stream.failed()
		})
		if stream != nil {
			defer stream.stop()
			if stream.failed() && (p == nil || terminated(p) == nil) {
				return podOutcome{broke: stream.err().Error()}
			}
		}
	} else {
		p, err = r.waitPod(ctx, name, finished)
	}
	if d != nil {
		res.DeliveryStats = &report.DeliveryStats{Source: d.source, Bytes: d.size, Start: report.Duration(probeStart(p, created, stream))}
	}
	if err != nil {
		if p == nil {
			p = pod // never read back: its events may still say why
		}
		r.noProbe(ctx, res, p, fmt.Sprintf("the probe pod on %s did not finish: %v", n.Name, err))
		return podOutcome{}
	}
	if waitingOn(p, "ErrImageNeverPull") {
		return podOutcome{imageGone: true}
	}
	if w := Waiting(p); w != nil {
		r.noProbe(ctx, res, p, fmt.Sprintf("the probe pod on %s could not start: %s: %s", n.Name, w.Reason, w.Message))
		return podOutcome{}
	}
	term := terminated(p)
	if term != nil && d != nil && loader.Failed(term.ExitCode) {
		// the loader's own line: the binary did not arrive whole, or could not run
		why := strings.TrimSpace(term.Message)
		if d.mode == ModeAttach && term.ExitCode == loader.ExitSize {
			return podOutcome{broke: why}
		}
		if d.mode == ModeConfigMap && term.ExitCode != loader.ExitExec {
			// a part gone or replaced: the next probe on such a node delivers again
			r.redeliver(ctx, n.Status.NodeInfo.Architecture)
		}
		r.noProbe(ctx, res, p, fmt.Sprintf("the probe binary did not run on %s (%s delivery): %s", n.Name, d.mode, why))
		return podOutcome{}
	}
	rep := r.fullReport(ctx, name)
	if rep == nil && term != nil && term.Message != "" {
		var s report.ProbeSummary
		if json.Unmarshal([]byte(term.Message), &s) == nil && s.Class != "" {
			// the compact verdict stands on its own: it is not passed off as a full report
			res.Summary, res.Class = &s, s.Class
			res.Error = "the probe's full report (its log) could not be read: the verdict is its termination message"
			return podOutcome{}
		}
	}
	if rep == nil {
		msg := ""
		if term != nil {
			msg = fmt.Sprintf("exit %d %s: %s", term.ExitCode, term.Reason, strings.TrimSpace(term.Message))
		}
		r.noProbe(ctx, res, p, fmt.Sprintf("the probe on %s left no report (%s)", n.Name, msg))
		return podOutcome{}
	}
	res.Probe, res.Class = rep, rep.Class
	return podOutcome{}
}

// probeStart is how long after its creation the probe started: when the stream delivered the last
// byte (attach), else when the container started (the loader joins the parts in a moment).
func probeStart(p *corev1.Pod, created time.Time, s *attachStream) time.Duration {
	if s != nil {
		if t := s.sentAt(); !t.IsZero() {
			return t.Sub(created)
		}
	}
	if p != nil {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && !t.StartedAt.IsZero() {
				return t.StartedAt.Sub(p.CreationTimestamp.Time)
			}
			if rn := cs.State.Running; rn != nil {
				return rn.StartedAt.Sub(p.CreationTimestamp.Time)
			}
		}
	}
	return 0
}

// Running reports whether p's container runs.
func Running(p *corev1.Pod) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running != nil {
			return true
		}
	}
	return false
}

func shortName(s string) string {
	if len(s) > 30 {
		return s[len(s)-30:]
	}
	return strings.Trim(s, "-.")
}

// probeSpec is the probe pod on n: with d, the binary from ConfigMaps run by the loader on img
// (already on the node); with d nil, the probe image img itself.
func (r *run) probeSpec(name string, n *corev1.Node, d *delivery, img string) *corev1.Pod {
	return r.nodePod(name, "probe", n, d, img, r.probeArgs(n))
}

// nodePod is a pod on n that sees the node as its runtime does (its network, resolver and files,
// read-only), running pullpath with args: the probe pod (role "probe": one run, then it ends) or
// the resident agent (role "agent": restarted by the kubelet, never ends by itself).
func (r *run) nodePod(name, role string, n *corev1.Node, d *delivery, img string, args []string) *corev1.Pod {
	resident := role == roleAgent
	f, t := false, true
	zero := int64(0)
	vols, mounts := hostVolumes(r.o.HostMount)
	command := append([]string{"/pullpath"}, args...)
	pull := corev1.PullIfNotPresent
	stdin := false
	if d != nil {
		vols, mounts = r.loaderVolumes(d, vols, mounts)
		command = loader.Command("/pp/parts", "/pp/run/pullpath", d.size, d.sha256, args...)
		if d.mode == ModeAttach {
			// the loader reads the binary from stdin, which the kubelet holds open until the one
			// attach that streams it ends (stdinOnce)
			command = loader.StreamCommand("/pp/parts/"+loader.File, "/pp/run/pullpath", d.size, d.sha256, args...)
			stdin = true
		}
		pull = corev1.PullNever
	}
	m := r.meta(name, role)
	m.Labels["pullpath.dev/node"] = shortName(n.Name)
	restart, deadline, grace := corev1.RestartPolicyNever, new(int64(r.o.Timeout.Seconds())+30), &zero
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	if resident {
		// the agent lives as long as the watcher wants it: the kubelet restarts it in place
		restart, deadline, grace = corev1.RestartPolicyAlways, nil, new(int64(5))
		requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
	}
	return &corev1.Pod{
		ObjectMeta: m,
		Spec: corev1.PodSpec{
			NodeName: n.Name, HostNetwork: true, DNSPolicy: corev1.DNSDefault, RestartPolicy: restart,
			ActiveDeadlineSeconds: deadline, TerminationGracePeriodSeconds: grace,
			Tolerations:                  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			AutomountServiceAccountToken: &f, EnableServiceLinks: &f,
			// root only to read the node's files as their owner (0600 client keys in certs.d); no capability
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &zero, RunAsGroup: &zero, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: role, Image: img, ImagePullPolicy: pull, Env: r.secretEnv, Stdin: stdin, StdinOnce: stdin,
				Command:                  command,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				SecurityContext: &corev1.SecurityContext{Privileged: &f, AllowPrivilegeEscalation: &f, ReadOnlyRootFilesystem: &t,
					RunAsNonRoot: &f, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				Resources: corev1.ResourceRequirements{
					Requests: requests,
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
				},
				VolumeMounts: mounts,
			}},
			Volumes: vols,
		},
	}
}

// loaderVolumes adds the ConfigMap parts, the loader beside them, and the emptyDir the loader
// joins the binary in.
func (r *run) loaderVolumes(d *delivery, vols []corev1.Volume, mounts []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
	var sources []corev1.VolumeProjection
	for i, cm := range d.parts {
		key := fmt.Sprintf("part-%03d", i)
		sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Items: []corev1.KeyToPath{{Key: key, Path: key}}}})
	}
	ro, exec := int32(0o444), int32(0o555)
	// the loader sits beside the parts, executable
	sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: d.loader}, Items: []corev1.KeyToPath{{Key: loader.File, Path: loader.File, Mode: &exec}}}})
	mem := resource.MustParse(strconv.Itoa(d.size*2/1024/1024+64) + "Mi")
	vols = append([]corev1.Volume{
		{Name: "parts", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources, DefaultMode: &ro}}},
		{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &mem}}},
	}, vols...)
	mounts = append([]corev1.VolumeMount{
		{Name: "parts", MountPath: "/pp/parts", ReadOnly: true},
		{Name: "run", MountPath: "/pp/run"},
	}, mounts...)
	return vols, mounts
}

func poll(ctx context.Context, timeout time.Duration, done func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		if done() {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// waitPod waits until cond holds for the pod name, or r.o.Timeout passes. It lists and watches
// that one pod (a field selector on its name) instead of asking for it again and again: two
// requests for the whole wait, not two a second for each node. cond may also depend on state
// outside the pod (an attach stream that broke), so it is checked each 500 ms as well; its calls
// never overlap.
func (r *run) waitPod(ctx context.Context, name string, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	var mu sync.Mutex
	var last *corev1.Pod
	met := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return last != nil && cond(last)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
				if met() {
					stop()
					return
				}
			}
		}
	}()
	pods := r.cs.Core.Pods(r.o.Namespace)
	byName := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return pods.Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(wctx, listThenWatch{lw}, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || p.Name != name || ev.Type == watch.Deleted {
			return false, nil
		}
		mu.Lock()
		defer mu.Unlock()
		last = p
		return cond(p), nil
	})
	if met() {
		mu.Lock()
		defer mu.Unlock()
		return last, nil
	}
	if err == nil || ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	mu.Lock()
	defer mu.Unlock()
	phase := "not found"
	if last != nil {
		phase = string(last.Status.Phase)
	}
	return last, fmt.Errorf("%w (pod phase %s)", err, phase)
}

// listThenWatch lists, then watches: for one pod, a list streamed as a watch brings nothing, and
// fake clientsets cannot stream one.
type listThenWatch struct{ *cache.ListWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// Waiting is why p's container waits, past its creation; nil when it does not.
func Waiting(p *corev1.Pod) *corev1.ContainerStateWaiting {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Waiting != nil && s.State.Waiting.Reason != "ContainerCreating" && s.State.Waiting.Reason != "PodInitializing" {
			return s.State.Waiting
		}
	}
	return nil
}

func waitingOn(p *corev1.Pod, reasons ...string) bool {
	w := Waiting(p)
	if w == nil {
		return false
	}
	for _, r := range reasons {
		if w.Reason == r {
			return true
		}
	}
	return false
}

func terminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			return s.State.Terminated
		}
	}
	return nil
}

// fullReport reads the probe's JSON report from its log.
func (r *run) fullReport(ctx context.Context, name string) *report.Probe {
	raw, err := cluster.RawRead(ctx, r.cs.Core.Pods(r.o.Namespace).GetLogs(name, &corev1.PodLogOptions{Container: "probe", LimitBytes: int64p(cluster.MaxRawRead + 1)}), "get", "pods/log", r.o.Namespace, name)
	if err != nil {
		var re *cluster.RBACError
		if errors.As(err, &re) {
			r.note("the probes' logs in namespace %s were not read (%s): only their compact verdicts are known", r.o.Namespace, cluster.ShortErr(err))
		}
		return nil
	}
	var p report.Probe
	if json.Unmarshal(raw, &p) != nil || p.Kind != "ProbeReport" {
		return nil
	}
	return &p
}

func int64p(v int64) *int64 { return &v }

func boolp(b bool) *bool { return &b }

// noProbe records why a pool has no probe verdict, explain's reading of the probe pod, and the
// class report.PoolResult.PodCause gives it (other unless the pod's own pull failed).
func (r *run) noProbe(ctx context.Context, res *report.PoolResult, p *corev1.Pod, why string) {
	res.Error = why
	// the pod's own ctx may be spent (its deadline is why it is here): its events are read anyway
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	res.Findings = r.podFindings(ectx, p)
	if len(res.Findings) == 1 && res.Findings[0].DecidedBecause == notStarted {
		// the kubelet's own words (FailedMount, FailedCreatePodSandBox…), not a guess from what followed
		msg := res.Findings[0].Message
		if len(msg) > 400 {
			msg = msg[:400] + "…"
		}
		res.Error += "; the kubelet says: " + msg
	}
	res.Class = report.ClassOther
	if f := res.PodCause(); f != nil {
		res.Class = f.Class
	}
}

// podFindings explains why a probe pod could not run, from its own events and its status (the
// waiting message carries the pull's error when the events were dropped or not yet listed).
func (r *run) podFindings(ctx context.Context, p *corev1.Pod) []report.Finding {
	name := p.Name
	evs, err := r.cs.Core.Events(r.o.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return nil
	}
	var own []corev1.Event
	var lines []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == name {
			own = append(own, e)
			if e.Type == corev1.EventTypeWarning {
				lines = append(lines, e.Reason+": "+e.Message)
			}
		}
	}
	fs := cluster.Explain(p, own)
	if len(fs) == 0 && len(lines) > 0 {
		fs = []report.Finding{{Class: report.ClassOther, Code: report.CodeUnknown, Message: strings.Join(lines, "; "), Reason: "the probe pod's own events", Decided: false, DecidedBecause: notStarted, Count: 1}}
	}
	return fs
}

// notStarted marks the finding that carries a probe pod's own warnings when none is a pull failure.
const notStarted = "not a pull failure: the pod could not start"

func (r *run) deletePod(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	zero := int64(0)
	_ = r.cs.Core.Pods(r.o.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}
