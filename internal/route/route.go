package route

import (
	"errors"
	"fmt"
	"net/netip"
)

// Route is the kernel's choice for one destination.
type Route struct {
	Dst     netip.Addr
	Iface   string
	Gateway netip.Addr // invalid when the destination is on-link
	Src     netip.Addr
	Type    string // "unicast", "local", "unreachable", "blackhole", "prohibit"
}

// String renders the route as `ip route get` does, roughly.
func (r Route) String() string {
	s := r.Dst.String()
	if r.Gateway.IsValid() {
		s += " via " + r.Gateway.String()
	}
	if r.Iface != "" {
		s += " dev " + r.Iface
	}
	if r.Src.IsValid() {
		s += " src " + r.Src.String()
	}
	if r.Type != "" && r.Type != "unicast" && r.Type != "local" {
		s += " (" + r.Type + ")"
	}
	return s
}

// ErrNoRoute means the kernel has no usable route to the destination.
var ErrNoRoute = errors.New("no route")

// ErrUnsupported means route lookup is not implemented on this OS; the probe then skips the layer.
var ErrUnsupported = errors.New("route lookup not supported on this platform")

// NoRouteError carries the kernel's answer.
type NoRouteError struct {
	Dst    netip.Addr
	Reason string
}

func (e *NoRouteError) Error() string   { return fmt.Sprintf("no route to %s: %s", e.Dst, e.Reason) }
func (e *NoRouteError) Is(t error) bool { return t == ErrNoRoute }
