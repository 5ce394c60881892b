package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oneLineUsage asserts the 3 a.m. contract for bad input: exit 2, nothing on stdout, exactly one
// line on stderr that starts with "pullpath: " and says want (no panic, no stack).
func oneLineUsage(t *testing.T, r result, args []string, want string) {
	t.Helper()
	if r.code != ExitUsage || r.out != "" || strings.Count(r.errOut, "\n") != 1 || !strings.HasPrefix(r.errOut, "pullpath: ") ||
		!strings.Contains(r.errOut, want) || strings.Contains(r.errOut, "goroutine") {
		t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, no stdout, one line saying %q", args, r.code, r.out, r.errOut, want)
	}
}

// On a node whose runtime configuration is found by default, a bad flag is still one line: the
// note that says how the probe pulls comes only when the probe runs, and names no runtime that
// does not exist.
func TestProbeBadFlagsOneLineOnANode(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"etc/containerd/config.toml": "version = 2\n",
		"etc/resolv.conf":            "nameserver 127.0.0.254\n",
	})
	withNodeRoot(t, root)
	dir, empty := t.TempDir(), filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "0"}, "--timeout 0s: want a positive duration"},
		{[]string{"--timeout", "-5s"}, "--timeout -5s: want a positive duration"},
		{[]string{"--connect-timeout", "0"}, "--connect-timeout 0s: want a positive duration"},
		{[]string{"--stall-timeout", "-1s"}, "--stall-timeout -1s: want a positive duration"},
		{[]string{"--concurrency", "-3"}, "--concurrency -3: want 1 to 64"},
		{[]string{"-o", "yaml"}, `--output "yaml"`},
		{[]string{"--runtime", "podman"}, `--runtime "podman": want containerd, crio or docker`},
		{[]string{"--platform", "banana"}, `invalid platform "banana"`},
		{[]string{"--cri-fresh"}, "--cri-fresh needs --cri"},
		{[]string{"-u", "bob"}, "--username needs --password-stdin"},
		{[]string{"--dns-server", "notanip"}, `dns server "notanip"`},
		{[]string{"--ca-file", empty}, "no PEM certificate found"},
		{[]string{"--pull-secret", dir}, "is a directory"},
		{[]string{"--hosts-file", dir}, "--hosts-file " + dir + " is a directory"},
		{[]string{"--summary-file", dir}, "--summary-file " + dir + " is a directory"},
		{[]string{"--summary-file", filepath.Join(dir, "nosuch", "s.json")}, "--summary-file"},
	} {
		args := append(append([]string{"probe"}, tc.args...), "registry.example/app:1")
		oneLineUsage(t, run(t, "", args...), args, tc.want)
	}
}
