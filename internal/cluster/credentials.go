package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

// credentials reads the pull secrets as the kubelet uses them: the pod's imagePullSecrets (the
// service account's were copied into the pod when it was created), matched against the image as
// the kubelet's keyring matches. Only the keys of a secret are read into the report, never a value.
func credentials(ctx context.Context, cs *Client, p *corev1.Pod, image string, node *corev1.Node, notes *[]string) *report.PullCredentials {
	pc := &report.PullCredentials{ServiceAccount: p.Spec.ServiceAccountName, PullSecrets: []report.PullSecret{}}
	if pc.ServiceAccount == "" {
		pc.ServiceAccount = "default"
	}
	if r, err := registry.ParseReference(image); err == nil {
		pc.Registry = r.Registry
	}
	inPod := map[string]bool{}
	for _, s := range p.Spec.ImagePullSecrets {
		inPod[s.Name] = true
		ps, _, _ := ReadSecret(ctx, cs, p.Namespace, s.Name, "pod", image)
		pc.PullSecrets = append(pc.PullSecrets, ps)
	}
	sa, err := cs.Core.ServiceAccounts(p.Namespace).Get(ctx, pc.ServiceAccount, metav1.GetOptions{})
	switch {
	case err == nil:
		for _, s := range sa.ImagePullSecrets {
			if inPod[s.Name] {
				continue
			}
			ps, _, _ := ReadSecret(ctx, cs, p.Namespace, s.Name, "serviceaccount", image)
			ps.Problem = strings.TrimPrefix(ps.Problem+"; ", "; ") + "on the service account but not in the pod: it was added after the pod was created, and the kubelet does not use it for this pod (recreate the pod)"
			pc.PullSecrets = append(pc.PullSecrets, ps)
		}
	case apierrors.IsNotFound(err):
		*notes = append(*notes, fmt.Sprintf("service account %s/%s does not exist", p.Namespace, pc.ServiceAccount))
	default:
		*notes = append(*notes, fmt.Sprintf("service account %s/%s not read (%s)", p.Namespace, pc.ServiceAccount, ShortErr(APIError(err, "get", "serviceaccounts", p.Namespace, pc.ServiceAccount))))
	}
	pc.NodeIdentity = nodeIdentity(node)
	pc.Order = kubeletOrder(pc, p, image)
	var covering, unknown []string
	for _, t := range pc.Order {
		switch {
		case t.Source != "pull-secret":
		case t.Known:
			covering = append(covering, t.Name)
		default:
			unknown = append(unknown, t.Name)
		}
	}
	// the node's part of the list is the same whatever the secrets hold (kubelet v1.37
	// secrets.go:39, keyring.go:348; no anonymous pull once the list has any credential,
	// kuberuntime_image.go:50)
	nodeSide := "the node's docker config and its credential providers, which pod cannot read from the API (verify --pod, or probe --host-root / on the node, tries them in this order)"
	switch {
	case len(covering) == 1:
		pc.Summary = fmt.Sprintf("the kubelet presents pull secret %s (it covers %s); if it is refused, then %s; no anonymous pull follows", covering[0], pc.Registry, nodeSide)
	case len(covering) > 1:
		pc.Summary = fmt.Sprintf("the kubelet presents pull secrets %s in turn (they cover %s); if all are refused, then %s; no anonymous pull follows", strings.Join(covering, ", "), pc.Registry, nodeSide)
	case len(unknown) > 0:
		pc.Summary = fmt.Sprintf("pull secret %s could not be read: the kubelet presents it first if it covers %s; then %s", strings.Join(unknown, ", "), pc.Registry, nodeSide)
	case len(pc.PullSecrets) == 0:
		pc.Summary = fmt.Sprintf("the pod has no imagePullSecrets: the pull uses %s; anonymous only when neither has a credential for the image", nodeSide)
	default:
		pc.Summary = fmt.Sprintf("no pull secret of the pod covers %s: the kubelet falls back to %s; anonymous only when neither has a credential for the image", pc.Registry, nodeSide)
	}
	return pc
}

// kubeletOrder is the kubelet's credential list for the image as far as the API shows it: the
// pod's pull secrets that cover the image in the kubelet keyring's order (the more specific key
// first, the pod's order for a key they share), then those that could not be read (where they
// fall depends on keys nobody could read), then the node's docker config, then its credential
// providers. A secret is one turn here, under the key that covers the image.
func kubeletOrder(pc *report.PullCredentials, p *corev1.Pod, image string) []report.CredentialTurn {
	var order, unread []report.CredentialTurn
	for _, s := range pc.PullSecrets {
		switch {
		case s.From != "pod":
			// a service account's secret added after the pod was created is not the pod's
		case s.CoversRegistry != nil && *s.CoversRegistry:
			order = append(order, report.CredentialTurn{Source: "pull-secret", Name: s.Name, Entry: s.Entry, Known: true,
				Detail: fmt.Sprintf("the pod's pull secret %s, entry %s", s.Name, s.Entry)})
		case s.CoversRegistry == nil && s.Exists == nil:
			unread = append(unread, report.CredentialTurn{Source: "pull-secret", Name: s.Name,
				Detail: fmt.Sprintf("the pod's pull secret %s: %s", s.Name, s.Problem)})
		}
	}
	// the keyring's order over the pod's secrets, each under its covering key (the Docker Hub
	// fallback key only when no other covers, as in the kubelet)
	var kr creds.Keyring
	for i, t := range order {
		kr.Add(creds.PullSecrets, t.Entry, creds.Credential{}, i)
	}
	var sorted []report.CredentialTurn
	for _, m := range kr.Lookup(lookupName(image)) {
		sorted = append(sorted, order[m.Tag])
	}
	order = append(sorted, unread...)
	check := fmt.Sprintf("pullpath verify %s --pod %s/%s (or pullpath probe %s --host-root / on the node)", image, p.Namespace, p.Name, image)
	return append(order,
		report.CredentialTurn{Source: "node-docker-config", Check: check,
			Detail: "the kubelet's own docker config.json on the node (in its --root-dir, default /var/lib/kubelet, then /, $HOME/.docker, /.docker, else a legacy .dockercfg), if it has an entry for the image"},
		report.CredentialTurn{Source: "credential-providers", Check: check,
			Detail: providerTurn(pc.NodeIdentity)})
}

// lookupName is the name the kubelet's keyring looks image up under (registry.Reference.Name); an
// image that does not parse is used as given.
func lookupName(image string) string {
	if r, err := registry.ParseReference(image); err == nil {
		return r.Name()
	}
	return image
}

// UnreadableSecret is a pull secret that could not be read (a missing right, most often): whether
// it covers the image is unknown. Its Error is the secret's problem in every report.
type UnreadableSecret struct{ Err error }

func (e *UnreadableSecret) Error() string {
	return "not readable: " + ShortErr(e.Err) + "; cannot tell whether it covers the registry"
}

func (e *UnreadableSecret) Unwrap() error { return e.Err }

// RBAC reports whether RBAC refused the read (not admission, not the network): a grant fixes it.
func (e *UnreadableSecret) RBAC() bool {
	var re *RBACError
	return errors.As(e.Err, &re) && re.admission() == ""
}

// ReadSecret reads one pull secret's keys and whether one covers image, and returns the secret
// when it was read (verify --pod copies it from this read); the error is an *UnreadableSecret
// when the secret could not be read (ps.Problem says the same).
func ReadSecret(ctx context.Context, cs *Client, ns, name, from, image string) (report.PullSecret, *corev1.Secret, error) {
	ps := report.PullSecret{Name: name, From: from}
	s, err := cs.Core.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		ps.Exists = boolp(false)
		ps.Problem = "the secret does not exist: the kubelet skips it"
		return ps, nil, nil
	case err != nil:
		u := &UnreadableSecret{Err: APIError(err, "get", "secrets", ns, name)}
		ps.Problem = u.Error()
		return ps, nil, u
	}
	ps.Exists, ps.Type = boolp(true), string(s.Type)
	var data []byte
	switch s.Type {
	case corev1.SecretTypeDockerConfigJson:
		data = []byte(`{"kind":"Secret","type":"kubernetes.io/dockerconfigjson","stringData":{".dockerconfigjson":` + quoteJSON(s.Data[corev1.DockerConfigJsonKey]) + `}}`)
	case corev1.SecretTypeDockercfg:
		data = []byte(`{"kind":"Secret","data":{".dockercfg":"` + b64(s.Data[corev1.DockerConfigKey]) + `"}}`)
	default:
		ps.CoversRegistry = boolp(false)
		ps.Problem = fmt.Sprintf("type %s: the kubelet only reads kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg secrets", s.Type)
		return ps, s, nil
	}
	keys, err := creds.SecretKeys(data)
	if err != nil {
		ps.CoversRegistry = boolp(false)
		ps.Problem = "unusable: " + err.Error()
		return ps, s, nil
	}
	sort.Strings(keys)
	var kr creds.Keyring
	for _, k := range keys {
		kr.Add(creds.PullSecrets, k, creds.Credential{}, 0)
	}
	if ms := kr.Lookup(lookupName(image)); len(ms) > 0 {
		ps.CoversRegistry, ps.Entry = boolp(true), ms[0].Key
		return ps, s, nil
	}
	ps.CoversRegistry = boolp(false)
	ps.Entry = strings.Join(keys, ", ")
	ps.Problem = "has no entry for this registry (it has: " + report.JoinCut(keys, 5) + ")"
	return ps, s, nil
}

// providerTurn says what the kubelet's credential providers present, from the node's cloud when
// its provider ID names one.
func providerTurn(identity string) string {
	if strings.HasPrefix(identity, "the node's own identity") {
		return "what the kubelet's credential providers whose matchImages cover the image return (its --image-credential-provider-config; none on many self-managed nodes)"
	}
	return "what the kubelet's credential providers whose matchImages cover the image return: " + identity
}

// nodeIdentity names what pulls when no pull secret does, from the node's cloud provider.
func nodeIdentity(n *corev1.Node) string {
	if n == nil {
		return "the node's own identity (a kubelet credential provider or the runtime's configured credentials), or anonymous"
	}
	switch id := n.Spec.ProviderID; {
	case strings.HasPrefix(id, "azure://"):
		return "the node's kubelet managed identity through acr-credential-provider (it needs AcrPull on the registry)"
	case strings.HasPrefix(id, "aws://"):
		return "the node's instance role through ecr-credential-provider (it needs ecr:GetAuthorizationToken, ecr:BatchGetImage, ecr:GetDownloadUrlForLayer)"
	case strings.HasPrefix(id, "gce://"):
		return "the node's service account through the GCP credential provider (it needs roles/artifactregistry.reader)"
	}
	return "the node's own identity (a kubelet credential provider, or the runtime's configured credentials), or anonymous"
}
