package report

import (
	"fmt"
	"io"
	"strings"
)

// Version is the JSON document of `pullpath version -o json` (kind Version).
type Version struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"` // "Version"
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`    // vcs.revision, with "-dirty" when vcs.modified
	BuildDate  string `json:"buildDate,omitempty"` // RFC 3339
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"` // os/arch
}

// String is the one-line text form: "pullpath v0.1.0 (commit abc1234, built …, go1.26.8, linux/amd64)".
func (v Version) String() string {
	parts := []string{}
	if v.Commit != "" {
		c := v.Commit
		if len(c) > 12 && !strings.HasSuffix(c, "-dirty") {
			c = c[:12]
		} else if strings.HasSuffix(c, "-dirty") && len(c) > 18 {
			c = c[:12] + "-dirty"
		}
		parts = append(parts, "commit "+c)
	}
	if v.BuildDate != "" {
		parts = append(parts, "built "+v.BuildDate)
	}
	parts = append(parts, v.GoVersion, v.Platform)
	return fmt.Sprintf("pullpath %s (%s)", v.Version, strings.Join(parts, ", "))
}

// WriteVersionText writes v's one line (String); o is not used (the line is as wide as it is).
func WriteVersionText(w io.Writer, v Version, o TextOptions) error {
	_ = o
	_, err := fmt.Fprintln(w, v)
	return err
}
