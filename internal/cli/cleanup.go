//go:build !probeonly

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/report"
)

type cleanupOptions struct {
	base
	kube         *kubeFlags
	run          string
	runNamespace string
	expired      bool
	includeWatch bool
	timeout      time.Duration
	output       string
}

func newCleanupCmd(s Streams) *cobra.Command {
	o := &cleanupOptions{base: base{streams: s}, kube: newKubeFlags()}
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete what verify runs left behind (pods, ConfigMaps, Secrets labelled app.kubernetes.io/managed-by=pullpath)",
		Long: `Delete every object pullpath verify made in the run namespace, of one run (--run)
or of all, and wait until they are gone: for a run that was killed. --expired
deletes only objects whose run is surely over (label pullpath.dev/expires). A running
watcher's objects are spared (its status heartbeat is recent); --include-watch takes them too.

Exit codes: 0 nothing left, 1 something could not be deleted or still terminating
(listed), 2 could not run (no cluster, refused credentials, no rights, an API error,
a bad flag).
` + manual("cleanup.md"),
		Example: `  pullpath cleanup
  pullpath cleanup --expired -n pullpath
  kubectl pullpath cleanup --run 3f9c04ab --run-namespace pullpath`,
		Args: cobra.NoArgs,
	}
	lifecycle(cmd, o)
	o.kube.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.run, "run", "", "only this run's objects (the id verify prints); default every run")
	cmd.Flags().StringVar(&o.runNamespace, "run-namespace", "pullpath", "the namespace verify ran in (-n alone means the same)")
	cmd.Flags().BoolVar(&o.expired, "expired", false, "only objects whose run is surely over (label pullpath.dev/expires in the past)")
	cmd.Flags().BoolVar(&o.includeWatch, "include-watch", false, "also a running watcher's objects (default: spared while its status heartbeat is recent)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", time.Minute, "bound on the whole cleanup, retries while the API server is away included")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	return cmd
}

// Complete takes no arguments.
func (o *cleanupOptions) Complete([]string) error { return nil }

// Validate checks the flags; -n alone names the run namespace, and with --run-namespace must not
// name another one.
func (o *cleanupOptions) Validate() error {
	if o.run != "" {
		if errs := validation.IsValidLabelValue(o.run); len(errs) > 0 {
			return fmt.Errorf("--run %q: not a run id (verify prints it: pullpath.dev/run=ID)", o.run)
		}
	}
	if n := o.kube.overrides.Context.Namespace; n != "" {
		if o.flagChanged("run-namespace") && n != o.runNamespace {
			return fmt.Errorf("-n %s and --run-namespace %s name two namespaces: give one", n, o.runNamespace)
		}
		o.runNamespace = n
	}
	if err := checkNamespace("--run-namespace", o.runNamespace); err != nil {
		return err
	}
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout %s: want a positive duration", o.timeout)
	}
	return o.kube.validate()
}

// Run deletes and waits; what is left is listed and ExitError{1}.
func (o *cleanupOptions) Run(ctx context.Context) error {
	cs, err := o.kube.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	// a cluster that cannot be asked is "could not run" (2), not objects left behind (1):
	// one question first, answered at once, never retried
	if _, err := cs.Core.Pods(o.runNamespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return cleanupRefusal(err, o.runNamespace)
	}
	co := cluster.CleanupOptions{Namespace: o.runNamespace, Run: o.run, Expired: o.expired}
	if !o.includeWatch {
		// a running watcher's loader and owners are in use: deleting them fails its probes
		live, since, err := cluster.LiveWatch(ctx, cs, o.runNamespace)
		if err != nil {
			return fmt.Errorf("cleanup: cannot tell whether a watcher runs in namespace %s (a list of its ConfigMaps: %v) — nothing was deleted", o.runNamespace, err)
		}
		if live {
			co.Selector = cluster.NotByWatch
			fmt.Fprintf(o.streams.ErrOut, "cleanup: a watcher runs in namespace %s (heartbeat %s ago): its objects are spared (--include-watch deletes them)\n",
				o.runNamespace, time.Since(since).Round(time.Second))
		}
	}
	left, err := cluster.Cleanup(ctx, cs, co)
	var re *cluster.RBACError
	if errors.As(err, &re) {
		// the right that was refused, not the one asked first: a delete may be refused after every list passed
		return fmt.Errorf("cleanup: %v — cleanup stopped there", re)
	}
	if err != nil {
		return cleanupRefusal(err, o.runNamespace)
	}
	doc := &report.Cleanup{APIVersion: report.APIVersion, Kind: "Cleanup", Namespace: o.runNamespace, Run: o.run, LeftBehind: left}
	if err := emit(o.streams.Out, o.output, doc, func(w io.Writer) error { return report.WriteCleanupText(w, doc, textOptions(o.cmd, w, false)) }); err != nil {
		return err
	}
	if len(left) > 0 {
		return &ExitError{Code: ExitBroken}
	}
	return nil
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
