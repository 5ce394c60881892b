// Package netnsdial dials from inside a named network namespace, for the lab and cluster tiers
// that talk to hosts of the namespaces they create.
package netnsdial

import (
	"context"
	"net"
	"runtime"

	"github.com/vishvananda/netns"
)

// In returns a dial function that opens its sockets in the named network namespace: a socket
// keeps its namespace after the thread switches back, so only the dial runs there.
func In(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		orig, err := netns.Get()
		if err != nil {
			return nil, err
		}
		defer orig.Close()
		h, err := netns.GetFromName(ns)
		if err != nil {
			return nil, err
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			return nil, err
		}
		defer func() { _ = netns.Set(orig) }()
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// Listen opens a listener in the named network namespace; like a dialed socket, it keeps the
// namespace after the thread switches back.
func Listen(ns, network, addr string) (net.Listener, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return nil, err
	}
	defer orig.Close()
	h, err := netns.GetFromName(ns)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	if err := netns.Set(h); err != nil {
		return nil, err
	}
	defer func() { _ = netns.Set(orig) }()
	return net.Listen(network, addr)
}
