package runtimeconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/pullpath/pullpath/internal/capped"
)

// Root reads files of a host root. Absolute symlinks are resolved inside the root, as they would be
// on the host: a pod that mounts the node's / at /host must not follow /host/etc/resolv.conf to the
// pod's own /run.
type Root struct {
	FS   fs.FS
	Name string // shown in messages: the --host-root directory
}

// maxFile bounds any configuration file read.
const maxFile = capped.Max

// resolve returns the in-root path of p with every symlink component resolved.
func (r Root) resolve(p string) (string, error) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	for range 40 {
		parts := strings.Split(p, "/")
		changed := false
		for i := range parts {
			cur := strings.Join(parts[:i+1], "/")
			if cur == "" {
				continue
			}
			fi, err := fs.Lstat(r.FS, cur)
			if err != nil {
				return p, err
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			target, err := fs.ReadLink(r.FS, cur)
			if err != nil {
				return p, err
			}
			if !path.IsAbs(target) {
				target = path.Join(path.Dir("/"+cur), target)
			}
			rest := strings.Join(parts[i+1:], "/")
			p = strings.TrimPrefix(path.Clean(path.Join(target, rest)), "/")
			changed = true
			break
		}
		if !changed {
			return p, nil
		}
	}
	return p, fmt.Errorf("%s: too many levels of symbolic links", p)
}

// ReadFile reads an absolute host path ("/etc/containerd/config.toml").
func (r Root) ReadFile(p string) ([]byte, error) {
	rp, err := r.resolve(p)
	if err != nil {
		return nil, r.wrap(p, err)
	}
	// a FIFO, a device or a directory is refused before it is opened, a file over maxFile before
	// it is read
	b, err := capped.ReadFS(r.FS, rp, r.show(p), maxFile)
	if errors.Is(err, capped.ErrNotRegular) || errors.Is(err, capped.ErrTooLarge) {
		return nil, err
	}
	if err != nil {
		return nil, r.wrap(p, err)
	}
	return b, nil
}

// Exists reports whether a host path exists (following symlinks inside the root).
func (r Root) Exists(p string) bool {
	rp, err := r.resolve(p)
	if err != nil {
		return false
	}
	_, err = fs.Stat(r.FS, rp)
	return err == nil
}

// IsDir reports whether a host path is a directory.
func (r Root) IsDir(p string) bool {
	rp, err := r.resolve(p)
	if err != nil {
		return false
	}
	fi, err := fs.Stat(r.FS, rp)
	return err == nil && fi.IsDir()
}

// ReadDir lists a host directory; a missing directory is empty, not an error.
func (r Root) ReadDir(p string) ([]fs.DirEntry, error) {
	rp, err := r.resolve(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, r.wrap(p, err)
	}
	es, err := fs.ReadDir(r.FS, rp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, r.wrap(p, err)
	}
	return es, nil
}

// Glob expands a host glob pattern ("/etc/containerd/conf.d/*.toml").
func (r Root) Glob(pattern string) ([]string, error) { return globWith(r.ReadDir, pattern) }

func globWith(readDir func(string) ([]fs.DirEntry, error), pattern string) ([]string, error) {
	dir := path.Dir(pattern)
	es, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		if ok, _ := path.Match(path.Base(pattern), e.Name()); ok {
			out = append(out, path.Join(dir, e.Name()))
		}
	}
	return out, nil
}

func (r Root) show(p string) string {
	if r.Name == "" || r.Name == "/" {
		return p
	}
	return strings.TrimSuffix(r.Name, "/") + p
}

func (r Root) wrap(p string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s: %w", r.show(p), err)
}

// lineOf returns the 1-based line of the first line of text matching pred, or 0.
func lineOf(text []byte, pred func(line string) bool) int {
	for i, l := range strings.Split(string(text), "\n") {
		if pred(strings.TrimSpace(l)) {
			return i + 1
		}
	}
	return 0
}
