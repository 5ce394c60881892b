package runtimeconfig

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// DefaultWidth is the width of the text when the caller gives none: 80 columns.
const DefaultWidth = 80

// WriteText renders the effective configuration for a person, within DefaultWidth columns.
func WriteText(w io.Writer, c *Config) error { return WriteTextWidth(w, c, DefaultWidth) }

// WriteTextWidth renders the effective configuration within width columns (DefaultWidth when 0):
// long values wrap under their label, and the hosts table becomes one block per host when it
// does not fit. Only a single word longer than a whole line (a URL, a path) is broken.
func WriteTextWidth(w io.Writer, c *Config, width int) error {
	if width <= 0 {
		width = DefaultWidth
	}
	b := &strings.Builder{}
	const label = "          " // the width of "runtime   "
	field := func(name, text string) {
		wrapWords(b, fmt.Sprintf("%-10s", name), label, strings.Fields(text), " ", width)
	}
	ver := c.Version
	if ver == "" {
		ver = "version unknown"
	} else if c.VersionSource != "" {
		ver += " from " + c.VersionSource
	}
	field("runtime", fmt.Sprintf("%s (%s) under %s", c.Runtime, ver, c.HostRoot))
	field("image", fmt.Sprintf("%s (registry %s)", c.Image, c.Registry))
	res := strings.Join(c.Resolver.Nameservers, ", ")
	if c.Resolver.Stub {
		res += " (systemd-resolved stub; upstream " + strings.Join(c.Resolver.Upstream, ", ") + ")"
	}
	switch {
	case len(c.Resolver.Nameservers) > 0:
		res += " from " + c.Resolver.File
	case !slices.Contains(c.Files, c.Resolver.File):
		res = c.Resolver.File + " could not be read" // a warning says why
	default:
		res = "no nameserver in " + c.Resolver.File
	}
	field("resolver", res)
	if c.Proxy.HTTPSProxy != "" || c.Proxy.HTTPProxy != "" {
		// one variable a line; NO_PROXY's list wraps after its commas
		wrapWords(b, "proxy     ", label, []string{"HTTPS_PROXY=" + c.Proxy.HTTPSProxy}, "", width)
		wrapWords(b, label, label, []string{"HTTP_PROXY=" + c.Proxy.HTTPProxy}, "", width)
		wrapWords(b, label, label+"  ", commaTokens("NO_PROXY="+c.Proxy.NoProxy), "", width)
		wrapWords(b, label, label, strings.Fields("(from "+c.Proxy.Source+")"), " ", width)
	} else {
		field("proxy", "none in the runtime's unit")
	}
	if cp := c.ConfigPath; cp != nil {
		switch {
		case cp.Path == "" && strings.HasPrefix(cp.Why, IgnoredPrefix):
			field("config", "config_path ignored: "+cp.Why)
		case cp.Path == "":
			field("config", fmt.Sprintf("config_path not set in %s (%s)", cp.Source, cp.Why))
		case cp.Default:
			field("config", fmt.Sprintf("config_path %q (%s: %s)", cp.Path, cp.Source, cp.Why))
		default:
			field("config", fmt.Sprintf("config_path %q from %s", cp.Path, cp.Source))
		}
	}
	fmt.Fprintf(b, "\nhosts the runtime tries, in order:\n")
	if err := writeHosts(b, c.Hosts, width); err != nil {
		return err
	}
	var errs, infos []Warning
	for _, w := range c.Warnings {
		if w.Severity == SeverityInfo {
			infos = append(infos, w)
		} else {
			errs = append(errs, w)
		}
	}
	if len(errs) == 0 {
		b.WriteString("\nno traps found\n")
	} else {
		fmt.Fprintf(b, "\n%d warning(s) — the pull breaks or does not go as configured:\n", len(errs))
	}
	writeWarnings(b, errs, width)
	if len(infos) > 0 {
		fmt.Fprintf(b, "\n%d note(s) — information, the pull is not affected:\n", len(infos))
	}
	writeWarnings(b, infos, width)
	b.WriteString("\n")
	wrapWords(b, "files read: ", "  ", commaTokens(strings.Join(c.Files, ",")), " ", width)
	_, err := io.WriteString(w, b.String())
	return err
}

// hostRow is one host's cells.
type hostRow struct {
	url, role, caps, trust, proxy, source string
	extra                                 []string // headers, auth
}

func hostRows(hosts []Host) []hostRow {
	var rows []hostRow
	for _, h := range hosts {
		trust := "system roots"
		if len(h.CA) > 0 {
			trust += " + " + strings.Join(h.CA, ", ")
		}
		if h.SkipVerify {
			trust = "NOT VERIFIED (skip_verify)"
		}
		if h.PlainHTTP {
			trust = "plain HTTP"
		}
		if h.HTTPFallback {
			trust = "HTTPS NOT VERIFIED, then plain HTTP"
		}
		if len(h.Client) > 0 {
			trust += fmt.Sprintf("; client cert %s", h.Client[0][0])
		}
		proxy := h.Proxy
		if proxy == "" {
			proxy = "direct"
		}
		r := hostRow{url: h.URL, role: h.Role, caps: strings.Join(h.Capabilities, ","), trust: trust, proxy: proxy, source: h.Source}
		for _, k := range slices.Sorted(maps.Keys(h.Header)) {
			r.extra = append(r.extra, fmt.Sprintf("header %s: %s", k, strings.Join(h.Header[k], ", ")))
		}
		if h.Auth != "" {
			r.extra = append(r.extra, "auth: "+h.Auth)
		}
		rows = append(rows, r)
	}
	return rows
}

// writeHosts writes the hosts as a table when it fits width, else as one block per host.
func writeHosts(b *strings.Builder, hosts []Host, width int) error {
	rows := hostRows(hosts)
	t := &strings.Builder{}
	tw := tabwriter.NewWriter(t, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tURL\tROLE\tCAPABILITIES\tTRUST\tPROXY\tSOURCE")
	for i, r := range rows {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, r.url, r.role, r.caps, r.trust, r.proxy, r.source)
		for _, x := range r.extra {
			fmt.Fprintf(tw, "   \t%s\t\t\t\t\t\n", x)
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(tw, "  -\t(none: the runtime refuses this image)\t\t\t\t\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fits := true
	for _, l := range strings.Split(strings.TrimRight(t.String(), "\n"), "\n") {
		if utf8.RuneCountInString(strings.TrimRight(l, " ")) > width {
			fits = false
		}
	}
	if fits {
		for _, l := range strings.SplitAfter(t.String(), "\n") {
			if l != "" {
				b.WriteString(strings.TrimRight(l, " \n") + "\n")
			}
		}
		return nil
	}
	for i, r := range rows {
		num := fmt.Sprintf("  %d  ", i+1)
		indent := strings.Repeat(" ", len(num))
		wrapWords(b, num, indent+"  ", []string{r.url, "(" + r.role + ")"}, " ", width)
		sub := indent + "              "
		for _, kv := range [][2]string{{"capabilities", r.caps}, {"trust", r.trust}, {"proxy", r.proxy}, {"source", r.source}} {
			wrapWords(b, fmt.Sprintf("%s%-14s", indent, kv[0]), sub, strings.Fields(kv[1]), " ", width)
		}
		for _, x := range r.extra {
			wrapWords(b, indent, indent+"  ", strings.Fields(x), " ", width)
		}
	}
	return nil
}

func writeWarnings(b *strings.Builder, ws []Warning, width int) {
	for _, w := range ws {
		wrapWords(b, "  "+w.Code+": ", "    ", strings.Fields(w.Message), " ", width)
		if w.Fix != "" {
			wrapWords(b, "    fix: ", "         ", strings.Fields(w.Fix), " ", width)
		}
		if w.Source != "" {
			wrapWords(b, "    in:  ", "         ", strings.Fields(w.Source), " ", width)
		}
	}
}

// commaTokens splits a comma-separated list after each comma, so that it wraps there.
func commaTokens(s string) []string {
	parts := strings.SplitAfter(s, ",")
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// wrapWords writes tokens joined by sep after first, wrapping to width with rest before each
// further line; a token longer than a whole line is broken where the line ends.
func wrapWords(b *strings.Builder, first, rest string, tokens []string, sep string, width int) {
	line, n, empty := first, utf8.RuneCountInString(first), true
	flush := func() {
		b.WriteString(strings.TrimRight(line, " ") + "\n")
		line, n, empty = rest, utf8.RuneCountInString(rest), true
	}
	for _, tok := range tokens {
		tl := utf8.RuneCountInString(tok)
		s := sep
		if empty {
			s = ""
		}
		if !empty && n+len(s)+tl > width {
			flush()
			s = ""
		}
		for n+len(s)+tl > width && width-n-len(s) > 0 {
			// longer than any line: break it
			r := []rune(tok)
			cut := width - n - len(s)
			line += s + string(r[:cut])
			tok, tl = string(r[cut:]), len(r)-cut
			flush()
			s = ""
		}
		line += s + tok
		n += len(s) + tl
		empty = false
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
}
