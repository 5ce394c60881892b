package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Streams are the command's standard streams.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Exit codes (the contract in docs/contract.md).
const (
	ExitOK      = 0
	ExitBroken  = 1
	ExitUsage   = 2
	ExitTimeout = 3 // --timeout ran out before a verdict: the report is partial
	// A run ended by a signal exits 128+signal, as shells do: 130 for SIGINT, 143 for SIGTERM,
	// after printing its partial report.
)

// SignalError is the cause of a context cancelled by a signal.
type SignalError struct{ Signal syscall.Signal }

func (e *SignalError) Error() string { return "interrupted by " + signalName(e.Signal) }

// ExitCode is 128 + the signal number, as shells report a process ended by a signal.
func (e *SignalError) ExitCode() int { return 128 + int(e.Signal) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// signalContext is cancelled, with a *SignalError cause, by the first SIGINT or SIGTERM. Only the
// first is caught: a second one ends the process the default way, so a stuck run can always be
// killed.
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			signal.Reset(os.Interrupt, syscall.SIGTERM)
			cancel(&SignalError{Signal: s.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() { close(done); signal.Stop(ch); cancel(nil) }
}

// ExitError carries an exit code without a message: the report already said everything.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit %d", e.Code) }

// Main runs pullpath with the process's streams and returns the exit code.
func Main(args []string) int {
	ctx, stop := signalContext(context.Background())
	defer stop()
	return Code(signalCause(ctx, Run(ctx, Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, args)), os.Stderr)
}

// signalCause replaces a bare "context canceled" by the signal that cancelled ctx: exit 128+signal,
// not 2.
func signalCause(ctx context.Context, err error) error {
	var se *SignalError
	if errors.Is(err, context.Canceled) && errors.As(context.Cause(ctx), &se) {
		return se
	}
	return err
}

// Code maps Run's error to an exit code, printing real errors on errOut.
func Code(err error, errOut io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	// a signal that cut a step with nothing to report (reading stdin, staging the demo): still
	// 128+signal, as a shell reports it
	var se *SignalError
	if errors.As(err, &se) {
		fmt.Fprintf(errOut, "pullpath: %v\n", err)
		return se.ExitCode()
	}
	fmt.Fprintf(errOut, "pullpath: %v\n", err)
	return ExitUsage
}

// Run executes the command line args.
func Run(ctx context.Context, s Streams, args []string) error {
	cmd := NewRootCmd(s)
	cmd.SetArgs(args)
	return oneLine(cmd, cmd.ExecuteContext(ctx))
}

// oneLine puts cobra's multi-line unknown command error ("Did you mean this?" and a name a line)
// on one line, as the contract promises for every exit 2.
func oneLine(root *cobra.Command, err error) error {
	if err == nil || !strings.HasPrefix(err.Error(), "unknown command ") || strings.Contains(err.Error(), "--help") {
		return err
	}
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	var near []string
	for _, l := range lines[1:] {
		if l = strings.TrimSpace(l); l != "" && !strings.HasSuffix(l, "?") {
			near = append(near, l)
		}
	}
	hint := root.CommandPath() + " --help lists them"
	if len(near) > 0 {
		hint = "did you mean " + orList(near) + "? " + hint
	}
	return fmt.Errorf("%s (%s)", lines[0], hint)
}

// NewRootCmd builds the command tree.
func NewRootCmd(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "pullpath",
		Short: "Explain why a node cannot pull an image, and prove when it can",
		Long: `pullpath walks the image pull path the way the node's container runtime does:
the node's resolver, its routes, every endpoint the pull touches (registry API,
token realm, blob redirect host), TLS as the runtime trusts it, identity, and a
complete download of every layer. It names the layer that broke, on which host,
with the evidence, and who owns the fix.

Exit codes: 0 path healthy, 1 path broken and diagnosed, 2 could not run.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionInfo().String(),
	}
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl pullpath"}
	}
	// no -v shorthand for --version: -v means verbose on the subcommands
	root.Flags().Bool("version", false, "print the version")
	root.PersistentFlags().String("color", "auto", "auto, always or never")
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		return checkColor(c.Flag("color").Value.String())
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// cobra's usage, with the flag descriptions wrapped to stay within 80 columns
	root.SetUsageTemplate(strings.NewReplacer(".LocalFlags.FlagUsages", "(.LocalFlags.FlagUsagesWrapped 80)",
		".InheritedFlags.FlagUsages", "(.InheritedFlags.FlagUsagesWrapped 80)").Replace(root.UsageTemplate()))
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetFlagErrorFunc(flagError)
	root.SetUsageFunc(usage)
	root.AddCommand(newProbeCmd(s), newAgentCmd(s), newRuntimeCmd(s), newVersionCmd(s))
	if fullCommands != nil {
		root.AddCommand(fullCommands(s)...)
	}
	root.CompletionOptions.HiddenDefaultCmd = false
	// cobra's help command prints its usage and exits 0 for a topic it does not know
	root.InitDefaultHelpCmd()
	if h, _, err := root.Find([]string{"help"}); err == nil && h != root {
		show := h.Run
		h.Run = nil
		h.RunE = func(c *cobra.Command, args []string) error {
			if t, _, err := c.Root().Find(args); len(args) > 0 && (err != nil || t == c.Root()) {
				return fmt.Errorf("help: unknown command %q (%s --help lists them)", strings.Join(args, " "), c.Root().CommandPath())
			}
			show(c, args)
			return nil
		}
	}
	// cobra's completion command prints its help and exits 0 for no shell or an unknown one
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		onlySubcommands(c, "shell", "bash", "zsh", "fish", "powershell")
		c.Example = "  source <(pullpath completion bash)\n  pullpath completion zsh > \"${fpath[1]}/_pullpath\""
	}
	registerCompletions(root)
	return root
}

// flagError keeps pflag's error on one line, with the flag meant when one is close.
func flagError(c *cobra.Command, err error) error {
	hint := c.CommandPath() + " --help lists the flags"
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
		if near := nearestFlag(c, name); near != "" {
			hint = "did you mean --" + near + "? " + hint
		}
	}
	return fmt.Errorf("%w (%s)", err, hint)
}

// nearestFlag is the flag of c whose name is closest to name, within two edits, or "".
func nearestFlag(c *cobra.Command, name string) string {
	best, bestD := "", 3
	visit := func(f *pflag.Flag) {
		if d := editDistance(name, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// checkOutput validates -o: every command renders text or json.
func checkOutput(output string) error {
	if output != "text" && output != "json" {
		return fmt.Errorf("--output %q: want text or json", output)
	}
	return nil
}

// checkOutFile refuses, before a run, a file flag that names a directory or a file in a directory
// that does not exist.
func checkOutFile(flag, path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s %s is a directory: give a file to write", flag, path)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s %s: its directory %s does not exist", flag, path, filepath.Dir(path))
	}
	return nil
}

// onlySubcommands makes c, a command that only groups subcommands (what names them: "subcommand",
// "shell"), refuse an argument and a bare call: cobra would print the help and exit 0.
func onlySubcommands(c *cobra.Command, what string, subs ...string) {
	c.Args = func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("%s: unknown %s %q: want %s", c.Name(), what, args[0], orList(subs))
		}
		return nil
	}
	c.RunE = func(*cobra.Command, []string) error {
		return fmt.Errorf("%s needs a %s: %s (%s --help)", c.Name(), what, orList(subs), c.CommandPath())
	}
}

// orList is "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// oneImage requires exactly one IMAGE argument, with an example when it is missing.
func oneImage(example string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			ex := strings.Replace(example, "pullpath", cmd.Root().DisplayName(), 1)
			return fmt.Errorf("%s needs an IMAGE, e.g. %s", cmd.CommandPath(), ex)
		case len(args) == 2 && cmd.Flags().Changed("cri") && cmd.Flag("cri").Value.String() == "auto":
			// an optional value is only taken with "=": "--cri SOCKET IMAGE" is two arguments
			return fmt.Errorf("%s takes one IMAGE, got 2 arguments: %s; to name the CRI socket, write --cri=%s", cmd.CommandPath(), strings.Join(args, " "), args[0])
		case len(args) > 1:
			return fmt.Errorf("%s takes one IMAGE, got %d arguments: %s", cmd.CommandPath(), len(args), strings.Join(args, " "))
		}
		return nil
	}
}

// fullCommands are the commands the probe-only build (-tags probeonly) that verify ships to the
// nodes leaves out: those that talk to a cluster (pod, verify, cleanup, image: no client-go on the
// nodes) and demo (an in-process registry: every byte of the probe travels in ConfigMaps).
var fullCommands func(Streams) []*cobra.Command
