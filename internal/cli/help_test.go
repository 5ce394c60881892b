//go:build !probeonly

package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// manualPage is the page of docs/commands/ that is c's manual, or "" for cobra's own commands
// (help, completion) and the commands that only group others.
func manualPage(c *cobra.Command) string {
	if !c.Runnable() || c.HasSubCommands() || c.Name() == "help" || c.Name() == "completion" || (c.HasParent() && c.Parent().Name() == "completion") {
		return ""
	}
	if c.Name() == "push" {
		return "image.md"
	}
	if c.HasParent() && c.Parent().Name() == "watch" {
		return "watch.md"
	}
	return c.Name() + ".md"
}

// Every command's --help fits one screen, 40 lines at most, Long, examples and flags together: the
// manual is the page in docs/commands/ (issue 22).
func TestHelpFitsOneScreen(t *testing.T) {
	n := 0
	eachCommand(NewRootCmd(Streams{}), func(c *cobra.Command) {
		args := append(strings.Fields(c.CommandPath())[1:], "--help")
		r := run(t, "", args...)
		if r.code != 0 {
			t.Errorf("%s: exit %d: %s", strings.Join(args, " "), r.code, r.errOut)
			return
		}
		n++
		if lines := strings.Count(r.out, "\n"); lines > 40 {
			t.Errorf("%s is %d lines, more than 40: move the prose to docs/commands/ or put flags in a help group (groupFlags)\n%s", strings.Join(args, " "), lines, r.out)
		}
	})
	if n < 12 {
		t.Errorf("only %d commands' help checked", n)
	}
}

// Every command's Long ends with the address of its manual, and the page is there.
func TestHelpPointsToItsManual(t *testing.T) {
	eachCommand(NewRootCmd(Streams{}), func(c *cobra.Command) {
		page := manualPage(c)
		if page == "" {
			return
		}
		if !strings.HasSuffix(c.Long, "\n"+manual(page)) {
			t.Errorf("%s: the help does not end with %q", c.CommandPath(), manual(page))
		}
		if _, err := os.Stat(filepath.Join(repoRoot(t), "docs", "commands", page)); err != nil {
			t.Errorf("%s: its manual: %v", c.CommandPath(), err)
		}
	})
}

// The manual describes every flag of its command, those --help only names in a group included.
func TestManualDescribesEveryFlag(t *testing.T) {
	eachCommand(NewRootCmd(Streams{}), func(c *cobra.Command) {
		page := manualPage(c)
		if page == "" {
			return
		}
		doc := readDoc(t, "docs/commands/"+page)
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !strings.Contains(doc, "`--"+f.Name+"`") {
				t.Errorf("docs/commands/%s does not describe %s --%s", page, c.CommandPath(), f.Name)
			}
		})
	})
}

// reFlagLine is a manual's flag list entry: "- `--name` type: usage" (or "- `-n`, `--name` …").
var reFlagLine = regexp.MustCompile("(?m)^- (?:`-\\w`, )?`--([\\w-]+)`( [\\w.\\[\\]]+)?:")

// A flag the manual lists as usable is one its command takes: kubectl's --username and
// --password were listed with "basic authentication" yet refused (issue 34); a refused flag's
// entry says it is refused.
func TestManualListsNoRefusedFlag(t *testing.T) {
	eachCommand(NewRootCmd(Streams{}), func(c *cobra.Command) {
		page := manualPage(c)
		if page == "" {
			return
		}
		doc := readDoc(t, "docs/commands/"+page)
		for _, m := range reFlagLine.FindAllStringSubmatch(doc, -1) {
			f := c.Flags().Lookup(m[1])
			if f == nil {
				continue // another command of the same page (watch's subcommands)
			}
			if _, refused := f.Value.(*refusedFlag); refused {
				t.Errorf("docs/commands/%s lists %s --%s as a flag it takes; the command refuses it", page, c.CommandPath(), m[1])
			}
		}
	})
}
