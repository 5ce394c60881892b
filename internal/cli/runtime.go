package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

type runtimeOptions struct {
	base
	image    string
	ref      registry.Reference // image, parsed by Validate
	hostRoot string
	runtime  string
	output   string
	quiet    bool
}

func newRuntimeCmd(s Streams) *cobra.Command {
	o := &runtimeOptions{base: base{streams: s}}
	cmd := &cobra.Command{
		Use:   "runtime IMAGE",
		Short: "Show the node runtime's effective pull configuration for IMAGE, and its traps",
		Long: `Read the node runtime's pull configuration from a host root (containerd, CRI-O
or docker, the runtime's proxy environment, the resolver) and print the hosts it
will try for IMAGE, in its order, with trust, headers, proxy and the file and
line each came from; the traps are warnings with a code, a severity and a fix.
Nothing on the host is executed; in a pod, mount the node's / read-only and pass
--host-root /host.

Exit codes: 0 no error-severity warning, 1 at least one, 2 could not read the
configuration.
` + manual("runtime.md"),
		Example: `  pullpath runtime myreg.azurecr.io/team/app:1.4
  pullpath runtime --host-root /host -o json registry.example:5000/app:1`,
		Args: oneImage("pullpath runtime --host-root / myreg.azurecr.io/team/app:1.4"),
	}
	lifecycle(cmd, o)
	cmd.Flags().StringVar(&o.hostRoot, "host-root", "/", "the node's root filesystem (in a probe pod: the read-only host mount)")
	cmd.Flags().StringVar(&o.runtime, "runtime", "", "containerd, crio or docker (default: detected from what is installed)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	addQuiet(cmd, &o.quiet)
	return cmd
}

// Complete takes IMAGE.
func (o *runtimeOptions) Complete(args []string) error {
	o.image = args[0]
	return nil
}

// Validate checks -o and IMAGE.
func (o *runtimeOptions) Validate() error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	ref, err := parseImage(o.image)
	o.ref = ref
	return err
}

// Run reads the configuration under --host-root and renders it; an error-severity warning is
// ExitError{1}.
func (o *runtimeOptions) Run(context.Context) error {
	c, err := loadRuntime(o.hostRoot, o.runtime, o.ref)
	if err != nil {
		return err
	}
	out := o.streams.Out
	if o.quiet {
		out = io.Discard
	}
	r := c.Report()
	err = emit(out, o.output, r, func(w io.Writer) error {
		// the terminal's width, or 80 columns when stdout is not a terminal, as probe
		return report.WriteRuntimeText(w, r, textOptions(o.cmd, o.streams.Out, false))
	})
	if err != nil {
		return err
	}
	if c.Broken() {
		return &ExitError{Code: ExitBroken}
	}
	return nil
}

// loadRuntime reads the runtime configuration under hostRoot for image.
func loadRuntime(hostRoot, rt string, ref registry.Reference) (*runtimeconfig.Config, error) {
	fi, err := os.Stat(hostRoot)
	if err != nil {
		return nil, fmt.Errorf("--host-root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("--host-root %s is not a directory", hostRoot)
	}
	switch rt {
	case "", "containerd", "crio", "docker":
	default:
		return nil, fmt.Errorf("--runtime %q: want containerd, crio or docker", rt)
	}
	if rt == "" && !runtimeconfig.Present(runtimeconfig.Root{FS: os.DirFS(hostRoot), Name: hostRoot}) {
		// an empty or mistyped root: reporting containerd's defaults from it would be fiction
		return nil, fmt.Errorf("no container runtime configuration under %s: no containerd, CRI-O or docker configuration or unit there (--runtime NAME reads a runtime's defaults anyway)", hostRoot)
	}
	return runtimeconfig.Load(runtimeconfig.Options{Root: os.DirFS(hostRoot), Name: hostRoot, Runtime: runtimeconfig.Runtime(rt), Ref: ref})
}
