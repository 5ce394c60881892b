package cli

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/pullpath/pullpath/internal/capped"
	"github.com/pullpath/pullpath/internal/credprovider"
	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/resolver"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

type probeOptions struct {
	base
	ctx context.Context // ends reads of stdin on a signal

	image         string
	ref           registry.Reference // image, parsed once
	platform      string
	resolvConf    string
	dnsServers    []string
	hostsFile     string
	caFiles       []string
	insecure      bool
	username      string
	passwordStdin bool
	pullSecret    string
	pullSecretEnv []string
	anonymous     bool
	output        string
	allowlist     bool
	summaryFile   string
	verbose       bool
	expectPrivate bool
	node          string
	hostRoot      string
	runtime       string
	quiet         bool
	noDownload    bool
	cri           string // CRI socket, or "auto" for the runtime's socket under the host root
	criFresh      bool

	connectTimeout, tlsTimeout, headerTimeout, stallTimeout, timeout time.Duration
	concurrency                                                      int

	probe      probe.Options
	resolvData []byte                        // resolv.conf read through the host root (symlinks resolved inside it)
	kubelet    *credprovider.KubeletSettings // read once (kubeletAt): the credentials and --cri's socket use it
	notes      []string                      // said on stderr when the probe starts, not before a usage error
}

// note keeps a line for stderr until the probe runs: a usage error found later must stay one line.
func (o *probeOptions) note(format string, args ...any) {
	o.notes = append(o.notes, fmt.Sprintf("pullpath: "+format, args...))
}

// kubeletAt returns the kubelet's settings under the host root dir, read on the first call for dir.
func (o *probeOptions) kubeletAt(dir string) credprovider.KubeletSettings {
	if o.kubelet == nil || o.kubelet.Root.Name != dir {
		s := credprovider.ReadKubelet(runtimeconfig.Root{FS: os.DirFS(dir), Name: dir})
		o.kubelet = &s
	}
	return *o.kubelet
}

func newProbeCmd(s Streams) *cobra.Command {
	o := &probeOptions{base: base{streams: s}}
	cmd := &cobra.Command{
		Use:   "probe IMAGE",
		Short: "Walk the pull path of IMAGE from this node, layer by layer, and download every blob",
		Long: `Walk the pull path of IMAGE the way the node's runtime does, host by host, and
download every blob; name the step that broke, on which host, with evidence.
Run it on the node, or in a hostNetwork pod with dnsPolicy: Default.
Exit codes: 0 healthy, 1 broken and diagnosed, 2 could not run, 3 timed out.
` + manual("probe.md"),
		Example: `  pullpath probe myreg.azurecr.io/team/app:1.4
  kubectl get secret regcred -o yaml | pullpath probe --pull-secret - myreg.io/app:1
  pullpath probe --allowlist -o json myreg.azurecr.io/team/app:1.4`,
		Args: oneImage("pullpath probe myreg.azurecr.io/team/app:1.4"),
	}
	lifecycle(cmd, o)
	f := cmd.Flags()
	nodeViewFlags(f, o)
	f.StringVarP(&o.username, "username", "u", "", "registry user; with --password-stdin")
	f.BoolVar(&o.passwordStdin, "password-stdin", false, "read the password (or token) from stdin")
	f.StringVarP(&o.output, "output", "o", "text", "text or json")
	f.StringVar(&o.summaryFile, "summary-file", "", "also write the compact verdict (class, code, failing host, role, step, summary) as one JSON line to this file, e.g. /dev/termination-log in a probe pod")
	f.BoolVar(&o.allowlist, "allowlist", false, "print only the hosts the pull touched")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "show every step and hop")
	f.StringVar(&o.cri, "cri", "", "also ask the runtime (CRI) to pull")
	f.Lookup("cri").NoOptDefVal = "auto"
	f.BoolVar(&o.criFresh, "cri-fresh", false, "with --cri: remove a cached image first so the runtime really pulls it, but only when no container uses it (an image in use is never evicted)")
	f.BoolVar(&o.noDownload, "no-download", false, "stop after each layer's first byte")
	addQuiet(cmd, &o.quiet)
	groupFlags(f, "Timeouts", "connect-timeout", "tls-timeout", "header-timeout", "stall-timeout", "timeout")
	groupFlags(f, "More", "cri-fresh", "anonymous", "expect-private", "concurrency", "summary-file", "node", "dns-server", "hosts-file", "resolv-conf")
	return cmd
}

// nodeViewFlags are the flags that say how the node pulls: its resolver, trust, credentials,
// runtime and timeouts. probe and agent share them, so the resident agent sees what a probe sees.
func nodeViewFlags(f *pflag.FlagSet, o *probeOptions) {
	f.StringVar(&o.platform, "platform", "", "os/arch[/variant] (default: this one)")
	f.StringVar(&o.resolvConf, "resolv-conf", "/etc/resolv.conf", "the node's resolver configuration")
	f.StringSliceVar(&o.dnsServers, "dns-server", nil, "use these nameservers (ip or ip:port) instead of the resolv.conf ones; repeatable")
	f.StringVar(&o.hostsFile, "hosts-file", "/etc/hosts", "hosts file consulted before DNS, as the node does; empty to skip (a missing default is skipped, a missing file given is an error)")
	f.StringArrayVar(&o.caFiles, "ca-file", nil, "a PEM CA trusted beside the system roots")
	f.BoolVar(&o.insecure, "insecure", false, "do not verify certificates (said loudly)")
	f.StringVar(&o.pullSecret, "pull-secret", "", "a Secret or config.json (- stdin)")
	f.StringArrayVar(&o.pullSecretEnv, "pull-secret-env", nil, "a docker config in this variable")
	f.BoolVar(&o.anonymous, "anonymous", false, "present no credentials, not even the docker config's")
	f.BoolVar(&o.expectPrivate, "expect-private", false, "fail at dns when the registry resolves to a public address (it should use a private endpoint)")
	f.StringVar(&o.node, "node", "", "node name for the report (default: the hostname)")
	f.StringVar(&o.hostRoot, "host-root", "", "the runtime's configuration root")
	f.StringVar(&o.runtime, "runtime", "", "containerd, crio or docker")
	f.DurationVar(&o.connectTimeout, "connect-timeout", probe.DefaultConnectTimeout, "TCP connect timeout per address")
	f.DurationVar(&o.tlsTimeout, "tls-timeout", probe.DefaultTLSTimeout, "TLS handshake timeout")
	f.DurationVar(&o.headerTimeout, "header-timeout", probe.DefaultHeaderTimeout, "time to wait for response headers")
	f.DurationVar(&o.stallTimeout, "stall-timeout", probe.DefaultStallTimeout, "a blob download with no bytes for this long is a stall")
	f.DurationVar(&o.timeout, "timeout", probe.DefaultTimeout, "bound on the whole probe")
	f.IntVar(&o.concurrency, "concurrency", probe.DefaultConcurrency, "parallel blob downloads")
}

// Complete takes IMAGE.
func (o *probeOptions) Complete(args []string) error {
	o.image = args[0]
	return nil
}

// prepare turns flags into probe options: reads the runtime's configuration, the resolver
// configuration and the credentials (stdin included), then applies the rest (apply).
func (o *probeOptions) prepare() error {
	ref := o.ref
	rt, hostFile, err := o.loadNodeRuntime()
	if err != nil {
		return err
	}
	var rc resolver.Config
	if len(o.dnsServers) > 0 {
		rc = resolver.Config{Source: "--dns-server", Ndots: resolver.DefaultNdots, Timeout: resolver.DefaultTimeout, Attempts: resolver.DefaultAttempts}
		// keep the node's search list and options; only the servers change
		if c, err := o.nodeResolvConf(); err == nil {
			rc.Search, rc.Ndots, rc.Timeout, rc.Attempts = c.Search, c.Ndots, c.Timeout, c.Attempts
		}
		for _, s := range o.dnsServers {
			addr, err := resolver.ParseServer(s)
			if err != nil {
				return err
			}
			rc.Nameservers = append(rc.Nameservers, addr)
		}
	} else if rc, err = o.nodeResolvConf(); err != nil {
		return err
	}
	rc.HostsFile = o.hostsFile

	keyring, cred, plans, err := o.credential(ref, rt)
	if err != nil {
		return err
	}
	var progress func(probe.Progress)
	if o.output == "text" && !o.allowlist && isTerminal(o.streams.ErrOut) {
		progress = newProgressPrinter(o.streams.ErrOut)
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelDebug
	}
	o.probe = probe.Options{
		Ref: ref, Platform: o.platform, Resolver: rc, CAFiles: o.caFiles, Insecure: o.insecure,
		Keyring: keyring, Credential: cred, Providers: plans, ConnectTimeout: o.connectTimeout, TLSTimeout: o.tlsTimeout, HeaderTimeout: o.headerTimeout,
		StallTimeout: o.stallTimeout, Timeout: o.timeout, Concurrency: o.concurrency, ExpectPrivate: o.expectPrivate,
		Node: o.node, Progress: progress, Runtime: rt, HostFile: hostFile,
		Logger: slog.New(slog.NewTextHandler(o.streams.ErrOut, &slog.HandlerOptions{Level: level})),
	}
	o.apply()
	return nil
}

// nodeRoot is where a plain `pullpath probe` looks for the node's runtime configuration; tests
// point it at a fixture tree, or "" to look nowhere.
var nodeRoot = "/"

// loadNodeRuntime reads the runtime's configuration: under --host-root, else under / when a
// runtime's configuration is there (said on stderr and in the report), unless --host-root none.
// With it, the node's resolv.conf and hosts file are read under the same root.
func (o *probeOptions) loadNodeRuntime() (*runtimeconfig.Config, func(string) ([]byte, error), error) {
	hostRoot, detected := o.hostRoot, ""
	switch {
	case hostRoot == "none":
		if o.runtime != "" {
			return nil, nil, errors.New("--runtime needs a host root: drop --host-root none")
		}
		return nil, nil, nil
	case hostRoot == "" && nodeRoot == "":
		if o.runtime != "" {
			return nil, nil, errors.New("--runtime needs --host-root")
		}
		return nil, nil, nil
	case hostRoot == "":
		root := runtimeconfig.Root{FS: os.DirFS(nodeRoot), Name: nodeRoot}
		rt, evidence, ok := runtimeconfig.Detect(root)
		if !ok && o.runtime == "" {
			return nil, nil, nil
		}
		if !ok {
			evidence = "--runtime " + o.runtime
		} else if o.runtime != "" {
			rt = runtimeconfig.Runtime(o.runtime)
		}
		hostRoot, detected = nodeRoot, evidence
		if o.output == "text" {
			o.note("pulling the way %s does, with its configuration under %s (%s); --host-root none to skip", rt, nodeRoot, evidence)
		}
	}
	rt, err := loadRuntime(hostRoot, o.runtime, o.ref)
	if err != nil {
		if detected != "" {
			err = fmt.Errorf("%w (read because %s exists; --host-root none skips the runtime's configuration)", err, detected)
		}
		return nil, nil, err
	}
	rt.Detected = detected
	root := runtimeconfig.Root{FS: os.DirFS(hostRoot), Name: hostRoot}
	// the runtime's resolver and hosts file are the node's, under the root
	if !o.flagChanged("resolv-conf") {
		o.resolvConf = filepath.Join(hostRoot, "etc/resolv.conf")
		if b, err := root.ReadFile("/etc/resolv.conf"); err == nil {
			o.resolvData = b
		}
	}
	if !o.flagChanged("hosts-file") {
		o.hostsFile = filepath.Join(hostRoot, "etc/hosts")
	}
	return rt, root.ReadFile, nil
}

// credential picks what the probe presents: the flags' credential (--anonymous, --username with
// --password-stdin), else the kubelet's keyring as credprovider.BuildKeyring builds it from the
// node under the host root and the pull secrets given. Under --host-root /host the credential
// providers it finds execute the node's binary from /host, to present the node's own identity.
func (o *probeOptions) credential(ref registry.Reference, rt *runtimeconfig.Config) (*creds.Keyring, creds.Credential, []*credprovider.Plan, error) {
	if o.anonymous || o.passwordStdin {
		c, err := o.explicitCredential()
		return nil, c, nil, err
	}
	src := credprovider.Sources{Name: ref.Name(), Registry: ref.Registry, Node: rt != nil}
	if rt != nil && rt.HostRoot != "" {
		k := o.kubeletAt(rt.HostRoot)
		src.Kubelet = &k
	}
	if o.pullSecret != "" || len(o.pullSecretEnv) > 0 {
		src.Secrets = o.namedSecrets
	}
	p, err := credprovider.BuildKeyring(src)
	if err != nil {
		return nil, creds.Credential{}, nil, err
	}
	if o.output == "text" {
		for _, n := range p.Notes {
			o.note("%s", n)
		}
	}
	for _, w := range p.Warnings {
		o.note("%s", w)
	}
	return p.Keyring, p.Credential, p.Plans, nil
}

// explicitCredential is the credential of --anonymous or --username with --password-stdin.
func (o *probeOptions) explicitCredential() (creds.Credential, error) {
	if o.anonymous {
		return creds.Credential{Source: "--anonymous"}, nil
	}
	pw, err := readSecretLine(o.ctx, o.streams.In)
	if err != nil {
		return creds.Credential{}, fmt.Errorf("--password-stdin: %w", err)
	}
	if o.username == "" {
		return creds.Credential{}, errors.New("--password-stdin needs --username")
	}
	return creds.Credential{Username: o.username, Password: pw, Source: "--username/--password-stdin"}, nil
}

// namedSecrets reads the pull secrets named by --pull-secret (a file, or - for stdin) or
// --pull-secret-env, in the order given.
func (o *probeOptions) namedSecrets() ([]creds.NamedSecret, error) {
	switch {
	case o.pullSecret == "-":
		if o.streams.In == nil {
			return nil, errors.New("--pull-secret -: no stdin")
		}
		b, err := capped.ReadAll(o.ctx, o.streams.In, capped.Max)
		if err != nil {
			return nil, fmt.Errorf("--pull-secret -: %w", err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, errors.New("--pull-secret -: stdin is empty (did the command before the pipe fail?)")
		}
		return []creds.NamedSecret{{Label: "from stdin", Data: b}}, nil
	case o.pullSecret != "":
		s, err := creds.ReadPullSecretFile(o.pullSecret)
		if err == nil && len(bytes.TrimSpace(s.Data)) == 0 {
			return nil, fmt.Errorf("--pull-secret %s: the file is empty", o.pullSecret)
		}
		return []creds.NamedSecret{s}, err
	}
	var secrets []creds.NamedSecret
	for _, name := range o.pullSecretEnv {
		v, ok := os.LookupEnv(name)
		if !ok {
			return nil, fmt.Errorf("--pull-secret-env %s: the variable is not set", name)
		}
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("--pull-secret-env %s: the variable is empty", name)
		}
		// $VAR_NAME says which secret that is (verify --from-pod sets it: NAMESPACE/NAME key KEY);
		// a variable, not a flag, so that a probe image from before it still runs
		label := "from $" + name
		if n := os.Getenv(name + "_NAME"); n != "" {
			label = n + " via $" + name
		}
		secrets = append(secrets, creds.NamedSecret{Label: label, Data: []byte(v)})
	}
	return secrets, nil
}

func readSecretLine(ctx context.Context, r io.Reader) (string, error) {
	if r == nil {
		return "", errors.New("no stdin")
	}
	line, err := capped.Line(ctx, r, 64<<10)
	if err != nil {
		return "", err
	}
	if line == "" {
		return "", errors.New("empty password on stdin")
	}
	return line, nil
}

// nodeResolvConf reads the node's resolv.conf: the copy read through --host-root (its symlinks
// resolved inside the root) when there is one, else the file.
func (o *probeOptions) nodeResolvConf() (resolver.Config, error) {
	if o.resolvData == nil {
		return resolver.ReadConfFile(o.resolvConf)
	}
	c, err := resolver.ParseConf(bytes.NewReader(o.resolvData))
	if err != nil {
		return resolver.Config{}, fmt.Errorf("resolver configuration %s: %w", o.resolvConf, err)
	}
	c.Source = o.resolvConf
	return c, nil
}

// apply sets the probe options prepare does not read from a file.
func (o *probeOptions) apply() {
	o.probe.NoDownload = o.noDownload
	o.skipMissingHostsFile()
	if o.quiet {
		// for scripts: the exit code is the verdict; no report, no progress line
		o.streams.Out = io.Discard
		o.probe.Progress = nil
	}
}

// Validate rejects flag values and combinations that cannot mean anything, then IMAGE, before
// anything is read or said (Run reads stdin and files).
func (o *probeOptions) Validate() error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.username != "" && !o.passwordStdin && o.pullSecret == "" {
		return errors.New("--username needs --password-stdin (passwords are never taken as flags: they end up in shell history and ps)")
	}
	if o.criFresh && o.cri == "" {
		return errors.New("--cri-fresh needs --cri")
	}
	if o.concurrency < 1 || o.concurrency > 64 {
		return fmt.Errorf("--concurrency %d: want 1 to 64", o.concurrency)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"--timeout", o.timeout}, {"--connect-timeout", o.connectTimeout}, {"--tls-timeout", o.tlsTimeout},
		{"--header-timeout", o.headerTimeout}, {"--stall-timeout", o.stallTimeout}} {
		if d.d <= 0 {
			return fmt.Errorf("%s %s: want a positive duration, e.g. 30s", d.name, d.d)
		}
	}
	switch o.runtime {
	case "", "containerd", "crio", "docker":
	default:
		return fmt.Errorf("--runtime %q: want containerd, crio or docker", o.runtime)
	}
	if o.platform != "" {
		if _, err := registry.ParsePlatform(o.platform); err != nil {
			return err
		}
	}
	if o.anonymous {
		for _, c := range []struct {
			name string
			set  bool
		}{{"--username", o.username != ""}, {"--password-stdin", o.passwordStdin}, {"--pull-secret", o.pullSecret != ""}, {"--pull-secret-env", len(o.pullSecretEnv) > 0}} {
			if c.set {
				return fmt.Errorf("--anonymous presents no credentials: it cannot be combined with %s", c.name)
			}
		}
	}
	if o.pullSecret != "" && len(o.pullSecretEnv) > 0 {
		return errors.New("--pull-secret and --pull-secret-env both name a pull secret: use one")
	}
	if o.pullSecret == "-" && o.passwordStdin {
		return errors.New("--pull-secret - and --password-stdin both read stdin: use one")
	}
	if o.pullSecret == "-" && isTerminal(o.streams.In) {
		return errors.New("--pull-secret - reads the Secret from stdin: pipe it in (kubectl get secret NAME -o yaml | pullpath probe --pull-secret - IMAGE)")
	}
	if o.passwordStdin && isTerminal(o.streams.In) {
		// read from a terminal, the password would be echoed on the screen
		return errors.New("--password-stdin reads the password from stdin: pipe it in (pullpath probe -u USER --password-stdin IMAGE < file, or from a secret manager)")
	}
	if o.hostsFile != "" && o.flagChanged("hosts-file") {
		fi, err := os.Stat(o.hostsFile)
		if err != nil {
			return fmt.Errorf("--hosts-file: %w", err)
		}
		if fi.IsDir() {
			return fmt.Errorf("--hosts-file %s is a directory: give the hosts file (e.g. /etc/hosts), or \"\" to skip it", o.hostsFile)
		}
		// the resolver reads it at each lookup: a FIFO, a device or a huge file is refused now
		if _, err := capped.ReadFile(o.hostsFile, capped.Max); err != nil {
			return fmt.Errorf("--hosts-file: %w", err)
		}
	}
	for _, f := range o.caFiles {
		// the probe reads them again; read here so that a bad one is said before anything else
		b, err := capped.ReadFile(f, capped.Max)
		if err != nil {
			return fmt.Errorf("--ca-file: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(b) {
			return fmt.Errorf("--ca-file %s: no PEM certificate found", f)
		}
	}
	// found only after the walk, a summary file that cannot be written would cost the report
	if err := checkOutFile("--summary-file", o.summaryFile); err != nil {
		return err
	}
	ref, err := parseImage(o.image)
	o.ref = ref
	return err
}

// skipMissingHostsFile drops the default hosts file (/etc/hosts, or the host root's) when it does
// not exist: a node without one resolves through DNS only.
func (o *probeOptions) skipMissingHostsFile() {
	if o.hostsFile == "" || o.flagChanged("hosts-file") {
		return
	}
	if _, err := os.Stat(o.hostsFile); err != nil {
		o.hostsFile = ""
		o.probe.Resolver.HostsFile = ""
	}
}

// Run probes and renders; a broken path returns ExitError{1} after the report is written.
//
// The run is bounded hard: probe.Run ends by itself when --timeout runs out or a signal arrives; if
// it has not returned a grace period later (a bug), the command gives up rather than hang.
func (o *probeOptions) Run(ctx context.Context) error {
	o.ctx = ctx
	if err := o.prepare(); err != nil {
		return err
	}
	var runtimePull func(context.Context, *report.Probe) *report.CRIResult
	if o.cri != "" {
		// before the walk: a runtime that does not answer is a usage problem, found in seconds
		pull, closeCRI, err := o.prepareCRI(ctx)
		if err != nil {
			return err
		}
		defer closeCRI()
		runtimePull = pull
	}
	for _, n := range o.notes {
		fmt.Fprintln(o.streams.ErrOut, n)
	}
	rep, err := runBounded(ctx, o.timeout, func(ctx context.Context) (*report.Probe, error) { return probe.Run(ctx, o.probe) })
	if err != nil {
		return err
	}
	if runtimePull != nil && rep.Interrupted == nil {
		rep.CRI = runtimePull(ctx, rep)
	}
	exit := ExitBroken
	if i := rep.Interrupted; i != nil {
		exit = ExitTimeout
		var se *SignalError
		if errors.As(context.Cause(ctx), &se) {
			i.Signal, exit = signalName(se.Signal), se.ExitCode()
		}
	}
	if o.summaryFile != "" {
		if err := writeSummary(o.summaryFile, rep); err != nil {
			return err
		}
	}
	switch {
	case o.allowlist:
		a := probe.Allowlist(rep)
		if err := emit(o.streams.Out, o.output, a, func(w io.Writer) error {
			return report.WriteAllowlistText(w, a, textOptions(o.cmd, w, false))
		}); err != nil {
			return err
		}
	default:
		if err := emit(o.streams.Out, o.output, rep, func(w io.Writer) error {
			return report.WriteText(w, rep, textOptions(o.cmd, w, o.verbose))
		}); err != nil {
			return err
		}
	}
	if rep.Class != report.ClassOK {
		return &ExitError{Code: exit}
	}
	return nil
}

// stopGrace is how long a run may take to wind down after it was cut.
const stopGrace = 3 * time.Second

// runBounded runs f and returns its result, or an error when f has not returned stopGrace after
// ctx was cancelled or the timeout ran out.
func runBounded[T any](ctx context.Context, timeout time.Duration, f func(context.Context) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f(ctx)
		ch <- result{v, err}
	}()
	deadline := time.NewTimer(timeout + stopGrace)
	defer deadline.Stop()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-deadline.C:
	case <-ctx.Done():
		select {
		case r := <-ch:
			return r.v, r.err
		case <-time.After(stopGrace):
		}
	}
	var zero T
	return zero, fmt.Errorf("the run did not stop within %s of being cut; giving up (please report this as a bug)", stopGrace)
}

// isTerminal reports whether a standard stream (stdin, stdout or stderr) is a terminal.
func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newProgressPrinter redraws one status line on a terminal, at most ten times a second.
func newProgressPrinter(w io.Writer) func(probe.Progress) {
	var mu sync.Mutex
	var last time.Time
	return func(p probe.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < 100*time.Millisecond && p.DoneBlobs < p.Blobs {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "\rdownloading: %d/%d blobs, %.1f/%.1f MB ", p.DoneBlobs, p.Blobs, float64(p.DoneBytes)/1e6, float64(p.Bytes)/1e6)
		if p.DoneBlobs == p.Blobs {
			fmt.Fprint(w, "\r\033[K")
		}
	}
}

// writeSummary writes the compact verdict a probe pod leaves in its termination message (the
// kubelet keeps at most 4 KiB of it).
func writeSummary(path string, rep *report.Probe) error {
	b, err := json.Marshal(report.Summarize(rep))
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("--summary-file: %w", err)
	}
	return nil
}
