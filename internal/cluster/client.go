package cluster

import (
	"context"
	"io"

	"k8s.io/client-go/rest"

	"github.com/pullpath/pullpath/internal/kube"
)

// Client is the part of the API pullpath uses: the core group, access reviews to check its own
// rights, and leases. Package kube links only these three API groups.
type Client struct {
	Core kube.Core
	// Lists is the core group speaking protobuf, for the large lists of pod and verify (30,000
	// pods decode several times faster than from JSON); nil: Core.
	Lists kube.Core
	Authz kube.Authorization
	// Leases hold watch's leader election (in-cluster, several replicas)
	Leases kube.Leases
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
	core, err := kube.NewCore(rc)
	if err != nil {
		return nil, err
	}
	authz, err := kube.NewAuthorization(rc)
	if err != nil {
		return nil, err
	}
	leases, err := kube.NewLeases(rc)
	if err != nil {
		return nil, err
	}
	pc := rest.CopyConfig(rc)
	pc.ContentType = "application/vnd.kubernetes.protobuf"
	pc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	lists, err := kube.NewCore(pc)
	if err != nil {
		return nil, err
	}
	return &Client{Core: core, Lists: lists, Authz: authz, Leases: leases, Config: rest.CopyConfig(rc)}, nil
}

// lists is the client for the large lists: Lists, else Core.
func (c *Client) lists() kube.Core {
	if c.Lists != nil {
		return c.Lists
	}
	return c.Core
}
