package nodeprobe

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/report"
)

// runtimePull is the kubelet's real pull: a canary pod with the image itself (pull policy Always,
// the same credentials), whose command is a path that does not exist, so that nothing of the image
// ever runs. Its events say how the pull went.
func (r *run) runtimePull(ctx context.Context, n *corev1.Node, presentBefore *bool) *report.RuntimePull {
	start := time.Now()
	name := fmt.Sprintf("pullpath-%s-canary-%s", r.id, shortName(n.Name))
	f := false
	zero, deadline := int64(0), int64(r.o.Timeout.Seconds())+30
	m := r.meta(name, "canary")
	pod := &corev1.Pod{ObjectMeta: m, Spec: corev1.PodSpec{
		NodeName: n.Name, RestartPolicy: corev1.RestartPolicyNever, ActiveDeadlineSeconds: &deadline, TerminationGracePeriodSeconds: &zero,
		HostNetwork: true, DNSPolicy: corev1.DNSDefault, AutomountServiceAccountToken: &f, EnableServiceLinks: &f,
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		Containers: []corev1.Container{{Name: "canary", Image: r.o.Image, ImagePullPolicy: corev1.PullAlways,
			Command:         []string{"/pullpath-canary-never-runs"},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &f, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			Resources:       corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")}}}},
	}}
	for _, s := range r.secrets {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	rp := &report.RuntimePull{Result: "failed", Cached: presentBefore != nil && *presentBefore}
	if _, err := r.cs.Core.Pods(r.o.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		rp.Result, rp.Note = "skipped", "cannot create the canary pod: "+cluster.APIError(err, "create", "pods", r.o.Namespace, name).Error()
		return rp
	}
	defer r.deletePod(name)
	var pulled bool
	var failed *corev1.Event
	err := poll(ctx, r.o.Timeout, func() bool {
		evs, err := r.cs.Core.Events(r.o.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false
		}
		for i := range evs.Items {
			e := &evs.Items[i]
			if e.InvolvedObject.Name != name {
				continue
			}
			switch {
			case e.Reason == "Pulled":
				pulled = true
			case e.Type == corev1.EventTypeWarning && (e.Reason == "Failed" || e.Reason == "ErrImagePull") && strings.Contains(e.Message, "ull"):
				if failed == nil || strings.HasPrefix(e.Message, "Failed to pull") {
					failed = e
				}
			}
		}
		return pulled || (failed != nil && strings.HasPrefix(failed.Message, "Failed to pull"))
	})
	rp.Took = report.Duration(time.Since(start))
	switch {
	case pulled:
		rp.Result = "ok"
		if rp.Cached {
			rp.Note = "the node had the image cached before: the runtime's pull re-checked the manifest but not the layers, which proves nothing about the blob path"
		}
	case failed != nil:
		fs := cluster.Explain(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.o.Namespace}}, []corev1.Event{*failed})
		rp.Message = failed.Message
		if len(fs) > 0 {
			rp.Class, rp.Code, rp.Host, rp.Role = fs[0].Class, fs[0].Code, fs[0].Host, fs[0].Role
		}
	case err != nil:
		rp.Result, rp.Note = "skipped", "no pull result before the timeout: "+err.Error()
	}
	return rp
}
