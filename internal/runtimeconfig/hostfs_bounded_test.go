package runtimeconfig

import (
	"errors"
	"os"
	"testing"

	"github.com/pullpath/pullpath/internal/capped"
)

// TestRootRefusesDevices reads a device through a host root (a node's / in a probe pod): refused
// before it is read, not read until memory runs out.
func TestRootRefusesDevices(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	r := Root{FS: os.DirFS("/"), Name: "/"}
	_, err := r.ReadFile("/dev/zero")
	if !errors.Is(err, capped.ErrNotRegular) {
		t.Fatalf("ReadFile(/dev/zero) = %v", err)
	}
}
