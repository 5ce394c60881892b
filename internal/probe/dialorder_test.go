package probe

import (
	"net/netip"
	"testing"
)

func TestDialOrder(t *testing.T) {
	a := netip.MustParseAddr
	cases := []struct {
		name    string
		in      []string
		noRoute []string
		want    []string
	}{
		{"answer order kept within a family", []string{"10.0.0.2", "10.0.0.1"}, nil, []string{"10.0.0.2", "10.0.0.1"}},
		{"global IPv6 before IPv4", []string{"10.0.0.1", "2606:4700::1"}, nil, []string{"2606:4700::1", "10.0.0.1"}},
		{"IPv4 before ULA", []string{"fd00::1", "10.0.0.1"}, nil, []string{"10.0.0.1", "fd00::1"}},
		{"unroutable last", []string{"2606:4700::1", "10.0.0.1"}, []string{"2606:4700::1"}, []string{"10.0.0.1", "2606:4700::1"}},
		{"IPv4-mapped is IPv4", []string{"::ffff:10.0.0.1", "2002::1"}, nil, []string{"::ffff:10.0.0.1", "2002::1"}},
	}
	for _, c := range cases {
		var in []netip.Addr
		for _, s := range c.in {
			in = append(in, a(s))
		}
		routes := map[netip.Addr]string{}
		for _, s := range c.in {
			routes[a(s)] = "dev eth0"
		}
		for _, s := range c.noRoute {
			routes[a(s)] = "no route: network is unreachable"
		}
		got := dialOrder(in, routes)
		for i := range got {
			if got[i].String() != c.want[i] {
				t.Errorf("%s: got %v, want %v", c.name, got, c.want)
				break
			}
		}
		if in[0].String() != c.in[0] {
			t.Errorf("%s: input reordered in place", c.name)
		}
	}
}
