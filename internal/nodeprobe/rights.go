package nodeprobe

import (
	"context"
	"fmt"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/cluster"
)

// need is one permission the run requires.
type need struct {
	verb, resource, sub, ns string
	why                     string
}

// checkRights asks the API server, before anything is created, whether the identity may do what
// the run needs, and names every missing permission at once. get on namespaces (deploy/rbac.yaml's
// pullpath-reader grants it) is not among them: it only says whether a namespace whose pod or
// secret was not found exists, and whether the run namespace must be created; refused, the error
// asks the question instead, and a missing run namespace shows when the owner is created.
func (r *run) checkRights(ctx context.Context) error {
	ns := r.o.Namespace
	needs := []need{
		{"list", "nodes", "", "", "to choose a node per pool"},
		{"list", "pods", "", "", "to see which nodes run the image"},
		{"create", "pods", "", ns, "the probe pods"},
		{"delete", "pods", "", ns, "cleanup"},
		{"get", "pods", "log", ns, "the probes' full reports"},
		{"create", "configmaps", "", ns, "the probe binary and the loader"},
		{"delete", "configmaps", "", ns, "cleanup"},
		{"list", "events", "", ns, "explain a probe pod that cannot start"},
	}
	if r.o.Secret != "" || r.o.FromPod != "" {
		if r.o.FromPod != "" {
			// the pod's secrets are read one by one, as --from-pod reads them: one that cannot be
			// read is named in a note with the missing right, it does not stop the run
			src, _, _ := strings.Cut(r.o.FromPod, "/")
			needs = append(needs, need{"get", "pods", "", src, "--pod: read the pod's pull secrets"})
		} else {
			needs = append(needs, need{"get", "secrets", "", r.o.SecretNamespace, "read the pull secret"})
		}
		needs = append(needs, need{"create", "secrets", "", ns, "the run's copies of the pull secrets"},
			need{"delete", "secrets", "", ns, "cleanup"})
	}
	if r.o.ProbeFromPod != "" {
		pns, _, _ := strings.Cut(r.o.ProbeFromPod, "/")
		needs = append(needs, need{"get", "pods", "", pns, "--from-pod: read the pod"},
			need{"update", "pods", "ephemeralcontainers", pns, "--from-pod: the probe as an ephemeral container"},
			need{"get", "pods", "log", pns, "--from-pod: the probe's report"})
	}
	attach, err := r.decideMode(ctx)
	if err != nil {
		return err
	}
	if attach != nil {
		needs = append(needs, *attach)
	}
	var missing []string
	for _, n := range needs {
		ok, err := r.allowed(ctx, n)
		if err != nil {
			return err
		}
		if !ok {
			what := n.resource
			if n.sub != "" {
				what += "/" + n.sub
			}
			scope := "cluster-wide"
			if n.ns != "" {
				scope = "in namespace " + n.ns
			}
			missing = append(missing, fmt.Sprintf("%s %s %s (%s)", n.verb, what, scope, n.why))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the identity lacks %d permission(s) verify needs — nothing was created:\n  %s\n(deploy/rbac.yaml grants exactly these)", len(missing), strings.Join(missing, "\n  "))
	}
	return nil
}

// allowed asks the API server whether the identity may do n.
func (r *run) allowed(ctx context.Context, n need) (bool, error) {
	ssar := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
		Namespace: n.ns, Verb: n.verb, Resource: n.resource, Subresource: n.sub}}}
	res, err := r.cs.Authz.SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, cluster.APIError(err, "create", "selfsubjectaccessreviews", "", "")
	}
	return res.Status.Allowed, nil
}

// decideMode settles how the probe reaches the nodes (r.mode) and returns the attach right the
// run then requires, if any: --delivery attach requires it; auto asks, and falls back to
// ConfigMaps with a note when it is refused.
func (r *run) decideMode(ctx context.Context) (*need, error) {
	ns := r.o.Namespace
	attach := need{"create", "pods", "attach", ns, "stream the probe binary into its probe pods (deploy/rbac.yaml's pullpath-runner)"}
	switch {
	case r.o.ProbeImage != "":
		r.mode = ModeImage
	case r.o.Delivery == ModeConfigMap:
		r.mode = ModeConfigMap
	case r.o.Delivery == ModeAttach:
		r.mode = ModeAttach
		return &attach, nil
	default:
		ok, err := r.allowed(ctx, attach)
		if err != nil {
			return nil, err
		}
		r.mode = ModeAttach
		if !ok {
			r.mode = ModeConfigMap
			r.note("the identity may not create pods/attach in namespace %s: the probe binary is stored in ConfigMaps for the run instead of streamed (deploy/rbac.yaml's pullpath-runner grants it)", ns)
		}
	}
	return nil, nil
}
