package probe

import (
	"io"
	"log/slog"
	"time"

	"github.com/pullpath/pullpath/internal/credprovider"
	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/resolver"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// Options configures one probe. The zero value of each field means its documented default.
type Options struct {
	// Ref is the image, parsed once by the caller (registry.ParseReference); when it is zero,
	// Image is parsed.
	Ref      registry.Reference
	Image    string
	Platform string // os/arch[/variant]; default: this machine's

	Resolver resolver.Config // the node's resolver; the CLI reads /etc/resolv.conf
	CAFiles  []string        // PEM files trusted in addition to the system roots, like a hosts.toml "ca"
	Insecure bool            // skip certificate verification (reported as a warning)

	// Keyring is the kubelet's keyring for the pull: the pod's pull secrets and its own docker
	// config. The probe adds what Providers answer and, as the kubelet, presents each credential
	// it gives for the image in turn, one walk each, until one pulls, and reports what each got;
	// no anonymous pull follows. Default empty.
	Keyring *creds.Keyring
	// Providers are the kubelet's credential providers for the image, in its config's order: the
	// probe runs each as the kubelet does, before the walk, and adds their answers to the
	// keyring's last tier. When they are all the keyring gives, providers that all fail are a
	// finding (class auth) when the anonymous pull the kubelet then makes is refused.
	Providers []*credprovider.Plan
	// Credential is presented when the keyring and the providers give nothing for the image: a
	// flag's, the operator's docker config's, or anonymous (its Source says why). Default anonymous.
	Credential creds.Credential

	ConnectTimeout time.Duration // per address; default 5s (containerd: 30s)
	TLSTimeout     time.Duration // handshake; default 10s, as containerd
	HeaderTimeout  time.Duration // wait for response headers; default 15s (containerd: 30s)
	StallTimeout   time.Duration // no blob bytes for this long is a stall; default 15s
	Timeout        time.Duration // the whole probe; default 10m
	Concurrency    int           // parallel blob downloads; default 3, as containerd

	// ExpectPrivate makes a registry name that resolves to a public address a dns failure
	// (a private endpoint whose private zone this node cannot see).
	ExpectPrivate bool
	// NoDownload stops each layer download after its first byte: every blob host is still reached
	// through its redirects, but nothing is verified (for very large images, or a rate-limited
	// registry). The config blob is still read whole: the platform check needs it.
	NoDownload bool
	// Sample, with NoDownload, reads the config blob alone, through every redirect: one blob read
	// reaches the blob host that registries serve every blob of a repository from (the resident
	// agent's quick rounds; its full rounds read every layer).
	Sample bool
	// Memo, in a quick round (NoDownload and Sample), reuses an earlier round's registry
	// authorization and manifests (see Memo); every round keeps what it got there.
	Memo *Memo
	// Node names this machine in the report; default: the hostname.
	Node string

	// Runtime, when set, makes the probe runtime-faithful: it walks the runtime's hosts in order with
	// their CA files, skip_verify, client certificates, headers and proxy.
	Runtime *runtimeconfig.Config
	// HostFile reads CA and client files named by Runtime (from the host root); default os.ReadFile.
	HostFile func(path string) ([]byte, error)

	// Progress, when set, receives blob download progress (for a terminal).
	Progress func(Progress)
	// Logger receives debug detail; default discards.
	Logger *slog.Logger
}

// Progress is a snapshot of the blob phase.
type Progress struct {
	Blobs, DoneBlobs int
	Bytes, DoneBytes int64
}

// Defaults.
const (
	DefaultConnectTimeout = 5 * time.Second
	DefaultTLSTimeout     = 10 * time.Second
	DefaultHeaderTimeout  = 15 * time.Second
	DefaultStallTimeout   = 15 * time.Second
	DefaultTimeout        = 10 * time.Minute
	DefaultConcurrency    = 3
)

func (o *Options) setDefaults() {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.TLSTimeout <= 0 {
		o.TLSTimeout = DefaultTLSTimeout
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}
