//go:build !probeonly

package cli

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pullpath/pullpath/internal/report"
)

// writeFitted renders a text report and writes it folded to w's width (report.Fit): the
// terminal's, or the 80 columns of a pipe.
func writeFitted(cmd *cobra.Command, w io.Writer, render func(io.Writer) error) error {
	var b strings.Builder
	if err := render(&b); err != nil {
		return err
	}
	_, err := io.WriteString(w, report.Fit(b.String(), textOptions(cmd, w, false).Width))
	return err
}
