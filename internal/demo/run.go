package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

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
	Full       bool   // print every report in full, endpoint inventory included
	Only       string // run scenarios whose name contains this
	LayerBytes int64  // size of each demo layer; default 256 KiB
}

// Run stages every scenario in turn on one lab and prints each diagnosis, then a summary table.
// It returns the results; a mismatch with the expectation is a bug in pullpath.
func Run(ctx context.Context, out io.Writer, o RunOptions) ([]Result, error) {
	if o.LayerBytes <= 0 {
		o.LayerBytes = 256 << 10
	}
	env, err := Setup(ctx, o.LayerBytes)
	if err != nil {
		return nil, err
	}
	defer env.Close()
	fmt.Fprintf(out, "pullpath demo: a registry (%s), its token realm (%s) and blob host (%s)\n", env.Lab.RegistryAddr(), env.Lab.AuthAddr(), env.Lab.BlobAddr())
	fmt.Fprintf(out, "on loopback, names served by a DNS server at %s, TLS from a generated CA. Each scenario breaks one thing.\n", env.Lab.DNS.Addr)
	var results []Result
	scen := Scenarios()
	for i, s := range scen {
		if o.Only != "" && !strings.Contains(s.Name, o.Only) {
			continue
		}
		opts := s.Stage(env)
		rep, err := probe.Run(ctx, opts)
		res := Result{Scenario: s, Report: rep, Err: err}
		if err == nil {
			res.Match = s.Check(rep) == nil
		}
		results = append(results, res)
		fmt.Fprintf(out, "\n── %d/%d  %s  (expect %s)\n", i+1, len(scen), s.Name, s.Expect)
		switch {
		case err != nil:
			fmt.Fprintf(out, "error: %v\n", err)
		case o.Full || rep.Class == report.ClassOK:
			_ = report.WriteText(out, rep, report.TextOptions{})
		default:
			_ = report.WriteText(out, brief(rep), report.TextOptions{})
		}
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
	}
	fmt.Fprintln(out, "\nsummary")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tEXPECTED\tDIAGNOSED\tHOST\tROLE\tLAYER\tCODE\tTIME\t")
	for _, r := range results {
		if r.Err != nil {
			fmt.Fprintf(tw, "%s\t%s\terror\t\t\t\t\t\tMISMATCH\n", r.Scenario.Name, r.Scenario.Expect)
			continue
		}
		host, role, layer := "-", "-", "-"
		if f := r.Report.Failing; f != nil {
			host, role, layer = f.Host, string(f.Role), f.Step.String()
		}
		mark := "ok"
		if !r.Match {
			mark = "MISMATCH"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Scenario.Name, r.Scenario.Expect, r.Report.Class, host, role, layer,
			r.Report.Code, r.Report.Duration.Std().Round(time.Millisecond), mark)
	}
	return results, tw.Flush()
}

// brief keeps the verdict and evidence, not the inventory, for the fault scenarios.
func brief(r *report.Probe) *report.Probe {
	c := *r
	var eps []report.Endpoint
	for _, e := range r.Endpoints {
		if r.Failing != nil && e.Host == r.Failing.Host {
			eps = append(eps, e)
		}
	}
	c.Endpoints = eps
	return &c
}
