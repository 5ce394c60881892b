// Package kube is the part of the Kubernetes API pullpath uses: the core group, access reviews
// and leases, as small interfaces with only those three API groups linked.
//
// client-go's typed clients link its scheme, which registers all 56 API group versions at the
// start of every command: about 7 MiB of each process's memory, the local probe's included, for
// types pullpath never reads. kube makes the same requests as client-go's typed clients, on
// client-go's REST client and a scheme of its own. client-go's typed clients (its fake clientset
// in tests, see kubefake) fit these interfaces as they are.
package kube

import (
	"context"

	authzv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Resource is what pullpath does with one kind of object.
type Resource[T, L any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Pods adds the subresources verify and pod use: the ephemeral probe container and its log.
type Pods interface {
	Resource[*corev1.Pod, *corev1.PodList]
	UpdateEphemeralContainers(ctx context.Context, podName string, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error)
	GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request
}

// Nodes adds the status patch of watch's node condition.
type Nodes interface {
	Resource[*corev1.Node, *corev1.NodeList]
	PatchStatus(ctx context.Context, nodeName string, data []byte) (*corev1.Node, error)
}

// Core is the core group.
type Core interface {
	Pods(namespace string) Pods
	Nodes() Nodes
	Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList]
	ConfigMaps(namespace string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList]
	Secrets(namespace string) Resource[*corev1.Secret, *corev1.SecretList]
	Events(namespace string) Resource[*corev1.Event, *corev1.EventList]
	ServiceAccounts(namespace string) Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList]
	// RESTClient is for the requests no typed method makes: attach, the node proxy, raw lists.
	RESTClient() rest.Interface
}

// SelfSubjectAccessReviews asks the API server what the caller may do.
type SelfSubjectAccessReviews interface {
	Create(ctx context.Context, review *authzv1.SelfSubjectAccessReview, opts metav1.CreateOptions) (*authzv1.SelfSubjectAccessReview, error)
}

// Authorization is the access reviews of the authorization group.
type Authorization interface {
	SelfSubjectAccessReviews() SelfSubjectAccessReviews
}

// LeaseClient is the leases of one namespace: watch's leader election.
type LeaseClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// Leases is the coordination group's leases.
type Leases interface {
	Leases(namespace string) LeaseClient
}
