package cluster

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pageScopes are the words a command's manual uses for where a right applies.
var pageScopes = map[string]Scope{"cluster": ScopeCluster, "run namespace": ScopeRun, "namespace `default`": ScopeEvents,
	"the pod's namespace": ScopePod, "`--from-pod`'s namespace": ScopeFromPod}

// reRightsHead is the header of a rights table in a command's manual: "| right | where | why |".
var reRightsHead = regexp.MustCompile(`(?m)^\| right \| where \| why \|\n\|[-|]+\|\n((?:\|.*\|\n?)*)`)

// pageRights reads every rights table of a manual: a row "| get, list `pods`, `configmaps` | run
// namespace | … |" is a right per verb and resource, each "verb resource scope".
func pageRights(t *testing.T, page, doc string) []string {
	t.Helper()
	var out []string
	for _, m := range reRightsHead.FindAllStringSubmatch(doc, -1) {
		for _, row := range strings.Split(strings.TrimSpace(m[1]), "\n") {
			cells := strings.Split(strings.Trim(row, "|"), "|")
			if len(cells) < 3 {
				t.Errorf("%s: rights row %q: want | right | where | why |", page, row)
				continue
			}
			right, where := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1])
			scope, ok := pageScopes[where]
			if !ok {
				t.Errorf("%s: rights row %q: where %q is none of %v", page, row, where, slices.Sorted(mapKeys(pageScopes)))
				continue
			}
			verbs, resources, ok := strings.Cut(right, " `")
			if !ok {
				t.Errorf("%s: rights row %q: want verbs then `resources`", page, row)
				continue
			}
			for _, v := range strings.Split(verbs, ",") {
				for _, r := range strings.Split("`"+resources, ",") {
					out = append(out, strings.TrimSpace(v)+" "+strings.Trim(strings.TrimSpace(r), "`")+" "+string(scope))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// codeRights are the rights access.go declares for a manual's command and its flags and
// subcommands ("watch", "watch --leader-elect", "watch status"), but the ones no role grants.
func codeRights(command string) []string {
	var out []string
	for _, a := range Commands {
		if a.Command != command && !strings.HasPrefix(a.Command, command+" ") {
			continue
		}
		for _, r := range a.Rights {
			if r.Use != NotGiven {
				out = append(out, r.Verb+" "+r.Resource+" "+string(r.Scope))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// A rights table in a command's manual (docs/commands/*.md, "| right | where | why |") lists
// exactly the rights internal/cluster/access.go declares for that command, its flags and
// subcommands (issue 34: watch's page listed get and update on pods, which watch never asks, and
// not watch on pods, which it needs).
func TestCommandPagesRights(t *testing.T) {
	pages, err := filepath.Glob("../../docs/commands/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs/commands: %v, %d pages", err, len(pages))
	}
	tables := 0
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !reRightsHead.Match(b) {
			continue
		}
		tables++
		page := filepath.Base(p)
		command := strings.TrimSuffix(page, ".md")
		doc, code := pageRights(t, page, string(b)), codeRights(command)
		if len(code) == 0 {
			t.Errorf("%s has a rights table, but access.go declares no rights for %q", page, command)
			continue
		}
		for _, r := range doc {
			if !slices.Contains(code, r) {
				t.Errorf("docs/commands/%s lists %q, which access.go does not declare for %s", page, r, command)
			}
		}
		for _, r := range code {
			if !slices.Contains(doc, r) {
				t.Errorf("docs/commands/%s lacks %q, which access.go declares for %s", page, r, command)
			}
		}
	}
	if tables == 0 {
		t.Error("no rights table in docs/commands: the check checks nothing")
	}
}
