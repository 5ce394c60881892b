package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpGroup is the annotation that makes --help list a flag by name on its group's line rather
// than on a line of its own (kubectl's connection flags, a command's timeouts), so that every
// --help fits one screen; the command's page in docs/commands/ describes each flag.
const helpGroup = "pullpath.dev/help-group"

// manual is where a command's Long points to its page: the manual, every flag described.
func manual(page string) string {
	return "Manual: https://github.com/pullpath/pullpath/blob/main/docs/commands/" + page
}

// groupFlags puts the named flags of fs on the --help line titled title, in this order.
func groupFlags(fs *pflag.FlagSet, title string, names ...string) {
	for i, n := range names {
		if err := fs.SetAnnotation(n, helpGroup, []string{title, strconv.Itoa(i)}); err != nil {
			panic(fmt.Sprintf("groupFlags %s: %v", title, err)) // a misspelt name: a bug in the command tree
		}
	}
}

// usage is cobra's usage text, but for the flags of a help group, which are listed by name on a
// line of their group (wrapped at 80 columns) after the others.
func usage(c *cobra.Command) error {
	b := &strings.Builder{}
	b.WriteString("Usage:")
	if c.Runnable() {
		b.WriteString("\n  " + c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n  " + c.CommandPath() + " [command]")
	}
	if len(c.Aliases) > 0 {
		b.WriteString("\n\nAliases:\n  " + c.NameAndAliases())
	}
	if c.HasExample() {
		b.WriteString("\n\nExamples:\n" + c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() || s.Name() == "help" {
				fmt.Fprintf(b, "\n  %-*s %s", s.NamePadding(), s.Name(), s.Short)
			}
		}
	}
	if c.HasAvailableLocalFlags() {
		own := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
		var titles []string
		groups := map[string][]*pflag.Flag{}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			g := f.Annotations[helpGroup]
			if len(g) == 0 {
				own.AddFlag(f)
				return
			}
			if _, ok := groups[g[0]]; !ok {
				titles = append(titles, g[0])
			}
			groups[g[0]] = append(groups[g[0]], f)
		})
		b.WriteString("\n\nFlags:\n" + strings.TrimRightFunc(own.FlagUsagesWrapped(80), unicode.IsSpace))
		for _, t := range titles {
			fs := groups[t]
			slices.SortFunc(fs, func(a, b *pflag.Flag) int { return cmp.Compare(groupIndex(a), groupIndex(b)) })
			var words []string
			for _, f := range fs {
				words = append(words, flagWord(f))
			}
			b.WriteString("\n" + wrapWords(t+":", words, 80))
		}
	}
	if c.HasAvailableInheritedFlags() {
		b.WriteString("\n\nGlobal Flags:\n" + strings.TrimRightFunc(c.InheritedFlags().FlagUsagesWrapped(80), unicode.IsSpace))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	_, err := fmt.Fprint(c.OutOrStderr(), b.String())
	return err
}

// groupIndex is f's place on its group's line, as groupFlags was given it.
func groupIndex(f *pflag.Flag) int {
	i, _ := strconv.Atoi(f.Annotations[helpGroup][1])
	return i
}

// flagWord is a grouped flag as its line lists it: "-n/--namespace", "--timeout=10m0s".
func flagWord(f *pflag.Flag) string {
	w := "--" + f.Name
	if f.Shorthand != "" {
		w = "-" + f.Shorthand + "/" + w
	}
	switch f.DefValue {
	case "", "false", "0", "[]":
	default:
		w += "=" + f.DefValue
	}
	return w
}

// wrapWords is title and words on lines of at most width columns, the next lines indented.
func wrapWords(title string, words []string, width int) string {
	line, lines := title, []string{}
	for _, w := range words {
		if len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = " "
		}
		line += " " + w
	}
	return strings.Join(append(lines, line), "\n")
}
