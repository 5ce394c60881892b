package cli

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestChooseText(t *testing.T) {
	for _, tc := range []struct {
		name          string
		isTerm        bool
		width         int
		mode, noColor string
		termEnv       string
		wantWidth     int
		wantColor     bool
	}{
		{name: "piped: 80 columns, no colour", width: 0, mode: "auto", wantWidth: 80},
		{name: "terminal 132", isTerm: true, width: 132, mode: "auto", termEnv: "xterm", wantWidth: 132, wantColor: true},
		{name: "terminal of unknown size", isTerm: true, mode: "auto", termEnv: "xterm", wantWidth: 80, wantColor: true},
		{name: "NO_COLOR on a terminal", isTerm: true, width: 100, mode: "auto", noColor: "1", wantWidth: 100},
		{name: "TERM=dumb", isTerm: true, width: 100, mode: "auto", termEnv: "dumb", wantWidth: 100},
		{name: "never on a terminal", isTerm: true, width: 100, mode: "never", wantWidth: 100},
		{name: "always when piped", mode: "always", noColor: "1", wantWidth: 80, wantColor: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := chooseText(tc.isTerm, tc.width, tc.mode, tc.noColor, tc.termEnv)
			if o.Width != tc.wantWidth || o.Color != tc.wantColor {
				t.Errorf("chooseText = width %d colour %t, want %d %t", o.Width, o.Color, tc.wantWidth, tc.wantColor)
			}
		})
	}
}

const longPullFailure = `Failed to pull image "myreg.azurecr.io/team/app:1.4": failed to pull and unpack image "myreg.azurecr.io/team/app:1.4": failed to resolve reference "myreg.azurecr.io/team/app:1.4": failed to do request: Head "https://myreg.azurecr.io/v2/team/app/manifests/1.4": dial tcp: lookup myreg.azurecr.io on 10.0.0.10:53: no such host`

// Piped output is 80 columns wide and never coloured; --color always colours it; a bad mode is exit 2.
func TestTextWidthAndColourFlags(t *testing.T) {
	r := run(t, longPullFailure, "explain")
	if r.code != ExitBroken {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	if strings.Contains(r.out, "\x1b[") {
		t.Errorf("colour when piped:\n%s", r.out)
	}
	for _, l := range strings.Split(r.out, "\n") {
		if n := utf8.RuneCountInString(l); n > 80 && len(strings.Fields(l)) > 2 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	if r := run(t, longPullFailure, "explain", "--color", "always"); !strings.Contains(r.out, "\x1b[1;31mdns\x1b[0m") {
		t.Errorf("--color always: no colour:\n%s", r.out)
	}
	if r := run(t, longPullFailure, "explain", "--color", "always", "-o", "json"); strings.Contains(r.out, "\x1b[") {
		t.Errorf("colour in JSON:\n%s", r.out)
	}
	if r := run(t, longPullFailure, "explain", "--color", "sometimes"); r.code != ExitUsage || !strings.Contains(r.errOut, "auto, always or never") {
		t.Errorf("--color sometimes: %+v", r)
	}
}

// --quiet: nothing on stdout, the exit code still tells; usage errors still reach stderr.
func TestQuiet(t *testing.T) {
	if r := run(t, longPullFailure, "explain", "--quiet"); r.code != ExitBroken || r.out != "" {
		t.Errorf("explain --quiet: %+v", r)
	}
	if r := run(t, `{"apiVersion":"v1","kind":"EventList","items":[]}`, "explain", "-q"); r.code != ExitOK || r.out != "" {
		t.Errorf("explain -q, no failure: %+v", r)
	}
	quietRoot := t.TempDir() // a node with containerd on its defaults: an empty root is exit 2
	writeTree(t, quietRoot, map[string]string{"lib/systemd/system/containerd.service": "[Service]\nExecStart=/usr/bin/containerd\n"})
	if r := run(t, "", "runtime", "--quiet", "--host-root", quietRoot, "registry.example/app:1"); r.out != "" || r.code == ExitUsage {
		t.Errorf("runtime --quiet: %+v", r)
	}
	if r := run(t, "", "probe", "--quiet", "-o", "yaml", "r.example/a:1"); r.code != ExitUsage || !strings.Contains(r.errOut, "--output") {
		t.Errorf("probe --quiet with a usage error must still say why: %+v", r)
	}
	e := lab(t)
	r := run(t, "", append(labArgs(e, "--quiet", "--anonymous"), e.Lab.Ref("team/app:1.4"))...)
	if r.code != ExitBroken || r.out != "" {
		t.Errorf("probe --quiet, broken path: exit %d, stdout %q", r.code, r.out)
	}
}

func TestDemoListOnlyFullQuiet(t *testing.T) {
	r := run(t, "", "demo", "--list")
	if r.code != 0 || len(strings.Split(strings.TrimSpace(r.out), "\n")) != 22 || !strings.Contains(r.out, "blob host unreachable\n") {
		t.Errorf("demo --list: %+v", r)
	}
	r = run(t, "", "demo", "--only", "blob host unreachable")
	if r.code != 0 || !strings.Contains(r.out, "✓") || !strings.Contains(r.out, "endpoint · TCP_REFUSED · blobs.pullpath.test:") || strings.Contains(r.out, "ENDPOINT") {
		t.Errorf("demo --only: summary only expected:\n%s\n%s", r.out, r.errOut)
	}
	for _, l := range strings.Split(r.out, "\n") {
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("demo line wider than 80: %q", l)
		}
	}
	r = run(t, "", "demo", "--full", "--only", "blob host unreachable")
	if r.code != 0 || !strings.Contains(r.out, "ENDPOINT") || !strings.Contains(r.out, "BROKEN  class endpoint") {
		t.Errorf("demo --full: full report expected:\n%s", r.out)
	}
	if r := run(t, "", "demo", "--quiet", "--only", "tag missing"); r.code != 0 || r.out != "" {
		t.Errorf("demo --quiet: %+v", r)
	}
	if r := run(t, "", "demo", "--only", "no such scenario"); r.code != ExitUsage || !strings.Contains(r.errOut, "--list") {
		t.Errorf("demo --only nothing: %+v", r)
	}
}
