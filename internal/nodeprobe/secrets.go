package nodeprobe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/report"
)

// pullSecretEnv prefixes the variables that hand a probe its pull secrets: _1, _2, … in the
// pod's order, each with _NAME naming its secret. The node probes (verify --pod, --secret) and
// the probe in the pod (--from-pod) get them the same way: a variable from the secret's key, so
// the value never enters a pod spec, read by the probe's --pull-secret-env, tried in turn.
const pullSecretEnv = "PULLPATH_PULL_SECRET"

// secretRef is one pull secret handed to a probe: the Secret its variable refers to (in the probe
// pod's own namespace), the key, and the label naming the original (NAMESPACE/NAME key KEY).
type secretRef struct{ secret, key, label string }

// secretEnv is the environment that hands refs over, in order.
func secretEnv(refs []secretRef) []corev1.EnvVar {
	var env []corev1.EnvVar
	for i, s := range refs {
		v := fmt.Sprintf("%s_%d", pullSecretEnv, i+1)
		env = append(env, corev1.EnvVar{Name: v, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.secret}, Key: s.key}}},
			// the probe names the secret in its identity, not just the variable
			corev1.EnvVar{Name: v + "_NAME", Value: s.label})
	}
	return env
}

// secretArgs are the probe flags that read the secrets env hands over.
func secretArgs(env []corev1.EnvVar) []string {
	var args []string
	for _, e := range env {
		if e.ValueFrom != nil {
			args = append(args, "--pull-secret-env", e.Name)
		}
	}
	return args
}

// secretKey is the key the kubelet reads in a pull secret of type t ("" for a type it ignores).
func secretKey(t corev1.SecretType) string {
	switch t {
	case corev1.SecretTypeDockerConfigJson:
		return corev1.DockerConfigJsonKey
	case corev1.SecretTypeDockercfg:
		return corev1.DockerConfigKey
	}
	return ""
}

// podSecrets reads pod's pull secrets as the kubelet uses them and returns each with whether it
// covers the image and can be handed over (HandedOver, Key), and the Secrets handed over, in order,
// as they were read. A secret the operator cannot read is not handed over (its type and coverage
// are unknown, and the run does not route around the missing right): a note names it and the
// right, since whom (the probe in the pod, the node probes) then presents less than the kubelet.
// The error joins the *cluster.UnreadableSecret of each secret that could not be read.
func (r *run) podSecrets(ctx context.Context, pod *corev1.Pod, flag, whom string) ([]report.PodPullSecret, []*corev1.Secret, error) {
	var out []report.PodPullSecret
	var handed []*corev1.Secret
	var unread []error
	// the pod's own only, as credentials reads them: a service account's secret that is not in the
	// pod is not the kubelet's for this pod, so neither the account nor its secrets are read
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, secret, err := cluster.ReadSecret(ctx, r.cs, pod.Namespace, ref.Name, "pod", r.o.Image)
		ps := report.PodPullSecret{Name: s.Name, Problem: s.Problem, Key: secretKey(corev1.SecretType(s.Type))}
		var u *cluster.UnreadableSecret
		switch {
		case errors.As(err, &u):
			unread = append(unread, err)
			fix := ""
			if u.RBAC() {
				fix = "; grant get on secrets in namespace " + pod.Namespace + " to hand it over"
			}
			of := "pod"
			if flag == "--service-account" {
				of = "service account"
			}
			r.note("%s: pull secret %s/%s of %s %s/%s was not read (%s): the kubelet uses it if it covers the image, %s cannot present it%s",
				flag, pod.Namespace, s.Name, of, pod.Namespace, pod.Name, cluster.ShortErr(u.Err), whom, fix)
		case ps.Key != "" && s.CoversRegistry != nil && *s.CoversRegistry:
			ps.HandedOver, ps.Problem = true, ""
			handed = append(handed, secret)
		}
		out = append(out, ps)
	}
	return out, handed, errors.Join(unread...)
}

// handedNames are the names of the secrets handed over, in order.
func handedNames(ps []report.PodPullSecret) []string {
	var names []string
	for _, s := range ps {
		if s.HandedOver {
			names = append(names, s.Name)
		}
	}
	return names
}

// presented says which secrets a probe presents: one, or several in turn as the kubelet does.
func presented(names []string) string {
	if len(names) == 1 {
		return "pull secret " + names[0]
	}
	return "pull secrets that cover the image, in turn as the kubelet does: " + strings.Join(names, ", ")
}
