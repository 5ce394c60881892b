//go:build !probeonly

package cli

import (
	"context"
	"fmt"

	"github.com/pullpath/pullpath/internal/credprovider"
	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/cri"
	"github.com/pullpath/pullpath/internal/report"
)

// dialCRI connects to --cri's socket, or with no value to the first runtime socket under the host
// root (the probe's --host-root, else the node's root).
func (o *probeOptions) dialCRI(ctx context.Context) (*cri.Client, error) {
	sock := o.cri
	if sock == "auto" {
		root := o.hostRoot
		if root == "" || root == "none" {
			root = nodeRoot
		}
		if root == "" {
			root = "/"
		}
		// the socket the kubelet pulls through first: its --image-service-endpoint or
		// --container-runtime-endpoint (or their KubeletConfiguration fields)
		k := o.kubeletAt(root).Kubelet
		s, err := cri.FindSocket(root, k.ImageEndpoint, k.ImageEndpointOrigin)
		if err != nil {
			return nil, fmt.Errorf("--cri: %w", err)
		}
		sock = s
	}
	c, err := cri.Dial(ctx, sock, cri.DefaultDialTimeout)
	if err != nil {
		return nil, fmt.Errorf("--cri: %w", err)
	}
	return c, nil
}

// prepareCRI connects to the runtime and returns the pull to run after the walk, and the close.
func (o *probeOptions) prepareCRI(ctx context.Context) (func(context.Context, *report.Probe) *report.CRIResult, func(), error) {
	c, err := o.dialCRI(ctx)
	if err != nil {
		return nil, nil, err
	}
	pull := func(ctx context.Context, rep *report.Probe) *report.CRIResult { return o.runtimePull(ctx, c, rep) }
	return pull, func() { c.Close() }, nil
}

// runtimePull asks the runtime to pull the image with the credentials the walk presented: the
// flag's, the pull secrets', the docker config's, and the kubelet's credential providers' (run
// again, as the kubelet runs them before each pull), each in turn until one pulls, as the kubelet
// hands them. With none, the runtime uses its own configuration, as it
// would for the kubelet.
func (o *probeOptions) runtimePull(ctx context.Context, c *cri.Client, rep *report.Probe) *report.CRIResult {
	// the kubelet's list: its keyring's credentials and what its providers give, each in turn
	kr := o.probe.Keyring.Clone()
	if ps := o.probe.Providers; len(ps) > 0 {
		all := credprovider.RunAll(ctx, ps)
		all.AddTo(kr)
	}
	var res *report.CRIResult
	// none: o.probe.Credential, the runtime's own configuration
	for _, cred := range kr.Turns(o.ref.Name(), o.probe.Credential) {
		if res = o.runtimePullWith(ctx, c, rep, cred); res.Result != "failed" {
			break
		}
	}
	return res
}

// runtimePullWith is one CRI pull with one credential.
func (o *probeOptions) runtimePullWith(ctx context.Context, c *cri.Client, rep *report.Probe, cred creds.Credential) *report.CRIResult {
	// No ServerAddress, as crictl --creds: containerd's CRI (ParseAuth, 1.6 to 2.x) drops the
	// credentials for any host that is not url.Parse(ServerAddress).Host, and "reg:5000" without a
	// scheme parses to no host at all; the walk presented them to every host, so does the runtime.
	auth := cri.Auth{Username: cred.Username, Password: cred.Password, IdentityToken: cred.IdentityToken, RegistryToken: cred.RegistryToken}
	if o.output == "text" && !o.quiet {
		fmt.Fprintf(o.streams.ErrOut, "pullpath: asking %s to pull %s itself over the CRI\n", c.Socket, o.image)
	}
	return cri.Check(ctx, c, cri.Request{Image: o.image, Auth: auth, Fresh: o.criFresh, Probe: rep, Timeout: o.timeout})
}
