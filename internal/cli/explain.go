//go:build !probeonly

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pullpath/pullpath/internal/capped"
	"github.com/pullpath/pullpath/internal/events"
	"github.com/pullpath/pullpath/internal/report"
)

type explainOptions struct {
	base
	file   string
	output string
	text   report.TextOptions
	quiet  bool
	ctx    context.Context // ends a read of stdin on a signal
}

func newExplainCmd(s Streams) *cobra.Command {
	o := &explainOptions{base: base{streams: s}}
	cmd := &cobra.Command{
		Use:   "explain [FILE|-]",
		Short: "Classify kubelet, containerd, CRI-O and docker image pull errors (offline)",
		Long: `Read image pull failures, offline, and say for each which part of the pull path
broke, on which host, who owns the fix, and the next step. Input, detected
automatically, from FILE or stdin: error messages, kubectl describe pod output,
kubectl get events tables, events or pods as JSON or YAML.

Exit codes: 0 no pull failure in the input, 1 failures explained, 2 could not run.
` + manual("explain.md"),
		Example: `  kubectl describe pod web-1 | pullpath explain
  kubectl get events -n shop -o json | pullpath explain -o json
  pullpath explain crictl-pull.log`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return fmt.Errorf("explain reads one FILE (or stdin), got %d arguments: %s", len(args), strings.Join(args, " "))
			}
			return nil
		},
	}
	lifecycle(cmd, o)
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	addQuiet(cmd, &o.quiet)
	return cmd
}

// Complete takes FILE, when given.
func (o *explainOptions) Complete(args []string) error {
	if len(args) == 1 {
		if args[0] == "" {
			return errors.New(`explain: the FILE argument is empty (give a file, or - for stdin)`)
		}
		o.file = args[0]
	}
	return nil
}

// Validate checks -o.
func (o *explainOptions) Validate() error { return checkOutput(o.output) }

// Run reads the input, classifies and renders.
func (o *explainOptions) Run(ctx context.Context) error {
	o.text = textOptions(o.cmd, o.streams.Out, false)
	if o.quiet {
		o.streams.Out = io.Discard
	}
	o.ctx = ctx
	var in io.Reader
	switch o.file {
	case "", "-":
		if o.file == "" && isTerminal(o.streams.In) {
			return errors.New("explain reads FILE or stdin: pipe kubectl output in, give a file, or - to paste here (end with Ctrl-D)")
		}
		in = o.streams.In
	default:
		b, err := o.readFile()
		if err != nil {
			return err
		}
		in = bytes.NewReader(b)
	}
	if o.file == "" || o.file == "-" {
		// stdin: read here, so that a signal ends a read of a pipe that never closes
		if in == nil {
			in = strings.NewReader("")
		}
		b, err := capped.ReadAll(o.ctx, io.LimitReader(in, events.MaxInput+1), events.MaxInput+1)
		if err != nil {
			return err
		}
		in = bytes.NewReader(b)
	}
	seen := &seenText{r: in}
	msgs, format, findings, err := o.read(seen)
	if err != nil {
		return err
	}
	if !seen.any {
		// nothing to read is no diagnosis: a script reading 0 would take it for a healthy node
		return errors.New("explain: the input is empty (if a command before the pipe failed, its error is above)")
	}
	if len(msgs) == 0 && format == events.FormatText && !o.quiet {
		// text was pasted but none of it reports a failure: say what was expected, not only "none"
		fmt.Fprintln(o.streams.ErrOut, "pullpath: explain: the text reports no failure (no error, refusal or failed step in it); give the pull error itself: kubectl describe pod POD, kubectl get events, or the runtime's error")
	}
	if err := emit(o.streams.Out, o.output, report.NewFindings(findings), func(w io.Writer) error {
		return report.WriteFindingsTextWith(w, findings, o.text)
	}); err != nil {
		return err
	}
	if len(findings) > 0 {
		return &ExitError{Code: ExitBroken}
	}
	return nil
}

// readFile reads FILE: a regular file, or a stream named as one — a pipe (bash's
// <(kubectl describe …), a FIFO) or a character device (/dev/stdin) — read as stdin is, bounded
// by events.MaxInput and ended by a signal, even while the open waits for a FIFO's writer. A
// directory, a socket or a block device is refused before it is opened.
func (o *explainOptions) readFile() ([]byte, error) {
	fi, err := os.Stat(o.file)
	if err != nil || fi.Mode()&(fs.ModeNamedPipe|fs.ModeCharDevice) == 0 {
		return capped.ReadFile(o.file, events.MaxInput)
	}
	ctx := o.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	opened := make(chan *os.File, 1)
	var openErr error
	go func() {
		f, err := os.Open(o.file)
		openErr = err
		opened <- f
	}()
	var f *os.File
	select {
	case f = <-opened:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if openErr != nil {
		return nil, openErr
	}
	defer f.Close()
	b, err := capped.ReadAll(ctx, f, events.MaxInput)
	if errors.Is(err, capped.ErrTooLarge) {
		return nil, fmt.Errorf("%s: %w", o.file, err)
	}
	return b, err
}

// read parses and classifies the input; a signal ends it at once (exit 128+signal), however
// large the input: the work left is dropped with the process.
func (o *explainOptions) read(in io.Reader) ([]events.Message, events.Format, []report.Finding, error) {
	type result struct {
		msgs     []events.Message
		format   events.Format
		findings []report.Finding
		err      error
	}
	ctx := o.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	done := make(chan result, 1)
	go func() {
		// a bug in the reading must not print a Go stack at 3 a.m.: one line, exit 2
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("explain: internal error while reading the input, a bug in pullpath (please report it with the input): %v", p)}
			}
		}()
		msgs, format, err := events.Parse(in)
		if err != nil || ctx.Err() != nil {
			done <- result{err: err}
			return
		}
		done <- result{msgs, format, events.Explain(msgs), nil}
	}()
	select {
	case r := <-done:
		return r.msgs, r.format, r.findings, r.err
	case <-ctx.Done():
		return nil, "", nil, context.Cause(ctx)
	}
}

// seenText notes whether anything but white space was read through it.
type seenText struct {
	r   io.Reader
	any bool
}

func (s *seenText) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if !s.any && len(bytes.TrimSpace(p[:n])) > 0 {
		s.any = true
	}
	return n, err
}
