//go:build !linux

package route

import "net/netip"

// Get is not implemented off Linux: nodes run Linux, and the demo does not need it.
func Get(dst netip.Addr) (Route, error) { return Route{}, ErrUnsupported }
