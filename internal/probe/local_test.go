package probe

import (
	"net/netip"
	"testing"
)

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// Credentials go to a token host on a loopback or link-local address only when the registry is
// on the same scope: a loopback registry may use a loopback realm (a node-local registry, the
// labs), nothing else may send them to the node itself or to a metadata service.
func TestLocalRefusal(t *testing.T) {
	for _, tc := range []struct {
		realm, registry []netip.Addr
		refused         bool
	}{
		{addrs("169.254.169.254"), addrs("20.1.2.3"), true},
		{addrs("fe80::1"), addrs("2001:db8::1"), true},
		{addrs("127.0.0.1"), addrs("10.0.0.5"), true},
		{addrs("10.0.0.9", "127.0.0.1"), addrs("10.0.0.5"), true}, // any local answer is one the runtime may dial
		{addrs("::ffff:169.254.169.254"), addrs("10.0.0.5"), true},
		{addrs("127.0.0.2"), nil, true},                      // a registry through the proxy is not on the node's loopback
		{addrs("169.254.169.254"), addrs("127.0.0.1"), true}, // a loopback registry has no business with the metadata service
		{addrs("127.0.0.1"), addrs("127.0.0.1", "10.0.0.5"), true},
		{addrs("127.0.0.2"), addrs("127.0.0.1"), false},
		{addrs("::1"), addrs("127.0.0.1"), false},
		{addrs("169.254.20.11"), addrs("169.254.20.10"), false}, // a node-local cache on link-local
		{addrs("20.1.2.4"), addrs("20.1.2.3"), false},
		{nil, addrs("20.1.2.3"), false},
	} {
		if got := localRefusal(tc.realm, tc.registry); (got != "") != tc.refused {
			t.Errorf("localRefusal(%v, %v) = %q, want refused %t", tc.realm, tc.registry, got, tc.refused)
		}
	}
}
