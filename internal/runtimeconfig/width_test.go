package runtimeconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTextWidth renders every corpus node (under a long host root, as a probe pod's /host/… can
// be) at 80 and 60 columns: no line is wider, and no word of the wide rendering is lost.
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
				if err := WriteTextWidth(&b, cfg, width); err != nil {
					t.Fatal(err)
				}
				for i, l := range strings.Split(b.String(), "\n") {
					if n := utf8.RuneCountInString(l); n > width {
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
