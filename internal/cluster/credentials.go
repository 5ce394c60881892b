package cluster

import (
	"context"
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
		pc.PullSecrets = append(pc.PullSecrets, readSecret(ctx, cs, p.Namespace, s.Name, "pod", image))
	}
	sa, err := cs.Core.ServiceAccounts(p.Namespace).Get(ctx, pc.ServiceAccount, metav1.GetOptions{})
	switch {
	case err == nil:
		for _, s := range sa.ImagePullSecrets {
			if inPod[s.Name] {
				continue
			}
			ps := readSecret(ctx, cs, p.Namespace, s.Name, "serviceaccount", image)
			ps.Problem = strings.TrimPrefix(ps.Problem+"; ", "; ") + "on the service account but not in the pod: it was added after the pod was created, and the kubelet does not use it for this pod (recreate the pod)"
			pc.PullSecrets = append(pc.PullSecrets, ps)
		}
	case apierrors.IsNotFound(err):
		*notes = append(*notes, fmt.Sprintf("service account %s/%s does not exist", p.Namespace, pc.ServiceAccount))
	default:
		*notes = append(*notes, fmt.Sprintf("service account %s/%s not read (%s)", p.Namespace, pc.ServiceAccount, shortErr(apiError(err, "get", "serviceaccounts", p.Namespace, pc.ServiceAccount))))
	}
	covering := ""
	for _, s := range pc.PullSecrets {
		if s.CoversRegistry != nil && *s.CoversRegistry && s.From == "pod" && covering == "" {
			covering = s.Name
		}
	}
	switch {
	case covering != "":
		pc.Summary = fmt.Sprintf("the kubelet presents pull secret %s (it covers %s)", covering, pc.Registry)
	case len(pc.PullSecrets) == 0:
		pc.NodeIdentity = nodeIdentity(node)
		pc.Summary = fmt.Sprintf("the pod has no imagePullSecrets: the pull uses %s", pc.NodeIdentity)
	default:
		pc.NodeIdentity = nodeIdentity(node)
		pc.Summary = fmt.Sprintf("no pull secret of the pod covers %s: the kubelet falls back to %s", pc.Registry, pc.NodeIdentity)
	}
	return pc
}

func readSecret(ctx context.Context, cs *Client, ns, name, from, image string) report.PullSecret {
	ps := report.PullSecret{Name: name, From: from}
	s, err := cs.Core.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		ps.Exists = boolp(false)
		ps.Problem = "the secret does not exist: the kubelet skips it"
		return ps
	case err != nil:
		ps.Problem = "not readable: " + shortErr(apiError(err, "get", "secrets", ns, name)) + "; cannot tell whether it covers the registry"
		return ps
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
		return ps
	}
	keys, err := creds.SecretKeys(data)
	if err != nil {
		ps.CoversRegistry = boolp(false)
		ps.Problem = "unusable: " + err.Error()
		return ps
	}
	sort.Strings(keys)
	if k, ok := creds.MatchImage(keys, image); ok {
		ps.CoversRegistry, ps.Entry = boolp(true), k
		return ps
	}
	ps.CoversRegistry = boolp(false)
	ps.Entry = strings.Join(keys, ", ")
	ps.Problem = "has no entry for this registry (it has: " + report.JoinCut(keys, 5) + ")"
	return ps
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
