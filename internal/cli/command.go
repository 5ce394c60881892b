package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/pullpath/pullpath/internal/report"
)

// command is the lifecycle of every command's options struct, run in this order by lifecycle:
//
//  1. Complete(args) takes the arguments; it reads nothing.
//  2. Validate() refuses flags and arguments that cannot mean anything, before anything is read,
//     asked of a cluster or said: a usage error stays one line.
//  3. Run(ctx) reads what the flags name (stdin, files, the kubeconfig), runs and renders.
type command interface {
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
	bind(cmd *cobra.Command)
}

// base is embedded in every options struct: the streams, and the command once it runs (its
// flags, --color).
type base struct {
	streams Streams
	cmd     *cobra.Command
}

func (b *base) bind(cmd *cobra.Command) { b.cmd = cmd }

// flagChanged reports whether the flag name was given.
func (b *base) flagChanged(name string) bool { return b.cmd != nil && b.cmd.Flags().Changed(name) }

// lifecycle makes cmd run o: Complete(args) → Validate() → Run(ctx). The one wiring of a command.
func lifecycle(cmd *cobra.Command, o command) *cobra.Command {
	cmd.RunE = func(c *cobra.Command, args []string) error {
		o.bind(c)
		if err := o.Complete(args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(c.Context())
	}
	return cmd
}

// emit writes v to w: as JSON when output is "json" (the contract), else with text.
func emit(w io.Writer, output string, v any, text func(io.Writer) error) error {
	if output == "json" {
		return report.WriteJSON(w, v)
	}
	return text(w)
}
