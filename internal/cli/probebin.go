//go:build !probeonly

package cli

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pullpath/pullpath/internal/capped"
	"github.com/pullpath/pullpath/internal/probebin"
)

// probeBinary returns the static linux binary for goarch that a node will run, and where it came
// from: the file given, else pullpath-probe-linux-<goarch> in dir, else next to this program, else
// the probe-only build every pullpath build embeds. This program itself is never shipped: it links
// client-go (five times the probe's size), and a plain `go build` with a C compiler at hand links
// it dynamically, which a node's pause image cannot run (execve: ENOENT).
func probeBinary(file, dir, goarch string) ([]byte, string, error) {
	name := "pullpath-probe-linux-" + goarch
	from := func(path string) ([]byte, string, error) {
		b, err := capped.ReadFile(path, 256<<20)
		if err != nil {
			return nil, "", err
		}
		if err := staticELF(b, goarch, "build it with CGO_ENABLED=0 -tags probeonly, as scripts/build.sh does: dist/probe/"+name); err != nil {
			return nil, "", fmt.Errorf("%s: %w", path, err)
		}
		return b, path, nil
	}
	switch {
	case file != "":
		return from(file)
	case dir != "":
		b, src, err := from(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("no pullpath binary for linux/%s in %s: %w", goarch, dir, err)
		}
		return b, src, err
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), name)
		if _, err := os.Stat(beside); err == nil {
			return from(beside)
		}
	}
	b, err := probebin.Binary(goarch)
	if err != nil {
		return nil, "", fmt.Errorf("no pullpath binary for linux/%s: %w (give one built with scripts/build.sh: dist/probe/%s)", goarch, err, name)
	}
	return b, "the probe-only build embedded in pullpath", nil
}

// errDynamic is a dynamically linked program: its interpreter is missing from most images, and
// from the watcher's, so execve says ENOENT.
var errDynamic = errors.New("dynamically linked: the image it runs in has no dynamic loader, so it must be static")

// staticELF refuses what a node could not run on an arbitrary image: another architecture, or a
// dynamically linked program. build says how to get the right one.
func staticELF(b []byte, goarch, build string) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not a linux executable (%s)", build)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[goarch]
	if want != 0 && f.Machine != want {
		return fmt.Errorf("built for %v, the node is linux/%s", f.Machine, goarch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%w (%s)", errDynamic, build)
		}
	}
	return nil
}
