// Package depcheck keeps the node probe small: the code that runs on every node must not pull in
// client-go or containerd, and report must stay standard-library only.
package depcheck

import (
	"os/exec"
	"strings"
	"testing"
)

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func TestProbeDependencies(t *testing.T) {
	for _, d := range deps(t, "github.com/pullpath/pullpath/internal/probe") {
		for _, banned := range []string{"k8s.io/", "github.com/containerd/", "sigs.k8s.io/controller-runtime"} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("internal/probe depends on %s", d)
			}
		}
	}
}

func TestReportIsStandardLibraryOnly(t *testing.T) {
	for _, d := range deps(t, "github.com/pullpath/pullpath/internal/report") {
		if strings.Contains(strings.SplitN(d, "/", 2)[0], ".") && !strings.HasPrefix(d, "github.com/pullpath/pullpath/internal/report") {
			t.Errorf("internal/report depends on %s", d)
		}
	}
}

// The probe-only build verify ships to every node in ConfigMaps: no client-go, no containerd, and
// none of the demo's in-process registry (every megabyte is another ConfigMap).
func TestProbeOnlyBuildDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "probeonly", "-f", "{{.ImportPath}}", "github.com/pullpath/pullpath/cmd/pullpath").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io/client-go", "k8s.io/api/", "k8s.io/apimachinery", "github.com/containerd/",
			"github.com/pullpath/pullpath/internal/demo", "github.com/pullpath/pullpath/internal/registrytest", "github.com/google/go-containerregistry/pkg/registry"} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("the probe-only build depends on %s", d)
			}
		}
	}
}
