//go:build !probeonly

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// probeBinary returns the static linux binary for goarch that a node will run: the file given,
// else pullpath-probe-linux-<goarch> in dir, else next to this program, else this program itself
// when it is linux/<goarch>.
func probeBinary(file, dir, goarch string) ([]byte, error) {
	if file != "" {
		return os.ReadFile(file)
	}
	name := "pullpath-probe-linux-" + goarch
	if dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("no pullpath binary for linux/%s in %s: %w", goarch, dir, err)
		}
		return b, nil
	}
	self, err := os.Executable()
	if err == nil {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(self), name)); err == nil {
			return b, nil
		}
		if runtime.GOOS == "linux" && runtime.GOARCH == goarch {
			return os.ReadFile(self)
		}
	}
	return nil, fmt.Errorf("no pullpath binary for linux/%s: give the binary's location (scripts/build.sh writes dist/%s)", goarch, name)
}
