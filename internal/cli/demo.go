//go:build !probeonly

package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pullpath/pullpath/internal/demo"
)

type demoOptions struct {
	streams Streams
	full    bool
	only    string
	list    bool
	quiet   bool
}

func newDemoCmd(s Streams) *cobra.Command {
	o := &demoOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Stage a private registry on loopback, healthy and with each fault, and diagnose each",
		Long: `Stage, inside this process and on loopback only, a TLS registry with a token
realm and a blob host it redirects to, a DNS server and a generated CA; then run
the real probe against the healthy path and each staged fault, one line per
scenario (--full prints every report first). Nothing on the machine changes.

Exit codes: 0 every diagnosis matches the staged fault, 1 one does not, 2 could
not run (a bad flag, --only matching no scenario).
` + manual("demo.md"),
		Example: `  pullpath demo
  pullpath demo --list
  pullpath demo --full --only "blob host unreachable"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := o.streams.Out
			if o.quiet {
				out = io.Discard
			}
			if o.list {
				for _, n := range demo.Names() {
					if _, err := fmt.Fprintln(out, n); err != nil {
						return err
					}
				}
				return nil
			}
			if o.only != "" && !slices.ContainsFunc(demo.Names(), func(n string) bool { return strings.Contains(n, o.only) }) {
				return fmt.Errorf("--only %q matches no scenario (pullpath demo --list shows them)", o.only)
			}
			results, err := demo.Run(cmd.Context(), out, demo.RunOptions{Full: o.full, Only: o.only, Text: textOptions(cmd, o.streams.Out, false)})
			if err != nil {
				return err
			}
			if len(results) == 0 {
				return fmt.Errorf("--only %q matches no scenario (pullpath demo --list shows them)", o.only)
			}
			bad := 0
			for _, r := range results {
				if !r.Match {
					bad++
				}
			}
			if bad > 0 {
				if !o.quiet {
					fmt.Fprintf(o.streams.ErrOut, "pullpath demo: %d of %d diagnoses did not match the staged fault\n", bad, len(results))
				}
				return &ExitError{Code: ExitBroken}
			}
			fmt.Fprintf(out, "\nall %d diagnoses match the staged faults\n", len(results))
			return nil
		},
	}
	cmd.Flags().BoolVar(&o.full, "full", false, "print every report in full, with the endpoint inventory, before the summary")
	cmd.Flags().StringVar(&o.only, "only", "", "run only the scenarios whose name contains this text")
	cmd.Flags().BoolVar(&o.list, "list", false, "list the scenario names and exit")
	addQuiet(cmd, &o.quiet)
	return cmd
}
