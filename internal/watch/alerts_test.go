package watch

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// The alert rules in deploy/watch pass promtool's own unit tests, and every metric they use is
// one the watcher serves.
func TestAlertRules(t *testing.T) {
	dir := filepath.Join("..", "..", "deploy", "watch")
	rules, err := os.ReadFile(filepath.Join(dir, "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics(time.Minute, nil, "test")
	m.pathOK.WithLabelValues("n", "p", "i", "r").Set(1)
	m.lastResult.WithLabelValues("n", "p").Set(1)
	m.probeRan.WithLabelValues("n", "p", "i", "ok").Set(1)
	m.credExpiry.WithLabelValues("p", "r", "credential").Set(1)
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, f := range families {
		served[f.GetName()] = true
	}
	for _, name := range regexp.MustCompile(`pullpath_watch_[a-z_]+`).FindAllString(string(rules), -1) {
		if !served[name] {
			t.Errorf("alerts.yaml uses %s, which the watcher does not serve", name)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found (Debian's prometheus package has it; scripts/deps.sh installs it as root)")
	}
	cmd := exec.Command(promtool, "test", "rules", "alerts_test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// deploy/watch/watch.yaml is `pullpath watch manifests` for its placeholder images.
func TestManifestsFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "watch", "watch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultManifestOptions()
	o.Images, o.WatcherImage = []string{"registry.example/app:1"}, "registry.example/tools/pullpath:v1"
	want := Manifests(o)
	if string(b) != want {
		t.Errorf("deploy/watch/watch.yaml differs from Manifests: regenerate it with pullpath watch manifests --image registry.example/app:1 --watcher-image registry.example/tools/pullpath:v1")
	}
}
