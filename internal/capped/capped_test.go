package capped

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// TestReadFileRefuses is every kind of file a flag may name by mistake: each is refused quickly,
// before it is read, with a message that says what it is.
func TestReadFileRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil { // sparse: 100 MB without writing them
		t.Fatal(err)
	}
	f.Close()
	for _, c := range []struct {
		name, path, want string
		is               error
	}{
		{"/dev/zero", "/dev/zero", "is a character device, not a file", ErrNotRegular},
		{"FIFO", fifo, "is a named pipe (FIFO), not a file", ErrNotRegular},
		{"directory", dir, "is a directory", ErrNotRegular},
		{"100 MB", big, "is 100 MiB, more than the 4 MiB read", ErrTooLarge},
		{"missing", filepath.Join(dir, "nope"), "no such file", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := ReadFile(c.path, Max); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("ReadFile(%s) = %v, want %q", c.path, err, c.want)
				}
				if c.is != nil && !errors.Is(err, c.is) {
					t.Fatalf("ReadFile(%s) = %v, not %v", c.path, err, c.is)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("ReadFile(%s) still reading after 5s", c.path)
			}
		})
	}
}

func TestReadFileCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(strings.Repeat("a", 10)), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, 10); err != nil || len(b) != 10 {
		t.Fatalf("a file at the cap: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFile(p, 9); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a file over the cap: %v", err)
	}
}

func TestReadFS(t *testing.T) {
	fsys := fstest.MapFS{
		"etc/a":   {Data: []byte("x")},
		"etc/big": {Data: make([]byte, 11)},
		"etc/dir": {Mode: os.ModeDir},
		"etc/p":   {Mode: os.ModeNamedPipe},
	}
	if b, err := ReadFS(fsys, "etc/a", "/etc/a", 10); err != nil || string(b) != "x" {
		t.Fatalf("ReadFS = %q, %v", b, err)
	}
	for name, is := range map[string]error{"etc/big": ErrTooLarge, "etc/dir": ErrNotRegular, "etc/p": ErrNotRegular} {
		if _, err := ReadFS(fsys, name, "/"+name, 10); !errors.Is(err, is) || !strings.Contains(err.Error(), "/"+name) {
			t.Errorf("ReadFS(%s) = %v, want %v naming the path", name, err, is)
		}
	}
}

// TestReadAllSignal is stdin that never ends (a pipe nobody closes): cancelling the context (what
// a signal does) returns at once, with the cause.
func TestReadAllSignal(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	cause := errors.New("interrupted by SIGTERM")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	start := time.Now()
	if _, err := ReadAll(ctx, r, Max); !errors.Is(err, cause) {
		t.Fatalf("ReadAll = %v, want the cause", err)
	}
	if _, err := Line(ctx, r, Max); !errors.Is(err, cause) {
		t.Fatalf("Line = %v, want the cause", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("returned after %s", d)
	}
}

func TestReadAllCap(t *testing.T) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if _, err := ReadAll(context.Background(), f, Max); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadAll(/dev/zero) = %v", err)
	}
	if _, err := Line(context.Background(), f, 1<<10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Line(/dev/zero) = %v", err)
	}
	if s, err := Line(context.Background(), strings.NewReader("pw\r\nmore"), 64); s != "pw" || err != nil {
		t.Fatalf("Line = %q, %v", s, err)
	}
}
