package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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

// Credentials pasted into an image reference are never echoed, and the error says where they go.
func TestImageReferenceCredentialsNotEchoed(t *testing.T) {
	for _, args := range [][]string{
		{"probe", "https://admin:hunter2@reg.example/app:1"},
		{"probe", "admin:hunter2@reg.example/app:1"},
		{"runtime", "--host-root", t.TempDir(), "admin:hunter2@reg.example/app:1"},
	} {
		r := run(t, "", args...)
		oneLineUsage(t, r, args, "credentials do not go in the image reference")
		if strings.Contains(r.errOut, "hunter2") {
			t.Errorf("%q: the password is echoed: %q", args, r.errOut)
		}
	}
}

func TestParseImageKeepsDigests(t *testing.T) {
	d := "@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	for _, s := range []string{"nginx" + d, "library/nginx" + d, "reg.example:5000/team/app" + d} {
		if _, err := parseImage(s); err != nil {
			t.Errorf("parseImage(%q) = %v, want a reference", s, err)
		}
	}
}

// A misspelt flag is one line that names the flag meant, when one is close.
func TestFlagErrorsOneLineWithSuggestion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"probe", "--timout", "5s", "r.example/a:1"}, "unknown flag: --timout (did you mean --timeout? pullpath probe --help lists the flags)"},
		{[]string{"probe", "--no-downlaod", "r.example/a:1"}, "did you mean --no-download?"},
		{[]string{"explain", "--ouput", "json"}, "did you mean --output?"},
		{[]string{"--colr", "never", "version"}, "did you mean --color?"},
		{[]string{"probe", "--zzzzzz", "r.example/a:1"}, "unknown flag: --zzzzzz (pullpath probe --help lists the flags)"},
		{[]string{"probe", "r.example/a:1", "--timeout"}, "flag needs an argument: --timeout (pullpath probe --help lists the flags)"},
		{[]string{"probe", "--connect-timeout", "abc", "r.example/a:1"}, `invalid argument "abc" for "--connect-timeout"`},
	} {
		oneLineUsage(t, run(t, "", tc.args...), tc.args, tc.want)
	}
}

// --cri's socket is optional, so "--cri SOCKET" leaves SOCKET as an argument: say to use "=".
func TestCRISocketWithoutEquals(t *testing.T) {
	args := []string{"probe", "--cri", "/run/containerd/containerd.sock", "r.example/a:1"}
	oneLineUsage(t, run(t, "", args...), args, "--cri=/run/containerd/containerd.sock")
}

// Run as the kubectl plugin, the hint of a missing IMAGE is a kubectl pullpath command too.
func TestMissingImageHintUsesTheDisplayName(t *testing.T) {
	root := NewRootCmd(Streams{})
	root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl pullpath"}
	c, _, err := root.Find([]string{"probe"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Args(c, nil)
	if err == nil || !strings.Contains(err.Error(), "e.g. kubectl pullpath probe ") {
		t.Errorf("probe without IMAGE as a plugin: %v", err)
	}
}

// An empty pull secret (kubectl failed before the pipe, an empty file or variable) says so.
func TestEmptyPullSecretSaysEmpty(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WALK_EMPTY_SECRET", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pull-secret", "-"}, "--pull-secret -: stdin is empty (did the command before the pipe fail?)"},
		{[]string{"--pull-secret", empty}, "--pull-secret " + empty + ": the file is empty"},
		{[]string{"--pull-secret-env", "WALK_EMPTY_SECRET"}, "--pull-secret-env WALK_EMPTY_SECRET: the variable is empty"},
	} {
		args := append(append([]string{"probe", "--host-root", "none"}, tc.args...), "r.example/a:1")
		oneLineUsage(t, run(t, "", args...), args, tc.want)
	}
}

// Empty input to explain is no diagnosis: exit 2 with the reason, -q or not (issue 23: a script
// reads 0 as healthy, and at 3 a.m. it is more often a failed command before the pipe).
func TestExplainEmptyInputIsSaid(t *testing.T) {
	for _, args := range [][]string{{"explain"}, {"explain", "-q"}} {
		r := run(t, " \n", args...)
		if r.code != ExitUsage || r.out != "" || r.errOut != "pullpath: explain: the input is empty (if a command before the pipe failed, its error is above)\n" {
			t.Errorf("%q on empty input: exit %d, stdout %q, stderr %q", args, r.code, r.out, r.errOut)
		}
	}
}

func TestHelpUnknownTopic(t *testing.T) {
	args := []string{"help", "frobnicate"}
	oneLineUsage(t, run(t, "", args...), args, `help: unknown command "frobnicate"`)
	if r := run(t, "", "help", "probe"); r.code != ExitOK || !strings.Contains(r.out, "pullpath probe IMAGE") {
		t.Errorf("help probe: exit %d %q", r.code, r.out)
	}
}
