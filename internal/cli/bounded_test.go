package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// badFiles are the files a flag may name by mistake, each with what the refusal says: /dev/zero
// (read forever), a FIFO (the open blocks), a directory and a 100 MB file (over the 4 MiB cap).
func badFiles(t *testing.T) map[string]struct{ path, says string } {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pem")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	return map[string]struct{ path, says string }{
		"dev-zero":  {"/dev/zero", "character device"},
		"fifo":      {fifo, "named pipe"},
		"directory": {sub, "directory"},
		"100MB":     {big, "100 MiB"},
	}
}

// runWithin runs the command line and fails the test when it has not ended within 10 s.
func runWithin(t *testing.T, args ...string) result {
	t.Helper()
	ch := make(chan result, 1)
	go func() { ch <- run(t, "", args...) }()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%v still running after 10s", args)
	}
	return result{}
}

// TestFileInputsBounded gives every file flag each bad file: each command refuses it at once,
// exit 2 with one line naming it, instead of reading forever or blocking on the open.
func TestFileInputsBounded(t *testing.T) {
	img := "registry.invalid/app:1"
	flags := map[string]func(p string) []string{
		"probe --ca-file":      func(p string) []string { return []string{"probe", "--host-root", "none", "--ca-file", p, img} },
		"probe --pull-secret":  func(p string) []string { return []string{"probe", "--host-root", "none", "--pull-secret", p, img} },
		"probe --hosts-file":   func(p string) []string { return []string{"probe", "--host-root", "none", "--hosts-file", p, img} },
		"probe --resolv-conf":  func(p string) []string { return []string{"probe", "--host-root", "none", "--resolv-conf", p, img} },
		"explain FILE":         func(p string) []string { return []string{"explain", p} },
		"image push --ca-file": func(p string) []string { return []string{"image", "push", "127.0.0.1:1/x:1", "--ca-file", p} },
		"image push --add-ca":  func(p string) []string { return []string{"image", "push", "127.0.0.1:1/x:1", "--add-ca", p} },
		"verify --probe-binary": func(p string) []string {
			return []string{"verify", "--probe-binary", p, "--kubeconfig", "/nonexistent", img}
		},
		"verify --kubeconfig": func(p string) []string { return []string{"verify", "--kubeconfig", p, img} },
		"pod --kubeconfig":    func(p string) []string { return []string{"pod", "--kubeconfig", p, "default/x"} },
		"cleanup --kubeconfig": func(p string) []string {
			return []string{"cleanup", "--kubeconfig", p}
		},
	}
	for kind, f := range badFiles(t) {
		for name, args := range flags {
			if kind == "directory" && strings.HasSuffix(name, "--kubeconfig") || kind == "100MB" && name == "verify --probe-binary" {
				continue // client-go's own message for a directory; a binary's first 4 bytes are read
			}
			if (kind == "fifo" || kind == "dev-zero") && name == "explain FILE" {
				continue // explain reads a stream named as a file: TestExplainReadsStreams
			}
			t.Run(name+"/"+kind, func(t *testing.T) {
				r := runWithin(t, args(f.path)...)
				if r.code != ExitUsage || !strings.Contains(r.errOut, f.says) || strings.Count(strings.TrimSpace(r.errOut), "\n") != 0 {
					t.Fatalf("exit %d, stderr %q; want 2 and one line saying %q", r.code, r.errOut, f.says)
				}
			})
		}
	}
}

// TestRuntimeFilesBounded puts each bad file where runtime reads the node's files: runtime and
// probe --host-root refuse it at once.
func TestRuntimeFilesBounded(t *testing.T) {
	for kind, f := range badFiles(t) {
		if kind == "dev-zero" {
			continue // a host root cannot point outside itself; runtimeconfig's TestRootRefusesDevices
		}
		for _, at := range []string{"etc/containerd/config.toml", "etc/containerd/certs.d/registry.invalid/hosts.toml", "etc/resolv.conf"} {
			t.Run(kind+"/"+at, func(t *testing.T) {
				root := t.TempDir()
				writeTree(t, root, map[string]string{"etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n"})
				dst := filepath.Join(root, at)
				os.Remove(dst)
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					t.Fatal(err)
				}
				if kind == "directory" {
					if err := os.Mkdir(dst, 0o755); err != nil {
						t.Fatal(err)
					}
				} else if err := os.Rename(f.path, dst); err != nil {
					t.Fatal(err)
				} else {
					defer os.Rename(dst, f.path)
				}
				r := runWithin(t, "runtime", "--host-root", root, "registry.invalid/app:1")
				if !strings.Contains(r.out+r.errOut, f.says) {
					t.Fatalf("exit %d, %s%s; want it to say %q", r.code, r.out, r.errOut, f.says)
				}
			})
		}
	}
}

// TestStdinReadEndsOnSignal is `--pull-secret -` and `--password-stdin` on a pipe nobody closes,
// then a SIGTERM: the command ends at once with 143, not when the pipe closes.
func TestStdinReadEndsOnSignal(t *testing.T) {
	for _, args := range [][]string{
		{"probe", "--host-root", "none", "--pull-secret", "-", "registry.invalid/app:1"},
		{"probe", "--host-root", "none", "-u", "me", "--password-stdin", "registry.invalid/app:1"},
		{"explain", "-"},
	} {
		t.Run(args[len(args)-2], func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(100*time.Millisecond, func() { cancel(&SignalError{Signal: syscall.SIGTERM}) })
			var out, errOut bytes.Buffer
			done := make(chan int, 1)
			go func() {
				err := Run(ctx, Streams{In: pr, Out: &out, ErrOut: &errOut}, args)
				done <- Code(signalCause(ctx, err), &errOut)
			}()
			select {
			case code := <-done:
				if code != 143 || !strings.Contains(errOut.String(), "interrupted by SIGTERM") {
					t.Fatalf("exit %d, stderr %q; want 143, interrupted by SIGTERM", code, errOut.String())
				}
			case <-time.After(5 * time.Second):
				t.Fatal("still reading stdin 5s after SIGTERM")
			}
		})
	}
}

// explain reads a stream named as a file as it reads stdin (issue 34: <(kubectl describe …) and
// /dev/stdin were refused): a FIFO with a writer, bounded (/dev/zero stops at the cap), and a
// FIFO nobody writes to ends on a signal instead of blocking in its open.
func TestExplainReadsStreams(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "describe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		io.WriteString(f, "Failed to pull image \"registry.example/app:1\": rpc error: code = NotFound desc = failed to pull and unpack image \"registry.example/app:1\": failed to resolve reference \"registry.example/app:1\": registry.example/app:1: not found\n")
	}()
	if r := runWithin(t, "explain", fifo); r.code != ExitBroken || !strings.Contains(r.out, "class not_found") {
		t.Errorf("explain FIFO: exit %d, stdout %q, stderr %q", r.code, r.out, r.errOut)
	}
	if r := runWithin(t, "explain", "/dev/zero"); r.code != ExitUsage || !strings.Contains(r.errOut, "more than 32 MiB") {
		t.Errorf("explain /dev/zero: exit %d, stderr %q; want 2, more than 32 MiB", r.code, r.errOut)
	}
	silent := filepath.Join(t.TempDir(), "silent")
	if err := syscall.Mkfifo(silent, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(200*time.Millisecond, func() { cancel(&SignalError{Signal: syscall.SIGINT}) })
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Code(Run(ctx, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{"explain", silent}), &errOut)
	}()
	select {
	case code := <-done:
		if code != 130 {
			t.Errorf("explain of a FIFO nobody writes, SIGINT: exit %d, stderr %q; want 130", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("explain of a FIFO nobody writes still blocks 10s after SIGINT")
	}
}
