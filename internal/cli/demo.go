package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pullpath/pullpath/internal/demo"
)

type demoOptions struct {
	streams Streams
	full    bool
	only    string
}

func newDemoCmd(s Streams) *cobra.Command {
	o := &demoOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Stage a private registry on loopback, healthy and with each fault, and diagnose each",
		Long: `Start, inside this process and on loopback only, a TLS registry with a token realm
on a second hostname and a blob host it redirects to on a third, a DNS server
for those names, and a generated CA. Push a generated image, then run the real
probe against the healthy path and against each fault: unknown name, resolver
down, closed port, untrusted CA, wrong-name and expired certificates, plain HTTP,
401, 403, insufficient scope, missing tag, wrong platform, 429, token realm
down, blob host unresolvable, down, stalled, refusing its signed URL, and
altered bytes. Nothing on the machine is changed.

Exit code 0 when every diagnosis matches the staged fault, 1 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			results, err := demo.Run(cmd.Context(), o.streams.Out, demo.RunOptions{Full: o.full, Only: o.only})
			if err != nil {
				return err
			}
			bad := 0
			for _, r := range results {
				if !r.Match {
					bad++
				}
			}
			if bad > 0 {
				fmt.Fprintf(o.streams.ErrOut, "pullpath demo: %d of %d diagnoses did not match the staged fault\n", bad, len(results))
				return &ExitError{Code: ExitBroken}
			}
			fmt.Fprintf(o.streams.Out, "\nall %d diagnoses match the staged faults\n", len(results))
			return nil
		},
	}
	cmd.Flags().BoolVar(&o.full, "full", false, "print every report in full, with the endpoint inventory")
	cmd.Flags().StringVar(&o.only, "only", "", "run only the scenarios whose name contains this text")
	return cmd
}
