// Package doccheck keeps the repository's prose true to the repository: a cited file exists, and
// docs/architecture.md draws the packages as go list sees them.
package doccheck

import (
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, from this package's directory.
const root = "../.."

// external are files of other projects that comments cite, always beside the project's name
// ("containerd's docs/cri/config.md:742-750"); they are not in this repository by design.
var external = map[string]string{
	"docs/cri/config.md":     "containerd",
	"docs/hosts.md":          "containerd",
	"docs/CRI/containerd.md": "kubespray",
}

var (
	// a Markdown file or a path under docs/, optionally with an anchor
	citation = regexp.MustCompile(`(?:\.\.?/)*[A-Za-z0-9_][A-Za-z0-9_./-]*\.md\b(?:#[a-z0-9_-]+)?|\bdocs/[A-Za-z0-9_./-]*`)
	url      = regexp.MustCompile(`[a-z]+://\S+`)
)

// TestCitationsExist fails on a citation of a file that is not in the repository: a reader of the
// repository must be able to follow every page a comment names (issue 37: fifteen comments cited
// a design note that lived outside it). It reads the comments of every tracked Go file and the whole
// text of every tracked Markdown, shell, YAML and JSON file outside testdata.
func TestCitationsExist(t *testing.T) {
	n := 0
	for _, file := range trackedFiles(t) {
		if strings.Contains("/"+file, "/testdata/") {
			continue
		}
		var lines []numbered
		switch path.Ext(file) {
		case ".go":
			lines = goComments(t, file)
		case ".md", ".sh", ".yaml", ".yml", ".json":
			lines = textLines(t, file)
		default:
			continue
		}
		for _, l := range lines {
			text := url.ReplaceAllStringFunc(l.text, func(s string) string { return strings.Repeat(" ", len(s)) })
			for _, m := range citation.FindAllStringIndex(text, -1) {
				if m[0] > 0 && strings.ContainsRune("/:@", rune(text[m[0]-1])) {
					continue // the tail of a longer path or an address
				}
				n++
				if msg := check(file, strings.TrimRight(text[m[0]:m[1]], ".")); msg != "" {
					t.Errorf("%s:%d: %s", file, l.n, msg)
				}
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d citations found: the extraction is broken", n)
	}
}

// check resolves a citation from the citing file's directory, then from the repository's root,
// and returns what is wrong with it, or "".
func check(from, cite string) string {
	target, anchor, _ := strings.Cut(cite, "#")
	if external[target] != "" {
		return ""
	}
	for _, dir := range []string{path.Dir(from), "."} {
		rel := path.Join(dir, target)
		if rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
			continue
		}
		if anchor != "" && strings.HasSuffix(rel, ".md") {
			b, _ := os.ReadFile(filepath.Join(root, rel))
			if !slices.Contains(headingAnchors(string(b)), anchor) {
				return "cites " + cite + ": " + rel + " has no heading #" + anchor
			}
		}
		return ""
	}
	return "cites " + cite + ", which is not in the repository (move what it says into docs/, or cite the file that has it)"
}

type numbered struct {
	n    int
	text string
}

// trackedFiles are the repository's files as git has them (untracked scratch files do not count);
// without git, every file under the root.
func trackedFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		return strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != root {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func textLines(t *testing.T, file string) []numbered {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var out []numbered
	for i, l := range strings.Split(string(b), "\n") {
		out = append(out, numbered{i + 1, l})
	}
	return out
}

// goComments are the comment lines of a Go file: code and string literals are not citations.
func goComments(t *testing.T, file string) []numbered {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile(file, -1, len(src)), src, nil, scanner.ScanComments)
	var out []numbered
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok != token.COMMENT {
			continue
		}
		first := fset.Position(pos).Line
		for i, l := range strings.Split(lit, "\n") {
			out = append(out, numbered{first + i, l})
		}
	}
}

// headingAnchors are the anchors GitHub gives a Markdown text's headings: lower case, spaces to
// hyphens, punctuation other than '-' and '_' dropped, code blocks skipped.
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

// The resolution itself: from the citing file's directory or the root, anchors included.
func TestCheckResolves(t *testing.T) {
	for _, c := range []struct {
		from, cite string
		ok         bool
	}{
		{"internal/report/taxonomy.go", "docs/taxonomy.md#classes", true},
		{"docs/architecture.md", "contract.md", true},
		{"docs/commands/probe.md", "../contract.md", true},
		{"internal/report/taxonomy.go", "DESIGN.md", false},
		{"internal/cri/check_test.go", "../shared/notes/lab.md", false},
		{"internal/report/taxonomy.go", "docs/taxonomy.md#no-such-heading", false},
		{"internal/probe/runtime_test.go", "docs/cri/config.md", true}, // containerd's
	} {
		if got := check(c.from, c.cite) == ""; got != c.ok {
			t.Errorf("check(%s, %s) ok = %v, want %v", c.from, c.cite, got, c.ok)
		}
	}
}
