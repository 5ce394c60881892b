package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pullpath/pullpath/internal/registry"
)

// shellWords splits a command line the way sh would for the examples: spaces, single and double
// quotes; it stops at a pipe, a redirection or a closing parenthesis.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == '#' && !in:
			return words
		case r == ' ' || r == '\t':
			if in {
				words, in = append(words, cur.String()), false
				cur.Reset()
			}
		case r == '|' || r == '>' || r == ')' || r == '<':
			if in {
				words = append(words, cur.String())
			}
			return words
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// exampleArgs returns the pullpath arguments of every pullpath command in text: the words after
// "pullpath" (or "kubectl pullpath") up to a pipe or a redirection.
func exampleArgs(text string) [][]string {
	var all [][]string
	for _, line := range strings.Split(text, "\n") {
		for _, part := range strings.Split(line, "|") {
			part = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(part), "$ "))
			if i := strings.Index(part, "<("); i >= 0 {
				part = part[i+2:]
			}
			part = strings.TrimPrefix(part, "kubectl ")
			if !strings.HasPrefix(part, "pullpath ") && part != "pullpath" {
				continue
			}
			all = append(all, shellWords(part)[1:])
		}
	}
	return all
}

// checkExample parses args with the real command tree: the subcommand exists, every flag exists
// and takes its value, the positional arguments are what the command accepts, and an IMAGE is a
// reference the probe accepts.
func checkExample(args []string) error {
	var out bytes.Buffer
	root := NewRootCmd(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := c.ParseFlags(rest); err != nil {
		return err
	}
	if h, _ := c.Flags().GetBool("help"); h {
		return nil
	}
	pos := c.Flags().Args()
	if err := c.ValidateArgs(pos); err != nil {
		return err
	}
	if c.Runnable() && !c.HasSubCommands() && len(pos) > 0 && strings.Contains(c.Use, "IMAGE") {
		if _, err := registry.ParseReference(pos[0]); err != nil {
			return err
		}
	}
	if o := c.Flags().Lookup("output"); o != nil {
		return checkOutput(o.Value.String())
	}
	return nil
}

func eachCommand(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, s := range c.Commands() {
		eachCommand(s, f)
	}
}

// Every Example line of every command, and the hint of every "needs an IMAGE" error, is valid for
// the current flags: a copied example must run.
func TestHelpExamplesParse(t *testing.T) {
	n := 0
	eachCommand(NewRootCmd(Streams{}), func(c *cobra.Command) {
		for _, args := range exampleArgs(c.Example) {
			n++
			if err := checkExample(args); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), strings.Join(args, " "), err)
			}
		}
	})
	if n < 15 {
		t.Errorf("only %d example lines found: the extraction is broken", n)
	}
}

// Every runnable command states its exit codes and shows an example (help and completion's
// generated shells aside).
func TestHelpStatesExitCodesAndExamples(t *testing.T) {
	eachCommand(NewRootCmd(Streams{}), func(c *cobra.Command) {
		if !c.Runnable() || c.HasSubCommands() || c.Name() == "help" || (c.Parent() != nil && c.Parent().Name() == "completion") || c.Name() == "completion" {
			return
		}
		if !strings.Contains(c.Long, "Exit code") {
			t.Errorf("%s: the help states no exit codes", c.CommandPath())
		}
		if c.Example == "" {
			t.Errorf("%s: the help has no example", c.CommandPath())
		}
	})
}

// docFiles are the Markdown files people copy command lines from: README.md, CONTRIBUTING.md and
// every page under docs/, as paths relative to the repository's root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot(t), "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(repoRoot(t), path)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The command lines in the code blocks of the README and the docs are valid too.
func TestDocsExamplesParse(t *testing.T) {
	total := 0
	for _, name := range docFiles(t) {
		n := 0
		for _, block := range codeBlocks(readDoc(t, name)) {
			for _, line := range commandLines(block) {
				for _, args := range exampleArgs(line) {
					n++
					if err := checkExample(args); err != nil {
						t.Errorf("%s: %q: %v", name, strings.Join(args, " "), err)
					}
				}
			}
		}
		if name == "README.md" && n < 4 {
			t.Errorf("only %d command lines found in the README's code blocks: the extraction is broken", n)
		}
		total += n
	}
	if total < 30 {
		t.Errorf("only %d command lines found in the docs' code blocks: the extraction is broken", total)
	}
	t.Logf("%d command lines in %d files", total, len(docFiles(t)))
}

// codeBlocks returns the lines of each fenced code block of a Markdown text.
func codeBlocks(md string) [][]string {
	var blocks [][]string
	var cur []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if in {
				blocks = append(blocks, cur)
			}
			in, cur = !in, nil
			continue
		}
		if in {
			cur = append(cur, line)
		}
	}
	return blocks
}

// commandLines are the lines of a code block that someone would run: in a block that shows a
// session ("$ " prompts followed by output), only the prompted lines, so that output such as
// "pullpath demo: a registry …" is not taken for a command; else every line.
func commandLines(block []string) []string {
	var prompted []string
	for _, l := range block {
		if strings.HasPrefix(strings.TrimSpace(l), "$ ") {
			prompted = append(prompted, l)
		}
	}
	if len(prompted) > 0 {
		return prompted
	}
	return block
}

// Every flag the README and the docs name in an inline command (`pullpath probe --cri[=SOCKET]`)
// exists on that command.
func TestDocsInlineCommandFlagsExist(t *testing.T) {
	n := 0
	root := NewRootCmd(Streams{}) // only looked up in
	for _, name := range docFiles(t) {
		spans := strings.Split(readDoc(t, name), "`")
		for i := 1; i < len(spans); i += 2 {
			span := strings.TrimPrefix(strings.TrimSpace(spans[i]), "kubectl ")
			words := strings.Fields(span)
			switch {
			case strings.HasPrefix(span, "pullpath "):
				words = words[1:]
			case len(words) > 1 && strings.Contains(span, " --") && slices.ContainsFunc(root.Commands(), func(c *cobra.Command) bool { return c.Name() == words[0] }):
				// "verify --probe-image REF": a subcommand named in prose
			default:
				continue
			}
			c, _, err := root.Find(words)
			if err != nil {
				continue // a placeholder such as "pullpath …"
			}
			for _, w := range words {
				if !strings.HasPrefix(w, "--") {
					continue
				}
				flag := strings.TrimPrefix(w, "--")
				flag, _, _ = strings.Cut(flag, "[")
				flag, _, _ = strings.Cut(flag, "=")
				flag = strings.TrimRight(flag, ".,;:)")
				n++
				if c.Flags().Lookup(flag) == nil && c.InheritedFlags().Lookup(flag) == nil {
					t.Errorf("%s: `%s`: %s has no flag --%s", name, spans[i], c.CommandPath(), flag)
				}
			}
		}
	}
	t.Logf("%d flags in inline commands", n)
}

// Signal exit codes are one story (issue 34): 128+signal for every command, except watch, a
// service whose normal stop is a signal, which exits 0 after a clean stop and 1 when something is
// left; its --help, its manual, the README and the contract say the same.
func TestSignalExitCodesAgree(t *testing.T) {
	help := run(t, "", "watch", "--help").out
	if !strings.Contains(help, "Exit codes: 0 stopped by a signal after cleaning up, 1 something left behind") {
		t.Errorf("watch --help does not state its signal exit codes:\n%s", help)
	}
	if doc := readDoc(t, "docs/commands/watch.md"); !strings.Contains(doc, "SIGINT or SIGTERM deletes every probe pod and object it made") || !strings.Contains(doc, "and exits 0") {
		t.Error("docs/commands/watch.md does not say watch exits 0 on a signal")
	}
	for _, page := range []string{"README.md", "docs/contract.md"} {
		row := ""
		for _, l := range strings.Split(readDoc(t, page), "\n") {
			if strings.HasPrefix(l, "| `130`, `143` |") {
				row = l
			}
		}
		if !strings.Contains(row, "xcept `watch`") || !strings.Contains(readDoc(t, page), "`0` once it has deleted") {
			t.Errorf("%s: the 130/143 row does not state watch's exception: %q", page, row)
		}
	}
}
