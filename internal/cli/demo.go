//go:build !probeonly

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/report"
)

type demoOptions struct {
	base
	full   bool
	only   string
	list   bool
	quiet  bool
	output string
}

func newDemoCmd(s Streams) *cobra.Command {
	o := &demoOptions{base: base{streams: s}}
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
	}
	lifecycle(cmd, o)
	cmd.Flags().BoolVar(&o.full, "full", false, "print every report in full, with the endpoint inventory, before the summary")
	cmd.Flags().StringVar(&o.only, "only", "", "run only the scenarios whose name contains this text (any case)")
	cmd.Flags().BoolVar(&o.list, "list", false, "list the scenario names and exit")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json (a DemoReport: each scenario, its expected and diagnosed failure)")
	addQuiet(cmd, &o.quiet)
	return cmd
}

// Complete takes no arguments.
func (o *demoOptions) Complete([]string) error { return nil }

// Validate checks -o, --full and --only (which must match a scenario, unless --list).
func (o *demoOptions) Validate() error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.output == "json" && o.full {
		return errors.New("--full prints the reports as text: drop it with -o json")
	}
	if !o.list && o.only != "" && !slices.ContainsFunc(demo.Scenarios(), func(s demo.Scenario) bool { return s.Matches(o.only) }) {
		return fmt.Errorf("--only %q matches no scenario (pullpath demo --list shows them)", o.only)
	}
	return nil
}

// Run lists the scenarios, or runs them and prints the summary; a mismatch is ExitError{1}.
func (o *demoOptions) Run(ctx context.Context) error {
	out := o.streams.Out
	if o.quiet || o.output == "json" {
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
	results, err := demo.Run(ctx, out, demo.RunOptions{Full: o.full, Only: o.only, Text: textOptions(o.cmd, o.streams.Out, false)})
	var se *SignalError
	interrupted := err != nil && errors.As(context.Cause(ctx), &se)
	if o.output == "json" && !o.quiet && (err == nil || interrupted) && len(results) > 0 {
		if err := report.WriteJSON(o.streams.Out, demoReport(results, se)); err != nil {
			return err
		}
	}
	if interrupted {
		// the partial summary is printed; say where it stopped, exit 128+signal
		fmt.Fprintf(o.streams.ErrOut, "pullpath demo: %v after %d of %d scenarios\n", se, len(results), countMatching(o.only))
		return &ExitError{Code: se.ExitCode()}
	}
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
	if len(results) == 1 {
		fmt.Fprintln(out, "\nthe diagnosis matches the staged fault")
	} else {
		fmt.Fprintf(out, "\nall %d diagnoses match the staged faults\n", len(results))
	}
	return nil
}

// countMatching is how many scenarios --only selects.
func countMatching(only string) int {
	n := 0
	for _, s := range demo.Scenarios() {
		if s.Matches(only) {
			n++
		}
	}
	return n
}

// demoReport is the DemoReport of the scenarios run; se is the signal that cut the run, or nil.
func demoReport(results []demo.Result, se *SignalError) *report.Demo {
	d := &report.Demo{APIVersion: report.APIVersion, Kind: "DemoReport", Match: true, Scenarios: []report.DemoScenario{}}
	if se != nil {
		d.Interrupted = signalName(se.Signal)
	}
	for _, r := range results {
		s := r.Scenario
		ds := report.DemoScenario{Name: s.Name, Match: r.Match,
			Expect: report.DemoExpected{Class: s.Expect, Role: s.Role, Step: s.Step, Code: s.Code}}
		if r.Err != nil {
			ds.Error = r.Err.Error()
		} else if r.Report != nil {
			ds.Class, ds.Code, ds.Failing, ds.Duration = r.Report.Class, r.Report.Code, r.Report.Failing, r.Report.Duration
		}
		d.Match = d.Match && r.Match
		d.Scenarios = append(d.Scenarios, ds)
	}
	return d
}
