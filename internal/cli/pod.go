//go:build !probeonly

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/report"
)

type podOptions struct {
	base
	args          []string
	kube          *kubeFlags
	name          string
	namespace     string
	all           bool
	allNamespaces bool
	output        string
	maxImages     int
	kubeletConfig bool
	verification  string // --credential-verification POLICY
}

func newPodCmd(s Streams) *cobra.Command {
	o := &podOptions{base: base{streams: s}, kube: newKubeFlags()}
	cmd := &cobra.Command{
		Use:   "pod NAME | --all",
		Short: "Diagnose a pod's image pull failure across the cluster: nodes, pools, caches, credentials",
		Long: `Start from the failing pod: its events, explained; its node and pool; the image
caches of every node (the cached-image lie: old nodes run a cached image that new
ones cannot pull); the pull credentials as the kubelet sees them; a timeline;
and the pullpath verify command that proves the cause. Read-only. A node whose
image list is full is "unknown", never "absent", with how to settle it; pod
never calls a kubelet through nodes/proxy unless
--read-kubelet-config asks (docs/rbac.md).

--credential-verification POLICY (named for the kubelet's KEP-2535 setting).
Exit codes: 0 no pull failure, 1 pull failure diagnosed (or a pod would break),
2 could not run (no cluster, no rights: the RBAC verb that was missing is named).
` + manual("pod.md"),
		Example: `  pullpath pod web-7d9f8b6c5-x2x7q -n shop
  kubectl pullpath pod web-7d9f8b6c5-x2x7q -n shop -o json
  pullpath pod --all -A`,
	}
	lifecycle(cmd, o)
	f := cmd.Flags()
	o.kube.addFlags(f)
	f.BoolVar(&o.all, "all", false, "every pod with a pull failure, grouped")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "with --all: every namespace")
	f.StringVarP(&o.output, "output", "o", "text", "text or json")
	f.IntVar(&o.maxImages, "node-max-images", cluster.DefaultMaxImages, "the kubelets' nodeStatusMaxImages")
	f.StringVar(&o.verification, "credential-verification", "", "with --all: pods `POLICY` would break")
	f.BoolVar(&o.kubeletConfig, "read-kubelet-config", false, "read each kubelet's /configz: UNSAFE, needs nodes/proxy (pullpath-unsafe-nodes-proxy), which allows exec in every container")
	return cmd
}

// Complete takes the pod NAME, when given.
func (o *podOptions) Complete(args []string) error {
	o.args = args
	return nil
}

// Validate checks the flags, then the pod name against --all: nothing is read before.
func (o *podOptions) Validate() error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.maxImages < 1 {
		return fmt.Errorf("--node-max-images %d: want 1 or more", o.maxImages)
	}
	if o.allNamespaces && !o.all {
		return errors.New("-A/--all-namespaces goes with --all")
	}
	if o.verification != "" {
		if !o.all {
			return errors.New("--credential-verification goes with --all")
		}
		if !slices.Contains(cluster.VerifyPolicies, o.verification) {
			return fmt.Errorf("--credential-verification %q: want one of %s (NeverVerify verifies nothing)", o.verification, strings.Join(cluster.VerifyPolicies, ", "))
		}
	}
	if err := o.kube.validate(); err != nil {
		return err
	}
	switch args := o.args; {
	case len(args) > 1:
		return fmt.Errorf("pod takes one pod NAME, got %d: %s", len(args), strings.Join(args, " "))
	case len(args) == 1 && o.all:
		return errors.New("give a pod NAME or --all, not both")
	case len(args) == 0 && !o.all:
		return errors.New("pod needs a pod NAME (or --all), e.g. pullpath pod web-7d9f8b6c5-x2x7q -n shop")
	case len(args) == 1:
		if err := checkPodName(args[0]); err != nil {
			return err
		}
		o.name = args[0]
	}
	return nil
}

// completeNamespace reads the namespace from the kubeconfig when -n is not given ("" with -A).
func (o *podOptions) completeNamespace() error {
	ns, err := o.kube.namespace()
	if err != nil {
		return err
	}
	o.namespace = ns
	if o.allNamespaces {
		o.namespace = ""
	}
	return nil
}

// Run diagnoses; a pull failure returns ExitError{1} after the report is written.
func (o *podOptions) Run(ctx context.Context) error {
	if err := o.completeNamespace(); err != nil {
		return err
	}
	cs, err := o.kube.client()
	if err != nil {
		return err
	}
	// A mistyped namespace has no pods: --all would say "no pull failure" and exit 0. Asked only
	// when nothing was found (an identity without get on namespaces is refused, and goes on).
	missingNS := func() error {
		if o.namespace == "" {
			return nil
		}
		// bounded: after a failure that may be an API server that does not answer
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := cs.Core.Namespaces().Get(ctx, o.namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s does not exist (kubectl get namespaces lists them)", o.namespace)
		}
		return nil
	}
	if o.all {
		l, err := cluster.DiagnoseAll(ctx, cs, o.namespace, cluster.AllOptions{CredentialVerification: o.verification, KubeletConfig: o.kubeletConfig})
		if err != nil {
			return err
		}
		if l.PodsSeen == 0 {
			if err := missingNS(); err != nil {
				return err
			}
		}
		if err := emit(o.streams.Out, o.output, l, func(w io.Writer) error {
			return writeFitted(o.cmd, w, func(w io.Writer) error { return report.WritePullFailuresText(w, l) })
		}); err != nil {
			return err
		}
		return allExit(l)
	}
	d, err := cluster.DiagnosePod(ctx, cs, o.namespace, o.name, cluster.Options{MaxImages: o.maxImages, KubeletConfig: o.kubeletConfig})
	if err != nil {
		if nsErr := missingNS(); nsErr != nil {
			return nsErr
		}
		return err
	}
	if err := emit(o.streams.Out, o.output, d, func(w io.Writer) error {
		return writeFitted(o.cmd, w, func(w io.Writer) error { return report.WritePodText(w, d) })
	}); err != nil {
		return err
	}
	if d.Class != report.ClassOK {
		return &ExitError{Code: ExitBroken}
	}
	return nil
}

// allExit is pod --all's exit: 1 for a pull failure, or a pod the pre-flight says would break (an
// unknown one alone does not: the report says UNKNOWN and why).
func allExit(l *report.PullFailures) error {
	if len(l.Groups) > 0 || (l.CredentialVerification != nil && l.CredentialVerification.Breaks > 0) {
		return &ExitError{Code: ExitBroken}
	}
	return nil
}
