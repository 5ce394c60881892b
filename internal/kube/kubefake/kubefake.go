// Package kubefake gives client-go's fake clientset (or any of its typed clients) the shape of
// package kube's interfaces, for tests. It links client-go's whole scheme, so only tests import it.
package kubefake

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	authzv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	fakecorev1 "k8s.io/client-go/kubernetes/typed/core/v1/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/pullpath/pullpath/internal/kube"
)

// Core is the core group of a client-go typed client. On a fake one, a dry-run create is
// answered and not stored, as the API server does (the fake's tracker ignores DryRun); a
// reactor prepended after this call still sees it first.
func Core(c corev1client.CoreV1Interface) kube.Core {
	if f, ok := c.(*fakecorev1.FakeCoreV1); ok {
		f.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if ca, ok := a.(k8stesting.CreateActionImpl); ok && slices.Contains(ca.CreateOptions.DryRun, metav1.DryRunAll) {
				return true, ca.GetObject(), nil
			}
			return false, nil, nil
		})
	}
	return core{c}
}

// Authz is the access reviews of a client-go typed client.
func Authz(c authzv1client.AuthorizationV1Interface) kube.Authorization { return authz{c} }

// Leases is the leases of a client-go typed client.
func Leases(c coordinationv1client.LeasesGetter) kube.Leases { return leases{c} }

type core struct{ c corev1client.CoreV1Interface }

func (k core) Pods(ns string) kube.Pods   { return k.c.Pods(ns) }
func (k core) Nodes() kube.Nodes          { return k.c.Nodes() }
func (k core) RESTClient() rest.Interface { return k.c.RESTClient() }
func (k core) Namespaces() kube.Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return k.c.Namespaces()
}
func (k core) ConfigMaps(ns string) kube.Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return k.c.ConfigMaps(ns)
}
func (k core) Secrets(ns string) kube.Resource[*corev1.Secret, *corev1.SecretList] {
	return k.c.Secrets(ns)
}
func (k core) Events(ns string) kube.Resource[*corev1.Event, *corev1.EventList] {
	return k.c.Events(ns)
}
func (k core) ServiceAccounts(ns string) kube.Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList] {
	return k.c.ServiceAccounts(ns)
}

type authz struct {
	c authzv1client.AuthorizationV1Interface
}

func (a authz) SelfSubjectAccessReviews() kube.SelfSubjectAccessReviews {
	return a.c.SelfSubjectAccessReviews()
}

type leases struct {
	c coordinationv1client.LeasesGetter
}

func (l leases) Leases(ns string) kube.LeaseClient { return l.c.Leases(ns) }
