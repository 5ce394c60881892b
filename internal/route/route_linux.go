package route

import (
	"errors"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Get returns the route the kernel of this network namespace would take to dst (`ip route get`).
func Get(dst netip.Addr) (Route, error) {
	routes, err := netlink.RouteGet(net.IP(dst.AsSlice()))
	if err != nil {
		switch {
		case errors.Is(err, syscall.ENETUNREACH):
			return Route{}, &NoRouteError{Dst: dst, Reason: "network is unreachable (no matching route in the node's routing table)"}
		case errors.Is(err, syscall.EHOSTUNREACH):
			return Route{}, &NoRouteError{Dst: dst, Reason: "host is unreachable (an unreachable route matches)"}
		case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
			return Route{}, &NoRouteError{Dst: dst, Reason: "administratively prohibited (a prohibit route matches)"}
		case errors.Is(err, syscall.EINVAL):
			return Route{}, &NoRouteError{Dst: dst, Reason: "blackhole route matches"}
		}
		return Route{}, err
	}
	if len(routes) == 0 {
		return Route{}, &NoRouteError{Dst: dst, Reason: "the kernel returned no route"}
	}
	r := routes[0]
	out := Route{Dst: dst, Type: routeType(r.Type)}
	if r.Gw != nil {
		out.Gateway, _ = netip.AddrFromSlice(r.Gw)
		out.Gateway = out.Gateway.Unmap()
	}
	if r.Src != nil {
		out.Src, _ = netip.AddrFromSlice(r.Src)
		out.Src = out.Src.Unmap()
	}
	if r.LinkIndex > 0 {
		if l, err := netlink.LinkByIndex(r.LinkIndex); err == nil {
			out.Iface = l.Attrs().Name
		}
	}
	return out, nil
}

func routeType(t int) string {
	switch t {
	case unix.RTN_UNICAST:
		return "unicast"
	case unix.RTN_LOCAL:
		return "local"
	case unix.RTN_UNREACHABLE:
		return "unreachable"
	case unix.RTN_BLACKHOLE:
		return "blackhole"
	case unix.RTN_PROHIBIT:
		return "prohibit"
	}
	return ""
}
