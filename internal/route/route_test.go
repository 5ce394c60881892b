package route

import (
	"errors"
	"net/netip"
	"runtime"
	"testing"
)

func TestGetLoopback(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("route lookup is Linux-only")
	}
	r, err := Get(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatalf("Get(127.0.0.1) = %v", err)
	}
	if r.Iface != "lo" || r.Type != "local" {
		t.Errorf("Get(127.0.0.1) = %+v, want dev lo, type local", r)
	}
}

func TestNoRouteErrorIs(t *testing.T) {
	err := error(&NoRouteError{Dst: netip.MustParseAddr("10.0.0.1"), Reason: "x"})
	if !errors.Is(err, ErrNoRoute) {
		t.Fatal("NoRouteError is not ErrNoRoute")
	}
}
