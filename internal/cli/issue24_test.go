package cli

import (
	"strings"
	"testing"
)

// TestClusterUsernameRefused is kubectl's --username/--password on the cluster commands: basic
// auth to the API server is gone since Kubernetes 1.19, and pullpath's --username is probe's
// registry user; the flag is hidden and refused with the reason, not bound to client-go.
func TestClusterUsernameRefused(t *testing.T) {
	for _, args := range [][]string{
		{"pod", "--username", "bob", "default/x"},
		{"verify", "--password", "pw", "registry.invalid/app:1"},
		{"cleanup", "--username", "bob"},
	} {
		r := run(t, "", args...)
		if r.code != ExitUsage || !strings.Contains(r.errOut, "basic auth was removed in Kubernetes 1.19") || strings.Count(r.errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.errOut)
		}
		if h := run(t, "", args[0], "--help"); strings.Contains(h.out, "--username") || strings.Contains(h.out, "--password") {
			t.Errorf("%s --help shows --username or --password", args[0])
		}
	}
	if h := run(t, "", "probe", "--help"); !strings.Contains(h.out, "--username") {
		t.Error("probe --help lost --username (the registry user)")
	}
}

// TestFlagHelpWithin80 is the flag lines of every command's --help: within 80 columns.
func TestFlagHelpWithin80(t *testing.T) {
	for _, c := range [][]string{{"probe"}, {"explain"}, {"runtime"}, {"demo"}, {"pod"}, {"verify"}, {"cleanup"}, {"watch"}, {"image", "push"}} {
		h := run(t, "", append(c, "--help")...)
		_, flags, ok := strings.Cut(h.out, "\nFlags:\n")
		if !ok {
			t.Fatalf("%v --help has no Flags:\n%s", c, h.out)
		}
		for _, l := range strings.Split(flags, "\n") {
			if n := len([]rune(l)); n > 80 {
				t.Errorf("%v --help: a flag line of %d columns: %q", c, n, l)
			}
		}
	}
}

// TestUnknownCommandOneLine is a mistyped command: one line on stderr, with the near names.
func TestUnknownCommandOneLine(t *testing.T) {
	r := run(t, "", "prob", "x")
	want := `pullpath: unknown command "prob" for "pullpath" (did you mean pod or probe? pullpath --help lists them)` + "\n"
	if r.code != ExitUsage || r.errOut != want {
		t.Errorf("exit %d, stderr %q; want %q", r.code, r.errOut, want)
	}
	if r := run(t, "", "zzzz"); r.code != ExitUsage || strings.Count(r.errOut, "\n") != 1 || !strings.Contains(r.errOut, "--help lists them") {
		t.Errorf("exit %d, stderr %q", r.code, r.errOut)
	}
}
