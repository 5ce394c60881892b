package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// RuntimeReport is the JSON contract of `pullpath runtime -o json` (kind RuntimeReport): the node
// runtime's effective pull configuration for one image. runtimeconfig builds it (Config.Report).
type RuntimeReport struct {
	APIVersion    string              `json:"apiVersion"`
	Kind          string              `json:"kind"`                    // "RuntimeReport"
	Runtime       string              `json:"runtime"`                 // containerd, crio or docker
	Version       string              `json:"version,omitempty"`       // "" when nothing on the node says it
	VersionSource string              `json:"versionSource,omitempty"` // dpkg, the RPM database, a marker file or the binary
	Image         string              `json:"image"`
	Registry      string              `json:"registry"`
	HostRoot      string              `json:"hostRoot"`
	Detected      string              `json:"detected,omitempty"`   // why it was read without --host-root: the file found
	Files         []string            `json:"files"`                // configuration files read
	ConfigPath    *RuntimeConfigPath  `json:"configPath,omitempty"` // containerd: the CRI's config_path and why it applies
	Hosts         []RuntimeReportHost `json:"hosts"`
	Proxy         RuntimeProxy        `json:"proxy"`
	Auth          string              `json:"auth,omitempty"` // credentials the runtime config holds for it (who, never the secret)
	Resolver      RuntimeResolver     `json:"resolver"`
	// Trust is the system trust the runtime loads on the node (its CA bundle), beside each host's ca
	Trust    *RuntimeTrust    `json:"trust,omitempty"`
	Warnings []RuntimeWarning `json:"warnings"`
}

// ConfigPathIgnoredPrefix starts RuntimeConfigPath.Why when a config_path is set where containerd
// 2.x ignores it: the text then says "ignored", not "not set".
const ConfigPathIgnoredPrefix = "the config_path on "

// RuntimeConfigPath is the CRI registry config_path containerd runs with, and where it comes from.
type RuntimeConfigPath struct {
	Path    string `json:"path"`              // possibly a ':'-separated list; "" when none applies
	Default bool   `json:"default,omitempty"` // containerd 2.2+'s built-in default: the config sets none
	Source  string `json:"source"`            // file:line, or "containerd 2.4.2's default"
	Why     string `json:"why,omitempty"`     // why the default applies, or why none does
}

// RuntimeReportHost is one host the runtime tries for the image, in order.
type RuntimeReportHost struct {
	Host         string              `json:"host"`                 // host:port
	URL          string              `json:"url"`                  // scheme://host[:port]/path the API is under (CRI-O: and the location's namespace)
	Repository   string              `json:"repository,omitempty"` // the repository asked of this host when the runtime rewrites it (CRI-O locations)
	Role         string              `json:"role"`                 // "mirror" or "registry"
	Capabilities []string            `json:"capabilities"`
	CA           []string            `json:"ca"`
	Client       [][2]string         `json:"client,omitempty"` // cert, key file pairs
	SkipVerify   bool                `json:"skipVerify"`
	PlainHTTP    bool                `json:"plainHTTP,omitempty"`
	HTTPFallback bool                `json:"httpFallback,omitempty"` // HTTPS (unverified) first, then plain HTTP when the handshake is answered in HTTP
	Header       map[string][]string `json:"header,omitempty"`       // values of credential headers redacted
	OverridePath bool                `json:"overridePath,omitempty"`
	DialTimeout  string              `json:"dialTimeout,omitempty"`
	Proxy        string              `json:"proxy"`          // the proxy this host is reached through, "" for direct
	Auth         string              `json:"auth,omitempty"` // credentials the runtime config holds for it (who, never the secret)
	Source       string              `json:"source"`         // file:line, or "default"
}

// RuntimeProxy is the runtime's proxy environment, read from its service unit, not from a shell.
type RuntimeProxy struct {
	HTTPProxy  string `json:"httpProxy,omitempty"`
	HTTPSProxy string `json:"httpsProxy,omitempty"`
	NoProxy    string `json:"noProxy,omitempty"`
	Source     string `json:"source,omitempty"` // unit file(s) the variables came from
}

// RuntimeResolver is the resolver configuration the runtime's lookups use.
type RuntimeResolver struct {
	File        string   `json:"file"`
	Nameservers []string `json:"nameservers"`
	Search      []string `json:"search,omitempty"`
	Stub        bool     `json:"stub"` // systemd-resolved's 127.0.0.53 stub
	Upstream    []string `json:"upstream,omitempty"`
}

// RuntimeTrust is the system trust the runtime's TLS library loads on the node.
type RuntimeTrust struct {
	File string   `json:"file,omitempty"` // the bundle file read, as a host path; "" when none reads
	Dirs []string `json:"dirs,omitempty"` // the directories whose files were read
	CAs  int      `json:"cas"`            // distinct CA certificates
	// Env names SSL_CERT_FILE / SSL_CERT_DIR from the runtime's service environment, with origins
	Env      string   `json:"env,omitempty"`
	Problems []string `json:"problems,omitempty"` // files that exist but could not be read
}

// RuntimeWarning is a trap in the configuration, with a stable code, a severity and a fix.
type RuntimeWarning struct {
	Code     string          `json:"code"`
	Severity RuntimeSeverity `json:"severity"`
	Message  string          `json:"message"`
	Fix      string          `json:"fix,omitempty"`
	Source   string          `json:"source,omitempty"`
}

// RuntimeSeverity says whether a runtime warning changes the pull.
type RuntimeSeverity string

// Severities: an error breaks or silently changes the pull (exit 1); info does not change the exit code.
const (
	SeverityError RuntimeSeverity = "error"
	SeverityInfo  RuntimeSeverity = "info"
)

// WriteRuntimeText renders `runtime`'s report for a person within o's width: long values wrap
// under their label, and the hosts table becomes one block per host when it does not fit. A word
// longer than a line (a URL, a path) stays whole, as Wrap keeps it. o.Color is not used.
func WriteRuntimeText(w io.Writer, v *RuntimeReport, o TextOptions) error {
	b := &strings.Builder{}
	width := o.width()
	const label = "          " // the width of "runtime   "
	field := func(name, text string) { Wrap(b, fmt.Sprintf("%-10s", name), label, text, width) }
	ver := v.Version
	if ver == "" {
		ver = "version unknown"
	} else if v.VersionSource != "" {
		ver += " from " + v.VersionSource
	}
	field("runtime", fmt.Sprintf("%s (%s) under %s", v.Runtime, ver, v.HostRoot))
	field("image", fmt.Sprintf("%s (registry %s)", v.Image, v.Registry))
	res := strings.Join(v.Resolver.Nameservers, ", ")
	if v.Resolver.Stub {
		res += " (systemd-resolved stub; upstream " + strings.Join(v.Resolver.Upstream, ", ") + ")"
	}
	switch {
	case len(v.Resolver.Nameservers) > 0:
		res += " from " + v.Resolver.File
	case !slices.Contains(v.Files, v.Resolver.File):
		res = v.Resolver.File + " could not be read" // a warning says why
	default:
		res = "no nameserver in " + v.Resolver.File
	}
	field("resolver", res)
	if p := v.Proxy; p.HTTPSProxy != "" || p.HTTPProxy != "" {
		// one variable a line; NO_PROXY's list wraps after its commas
		Wrap(b, "proxy     ", label, "HTTPS_PROXY="+p.HTTPSProxy, width)
		Wrap(b, label, label, "HTTP_PROXY="+p.HTTPProxy, width)
		wrapList(b, label, label+"  ", "NO_PROXY="+p.NoProxy, width)
		Wrap(b, label, label, "(from "+p.Source+")", width)
	} else {
		field("proxy", "none in the runtime's unit")
	}
	if cp := v.ConfigPath; cp != nil {
		switch {
		case cp.Path == "" && strings.HasPrefix(cp.Why, ConfigPathIgnoredPrefix):
			field("config", "config_path ignored: "+cp.Why)
		case cp.Path == "":
			field("config", fmt.Sprintf("config_path not set in %s (%s)", cp.Source, cp.Why))
		case cp.Default:
			field("config", fmt.Sprintf("config_path %q (%s: %s)", cp.Path, cp.Source, cp.Why))
		default:
			field("config", fmt.Sprintf("config_path %q from %s", cp.Path, cp.Source))
		}
	}
	b.WriteString("\nhosts the runtime tries, in order:\n")
	writeRuntimeHosts(b, v.Hosts, width)
	var errs, infos []RuntimeWarning
	for _, w := range v.Warnings {
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
	writeRuntimeWarnings(b, errs, width)
	if len(infos) > 0 {
		fmt.Fprintf(b, "\n%d note(s) — information, the pull is not affected:\n", len(infos))
	}
	writeRuntimeWarnings(b, infos, width)
	b.WriteString("\n")
	Wrap(b, "files read: ", "  ", strings.Join(v.Files, ", "), width)
	_, err := io.WriteString(w, b.String())
	return err
}

// runtimeHostRow is one host's cells.
type runtimeHostRow struct {
	url, role, caps, trust, proxy, source string
	extra                                 []string // headers, auth
}

func runtimeHostRows(hosts []RuntimeReportHost) []runtimeHostRow {
	var rows []runtimeHostRow
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
		r := runtimeHostRow{url: h.URL, role: h.Role, caps: strings.Join(h.Capabilities, ","), trust: trust, proxy: proxy, source: h.Source}
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

// writeRuntimeHosts writes the hosts as a table when it fits width, else as one block per host.
func writeRuntimeHosts(b *strings.Builder, hosts []RuntimeReportHost, width int) {
	rows := runtimeHostRows(hosts)
	cells := [][]string{{"  #", "URL", "ROLE", "CAPABILITIES", "TRUST", "PROXY", "SOURCE"}}
	for i, r := range rows {
		cells = append(cells, []string{fmt.Sprintf("  %d", i+1), r.url, r.role, r.caps, r.trust, r.proxy, r.source})
		for _, x := range r.extra {
			cells = append(cells, []string{"   ", x, "", "", "", "", ""})
		}
	}
	if len(rows) == 0 {
		cells = append(cells, []string{"  -", "(none: the runtime refuses this image)", "", "", "", "", ""})
	}
	if lines := table(cells, len(cells[0]), nil); maxWidth(lines) <= width {
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		return
	}
	for i, r := range rows {
		num := fmt.Sprintf("  %d  ", i+1)
		indent := strings.Repeat(" ", len(num))
		Wrap(b, num, indent+"  ", r.url+" ("+r.role+")", width)
		sub := indent + "              "
		for _, kv := range [][2]string{{"capabilities", r.caps}, {"trust", r.trust}, {"proxy", r.proxy}, {"source", r.source}} {
			Wrap(b, fmt.Sprintf("%s%-14s", indent, kv[0]), sub, kv[1], width)
		}
		for _, x := range r.extra {
			Wrap(b, indent, indent+"  ", x, width)
		}
	}
}

func writeRuntimeWarnings(b *strings.Builder, ws []RuntimeWarning, width int) {
	for _, w := range ws {
		Wrap(b, "  "+w.Code+": ", "    ", w.Message, width)
		if w.Fix != "" {
			Wrap(b, "    fix: ", "         ", w.Fix, width)
		}
		if w.Source != "" {
			Wrap(b, "    in:  ", "         ", w.Source, width)
		}
	}
}
