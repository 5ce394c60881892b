package cli

import (
	"bytes"
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

// docFiles are the README and the pages of docs/, whose command lines the tests keep true.
func docFiles(t *testing.T) map[string]string {
	t.Helper()
	files, _ := filepath.Glob("../../docs/*.md")
	out := map[string]string{}
	for _, f := range append([]string{"../../README.md"}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(f, "../../")] = string(b)
	}
	return out
}

// The command lines of the README and docs/ are valid too.
func TestReadmeExamplesParse(t *testing.T) {
	n := 0
	for name, doc := range docFiles(t) {
		n += docExamples(t, name, doc)
	}
	if n < 5 {
		t.Errorf("only %d command lines found in the docs' code blocks: the extraction is broken", n)
	}
	t.Logf("%d command lines in the README and docs/", n)
}

func docExamples(t *testing.T, name, doc string) int {
	n := 0
	inCode := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			continue
		}
		for _, args := range exampleArgs(line) {
			n++
			if err := checkExample(args); err != nil {
				t.Errorf("%s: %q: %v", name, strings.Join(args, " "), err)
			}
		}
	}
	return n
}

// Every flag the README and docs/ name in an inline command (`pullpath probe --cri[=SOCKET]`)
// exists on that command.
func TestReadmeInlineCommandFlagsExist(t *testing.T) {
	n := 0
	for name, doc := range docFiles(t) {
		n += docInlineFlags(t, name, doc)
	}
	t.Logf("%d flags in the inline commands of the README and docs/", n)
}

func docInlineFlags(t *testing.T, name, doc string) int {
	spans := strings.Split(doc, "`")
	n := 0
	for i := 1; i < len(spans); i += 2 {
		span := strings.TrimPrefix(strings.TrimSpace(spans[i]), "kubectl ")
		words := strings.Fields(span)
		root := NewRootCmd(Streams{})
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
	return n
}
