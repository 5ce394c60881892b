package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/report"
)

// Result is one scenario's diagnosis.
type Result struct {
	Scenario Scenario
	Report   *report.Probe
	Err      error
	Match    bool
}

// Check compares a report with what the scenario expects: class, failing role, layer and code.
func (s Scenario) Check(r *report.Probe) error {
	if r.Class != s.Expect {
		return fmt.Errorf("class %s, want %s (%s: %s)", r.Class, s.Expect, r.Code, r.Summary)
	}
	if s.Expect == report.ClassOK {
		if r.Failing != nil || !r.Download.Verified {
			return fmt.Errorf("ok without a verified download")
		}
		return nil
	}
	f := r.Failing
	if f == nil {
		return fmt.Errorf("class %s without a failing endpoint", r.Class)
	}
	if f.Role != s.Role || f.Step != s.Step || r.Code != s.Code {
		return fmt.Errorf("failing %s/%s/%s on %s, want %s/%s/%s", f.Role, f.Step, r.Code, f.Host, s.Role, s.Step, s.Code)
	}
	return nil
}

// RunOptions tune the demo.
type RunOptions struct {
	Full       bool   // print every report in full before the summary
	Only       string // run scenarios whose name contains this, without regard to case
	LayerBytes int64  // size of each demo layer; default 256 KiB
	// Text is the layout of the reports and the summary: its width (80 when 0) and colour.
	Text report.TextOptions
}

// Matches reports whether the scenario's name contains only, without regard to case ("" matches
// every scenario).
func (s Scenario) Matches(only string) bool {
	return strings.Contains(strings.ToLower(s.Name), strings.ToLower(only))
}

// Names lists the scenarios, in the order the demo runs them.
func Names() []string {
	var n []string
	for _, s := range Scenarios() {
		n = append(n, s.Name)
	}
	return n
}

// Run stages every scenario in turn on one lab and prints a one-line summary per scenario (with
// Full, each report in full before it). It returns the results; a mismatch with the expectation
// is a bug in pullpath.
func Run(ctx context.Context, out io.Writer, o RunOptions) ([]Result, error) {
	if o.LayerBytes <= 0 {
		o.LayerBytes = 256 << 10
	}
	width := o.Text.Width
	if width <= 0 {
		width = report.DefaultWidth
	}
	env, err := Setup(ctx, o.LayerBytes)
	if err != nil {
		return nil, err
	}
	defer env.Close()
	intro := &strings.Builder{}
	wrapText(intro, fmt.Sprintf("pullpath demo: a registry (%s), its token realm (%s) and blob host (%s) on loopback, names served by a DNS server at %s, TLS from a generated CA. Each scenario breaks one thing.",
		env.Lab.RegistryAddr(), env.Lab.AuthAddr(), env.Lab.BlobAddr(), env.Lab.DNS.Addr), width)
	fmt.Fprint(out, intro.String())
	var results []Result
	scen := Scenarios()
	for i, s := range scen {
		if !s.Matches(o.Only) {
			continue
		}
		opts := s.Stage(env)
		rep, err := probe.Run(ctx, opts)
		res := Result{Scenario: s, Report: rep, Err: err}
		if err == nil {
			res.Match = s.Check(rep) == nil
		}
		results = append(results, res)
		if o.Full {
			fmt.Fprintf(out, "\n── %d/%d  %s  (expect %s)\n", i+1, len(scen), s.Name, s.Expect)
			if err != nil {
				fmt.Fprintf(out, "error: %v\n", err)
			} else {
				_ = report.WriteText(out, rep, o.Text)
			}
		}
		if ctx.Err() != nil {
			// the scenario in progress was cut, not diagnosed: summarise the ones that finished
			if rep != nil && rep.Interrupted != nil || err != nil {
				results = results[:len(results)-1]
			}
			fmt.Fprintln(out)
			_, _ = io.WriteString(out, Summary(results, o.Text))
			return results, ctx.Err()
		}
	}
	fmt.Fprintln(out)
	_, err = io.WriteString(out, Summary(results, o.Text))
	return results, err
}

// Summary renders one line per scenario: ✓ or ✗ (diagnosis matches the staged fault or not), the
// scenario, the class and code diagnosed, the failing host (role) and the probe's time. When that
// table is wider than o.Width (80 when 0), each scenario takes two lines: the mark, time and name,
// then the diagnosis indented below.
func Summary(results []Result, o report.TextOptions) string {
	width := o.Width
	if width <= 0 {
		width = report.DefaultWidth
	}
	type line struct{ mark, name, class, code, failing, took string }
	var lines []line
	for _, r := range results {
		l := line{mark: "✓", name: r.Scenario.Name, class: "error", code: "-", failing: "-"}
		if !r.Match {
			l.mark = "✗"
		}
		if r.Err != nil {
			l.code = r.Err.Error()
		} else {
			l.class, l.code = string(r.Report.Class), string(r.Report.Code)
			if f := r.Report.Failing; f != nil {
				l.failing = f.Host + " (" + string(f.Role) + ")"
			}
			l.took = r.Report.Duration.Std().Round(time.Millisecond).String()
		}
		lines = append(lines, l)
	}
	paintMark := func(m string) string {
		if o.Color && m == "✗" {
			return "\x1b[1;31m" + m + "\x1b[0m"
		}
		return m
	}
	widths := make([]int, 6)
	header := line{mark: " ", name: "SCENARIO", class: "CLASS", code: "CODE", failing: "FAILING HOST (ROLE)", took: "TIME"}
	for _, l := range append([]line{header}, lines...) {
		for i, c := range []string{l.mark, l.name, l.class, l.code, l.failing, l.took} {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	total := 0
	for _, w := range widths {
		total += w + 2
	}
	b := &strings.Builder{}
	pad := func(s string, w int) string { return s + strings.Repeat(" ", w-utf8.RuneCountInString(s)) }
	if total-2 <= width {
		for _, l := range append([]line{header}, lines...) {
			row := paintMark(l.mark) + "  " + pad(l.name, widths[1]) + "  " + pad(l.class, widths[2]) + "  " + pad(l.code, widths[3]) + "  " +
				pad(l.failing, widths[4]) + "  " + l.took
			b.WriteString(strings.TrimRight(row, " ") + "\n")
		}
		return b.String()
	}
	tw := 0
	for _, l := range lines {
		tw = max(tw, len(l.took))
	}
	for _, l := range lines {
		b.WriteString(paintMark(l.mark) + " " + strings.Repeat(" ", tw-len(l.took)) + l.took + "  " + l.name + "\n")
		detail := l.class + " · " + l.code
		if l.failing != "-" {
			detail += " · " + l.failing
		}
		indent := strings.Repeat(" ", tw+4)
		report.Wrap(b, indent, indent, detail, width)
	}
	return b.String()
}

func wrapText(b *strings.Builder, text string, width int) { report.Wrap(b, "", "", text, width) }
