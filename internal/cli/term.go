package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pullpath/pullpath/internal/report"
)

// colorModes are the values of --color.
var colorModes = []string{"auto", "always", "never"}

func checkColor(mode string) error {
	for _, m := range colorModes {
		if mode == m {
			return nil
		}
	}
	return fmt.Errorf("--color %q: want auto, always or never", mode)
}

// textOptions picks the text layout for w: the terminal's width (DefaultWidth when w is not a
// terminal), and colour per --color (auto: a terminal without NO_COLOR and not TERM=dumb).
func textOptions(cmd *cobra.Command, w io.Writer, verbose bool) report.TextOptions {
	mode := "auto"
	if cmd != nil {
		if f := cmd.Flag("color"); f != nil {
			mode = f.Value.String()
		}
	}
	width, isTerm := 0, false
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		isTerm = true
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil {
			width = cols
		}
	}
	o := chooseText(isTerm, width, mode, os.Getenv("NO_COLOR"), os.Getenv("TERM"))
	o.Verbose = verbose
	return o
}

// chooseText is textOptions' decision, apart from the terminal it asks.
func chooseText(isTerm bool, width int, mode, noColor, termEnv string) report.TextOptions {
	o := report.TextOptions{Width: report.DefaultWidth}
	if isTerm && width > 0 {
		o.Width = width
	}
	switch mode {
	case "always":
		o.Color = true
	case "auto":
		o.Color = isTerm && noColor == "" && termEnv != "dumb"
	}
	return o
}

// addQuiet adds --quiet: nothing on stdout, the exit code is the answer (errors that stop the
// command, exit 2, still go to stderr).
func addQuiet(cmd *cobra.Command, quiet *bool) {
	cmd.Flags().BoolVarP(quiet, "quiet", "q", false, "print nothing: the exit code says it")
}
