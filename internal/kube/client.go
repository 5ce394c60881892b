package kube

import (
	"context"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// The scheme holds the three groups and the unversioned meta types (Status, WatchEvent), as
// client-go's does for all of them.
var (
	scheme         = runtime.NewScheme()
	codecs         = serializer.NewCodecFactory(scheme)
	parameterCodec = runtime.NewParameterCodec(scheme)
)

func init() {
	utilruntime.Must(corev1.AddToScheme(scheme))
	utilruntime.Must(authzv1.AddToScheme(scheme))
	utilruntime.Must(coordinationv1.AddToScheme(scheme))
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
}

// restFor is a group's REST client, configured as client-go's generated clients configure theirs.
func restFor(rc *rest.Config, gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
	c := rest.CopyConfig(rc)
	c.GroupVersion = &gv
	c.APIPath = apiPath
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(scheme, codecs).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(c)
}

// NewCore is the core group's client.
func NewCore(rc *rest.Config) (Core, error) {
	c, err := restFor(rc, corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	return core{c}, nil
}

// NewAuthorization is the authorization group's client.
func NewAuthorization(rc *rest.Config) (Authorization, error) {
	c, err := restFor(rc, authzv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return authorization{c}, nil
}

// NewLeases is the coordination group's client.
func NewLeases(rc *rest.Config) (Leases, error) {
	c, err := restFor(rc, coordinationv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return leases{c}, nil
}

// typed is one kind's client in one namespace ("" for cluster-scoped kinds), making the requests
// client-go's generic typed client (gentype) makes. gentype itself is not used: it links
// client-go's fake machinery (client-go/testing) and with it 44 packages of OpenAPI and
// structured merge.
type typed[T object, L runtime.Object] struct {
	c        rest.Interface
	resource string
	ns       string
	newT     func() T
	newL     func() L
}

// object is a kind's object: named, as gentype's objectWithMeta.
type object interface {
	runtime.Object
	GetName() string
}

func resource[T object, L runtime.Object](c rest.Interface, plural, ns string, newT func() T, newL func() L) typed[T, L] {
	return typed[T, L]{c, plural, ns, newT, newL}
}

// req is a request on the kind, in protobuf when the server speaks it, as core kinds prefer.
func (t typed[T, L]) req(r *rest.Request) *rest.Request {
	return r.UseProtobufAsDefault().NamespaceIfScoped(t.ns, t.ns != "").Resource(t.resource)
}

func timeoutOf(o metav1.ListOptions) time.Duration {
	if o.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*o.TimeoutSeconds) * time.Second
}

func (t typed[T, L]) Get(ctx context.Context, name string, o metav1.GetOptions) (T, error) {
	out := t.newT()
	err := t.req(t.c.Get()).Name(name).VersionedParams(&o, parameterCodec).Do(ctx).Into(out)
	return out, err
}

func (t typed[T, L]) List(ctx context.Context, o metav1.ListOptions) (L, error) {
	out := t.newL()
	err := t.req(t.c.Get()).VersionedParams(&o, parameterCodec).Timeout(timeoutOf(o)).Do(ctx).Into(out)
	return out, err
}

func (t typed[T, L]) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return t.req(t.c.Get()).VersionedParams(&o, parameterCodec).Timeout(timeoutOf(o)).Watch(ctx)
}

func (t typed[T, L]) Create(ctx context.Context, obj T, o metav1.CreateOptions) (T, error) {
	out := t.newT()
	err := t.req(t.c.Post()).VersionedParams(&o, parameterCodec).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (t typed[T, L]) Update(ctx context.Context, obj T, o metav1.UpdateOptions) (T, error) {
	out := t.newT()
	err := t.req(t.c.Put()).Name(obj.GetName()).VersionedParams(&o, parameterCodec).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (t typed[T, L]) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	return t.req(t.c.Delete()).Name(name).Body(&o).Do(ctx).Error()
}

type core struct{ c rest.Interface }

func (k core) RESTClient() rest.Interface { return k.c }

func (k core) Pods(ns string) Pods {
	return pods{resource(k.c, "pods", ns, func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} })}
}

func (k core) Nodes() Nodes {
	return nodes{resource(k.c, "nodes", "", func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} })}
}

func (k core) Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return resource(k.c, "namespaces", "", func() *corev1.Namespace { return &corev1.Namespace{} }, func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
}

func (k core) ConfigMaps(ns string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return resource(k.c, "configmaps", ns, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}

func (k core) Secrets(ns string) Resource[*corev1.Secret, *corev1.SecretList] {
	return resource(k.c, "secrets", ns, func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} })
}

func (k core) Events(ns string) Resource[*corev1.Event, *corev1.EventList] {
	return resource(k.c, "events", ns, func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
}

func (k core) ServiceAccounts(ns string) Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList] {
	return resource(k.c, "serviceaccounts", ns, func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} },
		func() *corev1.ServiceAccountList { return &corev1.ServiceAccountList{} })
}

type pods struct {
	typed[*corev1.Pod, *corev1.PodList]
}

// UpdateEphemeralContainers is client-go's (pod.go).
func (p pods) UpdateEphemeralContainers(ctx context.Context, podName string, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := p.req(p.c.Put()).Name(podName).
		SubResource("ephemeralcontainers").VersionedParams(&opts, parameterCodec).Body(pod).Do(ctx).Into(out)
	return out, err
}

// GetLogs is client-go's (pod_expansion.go).
func (p pods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.c.Get().NamespaceIfScoped(p.ns, p.ns != "").Name(name).Resource("pods").SubResource("log").VersionedParams(opts, parameterCodec)
}

type nodes struct {
	typed[*corev1.Node, *corev1.NodeList]
}

// PatchStatus is client-go's (node_expansion.go): a strategic merge patch of the status.
func (n nodes) PatchStatus(ctx context.Context, nodeName string, data []byte) (*corev1.Node, error) {
	out := &corev1.Node{}
	err := n.c.Patch(types.StrategicMergePatchType).Resource("nodes").Name(nodeName).SubResource("status").Body(data).Do(ctx).Into(out)
	return out, err
}

type authorization struct{ c rest.Interface }

func (a authorization) SelfSubjectAccessReviews() SelfSubjectAccessReviews {
	return reviews{a.c}
}

type reviews struct{ c rest.Interface }

func (r reviews) Create(ctx context.Context, review *authzv1.SelfSubjectAccessReview, o metav1.CreateOptions) (*authzv1.SelfSubjectAccessReview, error) {
	out := &authzv1.SelfSubjectAccessReview{}
	err := r.c.Post().UseProtobufAsDefault().Resource("selfsubjectaccessreviews").VersionedParams(&o, parameterCodec).Body(review).Do(ctx).Into(out)
	return out, err
}

type leases struct{ c rest.Interface }

func (l leases) Leases(ns string) LeaseClient {
	return resource(l.c, "leases", ns, func() *coordinationv1.Lease { return &coordinationv1.Lease{} },
		func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} })
}
