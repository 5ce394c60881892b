package cli

import (
	"bufio"
	"bytes"
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

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/resolver"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

type probeOptions struct {
	streams Streams

	image         string
	platform      string
	resolvConf    string
	dnsServers    []string
	hostsFile     string
	caFiles       []string
	insecure      bool
	username      string
	passwordStdin bool
	pullSecret    string
	anonymous     bool
	output        string
	allowlist     bool
	verbose       bool
	expectPrivate bool
	node          string
	hostRoot      string
	runtime       string
	quiet         bool
	noDownload    bool

	connectTimeout, tlsTimeout, headerTimeout, stallTimeout, timeout time.Duration
	concurrency                                                      int

	probe      probe.Options
	resolvData []byte // resolv.conf read through the host root (symlinks resolved inside it)
	flags      *pflag.FlagSet
}

func (o *probeOptions) flagChanged(name string) bool { return o.flags != nil && o.flags.Changed(name) }

func newProbeCmd(s Streams) *cobra.Command {
	o := &probeOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "probe IMAGE",
		Short: "Walk the pull path of IMAGE from this node, layer by layer, and download every blob",
		Long: `Walk the pull path of IMAGE from this network namespace, in the runtime's order:
the node's resolver, the route, TCP, TLS, the registry API and its challenge,
the token realm, the manifest for this platform, and every blob, fully
downloaded through every redirect and digest-verified. Every host the pull
touches is its own endpoint with its own DNS, route, TCP and TLS evidence.

Run it on the node, or in a hostNetwork pod with dnsPolicy: Default, so that the
network namespace and the resolver are the node's.

Credentials, first found wins: --username with --password-stdin, --pull-secret
(a kubernetes.io/dockerconfigjson Secret as YAML or JSON; - reads it from stdin),
the docker config ($DOCKER_CONFIG, ~/.docker/config.json, credential helpers);
else anonymous. --anonymous with any of these is a usage error.

--no-download stops after the manifest and the first byte of each layer: every
blob host is still reached through its redirects, but nothing is verified and
the report says so (download.partial "no-download"). --quiet prints nothing:
the exit code is the verdict.

The defaults give a blackholed path its verdict in seconds. To wait as long as
containerd does, use --connect-timeout 30s --tls-timeout 10s --header-timeout 30s.

Exit codes: 0 path healthy, 1 path broken and diagnosed, 2 could not run.`,
		Example: `  pullpath probe myreg.azurecr.io/team/app:1.4
  pullpath probe --pull-secret secret.yaml -o json registry.example:5000/app@sha256:…
  kubectl get secret regcred -o yaml | pullpath probe --pull-secret - myreg.io/app:1
  pullpath probe --allowlist myreg.azurecr.io/team/app:1.4`,
		Args: oneImage("pullpath probe myreg.azurecr.io/team/app:1.4"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// flag conflicts first: Complete reads stdin and files
			if err := o.checkFlags(); err != nil {
				return err
			}
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	f := cmd.Flags()
	o.flags = f
	f.StringVar(&o.platform, "platform", "", "platform to pull, os/arch[/variant] (default: this machine's)")
	f.StringVar(&o.resolvConf, "resolv-conf", "/etc/resolv.conf", "the node's resolver configuration")
	f.StringSliceVar(&o.dnsServers, "dns-server", nil, "use these nameservers (ip or ip:port) instead of the resolv.conf ones; repeatable")
	f.StringVar(&o.hostsFile, "hosts-file", "/etc/hosts", "hosts file consulted before DNS, as the node does; empty to skip (a missing default is skipped, a missing file given is an error)")
	f.StringArrayVar(&o.caFiles, "ca-file", nil, "PEM CA trusted in addition to the system roots, like a hosts.toml ca; repeatable")
	f.BoolVar(&o.insecure, "insecure", false, "do not verify certificates (the verdict then says loudly that TLS was not checked)")
	f.StringVarP(&o.username, "username", "u", "", "registry user name; the password is read from stdin with --password-stdin")
	f.BoolVar(&o.passwordStdin, "password-stdin", false, "read the password (or token) from stdin")
	f.StringVar(&o.pullSecret, "pull-secret", "", "a kubernetes.io/dockerconfigjson Secret (YAML or JSON) or a docker config.json; - reads it from stdin")
	f.BoolVar(&o.anonymous, "anonymous", false, "present no credentials, not even the docker config's")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	f.BoolVar(&o.allowlist, "allowlist", false, "print only the host:port list the pull touched (for firewalls, proxies, private DNS)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "show every step and hop")
	f.BoolVar(&o.expectPrivate, "expect-private", false, "fail at dns when the registry resolves to a public address (it should use a private endpoint)")
	f.StringVar(&o.node, "node", "", "node name for the report (default: the hostname)")
	f.StringVar(&o.hostRoot, "host-root", "", "pull the way the node's runtime does: read its hosts, CAs, headers and proxy from this root (/ on the node, the host mount in a pod)")
	f.StringVar(&o.runtime, "runtime", "", "with --host-root: containerd, crio or docker (default: detected)")
	f.DurationVar(&o.connectTimeout, "connect-timeout", probe.DefaultConnectTimeout, "TCP connect timeout per address")
	f.DurationVar(&o.tlsTimeout, "tls-timeout", probe.DefaultTLSTimeout, "TLS handshake timeout")
	f.DurationVar(&o.headerTimeout, "header-timeout", probe.DefaultHeaderTimeout, "time to wait for response headers")
	f.DurationVar(&o.stallTimeout, "stall-timeout", probe.DefaultStallTimeout, "a blob download with no bytes for this long is a stall")
	f.DurationVar(&o.timeout, "timeout", probe.DefaultTimeout, "bound on the whole probe")
	f.IntVar(&o.concurrency, "concurrency", probe.DefaultConcurrency, "parallel blob downloads")
	f.BoolVar(&o.noDownload, "no-download", false, "stop after the manifest and the first byte of each layer (every blob host still reached): for very large images or a rate-limited registry; NOT a full pull, reported as such")
	addQuiet(cmd, &o.quiet)
	return cmd
}

// Complete turns flags into probe options: reads the resolver config and the credentials.
func (o *probeOptions) Complete(args []string) error {
	o.image = args[0]
	ref, err := registry.ParseReference(o.image)
	if err != nil {
		return err
	}
	var rt *runtimeconfig.Config
	var hostFile func(string) ([]byte, error)
	if o.hostRoot != "" {
		if rt, err = loadRuntime(o.hostRoot, o.runtime, o.image); err != nil {
			return err
		}
		root := runtimeconfig.Root{FS: os.DirFS(o.hostRoot), Name: o.hostRoot}
		hostFile = root.ReadFile
		// the runtime's resolver and hosts file are the node's, under the root
		if !o.flagChanged("resolv-conf") {
			o.resolvConf = filepath.Join(o.hostRoot, "etc/resolv.conf")
			if b, err := root.ReadFile("/etc/resolv.conf"); err == nil {
				o.resolvData = b
			}
		}
		if !o.flagChanged("hosts-file") {
			o.hostsFile = filepath.Join(o.hostRoot, "etc/hosts")
		}
	} else if o.runtime != "" {
		return errors.New("--runtime needs --host-root")
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

	cred, err := o.credential(ref.Registry)
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
		Image: o.image, Platform: o.platform, Resolver: rc, CAFiles: o.caFiles, Insecure: o.insecure,
		Credential: cred, ConnectTimeout: o.connectTimeout, TLSTimeout: o.tlsTimeout, HeaderTimeout: o.headerTimeout,
		StallTimeout: o.stallTimeout, Timeout: o.timeout, Concurrency: o.concurrency, ExpectPrivate: o.expectPrivate,
		Node: o.node, Progress: progress, Runtime: rt, HostFile: hostFile,
		Logger: slog.New(slog.NewTextHandler(o.streams.ErrOut, &slog.HandlerOptions{Level: level})),
	}
	return nil
}

func (o *probeOptions) credential(reg string) (creds.Credential, error) {
	switch {
	case o.anonymous:
		return creds.Credential{Source: "--anonymous"}, nil
	case o.passwordStdin:
		pw, err := readSecretLine(o.streams.In)
		if err != nil {
			return creds.Credential{}, fmt.Errorf("--password-stdin: %w", err)
		}
		if o.username == "" {
			return creds.Credential{}, errors.New("--password-stdin needs --username")
		}
		return creds.Credential{Username: o.username, Password: pw, Source: "--username/--password-stdin"}, nil
	case o.pullSecret == "-":
		if o.streams.In == nil {
			return creds.Credential{}, errors.New("--pull-secret -: no stdin")
		}
		b, err := io.ReadAll(io.LimitReader(o.streams.In, 4<<20+1))
		if err != nil {
			return creds.Credential{}, fmt.Errorf("--pull-secret -: %w", err)
		}
		return creds.FromPullSecret(b, "from stdin", reg)
	case o.pullSecret != "":
		return creds.FromPullSecretFile(o.pullSecret, reg)
	}
	c, err := creds.FromKeychain(reg)
	if err != nil {
		// an unreadable docker config should not stop a diagnosis; say it and go anonymous
		fmt.Fprintf(o.streams.ErrOut, "pullpath: warning: %v; probing anonymously\n", err)
		return creds.Credential{Source: "anonymous (docker config unreadable)"}, nil
	}
	return c, nil
}

func readSecretLine(r io.Reader) (string, error) {
	if r == nil {
		return "", errors.New("no stdin")
	}
	line, err := bufio.NewReader(io.LimitReader(r, 64<<10)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
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

// Validate checks flag values that Complete does not.
func (o *probeOptions) Validate() error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	o.probe.NoDownload = o.noDownload
	o.skipMissingHostsFile()
	if o.quiet {
		// for scripts: the exit code is the verdict; no report, no progress line
		o.streams.Out = io.Discard
		o.probe.Progress = nil
	}
	if o.username != "" && !o.passwordStdin && o.pullSecret == "" {
		return errors.New("--username needs --password-stdin (passwords are never taken as flags: they end up in shell history and ps)")
	}
	if o.concurrency < 1 || o.concurrency > 64 {
		return fmt.Errorf("--concurrency %d: want 1 to 64", o.concurrency)
	}
	for name, d := range map[string]time.Duration{"--connect-timeout": o.connectTimeout, "--tls-timeout": o.tlsTimeout,
		"--header-timeout": o.headerTimeout, "--stall-timeout": o.stallTimeout, "--timeout": o.timeout} {
		if d <= 0 {
			return fmt.Errorf("%s must be positive", name)
		}
	}
	return nil
}

// checkFlags rejects flag combinations that cannot mean anything, before anything is read.
func (o *probeOptions) checkFlags() error {
	if o.anonymous {
		for _, c := range []struct {
			name string
			set  bool
		}{{"--username", o.username != ""}, {"--password-stdin", o.passwordStdin}, {"--pull-secret", o.pullSecret != ""}} {
			if c.set {
				return fmt.Errorf("--anonymous presents no credentials: it cannot be combined with %s", c.name)
			}
		}
	}
	if o.pullSecret == "-" && o.passwordStdin {
		return errors.New("--pull-secret - and --password-stdin both read stdin: use one")
	}
	if f, ok := o.streams.In.(*os.File); ok && o.pullSecret == "-" && term.IsTerminal(int(f.Fd())) {
		return errors.New("--pull-secret - reads the Secret from stdin: pipe it in (kubectl get secret NAME -o yaml | pullpath probe --pull-secret - IMAGE)")
	}
	if o.hostsFile != "" && o.flagChanged("hosts-file") {
		if _, err := os.Stat(o.hostsFile); err != nil {
			return fmt.Errorf("--hosts-file: %w", err)
		}
	}
	return nil
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
func (o *probeOptions) Run(cmd *cobra.Command) error {
	rep, err := probe.Run(cmd.Context(), o.probe)
	if err != nil {
		return err
	}
	switch {
	case o.allowlist:
		for _, h := range probe.Allowlist(rep) {
			fmt.Fprintln(o.streams.Out, h)
		}
	case o.output == "json":
		if err := report.WriteJSON(o.streams.Out, rep); err != nil {
			return err
		}
	default:
		if err := report.WriteText(o.streams.Out, rep, textOptions(cmd, o.streams.Out, o.verbose)); err != nil {
			return err
		}
	}
	if rep.Class != report.ClassOK {
		return &ExitError{Code: ExitBroken}
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
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
