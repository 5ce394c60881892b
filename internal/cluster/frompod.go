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

// fromPodSecretEnv prefixes the variables that carry the pod's pull secrets into the probe in the
// pod: _1, _2, … in the pod's order, each with _NAME naming its secret.
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
	var env []corev1.EnvVar
	args := append([]string{"probe", r.o.Image, "-o", "json", "--summary-file", "/dev/termination-log"}, r.o.ProbeArgs...)
	// the pod's own pull secrets that cover the image, as the kubelet uses them: no volume can be
	// added to an ephemeral container, an environment variable from the secret can (its value never
	// enters the spec); the probe tries them in turn in the kubelet's order
	env, pp.PullSecrets = r.fromPodSecrets(ctx, pod, ns)
	for _, e := range env {
		if e.ValueFrom != nil {
			args = append(args, "--pull-secret-env", e.Name)
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

// fromPodSecrets returns the environment that hands the probe in the pod every pull secret of the
// pod that covers the image (a variable from the secret's key, and VAR_NAME naming it), and what
// became of each of the pod's secrets. A secret the operator cannot read is not handed over (its
// type and coverage are unknown, and the run does not route around the missing right): a note says
// so, naming the secret and the right, since the probe in the pod then presents less than the kubelet.
func (r *run) fromPodSecrets(ctx context.Context, pod *corev1.Pod, ns string) ([]corev1.EnvVar, []report.PodPullSecret) {
	var env []corev1.EnvVar
	var out []report.PodPullSecret
	for _, s := range credentials(ctx, r.cs, pod, r.o.Image, nil, new([]string)).PullSecrets {
		if s.From != "pod" {
			continue // on the service account only: the kubelet does not use it for this pod
		}
		ps := report.PodPullSecret{Name: s.Name, Problem: s.Problem}
		switch corev1.SecretType(s.Type) {
		case corev1.SecretTypeDockerConfigJson:
			ps.Key = corev1.DockerConfigJsonKey
		case corev1.SecretTypeDockercfg:
			ps.Key = corev1.DockerConfigKey
		}
		switch {
		case s.Exists == nil:
			why := strings.TrimPrefix(strings.TrimSuffix(s.Problem, "; cannot tell whether it covers the registry"), "not readable: ")
			fix := ""
			if strings.HasPrefix(why, "no RBAC ") {
				fix = "; grant get on secrets in namespace " + ns + " to hand it over"
			}
			r.note("--from-pod: pull secret %s/%s of pod %s was not read (%s): the kubelet uses it if it covers the image, the probe in the pod cannot present it%s",
				ns, s.Name, r.o.ProbeFromPod, why, fix)
		case ps.Key != "" && s.CoversRegistry != nil && *s.CoversRegistry:
			v := fmt.Sprintf("%s_%d", fromPodSecretEnv, len(env)/2+1)
			env = append(env, corev1.EnvVar{Name: v, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: s.Name}, Key: ps.Key}}},
				// the probe names the secret in its identity, not just the variable
				corev1.EnvVar{Name: v + "_NAME", Value: ns + "/" + s.Name + " key " + ps.Key})
			ps.HandedOver, ps.Problem = true, ""
		}
		out = append(out, ps)
	}
	var names []string
	for _, ps := range out {
		if ps.HandedOver {
			names = append(names, ps.Name)
		}
	}
	switch {
	case len(names) == 1:
		r.note("--from-pod: the probe in pod %s presents the pod's pull secret %s", r.o.ProbeFromPod, names[0])
	case len(names) > 1:
		r.note("--from-pod: the probe in pod %s presents the pod's pull secrets that cover the image, in turn as the kubelet does: %s", r.o.ProbeFromPod, strings.Join(names, ", "))
	}
	return env, out
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
