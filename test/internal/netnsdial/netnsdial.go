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
	return func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = within(ns, func() error {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
}

// Listen opens a listener in the named network namespace; like a dialed socket, it keeps the
// namespace after the thread switches back.
func Listen(ns, network, addr string) (l net.Listener, err error) {
	err = within(ns, func() error {
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// within runs f on this OS thread switched into namespace ns, and switches back.
func within(ns string, f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	h, err := netns.GetFromName(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := netns.Set(h); err != nil {
		return err
	}
	defer func() { _ = netns.Set(orig) }()
	return f()
}
