package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// TextOptions tune the human rendering.
type TextOptions struct {
	Verbose bool // every step, not only the failing one
}

// WriteText renders a probe report for a person: the verdict line, the failing row of the class
// table with its evidence, then the endpoint inventory.
func WriteText(w io.Writer, p *Probe, o TextOptions) error {
	b := &strings.Builder{}
	switch {
	case p.Class == ClassOK:
		fmt.Fprintf(b, "OK  %s\n", p.Summary)
	case p.Interrupted != nil:
		i := p.Interrupted
		fmt.Fprintf(b, "INTERRUPTED  %s · cut during %s on %s (%s) · %s\n", i.Reason, i.Step, i.Host, i.Role, p.Code)
		fmt.Fprintf(b, "  %s\n", p.Summary)
		if p.WhereToLook != "" {
			fmt.Fprintf(b, "  look at   %s\n", p.WhereToLook)
		}
	default:
		f := p.Failing
		fmt.Fprintf(b, "BROKEN  class %s · %s (%s) · step %s · %s\n", p.Class, f.Host, f.Role, f.Step, p.Code)
		fmt.Fprintf(b, "  %s\n", p.Summary)
		if o := ownerLine(p.Owner, p.OwnerText); o != "" {
			fmt.Fprintf(b, "  owner     %s\n", o)
		}
		writeLines(b, "  evidence  ", p.Evidence)
		if p.Alternative != "" {
			fmt.Fprintf(b, "  or        %s\n", p.Alternative)
		}
		if p.WhereToLook != "" {
			fmt.Fprintf(b, "  look at   %s\n", p.WhereToLook)
		}
	}
	for _, x := range p.Warnings {
		fmt.Fprintf(b, "  WARNING   %s: %s\n", x.Code, x.Message)
	}
	fmt.Fprintf(b, "\nimage     %s (platform %s, from node %s, %s)\n", p.Image, p.Platform, p.Node, p.Duration.Std().Round(time.Millisecond))
	fmt.Fprintf(b, "resolver  %s from %s\n", strings.Join(p.Resolver.Nameservers, ", "), p.Resolver.Source)
	if rt := p.Runtime; rt != nil {
		ver := rt.Version
		if ver == "" {
			ver = "version unknown"
		}
		fmt.Fprintf(b, "runtime   %s (%s) under %s, hosts in its order:\n", rt.Name, ver, rt.HostRoot)
		for i, h := range rt.Hosts {
			fmt.Fprintf(b, "          %d. %s (%s, %s): %s\n", i+1, h.URL, h.Role, h.Source, h.Result)
		}
	}
	if p.Download.Expected > 0 {
		d := p.Download
		fmt.Fprintf(b, "download  %d/%d blobs, %s, %.2fs, %.1f MB/s, verified=%t\n", d.Blobs, d.Expected, HumanBytes(d.Bytes), d.Duration.Std().Seconds(), d.MBps, d.Verified)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "ENDPOINT\tROLE\tADDRESSES")
	for _, l := range EndpointSteps {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(l.String()))
	}
	fmt.Fprintln(tw)
	for _, e := range p.Endpoints {
		var addrs []string
		for _, a := range e.Addresses {
			addrs = append(addrs, a.IP+" ("+a.Scope+")")
		}
		if len(addrs) == 0 {
			addrs = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s", e.Host, e.Role, strings.Join(addrs, ", "))
		for _, l := range EndpointSteps {
			v, ok := e.Steps[l]
			cell := "·"
			if ok {
				cell = string(v)
				if v == Fail || v == Warn {
					cell = strings.ToUpper(cell)
				}
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if o.Verbose {
		b.WriteString("\nsteps\n")
		for _, s := range p.Steps {
			code := ""
			if s.Code != "" {
				code = " " + string(s.Code)
			}
			fmt.Fprintf(b, "  %-4s %-8s %-28s %s%s\n", s.Verdict, s.Step, s.Endpoint, s.Summary, code)
		}
		b.WriteString("\nhops\n")
		for _, h := range p.Hops {
			st := fmt.Sprint(h.Status)
			if h.Error != "" {
				st = "error: " + h.Error
			}
			conn := ""
			if h.Reused {
				conn = ", reused connection"
			}
			fmt.Fprintf(b, "  %3d %-8s %-4s %s → %s (%s%s)\n", h.Seq, h.Role, h.Method, h.URL, st, h.Duration.Std().Round(time.Millisecond), conn)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeLines(b *strings.Builder, first string, lines []string) {
	pad := strings.Repeat(" ", len(first))
	n := 0
	for _, l := range lines {
		if l == "" {
			continue
		}
		if n == 0 {
			b.WriteString(first)
		} else {
			b.WriteString(pad)
		}
		n++
		b.WriteString(l)
		b.WriteByte('\n')
	}
}

// HumanBytes renders a byte count in SI units ("12.3 MB").
func HumanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// ownerLine renders the owner token with its prose: "network + registry (…) [network]".
func ownerLine(token Owner, text string) string {
	switch {
	case token == "":
		return text
	case text == "":
		return string(token)
	}
	return text + " [" + string(token) + "]"
}
