package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pullpath/pullpath/internal/redact"
)

// WritePodText renders a pod diagnosis for a person: the verdict, explain's findings, the
// cached-image split with the nodes of the pools concerned, the credentials, the timeline and the
// command that proves it.
func WritePodText(w io.Writer, d *PodDiagnosis) error {
	b := &strings.Builder{}
	p := d.Pod
	if d.Class == ClassOK {
		fmt.Fprintf(b, "OK  pod %s/%s on node %s has no image pull failure\n", p.Namespace, p.Name, OrDash(p.Node))
		_, err := io.WriteString(w, redact.Clean(b.String())) // no colours of its own: every escape came with the data
		return err
	}
	where := ""
	if len(d.Findings) > 0 {
		f := d.Findings[0]
		where = fmt.Sprintf(" · %s (%s) · %s", OrDash(f.Host), OrDash(string(f.Role)), f.Code)
	}
	fmt.Fprintf(b, "BROKEN  pod %s/%s on node %s · class %s%s\n", p.Namespace, p.Name, OrDash(p.Node), d.Class, where)
	for _, c := range p.Containers {
		if c.State == "waiting" {
			kind := "container"
			if c.Init {
				kind = "init container"
			}
			fmt.Fprintf(b, "  %s %s  %s  waiting: %s\n", kind, c.Name, c.Image, c.Reason)
		}
	}
	b.WriteString("\n")
	if err := WriteFindingsText(b, d.Findings); err != nil {
		return err
	}
	if ci := d.CachedImage; ci != nil {
		img := ci.Image
		if ci.Digest != "" {
			img += " (" + shortDigest(ci.Digest) + ")"
		}
		fmt.Fprintf(b, "\ncached image  %s\n  %s\n", img, ci.Summary)
		if ci.Settle != "" {
			fmt.Fprintf(b, "  %s\n", ci.Settle)
		}
		b.WriteString("\n")
	}
	if len(d.Nodes) > 0 {
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tPOOL\tCREATED\tREADY\tIMAGE\tFAILING\tRUNNING\tNODE IMAGE / RUNTIME")
		for _, n := range d.Nodes {
			img := "unknown (list full)"
			if n.ImagePresent != nil {
				img = map[bool]string{true: "present", false: "absent"}[*n.ImagePresent]
			}
			ready := "yes"
			if !n.Ready {
				ready = "no"
			}
			if !n.Schedulable {
				ready += ",cordoned"
			}
			ver := n.ImageVersion
			if ver == "" {
				ver = n.OSImage
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", n.Name, n.Pool, n.Created.UTC().Format("2006-01-02 15:04Z"), ready, img, len(n.FailingPods), len(n.RunningPods), strings.TrimSpace(ver+" "+n.Runtime))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if d.NodesOmitted > 0 {
			fmt.Fprintf(b, "(%d nodes of other pools left out)\n", d.NodesOmitted)
		}
	}
	if len(d.RunningElsewhere) > 0 {
		var rs []string
		for _, r := range d.RunningElsewhere {
			rs = append(rs, r.Namespace+"/"+r.Name+" on "+r.Node)
		}
		fmt.Fprintf(b, "\nrunning elsewhere  %s\n", JoinCut(rs, 6))
	}
	if c := d.Credentials; c != nil {
		fmt.Fprintf(b, "\ncredentials  %s\n", c.Summary)
		if len(c.Order) > 0 {
			b.WriteString("  the kubelet's order, each tried in turn until one pulls:\n")
			check := ""
			for i, t := range c.Order {
				fmt.Fprintf(b, "    %d. %s\n", i+1, t.Detail)
				if t.Check != "" {
					check = t.Check
				}
			}
			if check != "" {
				fmt.Fprintf(b, "  on the node: %s\n", check)
			}
		}
		for _, s := range c.PullSecrets {
			state := "existence unknown"
			if s.Exists != nil {
				state = map[bool]string{true: "exists", false: "MISSING"}[*s.Exists]
			}
			cov := ""
			if s.CoversRegistry != nil {
				cov = map[bool]string{true: ", covers " + c.Registry + " (entry " + s.Entry + ")", false: ", does NOT cover " + c.Registry}[*s.CoversRegistry]
			}
			typ := ""
			if s.Type != "" {
				typ = ", " + s.Type
			}
			fmt.Fprintf(b, "  secret %s (from the %s): %s%s%s", s.Name, s.From, state, typ, cov)
			if s.Problem != "" {
				fmt.Fprintf(b, "; %s", s.Problem)
			}
			b.WriteString("\n")
		}
	}
	if len(d.Timeline) > 0 {
		b.WriteString("\ntimeline\n")
		for i, t := range d.Timeline {
			fmt.Fprintf(b, "  %s  %s\n", t.Time.UTC().Format(time.DateTime+"Z"), t.Event)
			if i == 0 && d.TimelineOmitted > 0 {
				fmt.Fprintf(b, "  (%d entries left out)\n", d.TimelineOmitted)
			}
		}
	}
	if n := d.Next; n != nil {
		fmt.Fprintf(b, "\nnext  %s\n      %s\n", n.Command, n.Why)
	}
	for _, n := range d.Notes {
		fmt.Fprintf(b, "note  %s\n", n)
	}
	_, err := io.WriteString(w, redact.Clean(b.String())) // no colours of its own: every escape came with the data
	return err
}

// WritePullFailuresText renders pods with pull failures grouped by image and cause.
func WritePullFailuresText(w io.Writer, l *PullFailures) error {
	b := &strings.Builder{}
	scope := "namespace " + l.Namespace
	if l.Namespace == "" {
		scope = "all namespaces"
	}
	if len(l.Groups) == 0 {
		fmt.Fprintf(b, "OK  no pod with an image pull failure in %s (%d pods seen)\n", scope, l.PodsSeen)
	}
	for i, g := range l.Groups {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(b, "[%d] %s · class %s · %s (%s) · %s · %s\n", i+1, g.Image, g.Class, OrDash(g.Host), OrDash(string(g.Role)), g.Code, pluralWord(len(g.Pods), "pod"))
		fmt.Fprintf(b, "    %s\n", g.Reason)
		fmt.Fprintf(b, "    pods   %s\n", JoinCut(g.Pods, 8))
		fmt.Fprintf(b, "    nodes  %s (pools %s)\n", JoinCut(g.Nodes, 8), JoinCut(g.Pools, 8))
		fmt.Fprintf(b, "    next   %s\n", g.Command)
	}
	if v := l.CredentialVerification; v != nil {
		writeVerification(b, v)
	}
	if l.Partial {
		b.WriteString("\nPARTIAL  not everything could be read; what was read is above\n")
	}
	for _, n := range l.Notes {
		fmt.Fprintf(b, "note  %s\n", n)
	}
	_, err := io.WriteString(w, redact.Clean(b.String())) // no colours of its own: every escape came with the data
	return err
}

// OrDash is s, or "-" for an empty field: the text renderers' placeholder.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shortDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13] + "…"
	}
	return d
}

func pluralWord(n int, w string) string {
	if n == 1 {
		return "1 " + w
	}
	return fmt.Sprintf("%d %ss", n, w)
}

// JoinCut joins at most n items with ", " and says how many were left out ("a, b (and 3 more)").
func JoinCut(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:n], ", ") + fmt.Sprintf(" (and %d more)", len(s)-n)
}

// writeVerification renders the credential-verification pre-flight: the nodes' policies by pool,
// then the containers that would break or cannot be decided, by pool and image.
func writeVerification(b *strings.Builder, v *CredentialVerification) {
	head := "OK"
	switch {
	case v.Breaks > 0:
		head = "BREAKS"
	case v.Unknown > 0:
		head = "UNKNOWN"
	}
	fmt.Fprintf(b, "\n%s  under %s: %d cached containers would break, %d unknown, %d safe (%d verified by AlwaysVerify already)\n",
		head, v.Policy, v.Breaks, v.Unknown, v.Safe, v.Verified)
	// each pool's policies, in one line
	type poolPolicy struct {
		order []string
		nodes map[string][]string
	}
	pools := map[string]*poolPolicy{}
	var names []string
	for _, n := range v.Nodes {
		pp := pools[n.Pool]
		if pp == nil {
			pp = &poolPolicy{nodes: map[string][]string{}}
			pools[n.Pool] = pp
			names = append(names, n.Pool)
		}
		pol := n.Policy
		if pol == "" {
			pol = "unknown"
		}
		if len(n.Allowlist) > 0 {
			pol += " (allowlist " + JoinCut(n.Allowlist, 3) + ")"
		}
		if n.Problem != "" {
			pol += " — " + n.Problem
		}
		if _, ok := pp.nodes[pol]; !ok {
			pp.order = append(pp.order, pol)
		}
		pp.nodes[pol] = append(pp.nodes[pol], n.Node)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, pol := range pools[name].order {
			fmt.Fprintf(b, "  pool %s  %s: %s\n", name, JoinCut(pools[name].nodes[pol], 4), pol)
		}
	}
	for _, g := range v.Groups {
		fmt.Fprintf(b, "\n  pool %s · %s (registry %s)\n", g.Pool, g.Image, OrDash(g.Registry))
		for _, e := range g.Entries {
			fmt.Fprintf(b, "    %-7s %s container %s on %s\n", strings.ToUpper(e.Verdict), e.Pod, e.Container, e.Node)
			fmt.Fprintf(b, "            why  %s\n", e.Reason)
			fmt.Fprintf(b, "            fix  %s\n", e.Fix)
		}
	}
}
