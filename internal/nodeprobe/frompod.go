package nodeprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/report"
)

// probeFromPod runs the probe image as an ephemeral container of the pod ProbeFromPod, in the
// pod's own network namespace (a VPN sidecar's routes, the pod's resolver), and returns its
// report. The container cannot be removed afterwards (Kubernetes has no such operation); it has
// exited and holds nothing.
func (r *run) probeFromPod(ctx context.Context) *report.PodProbe {
	ns, name, _ := strings.Cut(r.o.ProbeFromPod, "/")
	ec := "pullpath-" + r.id
	pp := &report.PodProbe{Pod: r.o.ProbeFromPod, Container: ec, Class: report.ClassOther}
	pod, err := r.cs.Core.Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		pp.Error = cluster.APIError(err, "get", "pods", ns, name).Error()
		return pp
	}
	pp.Node = pod.Spec.NodeName
	if n, err := r.cs.Core.Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{}); err == nil {
		pp.Pool, _ = cluster.Pool(n)
	} else if pod.Spec.NodeName != "" {
		// optional, as the other reads beside the run: the probe in the pod runs all the same, and
		// the comparison falls back to a probe on that same node
		r.note("--from-pod: node %s of pod %s was not read (%s): its pool is unknown, so the probe in the pod is compared only with a probe on that node; grant get on nodes to compare it with its pool",
			pod.Spec.NodeName, r.o.ProbeFromPod, cluster.ShortErr(cluster.APIError(err, "get", "nodes", "", pod.Spec.NodeName)))
	}
	if pod.Spec.HostNetwork {
		r.note("--from-pod %s uses hostNetwork: its network namespace is the node's, so the comparison shows nothing new", r.o.ProbeFromPod)
	}
	f, t := false, true
	nobody := int64(65534)
	args := append([]string{"probe", r.o.Image, "-o", "json", "--summary-file", "/dev/termination-log"}, r.o.ProbeArgs...)
	// the pod's own pull secrets that cover the image, as the kubelet uses them: no volume can be
	// added to an ephemeral container, an environment variable from the secret can
	env := r.fromPodSecrets(ctx, pod, pp)
	args = append(args, secretArgs(env)...)
	probe := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: ec, Image: r.o.ProbeImage, ImagePullPolicy: corev1.PullIfNotPresent, Env: env,
		Command:                  append([]string{"/pullpath"}, args...),
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		// the pod's namespace may enforce Pod Security "restricted": the probe needs nothing more
		SecurityContext: &corev1.SecurityContext{Privileged: &f, AllowPrivilegeEscalation: &f, ReadOnlyRootFilesystem: &t, RunAsNonRoot: &t, RunAsUser: &nobody,
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
	}}
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, probe)
	_, err = r.cs.Core.Pods(ns).UpdateEphemeralContainers(ctx, name, pod, metav1.UpdateOptions{})
	for try := 0; apierrors.IsConflict(err) && try < 5; try++ {
		// the pod changed since it was read (the kubelet's status, another run's ephemeral
		// container): the update carries its resourceVersion, so read it again
		if pod, err = r.cs.Core.Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			break
		}
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, probe)
		_, err = r.cs.Core.Pods(ns).UpdateEphemeralContainers(ctx, name, pod, metav1.UpdateOptions{})
	}
	if err != nil {
		pp.Error = "cannot add the probe as an ephemeral container: " + cluster.APIError(err, "update", "pods/ephemeralcontainers", ns, name).Error()
		return pp
	}
	r.note("--from-pod: the ephemeral container %s stays in the spec of pod %s (Kubernetes cannot remove one); it has exited", ec, r.o.ProbeFromPod)
	var st *corev1.ContainerStatus
	err = poll(ctx, r.o.Timeout, func() bool {
		p, err := r.cs.Core.Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for i := range p.Status.EphemeralContainerStatuses {
			if s := &p.Status.EphemeralContainerStatuses[i]; s.Name == ec {
				st = s
			}
		}
		if st == nil {
			return false
		}
		if st.State.Terminated != nil {
			return true
		}
		w := st.State.Waiting
		return w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" || w.Reason == "InvalidImageName" || strings.HasPrefix(w.Reason, "CreateContainer") || w.Reason == "RunContainerError")
	})
	switch {
	case err != nil:
		pp.Error = fmt.Sprintf("the ephemeral container did not finish: %v", err)
		return pp
	case st.State.Waiting != nil:
		pp.Error = fmt.Sprintf("the ephemeral container could not start: %s: %s", st.State.Waiting.Reason, st.State.Waiting.Message)
		// the node pulled the probe image for the pod and failed: as for a pool's probe pod
		// (report.PoolResult.PodCause), that failed pull is the class when explain names a cause
		if fs := cluster.Explain(pod, []corev1.Event{{Type: corev1.EventTypeWarning, Reason: "Failed", Message: st.State.Waiting.Message,
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name, FieldPath: "spec.ephemeralContainers{" + ec + "}"}}}); len(fs) > 0 {
			pp.Findings = fs
			if f := report.Cause(fs); f != nil {
				pp.Class = f.Class
			}
		}
		return pp
	}
	raw, err := cluster.RawRead(ctx, r.cs.Core.Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: ec, LimitBytes: int64p(cluster.MaxRawRead + 1)}), "get", "pods/log", ns, name)
	var re *cluster.RBACError
	if errors.As(err, &re) {
		r.note("--from-pod: the log of the probe in pod %s was not read (%s): only its compact verdict is known", r.o.ProbeFromPod, cluster.ShortErr(err))
	}
	var rep report.Probe
	if err == nil && json.Unmarshal(raw, &rep) == nil && rep.Kind == "ProbeReport" {
		pp.Probe, pp.Class = &rep, rep.Class
		return pp
	}
	var s report.ProbeSummary
	if term := st.State.Terminated; json.Unmarshal([]byte(term.Message), &s) == nil && s.Class != "" {
		pp.Summary, pp.Class = &s, s.Class // the compact verdict stands on its own, never as a hollow report
		return pp
	}
	pp.Error = fmt.Sprintf("the probe in the pod left no report (exit %d %s)", st.State.Terminated.ExitCode, st.State.Terminated.Reason)
	return pp
}

// fromPodSecrets hands the probe in the pod every pull secret of the pod that covers the image,
// from the pod's own Secrets, and records in pp what became of each.
func (r *run) fromPodSecrets(ctx context.Context, pod *corev1.Pod, pp *report.PodProbe) []corev1.EnvVar {
	pp.PullSecrets, _, _ = r.podSecrets(ctx, pod, "--from-pod", "the probe in the pod") // each unreadable one has its note
	var refs []secretRef
	for _, ps := range pp.PullSecrets {
		if ps.HandedOver {
			refs = append(refs, secretRef{secret: ps.Name, key: ps.Key, label: pod.Namespace + "/" + ps.Name + " key " + ps.Key})
		}
	}
	if names := handedNames(pp.PullSecrets); len(names) > 0 {
		r.note("--from-pod: the probe in pod %s presents the pod's %s", r.o.ProbeFromPod, presented(names))
	}
	return secretEnv(refs)
}

// compareFromPod sets the node's verdict beside the pod's: the pull is the node's, from the
// node's network namespace, whatever the pod itself reaches.
func compareFromPod(pp *report.PodProbe, pools []report.PoolResult) {
	var node *report.PoolResult
	for i := range pools {
		same := pools[i].Pool == pp.Pool
		if pp.Pool == "" {
			same = pp.Node != "" && pools[i].Node == pp.Node // the pod's node was not read: its pool is unknown
		}
		if same && (pools[i].Probe != nil || pools[i].Summary != nil) {
			node = &pools[i]
			if pools[i].Node == pp.Node {
				break
			}
		}
	}
	cause := report.Cause(pp.Findings)
	switch {
	case pp.Probe == nil && pp.Summary == nil && cause != nil:
		pp.Comparison = fmt.Sprintf("the probe could not run in the pod: node %s could not pull the probe image (%s %s on %s), which the node pulls for the pod as it pulls any image: nothing to compare", pp.Node, cause.Class, cause.Code, report.OrDash(cause.Host))
	case pp.Probe == nil && pp.Summary == nil:
		pp.Comparison = "the probe could not run in the pod: nothing to compare"
	case node == nil && pp.Pool == "":
		pp.Comparison = fmt.Sprintf("the pool of the pod's node %s is unknown (the node was not read) and that node was not probed: nothing to compare", pp.Node)
	case node == nil:
		pp.Comparison = fmt.Sprintf("pool %s of the pod's node %s was not probed: nothing to compare (verify that pool too)", pp.Pool, pp.Node)
	default:
		pp.NodeClass = node.Class
		// the comparison is about the network: a registry that answered with a refusal was reached
		// (the probe in the pod has only the pod's own pull secrets, if it has any)
		podOK, nodeOK := reached(pp.Class), reached(node.Class)
		switch {
		case podOK && !nodeOK:
			pp.Comparison = fmt.Sprintf("the pod reaches the registry%s, the node does not (%s on %s): the pull is done by the node, from the node's network, so what the pod reaches (a VPN sidecar's route, the pod's resolver) does not help the pull", answered(pp.Class, ""), node.Class, node.Node)
		case !podOK && nodeOK:
			pp.Comparison = fmt.Sprintf("the node %s reaches the registry%s, the pod does not (%s): the pull is done by the node, so the pod's own path does not stop it", node.Node, answered("", node.Class), pp.Class)
		case podOK:
			pp.Comparison = "the pod and the node " + node.Node + " both reach the registry" + answered(pp.Class, node.Class)
		default:
			pp.Comparison = fmt.Sprintf("neither the pod (%s) nor the node %s (%s) reaches the registry", pp.Class, node.Node, node.Class)
		}
	}
}

// answered says what the registry answered to each probe that got a refusal or an answer about
// the image rather than the image ("" for a probe that is not part of it, or that pulled).
func answered(pod, node report.Class) string {
	var parts []string
	if pod != "" && pod != report.ClassOK {
		parts = append(parts, fmt.Sprintf("%s to the probe in the pod", pod))
	}
	if node != "" && node != report.ClassOK {
		parts = append(parts, fmt.Sprintf("%s to the node's probe", node))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (it answered " + strings.Join(parts, " and ") + ")"
}

// reached says the probe got an answer from the registry API itself: ok, or a refusal or an answer
// about the image (identity, rights, name, platform, rate limit) rather than a path failure.
func reached(c report.Class) bool {
	switch c {
	case report.ClassOK, report.ClassAuth, report.ClassForbidden, report.ClassNotFound, report.ClassPlatform, report.ClassRateLimit:
		return true
	}
	return false
}
