package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

// The kubelet's imagePullCredentialsVerificationPolicy values (KEP-2535).
const (
	PolicyNeverVerify          = "NeverVerify"
	PolicyPreloaded            = "NeverVerifyPreloadedImages"
	PolicyAllowlisted          = "NeverVerifyAllowlistedImages"
	PolicyAlwaysVerify         = "AlwaysVerify"
	ensureSecretPulledImagesFG = "KubeletEnsureSecretPulledImages"
)

// VerifyPolicies are the policies a pre-flight can assume: those that verify something.
var VerifyPolicies = []string{PolicyAlwaysVerify, PolicyPreloaded, PolicyAllowlisted}

// AllOptions are pod --all's optional parts.
type AllOptions struct {
	// CredentialVerification is the policy the pre-flight assumes; "" runs none.
	CredentialVerification string
	// KubeletConfig reads each node's current policy from its kubelet's /configz.
	KubeletConfig bool
	// configz stands in for the nodes/proxy read (tests).
	configz func(ctx context.Context, node string) ([]byte, error)
}

// publicRegistries serve anonymous pulls only: the kubelet's verification of a pod without
// credentials is an anonymous pull, which they answer.
var publicRegistries = []string{"registry.k8s.io", "k8s.gcr.io", "mcr.microsoft.com", "public.ecr.aws"}

// vnode is what the pre-flight keeps of a node.
type vnode struct {
	pool, provider string
	images         map[string]bool // status.images names
	nv             *report.NodeVerification
	verified       bool // its kubelet runs AlwaysVerify now, the feature gate not off
}

// preflight is one pre-flight: the nodes, and the secrets and service accounts read once each.
type preflight struct {
	a       *allRun
	o       AllOptions
	nodes   map[string]*vnode
	secrets map[string]secretRead // ns/name|image
	sas     map[string]*saRead    // ns/name
	groups  map[string]*report.VerificationGroup
	out     *report.CredentialVerification
}

type secretRead struct {
	ps  report.PullSecret
	err error
}

type saRead struct {
	secrets []string
	err     error // nil also when it does not exist
}

// credentialVerification lists the running containers that use a cached image and would not start
// again under the policy o assumes. It reads the Running pods of the scopes already read, the nodes,
// and per pod its pull secrets and (for a pod without any) its service account, each once.
func (a *allRun) credentialVerification(ctx context.Context, o AllOptions) {
	p := &preflight{a: a, o: o, nodes: map[string]*vnode{}, secrets: map[string]secretRead{}, sas: map[string]*saRead{},
		groups: map[string]*report.VerificationGroup{},
		out:    &report.CredentialVerification{Policy: o.CredentialVerification, Nodes: []report.NodeVerification{}, Groups: []report.VerificationGroup{}}}
	a.out.CredentialVerification = p.out
	p.readNodes(ctx)
	for _, ns := range a.scopes {
		l, err := paged(ctx, metav1.ListOptions{FieldSelector: runningPods}, func(ctx context.Context, lo metav1.ListOptions) (metav1.ListMeta, int, error) {
			pl, err := a.cs.lists().Pods(ns).List(ctx, lo)
			if err != nil {
				return metav1.ListMeta{}, 0, err
			}
			for i := range pl.Items {
				p.judgePod(ctx, &pl.Items[i])
			}
			return pl.ListMeta, len(pl.Items), nil
		})
		if err != nil {
			a.out.Partial = true
			a.note("credential verification: the Running pods %s could not be listed (%s): they are not judged", where(ns), ShortErr(APIError(err, "list", "pods", ns, "")))
			continue
		}
		a.cut(l, "Running pods", ns)
	}
	for _, g := range p.groups {
		p.out.Groups = append(p.out.Groups, *g)
	}
	sort.Slice(p.out.Groups, func(i, j int) bool {
		gi, gj := p.out.Groups[i], p.out.Groups[j]
		if gi.Pool != gj.Pool {
			return gi.Pool < gj.Pool
		}
		return gi.Image < gj.Image
	})
	if o.CredentialVerification == PolicyPreloaded {
		a.note("credential verification: the API does not say which images were preloaded (pulled outside the kubelet): every cached image is taken as pulled by the kubelet, so NeverVerifyPreloadedImages is judged as AlwaysVerify")
	}
}

// readNodes lists the nodes (pool, provider, image list) and, with KubeletConfig, each kubelet's
// current policy.
func (p *preflight) readNodes(ctx context.Context) {
	var names []string
	_, err := paged(ctx, metav1.ListOptions{}, func(ctx context.Context, lo metav1.ListOptions) (metav1.ListMeta, int, error) {
		nl, err := p.a.cs.lists().Nodes().List(ctx, lo)
		if err != nil {
			return metav1.ListMeta{}, 0, err
		}
		for i := range nl.Items {
			n := &nl.Items[i]
			pool, _ := Pool(n)
			v := &vnode{pool: pool, provider: n.Spec.ProviderID, images: map[string]bool{},
				nv: &report.NodeVerification{Node: n.Name, Pool: pool, Allowlist: []string{}}}
			for _, name := range imageNames(n) {
				if r, ok := parseImage(name); ok {
					v.images[imageKey(r)] = true
				}
			}
			p.nodes[n.Name] = v
			names = append(names, n.Name)
		}
		return nl.ListMeta, len(nl.Items), nil
	})
	if err != nil {
		p.a.note("credential verification: the nodes could not be listed (%s): no pools, no node image lists, no platform credential providers", ShortErr(APIError(err, "list", "nodes", "", "")))
		return
	}
	sort.Strings(names)
	p.readPolicies(ctx, names)
	for _, n := range names {
		p.out.Nodes = append(p.out.Nodes, *p.nodes[n].nv)
	}
}

// readPolicies reads imagePullCredentialsVerificationPolicy, its allowlist and the credential
// provider config from each kubelet's /configz.
func (p *preflight) readPolicies(ctx context.Context, names []string) {
	if !p.o.KubeletConfig {
		for _, n := range names {
			p.nodes[n].nv.Problem = "not read: --read-kubelet-config was not given"
		}
		return
	}
	read := p.o.configz
	if read == nil {
		read = func(ctx context.Context, n string) ([]byte, error) {
			return RawRead(ctx, p.a.cs.Core.RESTClient().Get().Resource("nodes").Name(n).SubResource("proxy").Suffix("configz"), "get", "nodes/proxy", "", n)
		}
	}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(8)
	for _, n := range names {
		g.Go(func() error {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			raw, err := read(cctx, n)
			mu.Lock()
			defer mu.Unlock()
			v := p.nodes[n]
			if err != nil {
				v.nv.Problem = "not read: " + ShortErr(err)
				return nil
			}
			var cz struct {
				KubeletConfig struct {
					Policy       *string         `json:"imagePullCredentialsVerificationPolicy"`
					Allowlist    []string        `json:"preloadedImagesVerificationAllowlist"`
					ProviderPath string          `json:"imageCredentialProviderConfigPath"`
					FeatureGates map[string]bool `json:"featureGates"`
				} `json:"kubeletconfig"`
			}
			if err := json.Unmarshal(raw, &cz); err != nil {
				v.nv.Problem = "not read: /configz is not JSON: " + ShortErr(err)
				return nil
			}
			kc := cz.KubeletConfig
			v.nv.CredentialProviderConfig = kc.ProviderPath
			if kc.Allowlist != nil {
				v.nv.Allowlist = kc.Allowlist
			}
			if kc.Policy == nil {
				v.nv.Problem = "the kubelet's configuration has no imagePullCredentialsVerificationPolicy: a kubelet before KEP-2535 never verifies"
				return nil
			}
			v.nv.Policy = *kc.Policy
			if on, set := kc.FeatureGates[ensureSecretPulledImagesFG]; set && !on {
				v.nv.Problem = "feature gate " + ensureSecretPulledImagesFG + " is off: the policy is not enforced"
				return nil
			}
			v.verified = v.nv.Policy == PolicyAlwaysVerify
			return nil
		})
	}
	_ = g.Wait()
}

// judgePod judges each container of p that runs from a cached image.
func (p *preflight) judgePod(ctx context.Context, pod *corev1.Pod) {
	node := p.nodes[pod.Spec.NodeName]
	statuses := map[string]corev1.ContainerStatus{}
	for _, s := range allStatuses(pod) {
		statuses[s.Name] = s
	}
	for _, ct := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if pullPolicy(ct) == corev1.PullAlways {
			continue // every start pulls with the pod's own credentials already
		}
		s, ok := statuses[ct.Name]
		cached := ok && s.ImageID != "" && (s.State.Running != nil || s.State.Terminated != nil || (s.State.Waiting != nil && !pullWaitReasons[s.State.Waiting.Reason]))
		r, ok := parseImage(ct.Image)
		if !cached && (node == nil || !ok || !node.images[imageKey(r)]) {
			continue
		}
		verdict, reason, fix := p.judge(ctx, pod, ct.Image, node)
		if verdict == report.VerdictSafe {
			p.out.Safe++
			continue
		}
		if verdict == report.VerdictBreaks {
			p.out.Breaks++
		} else {
			p.out.Unknown++
		}
		pool := "(unknown pool)"
		if node != nil {
			pool = node.pool
		}
		key := pool + "|" + ct.Image
		g := p.groups[key]
		if g == nil {
			g = &report.VerificationGroup{Pool: pool, Image: ct.Image, Entries: []report.VerificationEntry{}}
			if r, err := registry.ParseReference(ct.Image); err == nil {
				g.Registry = r.Registry
			}
			p.groups[key] = g
		}
		g.Entries = append(g.Entries, report.VerificationEntry{Pod: pod.Namespace + "/" + pod.Name, Container: ct.Name, Node: pod.Spec.NodeName,
			Verdict: verdict, Reason: reason, Fix: fix})
	}
}

// pullPolicy is the container's policy as the API server defaults it: Always for :latest or no tag.
func pullPolicy(c corev1.Container) corev1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	if r, err := registry.ParseReference(c.Image); err == nil && r.Digest == "" && r.Tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// judge decides, from what the API shows, whether the kubelet would let the pod start image again
// under the policy: "safe" only on evidence, "unknown" where evidence is missing.
func (p *preflight) judge(ctx context.Context, pod *corev1.Pod, image string, node *vnode) (verdict, reason, fix string) {
	if node != nil && node.verified {
		p.out.Verified++
		return report.VerdictSafe, "", ""
	}
	ref, err := registry.ParseReference(image)
	if err != nil {
		return report.VerdictUnknown, "the image reference does not parse: " + ShortErr(err), "fix the image reference"
	}
	reg := ref.Registry
	if p.o.CredentialVerification == PolicyAllowlisted && node != nil && allowlisted(ref, node.nv.Allowlist) {
		return report.VerdictSafe, "", ""
	}
	if slices.Contains(publicRegistries, reg) || strings.HasPrefix(ref.Repository, "library/") && reg == "docker.io" {
		return report.VerdictSafe, "", "" // verified by an anonymous pull
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	allow := fmt.Sprintf("or allowlist %s in preloadedImagesVerificationAllowlist under NeverVerifyAllowlistedImages", ref.Registry+"/"+ref.Repository)
	var unread, others []string
	for _, s := range pod.Spec.ImagePullSecrets {
		r := p.secret(ctx, pod.Namespace, s.Name, image)
		switch {
		case r.ps.CoversRegistry != nil && *r.ps.CoversRegistry:
			return report.VerdictSafe, "", ""
		case r.err != nil:
			unread = append(unread, s.Name)
		case r.ps.Exists != nil && !*r.ps.Exists:
			others = append(others, s.Name+" (does not exist)")
		default:
			others = append(others, fmt.Sprintf("%s (covers only %s)", s.Name, report.OrDash(r.ps.Entry)))
		}
	}
	fromSA := false
	if len(pod.Spec.ImagePullSecrets) == 0 {
		// the ServiceAccount admission copies the account's secrets only into a pod that names none
		r := p.serviceAccount(ctx, pod.Namespace, sa)
		if r.err != nil {
			return report.VerdictUnknown, fmt.Sprintf("the pod has no imagePullSecrets and its service account %s could not be read (%s): its pull secrets may cover %s", sa, ShortErr(r.err), reg),
				fmt.Sprintf("grant get on serviceaccounts in %s, or run pullpath verify %s --pod %s/%s", pod.Namespace, image, pod.Namespace, pod.Name)
		}
		for _, name := range r.secrets {
			sr := p.secret(ctx, pod.Namespace, name, image)
			switch {
			case sr.ps.CoversRegistry != nil && *sr.ps.CoversRegistry:
				// safe for the pods admission creates; this pod's own spec names none
				return report.VerdictSafe, "", ""
			case sr.err != nil:
				unread = append(unread, name+" (service account "+sa+")")
			case sr.ps.Exists != nil && !*sr.ps.Exists:
				others = append(others, name+" (service account "+sa+"'s; does not exist)")
			default:
				others = append(others, fmt.Sprintf("%s (service account %s's; covers only %s)", name, sa, report.OrDash(sr.ps.Entry)))
			}
		}
		fromSA = true
	}
	if len(unread) > 0 {
		return report.VerdictUnknown, fmt.Sprintf("pull secret %s could not be read (%s): it may cover %s", strings.Join(unread, ", "), p.secretProblem(pod.Namespace, unread, image), reg),
			fmt.Sprintf("grant get on secrets in %s (role %s), or run pullpath verify %s --pod %s/%s", pod.Namespace, RoleSecrets, image, pod.Namespace, pod.Name)
	}
	if node != nil && node.nv.CredentialProviderConfig != "" {
		return report.VerdictUnknown, fmt.Sprintf("no pull secret covers %s, but the kubelet of %s has a credential provider config (%s) whose matchImages may cover it: a provider's credential serves every pod of the node", reg, pod.Spec.NodeName, node.nv.CredentialProviderConfig),
			fmt.Sprintf("run pullpath verify %s --pod %s/%s (it tries the node's providers); to be sure, add a pull secret covering %s", image, pod.Namespace, pod.Name, reg)
	}
	if node != nil && platformProvider(node.provider, reg) != "" {
		return report.VerdictUnknown, fmt.Sprintf("no pull secret covers %s, but the node's %s may (its configuration is not visible through the API): a provider's credential serves every pod of the node", reg, platformProvider(node.provider, reg)),
			fmt.Sprintf("run pullpath verify %s --pod %s/%s (it tries the node's providers); to be sure, add a pull secret covering %s", image, pod.Namespace, pod.Name, reg)
	}
	switch {
	case len(others) > 0:
		reason = fmt.Sprintf("no pull secret covers %s: its pull secrets are %s", reg, strings.Join(others, ", "))
	case fromSA:
		reason = fmt.Sprintf("no pull secret covers %s: the pod has no imagePullSecrets, nor has its service account %s", reg, sa)
	default:
		reason = fmt.Sprintf("no pull secret covers %s", reg)
	}
	target := "the pod's imagePullSecrets"
	if fromSA {
		target = "the pod's imagePullSecrets (or service account " + sa + "'s, then recreate the pod)"
	}
	return report.VerdictBreaks, reason, fmt.Sprintf("add a pull secret covering %s to %s, %s", reg, target, allow)
}

// secretProblem is why the first unreadable secret was not read.
func (p *preflight) secretProblem(ns string, names []string, image string) string {
	name, _, _ := strings.Cut(names[0], " ")
	if r, ok := p.secrets[ns+"/"+name+"|"+image]; ok && r.err != nil {
		return ShortErr(r.err)
	}
	return "not read"
}

func (p *preflight) secret(ctx context.Context, ns, name, image string) secretRead {
	key := ns + "/" + name + "|" + image
	if r, ok := p.secrets[key]; ok {
		return r
	}
	ps, _, err := ReadSecret(ctx, p.a.cs, ns, name, "pod", image)
	r := secretRead{ps: ps}
	if err != nil {
		r.err = err.(*UnreadableSecret).Err
	}
	p.secrets[key] = r
	return r
}

func (p *preflight) serviceAccount(ctx context.Context, ns, name string) *saRead {
	key := ns + "/" + name
	if r, ok := p.sas[key]; ok {
		return r
	}
	r := &saRead{}
	sa, err := p.a.cs.Core.ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		for _, s := range sa.ImagePullSecrets {
			r.secrets = append(r.secrets, s.Name)
		}
	case !apierrors.IsNotFound(err):
		r.err = APIError(err, "get", "serviceaccounts", ns, name)
	}
	p.sas[key] = r
	return r
}

// allowlisted matches the kubelet's preloadedImagesVerificationAllowlist: a repository without tag
// or digest, or a prefix ending in "/*" (a whole path segment).
func allowlisted(ref registry.Reference, list []string) bool {
	repo := ref.Registry + "/" + ref.Repository
	for _, e := range list {
		if prefix, ok := strings.CutSuffix(e, "/*"); ok {
			if strings.HasPrefix(repo, prefix+"/") {
				return true
			}
		} else if e == repo {
			return true
		}
	}
	return false
}

// platformProvider names the credential provider a node's platform runs for reg, or "".
func platformProvider(providerID, reg string) string {
	host, _, _ := strings.Cut(reg, ":")
	switch {
	case strings.HasPrefix(providerID, "azure://") && (strings.HasSuffix(host, ".azurecr.io") || strings.HasSuffix(host, ".azurecr.cn") || strings.HasSuffix(host, ".azurecr.us")):
		return "acr-credential-provider"
	case strings.HasPrefix(providerID, "aws://") && strings.Contains(host, ".dkr.ecr.") && strings.Contains(host, ".amazonaws.com"):
		return "ecr-credential-provider"
	case strings.HasPrefix(providerID, "gce://") && (host == "gcr.io" || strings.HasSuffix(host, ".gcr.io") || strings.HasSuffix(host, "-docker.pkg.dev")):
		return "GCP credential provider"
	}
	return ""
}

// imageKey is an image as node image lists and pod specs both reduce to: the digest when named.
func imageKey(r imageRef) string {
	if r.digest != "" {
		return r.repo + "@" + r.digest
	}
	return r.repo + ":" + r.tag
}
