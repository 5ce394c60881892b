package cli

import (
	"strings"
	"testing"
)

func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		r := run(t, "", "completion", sh)
		if r.code != 0 || len(r.out) < 500 || !strings.Contains(r.out, "pullpath") {
			t.Errorf("completion %s: exit %d, %d bytes: %s", sh, r.code, len(r.out), r.errOut)
		}
	}
}

// The scripts call `pullpath __complete …`; flag VALUES are completed, not only flag names.
func TestCompletionFlagValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		dirs bool
	}{
		{args: []string{"probe", "-o", ""}, want: []string{"text", "json"}},
		{args: []string{"explain", "--output", ""}, want: []string{"text", "json"}},
		{args: []string{"runtime", "-o", ""}, want: []string{"text", "json"}},
		{args: []string{"version", "-o", ""}, want: []string{"text", "json"}},
		{args: []string{"probe", "--platform", ""}, want: []string{"linux/amd64", "linux/arm64", "windows/amd64"}},
		{args: []string{"probe", "--runtime", ""}, want: []string{"containerd", "crio", "docker"}},
		{args: []string{"runtime", "--runtime", ""}, want: []string{"containerd", "crio", "docker"}},
		{args: []string{"demo", "--color", ""}, want: []string{"auto", "always", "never"}},
		{args: []string{"probe", "--host-root", ""}, dirs: true},
		{args: []string{"runtime", "--host-root", ""}, dirs: true},
	} {
		r := run(t, "", append([]string{"__complete"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(r.out), "\n")
		directive := lines[len(lines)-1]
		got := lines[:len(lines)-1]
		if tc.dirs {
			if directive != ":16" { // ShellCompDirectiveFilterDirs
				t.Errorf("%v: directive %s, want :16 (directories)", tc.args, directive)
			}
			continue
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") && !containsAll(got, tc.want) {
			t.Errorf("%v completes to %v, want %v", tc.args, got, tc.want)
		}
	}
}

func containsAll(got, want []string) bool {
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			return false
		}
	}
	return true
}
