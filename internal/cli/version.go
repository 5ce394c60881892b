package cli

import (
	"context"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/pullpath/pullpath/internal/report"
)

// Version is set at build time with -ldflags "-X github.com/pullpath/pullpath/internal/cli.Version=…"
// (scripts/build.sh does); without it the module version from the build info is used.
var Version = "dev"

// Commit may be set with -ldflags like Version (scripts/build.sh does): the Go build info's
// vcs.revision wins, but go build does not stamp one in a git worktree (.git is a file there).
var Commit = ""

// BuildDate may be set with -ldflags like Version; without it the commit time (vcs.time) is used.
var BuildDate = ""

// versionInfo reads the version from the ldflags and the Go build info.
func versionInfo() report.Version {
	bi, ok := debug.ReadBuildInfo()
	v := buildVersion(Version, BuildDate, bi, ok)
	if v.Commit == "" {
		v.Commit = Commit
	}
	return v
}

// buildVersion is versionInfo apart from the process: the ldflags Version wins, then the module
// version (a go install of a tag), then "dev"; commit and date come from the VCS stamp.
func buildVersion(ldVersion, ldDate string, bi *debug.BuildInfo, ok bool) report.Version {
	v := report.Version{APIVersion: report.APIVersion, Kind: "Version", Version: ldVersion, BuildDate: ldDate,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok || bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	if (v.Version == "" || v.Version == "dev") && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			if v.BuildDate == "" {
				v.BuildDate = s.Value
			}
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && v.Commit != "" {
		v.Commit += "-dirty"
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	return v
}

type versionOptions struct {
	base
	output string
}

func newVersionCmd(s Streams) *cobra.Command {
	o := &versionOptions{base: base{streams: s}}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build date, Go version and platform",
		Long: `Print the version, commit, build date, Go version and platform of this binary
(-o json for scripts and bug reports).

Exit codes: 0 printed, 2 could not run (a bad flag).
` + manual("version.md"),
		Example: `  pullpath version
  kubectl pullpath version -o json`,
		Args: cobra.NoArgs,
	}
	lifecycle(cmd, o)
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	return cmd
}

// Complete takes no arguments.
func (o *versionOptions) Complete([]string) error { return nil }

// Validate checks -o.
func (o *versionOptions) Validate() error { return checkOutput(o.output) }

// Run prints this binary's version.
func (o *versionOptions) Run(context.Context) error {
	v := versionInfo()
	return emit(o.streams.Out, o.output, v, func(w io.Writer) error { return report.WriteVersionText(w, v, textOptions(o.cmd, w, false)) })
}
