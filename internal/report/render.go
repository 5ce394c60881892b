package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pullpath/pullpath/internal/redact"
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
	// Width is the column count the text fits: prose wraps with a hanging indent, and the endpoint
	// inventory switches to its narrow layout when the wide one does not fit. 0 means DefaultWidth.
	Width int
	Color bool // ANSI colour for BROKEN, FAIL and warnings: only for a terminal, never when piped
}

func (o TextOptions) width() int {
	if o.Width <= 0 {
		return DefaultWidth
	}
	return max(o.Width, 40)
}

// WriteText renders a probe report for a person: the verdict line, the failing row of the class
// table with its evidence, then the endpoint inventory.
func WriteText(w io.Writer, p *Probe, o TextOptions) error {
	b := &strings.Builder{}
	width := o.width()
	switch {
	case p.Class == ClassOK:
		Wrap(b, paint(o.Color, styleGreen, "OK")+"  ", "    ", p.Summary, width)
	case p.Interrupted != nil:
		i := p.Interrupted
		Wrap(b, paint(o.Color, styleBold, "INTERRUPTED")+"  ", "        ", fmt.Sprintf("%s · cut during %s on %s (%s) · %s", i.Reason, i.Step, i.Host, i.Role, p.Code), width)
		Wrap(b, "  ", "  ", p.Summary, width)
		if p.WhereToLook != "" {
			Wrap(b, "  look at   ", "            ", p.WhereToLook, width)
		}
	default:
		f := p.Failing
		host, role, step := "-", Role("-"), "-"
		if f != nil {
			host, role, step = f.Host, f.Role, f.Step.String()
		}
		broken := paint(o.Color, styleBold, "BROKEN")
		Wrap(b, broken+"  ", "        ", fmt.Sprintf("class %s · %s (%s) · step %s · %s", p.Class, host, role, step, p.Code), width)
		Wrap(b, "  ", "  ", p.Summary, width)
		if o := ownerLine(p.Owner, p.OwnerText); o != "" {
			Wrap(b, "  owner     ", "            ", o, width)
		}
		first := "  evidence  "
		for _, l := range p.Evidence {
			if strings.TrimSpace(l) == "" {
				continue
			}
			Wrap(b, first, "            ", l, width)
			first = "            "
		}
		if p.Alternative != "" {
			Wrap(b, "  or        ", "            ", p.Alternative, width)
		}
		if p.WhereToLook != "" {
			Wrap(b, "  look at   ", "            ", p.WhereToLook, width)
		}
	}
	if c := p.CRI; c != nil {
		Wrap(b, "  cri       ", "            ", criLine(c), width)
	}
	for _, x := range p.Warnings {
		label := paint(o.Color, styleYellow, "WARNING")
		Wrap(b, "  "+label+"   ", "            ", string(x.Code)+": "+x.Message, width)
	}
	b.WriteString("\n")
	Wrap(b, "image     ", "          ", fmt.Sprintf("%s (platform %s, from node %s, %s)", p.Image, p.Platform, p.Node, p.Duration.Std().Round(time.Millisecond)), width)
	res := fmt.Sprintf("%s from %s", strings.Join(p.Resolver.Nameservers, ", "), p.Resolver.Source)
	if len(p.Resolver.Nameservers) == 0 {
		res = "no nameserver in " + p.Resolver.Source
	}
	Wrap(b, "resolver  ", "          ", res, width)
	if p.CredentialSource != "" {
		Wrap(b, "identity  ", "          ", p.CredentialSource, width)
	}
	if l := expiryLine(p.CredentialExpiry); l != "" {
		Wrap(b, "expiry    ", "          ", l, width)
	}
	if rt := p.Runtime; rt != nil {
		ver := rt.Version
		if ver == "" {
			ver = "version unknown"
		}
		Wrap(b, "runtime   ", "          ", fmt.Sprintf("%s (%s) under %s, hosts in its order:", rt.Name, ver, rt.HostRoot), width)
		for i, h := range rt.Hosts {
			Wrap(b, fmt.Sprintf("          %d. ", i+1), "             ", fmt.Sprintf("%s (%s, %s): %s", h.URL, h.Role, h.Source, h.Result), width)
		}
	}
	if p.Download.Expected > 0 {
		d := p.Download
		line := fmt.Sprintf("%d/%d blobs, %s, %.2fs, %.1f MB/s, verified=%t", d.Blobs, d.Expected, HumanBytes(d.Bytes), d.Duration.Std().Seconds(), d.MBps, d.Verified)
		switch d.Partial {
		case "":
		case "no-download":
			line = fmt.Sprintf("NOT a full pull (--no-download): %d/%d blobs reached, the first byte of each layer read, %s, verified=%t", d.Blobs, d.Expected, HumanBytes(d.Bytes), d.Verified)
		case "sample":
			line = fmt.Sprintf("NOT a full pull (a quick round): the config blob of %d read through every redirect, %s, verified=%t", d.Expected, HumanBytes(d.Bytes), d.Verified)
		default:
			line += " (partial: " + d.Partial + ")"
		}
		Wrap(b, "download  ", "          ", line, width)
	}
	b.WriteString("\n")
	writeInventory(b, p.Endpoints, width, o.Color)
	if o.Verbose {
		b.WriteString("\nsteps\n")
		for _, s := range p.Steps {
			code := ""
			if s.Code != "" {
				code = " " + string(s.Code)
			}
			v := string(s.Verdict)
			pad := strings.Repeat(" ", max(0, 4-len(v)))
			v = paintVerdict(o.Color, s.Verdict, v)
			Wrap(b, fmt.Sprintf("  %s%s %-8s %s ", v, pad, s.Step, s.Endpoint), "       ", s.Summary+code, width)
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
			Wrap(b, fmt.Sprintf("  %3d %-8s %-4s ", h.Seq, h.Role, h.Method), "      ", fmt.Sprintf("%s → %s (%s%s)", h.URL, st, h.Duration.Std().Round(time.Millisecond), conn), width)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// stepLetters head the narrow inventory's step columns, with a legend.
var stepLetters = map[StepName]string{StepDNS: "D", StepRoute: "R", StepTCP: "T", StepTLS: "S", StepHTTP: "H", StepAuth: "A", StepManifest: "M", StepBlob: "B"}

// verdictMarks are the narrow inventory's one-column cells.
var verdictMarks = map[Verdict]string{Pass: "✓", Fail: "✗", Warn: "!", Skip: "-"}

func paintVerdict(on bool, v Verdict, s string) string {
	switch v {
	case Fail:
		return paint(on, styleBold, s)
	case Warn:
		return paint(on, styleYellow, s)
	}
	return s
}

// writeInventory prints the endpoint table: the wide layout (a column per step, words, addresses
// inline) when it fits width, else the narrow one (a letter per step, a mark per cell, a legend,
// addresses on the line below each endpoint).
func writeInventory(b *strings.Builder, eps []Endpoint, width int, color bool) {
	verdictOf := func(e Endpoint, l StepName) (Verdict, bool) { v, ok := e.Steps[l]; return v, ok }
	wide := [][]string{{"ENDPOINT", "ROLE", "ADDRESSES"}}
	for _, l := range EndpointSteps {
		wide[0] = append(wide[0], strings.ToUpper(l.String()))
	}
	for _, e := range eps {
		addrs := strings.Join(addresses(e), ", ")
		if addrs == "" {
			addrs = "-"
		}
		row := []string{e.Host, string(e.Role), addrs}
		for _, l := range EndpointSteps {
			cell := "·"
			if v, ok := verdictOf(e, l); ok {
				cell = string(v)
				if v == Fail || v == Warn {
					cell = strings.ToUpper(cell)
				}
			}
			row = append(row, cell)
		}
		wide = append(wide, row)
	}
	style := func(row, col int, cell string) string {
		if row == 0 || col < 3 {
			return cell
		}
		v, _ := verdictOf(eps[row-1], EndpointSteps[col-3])
		return paintVerdict(color, v, cell)
	}
	if lines := table(wide, len(wide[0]), nil); maxWidth(lines) <= width {
		for _, l := range table(wide, len(wide[0]), style) {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		return
	}
	var legend []string
	for _, l := range EndpointSteps {
		legend = append(legend, stepLetters[l]+" "+l.String())
	}
	Wrap(b, "steps: ", "       ", strings.Join(legend, ", ")+"; ✓ pass, ✗ FAIL, ! warn, - skip, · not reached", width)
	// a host too long for its column gets a line of its own, so the marks stay within width
	const fixed = 2 + 8 + 1 + 8*2 - 1 // the gap, the role column, the marks and their spaces
	maxHost := width - fixed
	narrow := [][]string{{"ENDPOINT", "ROLE"}}
	for _, l := range EndpointSteps {
		narrow[0] = append(narrow[0], stepLetters[l])
	}
	type rowInfo struct {
		ep     int  // index into eps, -1 for the header
		hostOn bool // the host is printed on a line of its own before the row
	}
	infos := []rowInfo{{ep: -1}}
	for i, e := range eps {
		host := e.Host
		long := utf8.RuneCountInString(host) > maxHost
		if long {
			host = ""
		}
		row := []string{host, string(e.Role)}
		for _, l := range EndpointSteps {
			cell := "·"
			if v, ok := verdictOf(e, l); ok {
				cell = verdictMarks[v]
			}
			row = append(row, cell)
		}
		narrow = append(narrow, row)
		infos = append(infos, rowInfo{ep: i, hostOn: long})
	}
	lines := table(narrow, 3, func(row, col int, cell string) string {
		if row == 0 || col < 2 {
			return cell
		}
		v, _ := verdictOf(eps[row-1], EndpointSteps[col-2])
		return paintVerdict(color, v, cell)
	})
	for i, l := range lines {
		in := infos[i]
		if in.ep < 0 {
			b.WriteString(l + "\n")
			continue
		}
		e := eps[in.ep]
		if in.hostOn {
			b.WriteString(redact.Clean(e.Host) + "\n")
		}
		b.WriteString(l + "\n")
		if a := addresses(e); len(a) > 0 {
			Wrap(b, "  ", "  ", strings.Join(a, ", "), width)
		}
	}
}

func addresses(e Endpoint) []string {
	var addrs []string
	for _, a := range e.Addresses {
		addrs = append(addrs, a.IP+" ("+a.Scope+")")
	}
	return addrs
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

// expirySoon is how far ahead the text report names what expires; the JSON has every expiry.
const expirySoon = 24 * time.Hour

// expiryLine says what expires within expirySoon, or has expired: "the registry token expires in
// 4m (expires_in)"; "" when nothing does.
func expiryLine(xs []Expiry) string {
	var parts []string
	for _, x := range xs {
		d := x.Remaining.Std()
		if d >= expirySoon && !x.Expired {
			continue
		}
		what := map[ExpiryWhat]string{ExpiryCredential: "the credential", ExpiryRegistryToken: "the registry token",
			ExpiryProviderCache: "the kubelet's cache of the provider's credential"}[x.What]
		if what == "" {
			what = string(x.What)
		}
		when := "expires in " + roughDuration(d)
		if x.Expired {
			when = "had EXPIRED"
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s, %s)", what, when, x.Source, x.Expires.UTC().Format(time.RFC3339)))
	}
	return strings.Join(parts, "; ")
}

// roughDuration is d to the second under a minute, to the minute under a day: "42s", "4m", "3h12m".
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Round(time.Minute)/time.Minute))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}
