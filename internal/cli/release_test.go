package cli

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/pullpath/pullpath/internal/report"
)

// repoRoot is two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		Description      string `json:"description"`
		ShortDescription string `json:"shortDescription"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct{ From, To string }
		} `json:"platforms"`
	} `json:"spec"`
}

func readKrew(t *testing.T, path string) krewPlugin {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		t.Fatalf("%s is not a valid krew manifest: %v", path, err)
	}
	return p
}

// The checked-in krew manifest parses, has the fields krew requires, covers linux, darwin and
// windows on amd64 and arm64, and every placeholder is one scripts/build.sh fills.
func TestKrewManifest(t *testing.T) {
	root := repoRoot(t)
	p := readKrew(t, filepath.Join(root, "deploy/krew/pullpath.yaml"))
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "pullpath" ||
		p.Spec.Version == "" || p.Spec.ShortDescription == "" || p.Spec.Homepage == "" {
		t.Fatalf("manifest header: %+v", p)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts/build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, pl := range p.Spec.Platforms {
		os, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		key := os + "/" + arch
		seen[key] = true
		wantBin := "kubectl-pullpath"
		if os == "windows" {
			wantBin += ".exe"
		}
		if pl.Bin != wantBin || len(pl.Files) == 0 || pl.Files[0].From != wantBin {
			t.Errorf("%s: bin %q files %+v, want %s", key, pl.Bin, pl.Files, wantBin)
		}
		if !strings.HasSuffix(pl.URI, "_"+os+"_"+arch+".tar.gz") || !strings.Contains(pl.URI, p.Spec.Version) || !strings.HasPrefix(pl.URI, "https://") {
			t.Errorf("%s: uri %q", key, pl.URI)
		}
		if pl.SHA256 != "SHA256_"+strings.ToUpper(os+"_"+arch) {
			t.Errorf("%s: sha256 placeholder %q is not the one build.sh fills", key, pl.SHA256)
		}
		if !strings.Contains(string(script), key) {
			t.Errorf("%s is in the manifest but scripts/build.sh does not build it", key)
		}
	}
	for _, want := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"} {
		if !seen[want] {
			t.Errorf("manifest lacks %s", want)
		}
	}
}

// scripts/build.sh for linux/amd64: a static binary (no PT_INTERP, no dynamic section), a
// kubectl-pullpath beside it, the version in the binary, the sum in the filled krew manifest.
func TestBuildScriptStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release binary; skipped with -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root := repoRoot(t)
	dist := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts/build.sh"), "linux/amd64")
	cmd.Env = append(os.Environ(), "DIST="+dist, "VERSION=v9.9.9-test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	dir := filepath.Join(dist, "pullpath_v9.9.9-test_linux_amd64")
	bin := filepath.Join(dir, "pullpath")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s is not static: it has %v", bin, p.Type)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "kubectl-pullpath")); err != nil {
		t.Error(err)
	}
	vout, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v report.Version
	if err := json.Unmarshal(vout, &v); err != nil || v.Version != "v9.9.9-test" || v.BuildDate == "" || v.Platform != "linux/amd64" {
		t.Errorf("version of the build: %v %s", err, vout)
	}
	if exec.Command("git", "-C", root, "rev-parse", "HEAD").Run() == nil && v.Commit == "" {
		t.Errorf("no commit from the build info: %s", vout)
	}
	archive, err := os.ReadFile(filepath.Join(dist, "pullpath_v9.9.9-test_linux_amd64.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(archive)
	if !strings.Contains(string(out), hex.EncodeToString(sum[:])) {
		t.Errorf("build.sh did not print the archive's sha256:\n%s", out)
	}
	m := readKrew(t, filepath.Join(dist, "pullpath.yaml"))
	if m.Spec.Version != "v9.9.9-test" {
		t.Errorf("filled manifest version %q", m.Spec.Version)
	}
	for _, pl := range m.Spec.Platforms {
		if pl.Selector.MatchLabels["os"] == "linux" && pl.Selector.MatchLabels["arch"] == "amd64" && pl.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("filled manifest sha256 %q, want the archive's", pl.SHA256)
		}
	}
}

// pendingLinks are pages another branch adds; a link to one is allowed until it lands.
var pendingLinks = map[string]bool{"docs/rbac.md": true}

// Every relative link of the README, CONTRIBUTING.md and the docs names a file or directory of the
// repository, from where the page is: a page moved to docs/ keeps working links.
func TestDocLinksResolve(t *testing.T) {
	root := repoRoot(t)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	n := 0
	for _, name := range docFiles(t) {
		for _, m := range link.FindAllStringSubmatch(readDoc(t, name), -1) {
			target, anchor, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			rel := name
			if target != "" {
				rel = filepath.ToSlash(filepath.Join(filepath.Dir(name), target))
			}
			if rel == ".." || strings.HasPrefix(rel, "../") {
				t.Errorf("%s: link %s points outside the repository", name, m[1])
				continue
			}
			if pendingLinks[rel] {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
				t.Errorf("%s: link %s: %s does not exist", name, m[1], rel)
				continue
			}
			if anchor != "" && strings.HasSuffix(rel, ".md") && !slices.Contains(headingAnchors(readDoc(t, rel)), anchor) {
				t.Errorf("%s: link %s: %s has no heading #%s", name, m[1], rel, anchor)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d relative links found: the extraction is broken", n)
	}
}

// headingAnchors are the anchors GitHub gives the headings of a Markdown text: lower case, spaces
// to hyphens, punctuation other than '-' and '_' dropped (code blocks are not headings).
func headingAnchors(md string) []string {
	var anchors []string
	in := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "```") {
			in = !in
		}
		if in || !strings.HasPrefix(l, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#"))) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
				b.WriteRune(r)
			}
		}
		anchors = append(anchors, b.String())
	}
	return anchors
}

// The README is the front door (issue 22): at most 12 KB, its sections in this order, the two
// set-up commands a newcomer runs, and no table wider than 100 columns. The rest is in docs/.
func TestReadmeIsTheFrontDoor(t *testing.T) {
	readme := readDoc(t, "README.md")
	if len(readme) > 12*1024 {
		t.Errorf("README.md is %d bytes, more than 12 KB: move the detail to docs/", len(readme))
	}
	var sections []string
	for _, l := range strings.Split(readme, "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			sections = append(sections, h)
		}
		if strings.HasPrefix(l, "|") && utf8.RuneCountInString(l) > 100 {
			t.Errorf("README table row of %d columns (at most 100): %s", utf8.RuneCountInString(l), l)
		}
	}
	if want := []string{"Install", "Quick start", "Commands", "Exit codes", "Classes", "Links"}; !slices.Equal(sections, want) {
		t.Errorf("README sections %q, want %q", sections, want)
	}
	for _, cmd := range []string{"go run ./cmd/pullpath demo", "bash scripts/test.sh"} {
		if !strings.Contains(readme, "\n"+cmd+" ") {
			t.Errorf("README lacks the set-up command %q at the start of a line", cmd)
		}
	}
	for _, c := range []string{"probe", "explain", "runtime", "demo", "pod", "verify", "cleanup", "image", "version"} {
		if !strings.Contains(readme, "(docs/commands/"+c+".md)") {
			t.Errorf("README's commands table does not link docs/commands/%s.md", c)
		}
	}
}

// The README is read in the repository: every path it names is inside it, and the install notes
// are there; so are the set-up notes of CONTRIBUTING.md.
func TestReadmeStaysInRepository(t *testing.T) {
	root := repoRoot(t)
	readme := readDoc(t, "README.md")
	if strings.Contains(readme, "../") {
		i := strings.Index(readme, "../")
		t.Errorf("README points outside the repository: …%s…", readme[max(0, i-40):min(len(readme), i+40)])
	}
	for _, want := range []string{"go install github.com/pullpath/pullpath/cmd/pullpath@latest", "PULLPATH_LAB=0", "gcc", "scripts/build.sh",
		"deploy/krew/pullpath.yaml", "kubectl-pullpath", "completion bash", "pods/attach", "--delivery configmap", "--probe-image", "docs/contract.md"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README lacks %q", want)
		}
	}
	contributing := readDoc(t, "CONTRIBUTING.md")
	for _, want := range []string{"bash scripts/test.sh", "scripts/deps.sh", "PULLPATH_LAB=0", "PULLPATH_CLUSTER=0", "gcc", "/var/cache/pullpath", "test/lab", "test/cluster"} {
		if !strings.Contains(contributing, want) {
			t.Errorf("CONTRIBUTING.md lacks %q", want)
		}
	}
	for _, f := range []string{"LICENSE", "docs/contract.md"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Error(err)
		}
	}
	lic, _ := os.ReadFile(filepath.Join(root, "LICENSE"))
	if !strings.Contains(string(lic), "Apache License") || !strings.Contains(string(lic), "Version 2.0, January 2004") || !strings.Contains(string(lic), "END OF TERMS AND CONDITIONS") {
		t.Error("LICENSE is not the full Apache-2.0 text")
	}
}
