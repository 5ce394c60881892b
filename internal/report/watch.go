package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WatchImage is one node × image in `watch status`.
type WatchImage struct {
	Image      string    `json:"image"`
	Class      string    `json:"class,omitempty"` // the probe's class; absent when it could not run
	Code       string    `json:"code,omitempty"`
	Host       string    `json:"host,omitempty"`
	Role       string    `json:"role,omitempty"`
	Step       string    `json:"step,omitempty"`
	Since      time.Time `json:"since"`      // since when it has this class
	LastProbed time.Time `json:"lastProbed"` // the last probe's end
	Full       bool      `json:"full"`       // the last probe downloaded every layer
	Error      string    `json:"error,omitempty"`
}

// WatchStatus is the JSON contract of `pullpath watch status -o json` (kind WatchStatus).
type WatchStatus struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"` // "WatchStatus"
	Updated    time.Time `json:"updated"`
	Interval   string    `json:"interval"`
	// Heartbeat is how often the watcher writes its status at least: older than twice that, the
	// watcher is gone or stuck
	Heartbeat string      `json:"heartbeat,omitempty"`
	Images    []string    `json:"images"`
	Nodes     []WatchNode `json:"nodes"`
	// Skipped are the nodes watch probes no pod on, and why (not_linux, virtual, not_ready, cordoned)
	Skipped []WatchSkipped `json:"skipped,omitempty"`
	// Held counts the nodes whose path holds that Nodes leaves out, so that the status stays
	// under the API server's object limit on a large fleet; OldestHeld is their oldest probe.
	Held       int       `json:"held,omitempty"`
	OldestHeld time.Time `json:"oldestHeld,omitzero"`
}

// WatchSkipped is a node watch does not probe, and why.
type WatchSkipped struct {
	Node   string `json:"node"`
	Pool   string `json:"pool"`
	Reason string `json:"reason"`
}

// WatchNode is one node in WatchStatus.
type WatchNode struct {
	Node      string       `json:"node"`
	Pool      string       `json:"pool"`
	Condition string       `json:"condition"` // True, False, Unknown
	Reason    string       `json:"reason"`
	Message   string       `json:"message"`
	Since     time.Time    `json:"since"` // the condition's last transition
	Images    []WatchImage `json:"images"`
}

// WriteWatchStatusText writes st as `watch status` prints it: a verdict line (OK, BROKEN, or STALE
// with stale, the reason Stale gave), then a row per node × image. The columns are tab-aligned;
// o is the command's layout, not used yet (the rows are as wide as their cells).
func WriteWatchStatusText(w io.Writer, st *WatchStatus, stale string, o TextOptions) error {
	_ = o
	broken := 0
	for _, n := range st.Nodes {
		if n.Condition != "False" {
			broken++
		}
	}
	verdict := "OK"
	if broken > 0 {
		verdict = "BROKEN"
	}
	if stale != "" {
		verdict = "STALE"
	}
	fmt.Fprintf(w, "%s  %d of %d nodes hold the pull path of %s (every %s; updated %s)\n", verdict, len(st.Nodes)-broken+st.Held, len(st.Nodes)+st.Held,
		strings.Join(st.Images, ", "), st.Interval, st.Updated.Format(time.RFC3339))
	if stale != "" {
		fmt.Fprintf(w, "       %s\n", stale)
	}
	if st.Held > 0 {
		fmt.Fprintf(w, "       %d nodes that hold are counted, not listed (the status stays under 1 MiB); oldest probe %s\n", st.Held, st.OldestHeld.Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tNODE\tIMAGE\tCLASS\tSINCE\tFAILING")
	for _, n := range st.Nodes {
		for _, im := range n.Images {
			class, failing := im.Class, "-"
			if class == "" {
				class = "unknown"
			}
			if im.Host != "" {
				failing = fmt.Sprintf("%s (%s) %s %s", im.Host, im.Role, im.Step, im.Code)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Pool, n.Node, shortImage(im.Image), class, im.Since.Format("01-02 15:04"), failing)
		}
	}
	return tw.Flush()
}

// shortImage is the last 39 bytes of an image longer than 40, after "…".
func shortImage(s string) string {
	if len(s) > 40 {
		return "…" + s[len(s)-39:]
	}
	return s
}
