package demo

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pullpath/pullpath/internal/report"
)

func results() []Result {
	ok := Scenario{Name: "healthy, blobs redirected to a blob host", Expect: report.ClassOK}
	blob := Scenario{Name: "blob host unreachable", Expect: report.ClassEndpoint}
	return []Result{
		{Scenario: ok, Match: true, Report: &report.Probe{Class: report.ClassOK, Code: report.CodeOK, Duration: report.Duration(30 * time.Millisecond)}},
		{Scenario: blob, Match: false, Report: &report.Probe{Class: report.ClassRoute, Code: report.CodeTCPRefused, Duration: report.Duration(8 * time.Millisecond),
			Failing: &report.Failing{Host: "blobs.pullpath.test:42421", Role: report.RoleBlob}}},
		{Scenario: Scenario{Name: "registry name unknown to the node's resolver"}, Err: errors.New("boom")},
	}
}

func TestSummaryWide(t *testing.T) {
	out := Summary(results(), report.TextOptions{Width: 200})
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 4 { // header + one line per scenario
		t.Fatalf("%d lines, want 4:\n%s", len(lines), out)
	}
	for _, want := range []string{"✓  healthy, blobs redirected to a blob host      ok     OK", "✗  blob host unreachable", "route  TCP_REFUSED", "blobs.pullpath.test:42421 (blob)  8ms", "error  boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestSummaryNarrow(t *testing.T) {
	out := Summary(results(), report.TextOptions{})
	for _, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("line wider than 80: %q", l)
		}
	}
	for _, want := range []string{"✓ 30ms  healthy, blobs redirected to a blob host\n", "✗  8ms  blob host unreachable\n        route · TCP_REFUSED · blobs.pullpath.test:42421 (blob)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if c := Summary(results(), report.TextOptions{Color: true}); !strings.Contains(c, "\x1b[1;31m✗\x1b[0m") {
		t.Errorf("mismatch not coloured:\n%s", c)
	}
}

func TestNames(t *testing.T) {
	n := Names()
	if len(n) != len(Scenarios()) || n[0] != Scenarios()[0].Name {
		t.Errorf("Names() = %v", n)
	}
}
