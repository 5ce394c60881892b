package nodeprobe

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/cluster"
)

// roleAgent labels the resident agents' pods (LabelRole).
const roleAgent = "agent"

// AgentSelector selects the resident agents' pods in a run namespace.
const AgentSelector = cluster.LabelRole + "=" + roleAgent

// Agent modes: the agent's own image (pulled by the node), or the probe binary in ConfigMaps run
// by the loader on the node's sandbox image (no pull: a node that cannot pull still gets one).
const (
	AgentImage  = "image"
	AgentNoPull = "no-pull"
)

// AgentOptions say what every agent probes and how often.
type AgentOptions struct {
	Interval  time.Duration
	FullEvery int
	Port      int  // on the node (hostNetwork)
	Budget    int  // registry requests an hour per registry (agent --registry-budget); 0: the agent's default
	NoPull    bool // never the agent's image, even with VerifyOptions.ProbeImage
}

// AgentName is the agent pod's name on node: fixed, so that a watcher finds it by name.
func AgentName(node string) string {
	h := fnv.New32a()
	h.Write([]byte(node))
	return fmt.Sprintf("pullpath-agent-%08x-%s", h.Sum32(), shortName(node[max(0, len(node)-20):]))
}

// AgentMode is how the agent pod p runs: AgentImage or AgentNoPull.
func AgentMode(p *corev1.Pod) string {
	if p.Labels[labelAgentMode] == AgentNoPull {
		return AgentNoPull
	}
	return AgentImage
}

const labelAgentMode = "pullpath.dev/agent-mode"

// StartAgent creates the resident agent's pod on n, probing every image of the prober: in image
// mode when the run has a probe image and o.NoPull is not set, else with the binary delivered in
// ConfigMaps once for the pod's life (the loader checks its SHA-256 at every start). It returns
// the mode; a pod already there is left as it is (the caller deletes one it wants replaced).
func (p *Prober) StartAgent(ctx context.Context, n *corev1.Node, o AgentOptions) (string, error) {
	r := p.first()
	if r == nil {
		return "", errors.New("no run prepared")
	}
	mode, img := AgentImage, r.o.ProbeImage
	var d *delivery
	if img == "" || o.NoPull {
		mode = AgentNoPull
		images := borrowable(n, r.o.SandboxImages)
		if len(images) == 0 {
			return mode, errors.New(noSandbox(n, r.o.SandboxImages))
		}
		img = images[0]
		arch := n.Status.NodeInfo.Architecture
		if arch == "" {
			arch = n.Labels["kubernetes.io/arch"]
		}
		if d = r.deliver(ctx, arch, ModeConfigMap); d.err != nil {
			return mode, fmt.Errorf("cannot deliver the agent to %s (linux/%s): %w", n.Name, arch, d.err)
		}
	}
	pod := r.nodePod(AgentName(n.Name), roleAgent, n, d, img, p.agentArgs(n, o))
	pod.Labels[labelAgentMode] = mode
	pod.Spec.Containers[0].Env = p.agentEnv()
	if _, err := r.cs.Core.Pods(r.o.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return mode, cluster.APIError(err, "create", "pods", r.o.Namespace, pod.Name)
	}
	return mode, nil
}

// StopAgent deletes the agent pod on node (gone already is no error).
func (p *Prober) StopAgent(ctx context.Context, node string) error {
	r := p.first()
	if r == nil {
		return nil
	}
	err := r.cs.Core.Pods(r.o.Namespace).Delete(ctx, AgentName(node), metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	if err != nil && !apierrors.IsNotFound(err) {
		return cluster.APIError(err, "delete", "pods", r.o.Namespace, AgentName(node))
	}
	return nil
}

// first is the run of the first image: the agent's pod belongs to it (its owner, its labels,
// its delivery), so that the prober's Close removes it with the rest.
func (p *Prober) first() *run {
	if len(p.images) == 0 {
		return nil
	}
	return p.runs[p.images[0]]
}

// agentArgs are the agent's flags: every image, the node's view as a probe pod's, the schedule.
func (p *Prober) agentArgs(n *corev1.Node, o AgentOptions) []string {
	r := p.first()
	port := o.Port
	args := []string{"agent"}
	for _, img := range p.images {
		args = append(args, "--image", img)
	}
	args = append(args, "--host-root", "/host", "--node", n.Name, "--listen", ":"+strconv.Itoa(port),
		"--interval", o.Interval.String(), "--full-every", strconv.Itoa(max(o.FullEvery, 1)))
	if o.Budget > 0 {
		args = append(args, "--registry-budget", strconv.Itoa(o.Budget))
	}
	args = append(args, secretArgs(p.agentEnv())...)
	return append(args, r.o.ProbeArgs...)
}

// agentEnv hands the agent every run's pull secrets, once each, renumbered: one agent probes
// every image, and the probe tries the secrets that cover an image in turn.
func (p *Prober) agentEnv() []corev1.EnvVar {
	var refs []secretRef
	for _, img := range p.images {
		env := p.runs[img].secretEnv
		for i, e := range env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				continue
			}
			ref := secretRef{secret: e.ValueFrom.SecretKeyRef.Name, key: e.ValueFrom.SecretKeyRef.Key}
			if i+1 < len(env) && env[i+1].Name == e.Name+"_NAME" {
				ref.label = env[i+1].Value
			}
			if !slices.ContainsFunc(refs, func(x secretRef) bool { return x.secret == ref.secret && x.key == ref.key }) {
				refs = append(refs, ref)
			}
		}
	}
	return secretEnv(refs)
}
