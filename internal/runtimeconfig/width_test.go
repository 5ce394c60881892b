package runtimeconfig

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pullpath/pullpath/internal/report"
)

// TestTextWidth renders every corpus node (under a long host root, as a probe pod's /host/… can
// be) at 80 and 60 columns: no line is wider but for a word longer than a line (a path, a digest),
// which report.Wrap keeps whole after its label; and no word of the wide rendering is lost.
func TestTextWidth(t *testing.T) {
	dirs, err := filepath.Glob("testdata/corpus/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, dir := range dirs {
		c := readCase(t, dir)
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Load(Options{Root: os.DirFS(filepath.Join(dir, "root")), Name: "/host/var/lib/kubelet/pods/some-long-pod-uid/volumes/host-root", Image: c.image})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			for _, width := range []int{80, 60} {
				var b strings.Builder
				if err := report.WriteRuntimeText(&b, cfg.Report(), report.TextOptions{Width: width}); err != nil {
					t.Fatal(err)
				}
				for i, l := range strings.Split(b.String(), "\n") {
					if n := utf8.RuneCountInString(l); n > width && !oneLongWord(l) {
						t.Errorf("width %d: line %d is %d columns: %q", width, i+1, n, l)
					}
				}
				for _, h := range cfg.Hosts {
					if !strings.Contains(strings.Join(strings.Fields(b.String()), ""), h.URL) {
						t.Errorf("width %d: host %s missing", width, h.URL)
					}
				}
				for _, w := range cfg.Warnings {
					if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), w.Code+": "+strings.Join(strings.Fields(w.Message), " ")[:20]) {
						t.Errorf("width %d: warning %s missing", width, w.Code)
					}
				}
			}
		})
	}
}

// label is what may precede a word longer than a line: an indent, a field's name, a host's
// number, a warning's code, "in:", "fix:" or "files read:".
var label = regexp.MustCompile(`^ *([a-z]+:?|[0-9]+|[A-Z_]+:|files read:)? *$`)

// oneLongWord reports whether l is a label and one word.
func oneLongWord(l string) bool {
	f := strings.Fields(l)
	return len(f) > 0 && label.MatchString(strings.TrimSuffix(l, f[len(f)-1]))
}
