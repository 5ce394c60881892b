package runtimeconfig

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteText renders the effective configuration for a person.
func WriteText(w io.Writer, c *Config) error {
	b := &strings.Builder{}
	ver := c.Version
	if ver == "" {
		ver = "version unknown"
	} else if c.VersionSource != "" {
		ver += " from " + c.VersionSource
	}
	fmt.Fprintf(b, "runtime   %s (%s) under %s\n", c.Runtime, ver, c.HostRoot)
	fmt.Fprintf(b, "image     %s (registry %s)\n", c.Image, c.Registry)
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
	fmt.Fprintf(b, "resolver  %s\n", res)
	if c.Proxy.HTTPSProxy != "" || c.Proxy.HTTPProxy != "" {
		fmt.Fprintf(b, "proxy     HTTPS_PROXY=%s HTTP_PROXY=%s NO_PROXY=%s (from %s)\n", c.Proxy.HTTPSProxy, c.Proxy.HTTPProxy, c.Proxy.NoProxy, c.Proxy.Source)
	} else {
		b.WriteString("proxy     none in the runtime's unit\n")
	}
	if cp := c.ConfigPath; cp != nil {
		switch {
		case cp.Path == "" && strings.HasPrefix(cp.Why, IgnoredPrefix):
			fmt.Fprintf(b, "config    config_path ignored: %s\n", cp.Why)
		case cp.Path == "":
			fmt.Fprintf(b, "config    config_path not set in %s (%s)\n", cp.Source, cp.Why)
		case cp.Default:
			fmt.Fprintf(b, "config    config_path %q (%s: %s)\n", cp.Path, cp.Source, cp.Why)
		default:
			fmt.Fprintf(b, "config    config_path %q from %s\n", cp.Path, cp.Source)
		}
	}
	fmt.Fprintf(b, "\nhosts the runtime tries, in order:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tURL\tROLE\tCAPABILITIES\tTRUST\tPROXY\tSOURCE")
	for i, h := range c.Hosts {
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
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, h.URL, h.Role, strings.Join(h.Capabilities, ","), trust, proxy, h.Source)
		for _, k := range slices.Sorted(maps.Keys(h.Header)) {
			fmt.Fprintf(tw, "   \theader %s: %s\t\t\t\t\t\n", k, strings.Join(h.Header[k], ", "))
		}
		if h.Auth != "" {
			fmt.Fprintf(tw, "   \tauth: %s\t\t\t\t\t\n", h.Auth)
		}
	}
	if len(c.Hosts) == 0 {
		fmt.Fprintln(tw, "  -\t(none: the runtime refuses this image)\t\t\t\t\t")
	}
	if err := tw.Flush(); err != nil {
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
	writeWarnings(b, errs)
	if len(infos) > 0 {
		fmt.Fprintf(b, "\n%d note(s) — information, the pull is not affected:\n", len(infos))
	}
	writeWarnings(b, infos)
	fmt.Fprintf(b, "\nfiles read: %s\n", strings.Join(c.Files, ", "))
	_, err := io.WriteString(w, b.String())
	return err
}

func writeWarnings(b *strings.Builder, ws []Warning) {
	for _, w := range ws {
		fmt.Fprintf(b, "  %s: %s\n", w.Code, w.Message)
		if w.Fix != "" {
			fmt.Fprintf(b, "    fix: %s\n", w.Fix)
		}
		if w.Source != "" {
			fmt.Fprintf(b, "    in:  %s\n", w.Source)
		}
	}
}
