package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/report"
)

// fromPodSecretEnv carries the pod's pull secret into the probe in the pod.
const fromPodSecretEnv = "PULLPATH_PULL_SECRET"

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
		pp.Error = apiError(err, "get", "pods", ns, name).Error()
		return pp
	}
	pp.Node = pod.Spec.NodeName
	if n, err := r.cs.Core.Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{}); err == nil {
		pp.Pool, _ = Pool(n)
	}
	if pod.Spec.HostNetwork {
		r.note("--from-pod %s uses hostNetwork: its network namespace is the node's, so the comparison shows nothing new", r.o.ProbeFromPod)
	}
	f, t := false, true
	nobody := int64(65534)
	args := append([]string{"probe", r.o.Image, "-o", "json", "--summary-file", "/dev/termination-log"}, r.o.ProbeArgs...)
	// the pod's own pull secret for the registry, if it has one: no volume can be added to an
	// ephemeral container, an environment variable from the secret can (its value never enters the spec)
	var env []corev1.EnvVar
	for _, s := range credentials(ctx, r.cs, pod, r.o.Image, nil, new([]string)).PullSecrets {
		if s.From == "pod" && s.CoversRegistry != nil && *s.CoversRegistry && s.Type == string(corev1.SecretTypeDockerConfigJson) {
			env = []corev1.EnvVar{{Name: fromPodSecretEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: s.Name}, Key: corev1.DockerConfigJsonKey}}},
				// the probe names the secret in its identity, not just the variable
				{Name: fromPodSecretEnv + "_NAME", Value: ns + "/" + s.Name + " key " + corev1.DockerConfigJsonKey}}
			args = append(args, "--pull-secret-env", fromPodSecretEnv)
			r.note("--from-pod: the probe in pod %s presents the pod's pull secret %s", r.o.ProbeFromPod, s.Name)
			break
		}
	}
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: ec, Image: r.o.ProbeImage, ImagePullPolicy: corev1.PullIfNotPresent, Env: env,
		Command:                  append([]string{"/pullpath"}, args...),
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		// the pod's namespace may enforce Pod Security "restricted": the probe needs nothing more
		SecurityContext: &corev1.SecurityContext{Privileged: &f, AllowPrivilegeEscalation: &f, ReadOnlyRootFilesystem: &t, RunAsNonRoot: &t, RunAsUser: &nobody,
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
	}})
	if _, err := r.cs.Core.Pods(ns).UpdateEphemeralContainers(ctx, name, pod, metav1.UpdateOptions{}); err != nil {
		pp.Error = "cannot add the probe as an ephemeral container: " + apiError(err, "update", "pods/ephemeralcontainers", ns, name).Error()
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
		return pp
	}
	raw, err := r.cs.Core.Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: ec, LimitBytes: int64p(32 << 20)}).DoRaw(ctx)
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

// compareFromPod sets the node's verdict beside the pod's: the pull is the node's, from the
// node's network namespace, whatever the pod itself reaches.
func compareFromPod(pp *report.PodProbe, pools []report.PoolResult) {
	var node *report.PoolResult
	for i := range pools {
		if pools[i].Pool == pp.Pool && (pools[i].Probe != nil || pools[i].Summary != nil) {
			node = &pools[i]
			if pools[i].Node == pp.Node {
				break
			}
		}
	}
	switch {
	case pp.Probe == nil && pp.Summary == nil:
		pp.Comparison = "the probe could not run in the pod: nothing to compare"
	case node == nil:
		pp.Comparison = fmt.Sprintf("pool %s of the pod's node %s was not probed: nothing to compare (verify that pool too)", pp.Pool, pp.Node)
	default:
		pp.NodeClass = node.Class
		// the comparison is about the network: a registry that answered with a refusal was reached
		// (the probe in the pod has only the pod's own pull secret, if it has one)
		podOK, nodeOK := reached(pp.Class), reached(node.Class)
		answered := ""
		if pp.Class != report.ClassOK {
			answered = fmt.Sprintf(" (it answered %s to the probe in the pod)", pp.Class)
		}
		switch {
		case podOK && !nodeOK:
			pp.Comparison = fmt.Sprintf("the pod reaches the registry%s, the node does not (%s on %s): the pull is done by the node, from the node's network, so what the pod reaches (a VPN sidecar's route, the pod's resolver) does not help the pull", answered, node.Class, node.Node)
		case !podOK && nodeOK:
			pp.Comparison = fmt.Sprintf("the node %s reaches the registry, the pod does not (%s): the pull is done by the node, so the pod's own path does not stop it", node.Node, pp.Class)
		case podOK:
			pp.Comparison = "the pod and the node " + node.Node + " both reach the registry" + answered
		default:
			pp.Comparison = fmt.Sprintf("neither the pod (%s) nor the node %s (%s) reaches the registry", pp.Class, node.Node, node.Class)
		}
	}
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
