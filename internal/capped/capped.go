// Package capped reads the files and streams pullpath is given with a bound: a regular file of at
// most a cap, refused before it is read when it is a FIFO, a device, a socket or a directory (a
// FIFO would block the open, /dev/zero would be read until memory runs out), and stdin read so
// that a signal still ends the run.
package capped

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Max is the cap pullpath puts on every configuration, certificate and secret file: 4 MiB.
const Max = 4 << 20

// ReadFile reads the regular file path, of at most max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	// stat before open: opening a FIFO for reading blocks until a writer comes
	fi, err := os.Stat(path)
	if err != nil {
		return nil, asOpen(err)
	}
	if err := check(path, fi, max); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(path, f, max)
}

// ReadFS is ReadFile on a file system: name is a path of fsys, shown as path in messages.
func ReadFS(fsys fs.FS, name, path string, max int64) ([]byte, error) {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, asOpen(err)
	}
	if err := check(path, fi, max); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(path, f, max)
}

// asOpen words a failed stat as the open it stands for: "open F: no such file or directory".
func asOpen(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "stat" {
		return &fs.PathError{Op: "open", Path: pe.Path, Err: pe.Err}
	}
	return err
}

// readOpen checks the open file again (it may have been replaced since the stat) and reads it.
func readOpen(path string, f fs.File, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := check(path, fi, max); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &fileError{fmt.Sprintf("%s grew past %s while read", path, human(max)), ErrTooLarge}
	}
	return b, nil
}

// ErrNotRegular is wrapped by the error for a file that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error for a file or stream over its cap.
var ErrTooLarge = errors.New("too large")

func check(path string, fi fs.FileInfo, max int64) error {
	if fi.IsDir() {
		return &fileError{path + " is a directory", ErrNotRegular}
	}
	if !fi.Mode().IsRegular() {
		return &fileError{fmt.Sprintf("%s is a %s, not a file", path, Kind(fi.Mode())), ErrNotRegular}
	}
	if fi.Size() > max {
		return &fileError{fmt.Sprintf("%s is %s, more than the %s read", path, human(fi.Size()), human(max)), ErrTooLarge}
	}
	return nil
}

// fileError says what is wrong with the file and is one of ErrNotRegular, ErrTooLarge.
type fileError struct {
	msg  string
	kind error
}

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return e.kind }

// Kind names what a file that is not regular is: "named pipe (FIFO)", "character device", ….
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

func human(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadAll reads r (stdin) to its end, at most max bytes, and returns when ctx is done even while
// a read blocks: the read goes on in the background and its result is dropped, which only stdin
// can afford (the process is about to exit).
func ReadAll(ctx context.Context, r io.Reader, max int64) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, max+1))
		if err == nil && int64(len(b)) > max {
			b, err = nil, &fileError{"more than " + human(max), ErrTooLarge}
		}
		ch <- result{b, err}
	}()
	select {
	case res := <-ch:
		return res.b, res.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Line reads r (stdin) up to its first newline, at most max bytes, without the line ending; like
// ReadAll it returns when ctx is done.
func Line(ctx context.Context, r io.Reader, max int64) (string, error) {
	type result struct {
		s   string
		err error
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ch := make(chan result, 1)
	go func() {
		var b []byte
		one := make([]byte, 1)
		for int64(len(b)) <= max {
			n, err := r.Read(one)
			if n == 1 {
				if one[0] == '\n' {
					break
				}
				b = append(b, one[0])
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				ch <- result{"", err}
				return
			}
		}
		if int64(len(b)) > max {
			ch <- result{"", &fileError{"a line of more than " + human(max), ErrTooLarge}}
			return
		}
		ch <- result{strings.TrimSuffix(string(b), "\r"), nil}
	}()
	select {
	case res := <-ch:
		return res.s, res.err
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}
