package doccheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/pullpath/pullpath/"

// short is how docs/architecture.md names a package of the module: internal/ dropped.
func short(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, module), "internal/")
}

// goImports is the module's import graph as go list has it, without tests: every package with
// non-test Go files, and the module packages each imports.
func goImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{if .GoFiles}}{{.ImportPath}} {{join .Imports " "}}{{end}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		imports := []string{}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				imports = append(imports, short(imp))
			}
		}
		slices.Sort(imports)
		graph[short(f[0])] = imports
	}
	return graph
}

// linked are the module's packages in the binary built with tags.
func linked(t *testing.T, tags string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", tags, "-f", "{{.ImportPath}}", "./cmd/pullpath")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module) {
			pkgs = append(pkgs, short(p))
		}
	}
	slices.Sort(pkgs)
	return pkgs
}

// block returns the lines of the fenced block of docs/architecture.md opened with ```info.
func block(t *testing.T, info string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in, found := false, false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case !in && strings.TrimSpace(l) == "```"+info:
			in, found = true, true
		case in && strings.HasPrefix(strings.TrimSpace(l), "```"):
			return lines
		case in && strings.TrimSpace(l) != "":
			lines = append(lines, l)
		}
	}
	if !found {
		t.Fatalf("docs/architecture.md has no ```%s block", info)
	}
	return lines
}

// The table of imports in docs/architecture.md is go list's: every package of the module (test-only
// packages aside) with the module packages it imports. A new package or a new arrow updates the
// page, so the picture cannot drift from the code again (issue 37).
func TestArchitectureImports(t *testing.T) {
	want := goImports(t)
	got := map[string][]string{}
	for _, l := range block(t, "imports") {
		f := strings.Fields(l)
		if _, dup := got[f[0]]; dup {
			t.Errorf("docs/architecture.md lists %s twice", f[0])
		}
		imports := slices.Clone(f[1:])
		slices.Sort(imports)
		got[f[0]] = imports
	}
	for _, p := range sortedKeys(want) {
		doc, ok := got[p]
		switch {
		case !ok:
			t.Errorf("docs/architecture.md lacks package %s (imports: %s)", p, strings.Join(want[p], " "))
		case !slices.Equal(doc, want[p]):
			t.Errorf("docs/architecture.md: %s imports %s; go list: %s (%s)", p, list(doc), list(want[p]), diff(doc, want[p]))
		}
	}
	for _, p := range sortedKeys(got) {
		if _, ok := want[p]; !ok {
			t.Errorf("docs/architecture.md lists %s, which go list does not have", p)
		}
	}
	if t.Failed() {
		t.Logf("the block as go list has it:\n```imports\n%s```", importsBlock(want))
	}
}

// The picture's floors are computed, not drawn: a package of the binary sits one floor above the
// highest floor it imports (floor 0 imports nothing of the module), so every arrow points down.
func TestArchitectureFloors(t *testing.T) {
	graph := goImports(t)
	floor := map[string]int{}
	var of func(p string) int
	of = func(p string) int {
		if f, ok := floor[p]; ok {
			return f
		}
		floor[p] = -1 // an import cycle would not build; guard anyway
		f := 0
		for _, imp := range graph[p] {
			f = max(f, of(imp)+1)
		}
		floor[p] = f
		return f
	}
	want := map[string]int{}
	for _, p := range linked(t, "") {
		want[p] = of(p)
	}
	got := map[string]int{}
	for _, l := range block(t, "floors") {
		f := strings.Fields(l)
		n, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatalf("docs/architecture.md floors: %q does not start with a floor number", l)
		}
		for _, p := range f[1:] {
			got[p] = n
		}
	}
	for _, p := range sortedKeys(want) {
		if g, ok := got[p]; !ok {
			t.Errorf("docs/architecture.md's picture lacks %s (floor %d)", p, want[p])
		} else if g != want[p] {
			t.Errorf("docs/architecture.md's picture puts %s on floor %d; its imports put it on %d", p, g, want[p])
		}
	}
	for _, p := range sortedKeys(got) {
		if _, ok := want[p]; !ok {
			t.Errorf("docs/architecture.md's picture shows %s, which the binary does not link", p)
		}
	}
	if t.Failed() {
		byFloor := map[int][]string{}
		for p, f := range want {
			byFloor[f] = append(byFloor[f], p)
		}
		var b strings.Builder
		for f := len(byFloor) - 1; f >= 0; f-- {
			slices.Sort(byFloor[f])
			fmt.Fprintf(&b, "%d  %s\n", f, strings.Join(byFloor[f], "  "))
		}
		t.Logf("the picture as go list has it:\n```floors\n%s```", b.String())
	}
}

// The probe-only build's packages are the ones the page names.
func TestArchitectureProbeOnly(t *testing.T) {
	var got []string
	for _, l := range block(t, "probeonly") {
		got = append(got, strings.Fields(l)...)
	}
	slices.Sort(got)
	if want := linked(t, "probeonly"); !slices.Equal(got, want) {
		t.Errorf("docs/architecture.md: the probe-only build links %s; go list -tags probeonly: %s (%s)", list(got), list(want), diff(got, want))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func list(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, " ")
}

// diff says what go list has that the page lacks (+) and what the page has that go list lacks (-).
func diff(doc, want []string) string {
	var d []string
	for _, w := range want {
		if !slices.Contains(doc, w) {
			d = append(d, "+"+w)
		}
	}
	for _, g := range doc {
		if !slices.Contains(want, g) {
			d = append(d, "-"+g)
		}
	}
	return strings.Join(d, " ")
}

func importsBlock(graph map[string][]string) string {
	var b strings.Builder
	for _, p := range sortedKeys(graph) {
		b.WriteString(strings.TrimRight(fmt.Sprintf("%-24s %s", p, strings.Join(graph[p], " ")), " ") + "\n")
	}
	return b.String()
}
