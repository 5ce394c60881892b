package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

// preflightCluster: every pod runs registry.corp.example/shop/web:1.4 from its node's cache
// (IfNotPresent, an imageID). Node a1's kubelet does not verify; v1's runs AlwaysVerify.
func preflightCluster() []runtime.Object {
	sa := func(ns string, secrets ...string) *corev1.ServiceAccount {
		s := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}
		for _, n := range secrets {
			s.ImagePullSecrets = append(s.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
		}
		return s
	}
	always := pod("shop", "always", "a1", true)
	always.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	return []runtime.Object{
		node("a1", "poola", t0, "AKSUbuntu-2204gen2-202510.01.0", img),
		node("v1", "poolv", t0, "AKSUbuntu-2204gen2-202510.01.0", img),
		// safe: its own secret covers the registry
		pod("shop", "covered", "a1", true, "corp"), dockerSecret("shop", "corp", "registry.corp.example"), sa("shop"),
		// breaks: its only secret is for another registry
		pod("shop", "ghcr", "a1", true, "regcred"), dockerSecret("shop", "regcred", "ghcr.io"),
		// not judged: every start pulls with its credentials already
		always,
		// breaks: no secret anywhere
		pod("bare", "bare", "a1", true), sa("bare"),
		// safe: its service account's secret covers the registry
		pod("sa", "via-sa", "a1", true), sa("sa", "corp-sa"), dockerSecret("sa", "corp-sa", "registry.corp.example"),
		// unknown: its secret may not be read
		pod("locked", "locked", "a1", true, "hidden"), sa("locked"),
		// safe: its kubelet verified it when it started
		pod("bare", "on-verified", "v1", true),
	}
}

func runPreflight(t *testing.T, policy string, configz func(context.Context, string) ([]byte, error)) *report.PullFailures {
	t.Helper()
	fc := fake.NewClientset(preflightCluster()...)
	fc.PrependReactor("get", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "locked" {
			return true, nil, &forbidden{}
		}
		return false, nil, nil
	})
	cs := &Client{Core: kubefake.Core(fc.CoreV1())}
	l, err := DiagnoseAll(context.Background(), cs, "", AllOptions{CredentialVerification: policy, KubeletConfig: configz != nil, configz: configz})
	if err != nil {
		t.Fatal(err)
	}
	if l.CredentialVerification == nil {
		t.Fatal("no credentialVerification with the option")
	}
	return l
}

func kubeletPolicies(ctx context.Context, n string) ([]byte, error) {
	if n == "v1" {
		return []byte(`{"kubeletconfig":{"imagePullCredentialsVerificationPolicy":"AlwaysVerify","preloadedImagesVerificationAllowlist":["registry.k8s.io/pause"]}}`), nil
	}
	return []byte(`{"kubeletconfig":{"imagePullCredentialsVerificationPolicy":"NeverVerify"}}`), nil
}

func TestCredentialVerificationVerdicts(t *testing.T) {
	l := runPreflight(t, PolicyAlwaysVerify, kubeletPolicies)
	v := l.CredentialVerification
	if v.Breaks != 2 || v.Unknown != 1 || v.Safe != 3 || v.Verified != 1 {
		t.Errorf("breaks %d unknown %d safe %d verified %d, want 2 1 3 1", v.Breaks, v.Unknown, v.Safe, v.Verified)
	}
	got := map[string]report.VerificationEntry{}
	for _, g := range v.Groups {
		if g.Pool != "poola" || g.Image != img || g.Registry != "registry.corp.example" {
			t.Errorf("group %s %s %s, want poola, the image, registry.corp.example", g.Pool, g.Image, g.Registry)
		}
		for _, e := range g.Entries {
			got[e.Pod] = e
		}
	}
	want := map[string]struct{ verdict, reason, fix string }{
		"bare/bare":     {report.VerdictBreaks, "no pull secret covers registry.corp.example: the pod has no imagePullSecrets, nor has its service account default", "add a pull secret covering registry.corp.example to the pod's imagePullSecrets (or service account default's, then recreate the pod), or allowlist registry.corp.example/shop/web in preloadedImagesVerificationAllowlist"},
		"shop/ghcr":     {report.VerdictBreaks, "no pull secret covers registry.corp.example: its pull secrets are regcred (covers only ghcr.io)", "add a pull secret covering registry.corp.example to the pod's imagePullSecrets, or allowlist"},
		"locked/locked": {report.VerdictUnknown, "pull secret hidden could not be read (no RBAC get on secrets", "grant get on secrets in locked (role pullpath-secret-reader)"},
	}
	if len(got) != len(want) {
		t.Errorf("entries %v, want only %v (safe pods and pull-Always containers are not listed)", got, want)
	}
	for pod, w := range want {
		e, ok := got[pod]
		if !ok {
			t.Errorf("%s not listed", pod)
			continue
		}
		if e.Verdict != w.verdict || !strings.HasPrefix(e.Reason, w.reason) || !strings.HasPrefix(e.Fix, w.fix) || e.Container != "web" || e.Node != "a1" {
			t.Errorf("%s: %+v,\nwant verdict %s, reason %q…, fix %q…", pod, e, w.verdict, w.reason, w.fix)
		}
	}
	nodes := map[string]report.NodeVerification{}
	for _, n := range v.Nodes {
		nodes[n.Node] = n
	}
	if n := nodes["v1"]; n.Policy != PolicyAlwaysVerify || n.Pool != "poolv" || strings.Join(n.Allowlist, ",") != "registry.k8s.io/pause" {
		t.Errorf("node v1 %+v", n)
	}
	if n := nodes["a1"]; n.Policy != PolicyNeverVerify {
		t.Errorf("node a1 %+v", n)
	}
	// the pull failures of pod --all are still counted apart
	if len(l.Groups) != 0 || l.Class != report.ClassOK {
		t.Errorf("pull failures %+v", l.Groups)
	}
}

// Without the kubelets' configuration no node is known to verify: the pod on v1 is judged too, and
// every node says why its policy is unknown.
func TestCredentialVerificationWithoutKubeletConfig(t *testing.T) {
	v := runPreflight(t, PolicyAlwaysVerify, nil).CredentialVerification
	if v.Breaks != 3 || v.Verified != 0 {
		t.Errorf("breaks %d verified %d, want 3 (bare on v1 too) and 0", v.Breaks, v.Verified)
	}
	for _, n := range v.Nodes {
		if n.Policy != "" || !strings.Contains(n.Problem, "--read-kubelet-config") {
			t.Errorf("node %+v: want no policy, and why", n)
		}
	}
}

// A refused /configz leaves the node at risk, and says why; an allowlisted image is safe under
// NeverVerifyAllowlistedImages on nodes whose allowlist names it.
func TestCredentialVerificationAllowlistAndRefusal(t *testing.T) {
	l := runPreflight(t, PolicyAllowlisted, func(ctx context.Context, n string) ([]byte, error) {
		if n == "v1" {
			return nil, &RBACError{Verb: "get", Resource: "nodes/proxy", Err: errors.New("forbidden")}
		}
		return []byte(`{"kubeletconfig":{"imagePullCredentialsVerificationPolicy":"NeverVerifyAllowlistedImages","preloadedImagesVerificationAllowlist":["registry.corp.example/shop/*"]}}`), nil
	})
	v := l.CredentialVerification
	// on a1 the image is allowlisted: only the pod on v1 is left, and it breaks
	if v.Breaks != 1 || v.Unknown != 0 || len(v.Groups) != 1 || v.Groups[0].Pool != "poolv" || v.Groups[0].Entries[0].Pod != "bare/on-verified" {
		t.Errorf("breaks %d unknown %d groups %+v", v.Breaks, v.Unknown, v.Groups)
	}
	for _, n := range v.Nodes {
		if n.Node == "v1" && !strings.Contains(n.Problem, "no RBAC get on nodes/proxy") {
			t.Errorf("node v1's problem %q", n.Problem)
		}
	}
}

// A node whose kubelet runs a credential provider may cover the registry: unknown, never safe.
func TestCredentialVerificationProviderIsUnknown(t *testing.T) {
	v := runPreflight(t, PolicyAlwaysVerify, func(ctx context.Context, n string) ([]byte, error) {
		return []byte(`{"kubeletconfig":{"imagePullCredentialsVerificationPolicy":"NeverVerify","imageCredentialProviderConfigPath":"/etc/kubernetes/credential-provider.yaml"}}`), nil
	}).CredentialVerification
	if v.Breaks != 0 || v.Unknown != 4 {
		t.Errorf("breaks %d unknown %d, want 0 and 4", v.Breaks, v.Unknown)
	}
	for _, g := range v.Groups {
		for _, e := range g.Entries {
			if e.Pod == "bare/bare" && !strings.Contains(e.Reason, "credential provider config (/etc/kubernetes/credential-provider.yaml)") {
				t.Errorf("bare: %q", e.Reason)
			}
		}
	}
}

func TestAllowlisted(t *testing.T) {
	for _, tc := range []struct {
		image string
		list  []string
		want  bool
	}{
		{img, []string{"registry.corp.example/shop/web"}, true},
		{img, []string{"registry.corp.example/shop/*"}, true},
		{img, []string{"registry.corp.example/*"}, true},
		{img, []string{"registry.corp.example/sh*"}, false},
		{img, []string{"registry.corp.example/shop"}, false},
		{"nginx:1.27", []string{"docker.io/library/nginx"}, true},
	} {
		r, _ := registry.ParseReference(tc.image)
		if got := allowlisted(r, tc.list); got != tc.want {
			t.Errorf("allowlisted(%s, %v) = %v, want %v", tc.image, tc.list, got, tc.want)
		}
	}
}
