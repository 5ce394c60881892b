package cluster

import (
	"context"
	"io"

	authzv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// Client is the part of the API pullpath uses: the core group, and access reviews to check its
// own rights. Only these typed clients are linked, which keeps the binary small (the full
// clientset links every API group).
type Client struct {
	Core corev1client.CoreV1Interface
	// Lists is the core group speaking protobuf, for the large lists of pod and verify (30,000
	// pods decode several times faster than from JSON); nil: Core.
	Lists corev1client.CoreV1Interface
	Authz authzv1client.AuthorizationV1Interface
	// Leases hold watch's leader election (in-cluster, several replicas)
	Leases coordinationv1client.LeasesGetter
	// Config is what the clients were built from: the attach stream dials with it.
	Config *rest.Config
	// Attach, when set, stands in for the attach API's stream into a container's stdin (tests).
	Attach func(ctx context.Context, ns, pod, container string, stdin io.Reader) error
	// NoWatchList says the server cannot stream a list as a watch (client-go's fake clientset):
	// informers then list, then watch.
	NoWatchList bool
}

// IsWatchListSemanticsUnSupported tells client-go's informers whether to stream lists.
func (c *Client) IsWatchListSemanticsUnSupported() bool { return c.NoWatchList }

// NewClient builds the client from a REST configuration.
func NewClient(rc *rest.Config) (*Client, error) {
	core, err := corev1client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	authz, err := authzv1client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	leases, err := coordinationv1client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	pc := rest.CopyConfig(rc)
	pc.ContentType = "application/vnd.kubernetes.protobuf"
	pc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	lists, err := corev1client.NewForConfig(pc)
	if err != nil {
		return nil, err
	}
	return &Client{Core: core, Lists: lists, Authz: authz, Leases: leases, Config: rest.CopyConfig(rc)}, nil
}

// lists is the client for the large lists: Lists, else Core.
func (c *Client) lists() corev1client.CoreV1Interface {
	if c.Lists != nil {
		return c.Lists
	}
	return c.Core
}
