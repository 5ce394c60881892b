package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/loader"
	"github.com/pullpath/pullpath/internal/report"
)

// verifyNode runs the probe pod (and the canary) on one node and fills its result.
func (r *run) verifyNode(ctx context.Context, n *corev1.Node, res *report.PoolResult) {
	res.Class = report.ClassOther
	if r.o.ProbeImage != "" {
		r.verifyWith(ctx, n, res, func() { r.probePod(ctx, n, nil, r.o.ProbeImage, res) })
		return
	}
	arch := n.Status.NodeInfo.Architecture
	if arch == "" {
		arch = n.Labels["kubernetes.io/arch"]
	}
	d := r.deliver(ctx, arch)
	if d.err != nil {
		res.Error = "cannot deliver the probe to " + n.Name + " (linux/" + arch + "): " + d.err.Error()
		return
	}
	images := hostImages(n)
	if len(images) == 0 {
		res.Error = fmt.Sprintf("node %s lists no image in status.images to run the probe on without a pull", n.Name)
		return
	}
	r.verifyWith(ctx, n, res, func() {
		var gone []string
		for _, img := range images[:min(len(images), 3)] {
			if !r.probePod(ctx, n, d, img, res) {
				return
			}
			gone = append(gone, img)
			r.note("node %s: image %s is listed but gone (ErrImageNeverPull); trying the next", n.Name, img)
		}
		res.Error = fmt.Sprintf("node %s: every image tried to run the probe on without a pull is listed in status.images but gone (ErrImageNeverPull): %s", n.Name, strings.Join(gone, ", "))
	})
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

// probePod runs one probe pod on n with image img; it reports whether the image turned out to be
// gone (the caller then tries the next).
func (r *run) probePod(ctx context.Context, n *corev1.Node, d *delivery, img string, res *report.PoolResult) (imageGone bool) {
	name := fmt.Sprintf("pullpath-%s-probe-%s", r.id, shortName(n.Name))
	pod := r.probeSpec(name, n, d, img)
	if _, err := r.cs.Core.Pods(r.o.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		res.Error = "cannot create the probe pod: " + apiError(err, "create", "pods", r.o.Namespace, name).Error()
		return false
	}
	defer r.deletePod(name)
	p, err := r.waitPod(ctx, name, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || waitingOn(p, "ErrImageNeverPull", "CreateContainerError", "CreateContainerConfigError", "RunContainerError",
			"ErrImagePull", "ImagePullBackOff", "InvalidImageName")
	})
	if err != nil {
		if p == nil {
			p = pod // never read back: its events may still say why
		}
		r.noProbe(ctx, res, p, fmt.Sprintf("the probe pod on %s did not finish: %v", n.Name, err))
		return false
	}
	if waitingOn(p, "ErrImageNeverPull") {
		return true
	}
	if w := waitingState(p); w != nil {
		r.noProbe(ctx, res, p, fmt.Sprintf("the probe pod on %s could not start: %s: %s", n.Name, w.Reason, w.Message))
		return false
	}
	term := terminated(p)
	rep := r.fullReport(ctx, name)
	if rep == nil && term != nil && term.Message != "" {
		var s report.ProbeSummary
		if json.Unmarshal([]byte(term.Message), &s) == nil && s.Class != "" {
			// the compact verdict stands on its own: it is not passed off as a full report
			res.Summary, res.Class = &s, s.Class
			res.Error = "the probe's full report (its log) could not be read: the verdict is its termination message"
			return false
		}
	}
	if rep == nil {
		msg := ""
		if term != nil {
			msg = fmt.Sprintf("exit %d %s: %s", term.ExitCode, term.Reason, strings.TrimSpace(term.Message))
		}
		r.noProbe(ctx, res, p, fmt.Sprintf("the probe on %s left no report (%s)", n.Name, msg))
		return false
	}
	res.Probe, res.Class = rep, rep.Class
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
	deadline := int64(r.o.Timeout.Seconds()) + 30
	f, t := false, true
	zero := int64(0)
	vols, mounts := hostVolumes(r.o.HostMount)
	command := append([]string{"/pullpath"}, r.probeArgs(n)...)
	pull := corev1.PullIfNotPresent
	if d != nil {
		vols, mounts = r.loaderVolumes(d, vols, mounts)
		command = loader.Command("/pp/parts", "/pp/run/pullpath", d.size, r.probeArgs(n)...)
		pull = corev1.PullNever
	}
	m := r.meta(name, "probe")
	m.Labels["pullpath.dev/node"] = shortName(n.Name)
	return &corev1.Pod{
		ObjectMeta: m,
		Spec: corev1.PodSpec{
			NodeName: n.Name, HostNetwork: true, DNSPolicy: corev1.DNSDefault, RestartPolicy: corev1.RestartPolicyNever,
			ActiveDeadlineSeconds: &deadline, TerminationGracePeriodSeconds: &zero,
			Tolerations:                  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			AutomountServiceAccountToken: &f, EnableServiceLinks: &f,
			// root only to read the node's files as their owner (0600 client keys in certs.d); no capability
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &zero, RunAsGroup: &zero, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "probe", Image: img, ImagePullPolicy: pull, Env: r.secretEnv,
				Command:                  command,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				SecurityContext: &corev1.SecurityContext{Privileged: &f, AllowPrivilegeEscalation: &f, ReadOnlyRootFilesystem: &t,
					RunAsNonRoot: &f, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
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

func (r *run) waitPod(ctx context.Context, name string, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var last *corev1.Pod
	err := poll(ctx, r.o.Timeout, func() bool {
		p, err := r.cs.Core.Pods(r.o.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = p
		return cond(p)
	})
	if err != nil {
		phase := "not found"
		if last != nil {
			phase = string(last.Status.Phase)
		}
		return last, fmt.Errorf("%w (pod phase %s)", err, phase)
	}
	return last, nil
}

func waitingState(p *corev1.Pod) *corev1.ContainerStateWaiting {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Waiting != nil && s.State.Waiting.Reason != "ContainerCreating" && s.State.Waiting.Reason != "PodInitializing" {
			return s.State.Waiting
		}
	}
	return nil
}

func waitingOn(p *corev1.Pod, reasons ...string) bool {
	w := waitingState(p)
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
	raw, err := rawRead(ctx, r.cs.Core.Pods(r.o.Namespace).GetLogs(name, &corev1.PodLogOptions{Container: "probe", LimitBytes: int64p(32 << 20)}), "get", "pods/log", r.o.Namespace, name)
	if err != nil {
		var re *RBACError
		if errors.As(err, &re) {
			r.note("the probes' logs in namespace %s were not read (%s): only their compact verdicts are known", r.o.Namespace, shortErr(err))
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

// noProbe records why a pool has no probe verdict, explain's reading of the probe pod, and the
// class report.PoolResult.PodCause gives it (other unless the pod's own pull failed).
func (r *run) noProbe(ctx context.Context, res *report.PoolResult, p *corev1.Pod, why string) {
	res.Error = why
	res.Findings = r.podFindings(ctx, p)
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
	fs := explain(p, own)
	if len(fs) == 0 && len(lines) > 0 {
		fs = []report.Finding{{Class: report.ClassOther, Code: report.CodeUnknown, Message: strings.Join(lines, "; "), Reason: "the probe pod's own events", Decided: false, DecidedBecause: "not a pull failure: the pod could not start", Count: 1}}
	}
	return fs
}

func (r *run) deletePod(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	zero := int64(0)
	_ = r.cs.Core.Pods(r.o.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}
