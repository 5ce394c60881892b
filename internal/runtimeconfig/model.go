package runtimeconfig

import (
	"net/url"

	"golang.org/x/net/http/httpproxy"

	"github.com/pullpath/pullpath/internal/report"
)

// Runtime names a container runtime.
type Runtime string

// Runtimes.
const (
	Containerd Runtime = "containerd"
	CRIO       Runtime = "crio"
	Docker     Runtime = "docker"
)

// Config is the runtime's effective pull configuration for one image. Its JSON is the contract of
// `pullpath runtime -o json` (docs/contract.md).
type Config struct {
	APIVersion    string      `json:"apiVersion"` // report.APIVersion
	Kind          string      `json:"kind"`       // "RuntimeReport"
	Runtime       Runtime     `json:"runtime"`
	Version       string      `json:"version,omitempty"`       // "" when nothing on the node says it
	VersionSource string      `json:"versionSource,omitempty"` // dpkg, the RPM database, a marker file or the binary
	Image         string      `json:"image"`
	Registry      string      `json:"registry"`
	HostRoot      string      `json:"hostRoot"`
	Detected      string      `json:"detected,omitempty"`   // why it was read without --host-root: the file found
	Files         []string    `json:"files"`                // configuration files read
	ConfigPath    *ConfigPath `json:"configPath,omitempty"` // containerd: the CRI's config_path and why it applies
	Hosts         []Host      `json:"hosts"`
	Proxy         Proxy       `json:"proxy"`
	Auth          string      `json:"auth,omitempty"` // credentials the runtime config holds for it (who, never the secret)
	Resolver      Resolver    `json:"resolver"`
	// Trust is the system trust the runtime loads on the node (its CA bundle), beside each host's ca
	Trust      *Trust      `json:"trust,omitempty"`
	ImageStore *ImageStore `json:"-"` // docker: which of dockerd's pullers runs (not in the schema yet)
	Warnings   []Warning   `json:"warnings"`

	rawProxy Proxy // unredacted, for the probe; never serialised
}

// ConfigPath is the CRI registry config_path containerd runs with, and where it comes from.
type ConfigPath struct {
	Path    string `json:"path"`              // possibly a ':'-separated list; "" when none applies
	Default bool   `json:"default,omitempty"` // containerd 2.2+'s built-in default: the config sets none
	Source  string `json:"source"`            // file:line, or "containerd 2.4.2's default"
	Why     string `json:"why,omitempty"`     // why the default applies, or why none does
}

// Host is one host the runtime tries for the image, in order.
type Host struct {
	Host         string              `json:"host"`                 // host:port
	URL          string              `json:"url"`                  // scheme://host[:port]/path the API is under (CRI-O: and the location's namespace)
	Repository   string              `json:"repository,omitempty"` // the repository asked of this host when the runtime rewrites it (CRI-O locations)
	Role         string              `json:"role"`                 // "mirror" or "registry"
	Capabilities []string            `json:"capabilities"`
	CA           []string            `json:"ca"`
	Client       [][2]string         `json:"client,omitempty"` // cert, key file pairs
	SkipVerify   bool                `json:"skipVerify"`
	PlainHTTP    bool                `json:"plainHTTP,omitempty"`
	HTTPFallback bool                `json:"httpFallback,omitempty"` // HTTPS (unverified) first, then plain HTTP when the handshake is answered in HTTP
	Header       map[string][]string `json:"header,omitempty"`       // values of credential headers redacted
	OverridePath bool                `json:"overridePath,omitempty"`
	DialTimeout  string              `json:"dialTimeout,omitempty"`
	Proxy        string              `json:"proxy"`          // the proxy this host is reached through, "" for direct
	Auth         string              `json:"auth,omitempty"` // credentials the runtime config holds for it (who, never the secret)
	Source       string              `json:"source"`         // file:line, or "default"

	headerRaw map[string][]string // unredacted, for the probe; never serialised

	authUser, authPass, authToken string // registry.configs auth, for the probe; never serialised
}

// APIRoot is the URL the host's API is under: URL, or for a rewritten repository its /v2 root.
func (h Host) APIRoot() string {
	if h.Repository == "" {
		return h.URL
	}
	u, err := url.Parse(h.URL)
	if err != nil {
		return h.URL
	}
	return u.Scheme + "://" + u.Host + "/v2"
}

// RawAuth returns the credentials the runtime's config holds for this host (for the probe only).
func (h Host) RawAuth() (user, password, identityToken string) {
	return h.authUser, h.authPass, h.authToken
}

// RawHeader returns the headers to send, unredacted (for the probe only).
func (h Host) RawHeader() map[string][]string { return h.headerRaw }

// ProxyFunc returns the proxy the runtime uses for a request URL, by Go's HTTP(S)_PROXY and
// NO_PROXY rules (which are containerd's), unredacted; nil when the runtime has no proxy.
func (c *Config) ProxyFunc() func(*url.URL) (*url.URL, error) {
	p := c.rawProxy
	if p.HTTPProxy == "" && p.HTTPSProxy == "" {
		return nil
	}
	return (&httpproxy.Config{HTTPProxy: p.HTTPProxy, HTTPSProxy: p.HTTPSProxy, NoProxy: p.NoProxy}).ProxyFunc()
}

// Proxy is the runtime's proxy environment, read from its service unit, not from a shell.
type Proxy struct {
	HTTPProxy  string `json:"httpProxy,omitempty"`
	HTTPSProxy string `json:"httpsProxy,omitempty"`
	NoProxy    string `json:"noProxy,omitempty"`
	Source     string `json:"source,omitempty"` // unit file(s) the variables came from
}

// Resolver is the resolver configuration the runtime's lookups use.
type Resolver struct {
	File        string   `json:"file"`
	Nameservers []string `json:"nameservers"`
	Search      []string `json:"search,omitempty"`
	Stub        bool     `json:"stub"` // systemd-resolved's 127.0.0.53 stub
	Upstream    []string `json:"upstream,omitempty"`
}

// Warning is a trap in the configuration, with a stable code, a severity and a fix.
type Warning struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix,omitempty"`
	Source   string   `json:"source,omitempty"`
}

// Severity says whether a warning changes the pull.
type Severity string

// Severities: an error breaks or silently changes the pull (exit 1); info does not change the exit code.
const (
	SeverityError Severity = "error"
	SeverityInfo  Severity = "info"
)

// Broken reports whether any warning is an error: the runtime's pull breaks or silently changes.
func (c *Config) Broken() bool {
	for _, w := range c.Warnings {
		if w.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Warning codes. Stable: scripts match on them.
const (
	WarnHostsTomlRejected   = "HOSTS_TOML_REJECTED"               // containerd 1.6 rejects a file without a [host] table
	WarnHostsTomlInvalid    = string(report.CodeHostsTomlInvalid) // not TOML, or wrong types
	WarnConfigPathUnset     = "CONFIG_PATH_UNSET"                 // certs.d files exist, config_path does not point at them
	WarnLegacyWithPath      = "LEGACY_WITH_CONFIG_PATH"           // mirrors/configs together with config_path: the CRI plugin fails to load
	WarnLegacyRegistry      = "LEGACY_REGISTRY_CONFIG"            // deprecated mirrors/configs in use
	WarnMirrorNoPull        = "MIRROR_NOT_USED_FOR_PULL"
	WarnSkipVerify          = "SKIP_VERIFY"
	WarnCAMissing           = string(report.CodeCAFileMissing)
	WarnCAUnparsable        = string(report.CodeCAFileUnparsable)
	WarnProxyNoNoProxy      = "PROXY_WITHOUT_NO_PROXY"
	WarnProxyNotForRuntime  = "PROXY_NOT_FOR_RUNTIME"
	WarnResolverStub        = "RESOLVER_STUB"             // info
	WarnProxyRoute          = "PROXY_ROUTE"               // info: a public registry through the proxy, as configured
	WarnMirrorNoResolve     = "MIRROR_NO_RESOLVE"         // info: a pull-only mirror serves content, not tags
	WarnMirrorSkipped       = "MIRROR_SKIPPED"            // info: CRI-O skips a digest-only/tag-only mirror for this reference
	WarnNoPullHost          = "NO_PULL_HOST"              // no host may resolve (or pull) this reference
	WarnRegistryShadowed    = "REGISTRY_TABLE_SHADOWED"   // 2.x migration drops a file's cri.v1.images registry table
	WarnTransferPathList    = "TRANSFER_CONFIG_PATH_LIST" // 2.1+ transfer service reads a ':' list as one directory
	WarnLegacyTLSIgnored    = "LEGACY_TLS_IGNORED"        // 2.x with config_path (2.2+: by default) ignores registry.configs.*.tls
	WarnRegistryBlocked     = "REGISTRY_BLOCKED"
	WarnInsecureRegistry    = "INSECURE_REGISTRY"
	WarnDockerMirrorHubOnly = "DOCKER_MIRRORS_HUB_ONLY" // info
	WarnConfigInvalid       = "CONFIG_INVALID"
	WarnPlainHTTP           = "PLAIN_HTTP"
)
