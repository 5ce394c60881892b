// Package depcheck keeps the node probe small: the code that runs on every node must not pull in
// client-go or containerd, and report must stay standard-library only (but for redact, itself
// standard-library only: the one cleaning of untrusted text lives there, below report).
package depcheck

import (
	"maps"
	"os/exec"
	"slices"
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
		for _, banned := range []string{"k8s.io/", "github.com/containerd/", "sigs.k8s.io/controller-runtime", "github.com/pullpath/pullpath/internal/events"} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("internal/probe depends on %s", d)
			}
		}
	}
}

func TestReportIsStandardLibraryOnly(t *testing.T) {
	standardLibraryOnly(t, "internal/report", "internal/redact")
}

// Every package that handles a credential uses redact, so it must be importable from the bottom.
func TestRedactIsStandardLibraryOnly(t *testing.T) { standardLibraryOnly(t, "internal/redact") }

// standardLibraryOnly fails when pkg depends on anything outside the standard library but itself
// and the allowed packages of this module (which have their own test).
func standardLibraryOnly(t *testing.T, pkg string, allowed ...string) {
	t.Helper()
	const mod = "github.com/pullpath/pullpath/"
	for _, d := range deps(t, mod+pkg) {
		if !strings.Contains(strings.SplitN(d, "/", 2)[0], ".") || strings.HasPrefix(d, mod+pkg) {
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || d == mod+a
		}
		if !ok {
			t.Errorf("%s depends on %s", pkg, d)
		}
	}
}

// The API is reached from the commands (cli) and the watcher only, through cluster (reading) and
// nodeprobe (the probe pods, built on cluster): the node probe, events and report stay usable
// without a cluster, and cluster never imports nodeprobe.
func TestClusterEnteredFromCommandsOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "github.com/pullpath/pullpath/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/pullpath/pullpath/internal/"
	entries := map[string]map[string]bool{ // package → who may import it
		mod + "cluster":   {mod + "cli": true, mod + "watch": true, mod + "nodeprobe": true},
		mod + "nodeprobe": {mod + "cli": true, mod + "watch": true},
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		for _, imp := range f[1:] {
			allowed, ok := entries[imp]
			if !ok || allowed[f[0]] || strings.HasPrefix(f[0], imp) {
				continue
			}
			t.Errorf("%s imports %s; only %s may", f[0], strings.TrimPrefix(imp, "github.com/pullpath/pullpath/"), strings.Join(slices.Sorted(maps.Keys(allowed)), ", "))
		}
	}
}

// The probe-only build verify ships to every node in ConfigMaps: no client-go, no containerd, and
// none of the demo's in-process registry (every megabyte is another ConfigMap); and no docker
// credential-helper exec path: on a node it must never run a helper its image's PATH names.
func TestProbeOnlyBuildDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "probeonly", "-f", "{{.ImportPath}}", "github.com/pullpath/pullpath/cmd/pullpath").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io/client-go", "k8s.io/api/", "k8s.io/apimachinery", "github.com/containerd/",
			"github.com/pullpath/pullpath/internal/demo", "github.com/pullpath/pullpath/internal/registrytest", "github.com/pullpath/pullpath/internal/events", "github.com/google/go-containerregistry/pkg/registry",
			"github.com/google/go-containerregistry/pkg/authn", "github.com/docker/docker-credential-helpers", "github.com/docker/cli"} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("the probe-only build depends on %s", d)
			}
		}
	}
}

// The full build links the three API groups it uses (internal/kube), not client-go's clientset,
// scheme or fake machinery: each of them registers every API group at the start of every
// command, the local probe's included (7 MiB of RSS, pullbench).
func TestFullBuildLinksThreeAPIGroups(t *testing.T) {
	groups := map[string]bool{"k8s.io/api/core/v1": true, "k8s.io/api/authorization/v1": true, "k8s.io/api/coordination/v1": true}
	for _, d := range deps(t, "github.com/pullpath/pullpath/cmd/pullpath") {
		if strings.HasPrefix(d, "k8s.io/api/") && !groups[d] {
			t.Errorf("the full build links API group %s", d)
		}
		for _, banned := range []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "k8s.io/client-go/testing", "k8s.io/client-go/gentype",
			"k8s.io/client-go/tools/leaderelection", "github.com/pullpath/pullpath/internal/kube/kubefake"} {
			if d == banned || strings.HasPrefix(d, banned+"/") {
				t.Errorf("the full build links %s", d)
			}
		}
	}
}
