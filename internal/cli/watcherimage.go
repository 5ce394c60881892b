//go:build !probeonly

package cli

import (
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/pullpath/pullpath/internal/capped"
)

// watcherUser runs the watcher image: the manifests' runAsUser, and distroless's nonroot.
const watcherUser = "65532:65532"

// mainPackage is the main package of a pullpath build, as its Go build info names it.
const mainPackage = "github.com/pullpath/pullpath/cmd/pullpath"

var (
	// errProbeOnly is the probe-only build (-tags probeonly): it has no watch command, so a
	// Deployment running it would crash-loop on `unknown command "watch"`.
	errProbeOnly = errors.New("the probe-only build (-tags probeonly): it has no watch command")
	// errNotPullpath is a program whose Go build info does not name pullpath's main package.
	errNotPullpath = errors.New("not a pullpath build")
)

// watcherBinary returns the full static pullpath for linux/goarch that the watcher image holds,
// and where it came from: in dir, pullpath-linux-<goarch> or scripts/build.sh's
// pullpath_<version>_linux_<goarch>/pullpath; without dir, this program (self) when it is
// linux/<goarch>. The full build is not embedded (it is the program itself), so another
// platform's build must be given.
func watcherBinary(dir, goarch string, self func() (string, error)) ([]byte, string, error) {
	name := "pullpath-linux-" + goarch
	build := fmt.Sprintf("build it with CGO_ENABLED=0 GOOS=linux GOARCH=%s go build ./cmd/pullpath, or scripts/build.sh linux/%s", goarch, goarch)
	if dir == "" {
		if runtime.GOOS != "linux" || runtime.GOARCH != goarch {
			return nil, "", fmt.Errorf("no pullpath binary for linux/%s: give --binary-dir with %s (scripts/build.sh linux/%s writes dist/pullpath_<version>_linux_%s/pullpath)", goarch, name, goarch, goarch)
		}
		path, err := self()
		if err != nil {
			return nil, "", fmt.Errorf("this program: %w", err)
		}
		b, err := readWatcherBinary(path, goarch, build)
		if err != nil {
			return nil, "", fmt.Errorf("this program (%s) as the watcher: %w; or give --binary-dir", path, err)
		}
		return b, path, nil
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// scripts/build.sh's layout: DIST/pullpath_<version>_linux_<arch>/pullpath
		found, _ := filepath.Glob(filepath.Join(dir, "pullpath_*_linux_"+goarch, "pullpath"))
		switch len(found) {
		case 0:
			return nil, "", fmt.Errorf("no pullpath binary for linux/%s in %s: want %s or pullpath_<version>_linux_%s/pullpath (scripts/build.sh linux/%s writes it)", goarch, dir, name, goarch, goarch)
		case 1:
			path = found[0]
		default:
			return nil, "", fmt.Errorf("%d builds for linux/%s in %s (%s): give a directory with one, or %s", len(found), goarch, dir, strings.Join(found, ", "), name)
		}
	}
	b, err := readWatcherBinary(path, goarch, build)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return b, path, nil
}

func readWatcherBinary(path, goarch, build string) ([]byte, error) {
	b, err := capped.ReadFile(path, 256<<20)
	if err != nil {
		return nil, err
	}
	if err := checkWatcherBinary(b, goarch, build); err != nil {
		return nil, err
	}
	return b, nil
}

// checkWatcherBinary refuses what the watcher image cannot run: another architecture, a
// dynamically linked build (a `go build` with a C compiler at hand; the image has no loader), a
// program that is not pullpath, or the probe-only build. The build info says which build it is,
// without running it.
func checkWatcherBinary(b []byte, goarch, build string) error {
	if err := staticELF(b, goarch, build); err != nil {
		return err
	}
	bi, err := buildinfo.Read(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%w: no Go build info (%s)", errNotPullpath, build)
	}
	if bi.Path != mainPackage {
		return fmt.Errorf("%w: a build of %s, not of %s", errNotPullpath, bi.Path, mainPackage)
	}
	for _, s := range bi.Settings {
		if s.Key == "-tags" && slices.Contains(strings.Split(s.Value, ","), "probeonly") {
			return fmt.Errorf("%w; give the full build (%s)", errProbeOnly, build)
		}
	}
	return nil
}
