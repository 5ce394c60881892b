package report

import (
	"fmt"
	"io"
	"strings"
)

// WriteAllowlistText writes `probe --allowlist`: one host:port a line, then, for a walk that
// stopped early, comment lines (starting with #) saying what it could not discover. o is not used
// (a host a line, for scripts).
func WriteAllowlistText(w io.Writer, a Allowlist, o TextOptions) error {
	_ = o
	b := &strings.Builder{}
	for _, h := range a.Hosts {
		b.WriteString(h.Host + "\n")
	}
	if !a.Complete && a.StoppedAt != nil {
		f := a.StoppedAt
		fmt.Fprintf(b, "# incomplete: the walk stopped at %s on %s (%s, %s); fix that and run again to learn the rest\n", f.Step, f.Host, f.Role, f.Code)
		for _, u := range a.Undiscovered {
			fmt.Fprintf(b, "# not discovered: %s\n", u)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCleanupText writes `cleanup`'s one line: what is left, or that nothing is. o is not used.
func WriteCleanupText(w io.Writer, c *Cleanup, o TextOptions) error {
	_ = o
	var err error
	if len(c.LeftBehind) > 0 {
		_, err = fmt.Fprintf(w, "left behind: %s\n", strings.Join(c.LeftBehind, ", "))
	} else {
		_, err = fmt.Fprintf(w, "nothing of pullpath is left in namespace %s\n", c.Namespace)
	}
	return err
}
