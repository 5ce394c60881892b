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

// Config is the runtime's effective pull configuration for one image, as the loader reads it;
// Report is its JSON and text view, `pullpath runtime`'s (docs/contract.md).
type Config struct {
	Runtime       Runtime
	Version       string // "" when nothing on the node says it
	VersionSource string // dpkg, the RPM database, a marker file or the binary
	Image         string
	Registry      string
	HostRoot      string
	Detected      string      // why it was read without --host-root: the file found
	Files         []string    // configuration files read
	ConfigPath    *ConfigPath // containerd: the CRI's config_path and why it applies
	Hosts         []Host
	Proxy         Proxy
	Auth          string // credentials the runtime config holds for it (who, never the secret)
	Resolver      Resolver
	// Trust is the system trust the runtime loads on the node (its CA bundle), beside each host's ca
	Trust      *Trust
	ImageStore *ImageStore // docker: which of dockerd's pullers runs (not in the schema yet)
	Warnings   []Warning

	rawProxy Proxy // unredacted, for the probe; never reported
}

// The parts of Config that are plain data are report's types.
type (
	ConfigPath = report.RuntimeConfigPath
	Proxy      = report.RuntimeProxy
	Resolver   = report.RuntimeResolver
	Warning    = report.RuntimeWarning
	Severity   = report.RuntimeSeverity
)

// Host is one host the runtime tries for the image, in order: what the report shows of it, and
// what the probe needs besides (the raw headers and credentials).
type Host struct {
	Host         string // host:port
	URL          string // scheme://host[:port]/path the API is under (CRI-O: and the location's namespace)
	Repository   string // the repository asked of this host when the runtime rewrites it (CRI-O locations)
	Role         string // "mirror" or "registry"
	Capabilities []string
	CA           []string
	Client       [][2]string // cert, key file pairs
	SkipVerify   bool
	PlainHTTP    bool
	HTTPFallback bool                // HTTPS (unverified) first, then plain HTTP when the handshake is answered in HTTP
	Header       map[string][]string // values of credential headers redacted
	OverridePath bool
	DialTimeout  string
	Proxy        string // the proxy this host is reached through, "" for direct
	Auth         string // credentials the runtime config holds for it (who, never the secret)
	Source       string // file:line, or "default"

	headerRaw map[string][]string // unredacted, for the probe; never reported

	authUser, authPass, authToken string // registry.configs auth, for the probe; never reported
}

// Report is c's view for `pullpath runtime`: the contract's RuntimeReport, without what only the
// probe may see (raw headers, credentials, the proxy's userinfo).
func (c *Config) Report() *report.RuntimeReport {
	r := &report.RuntimeReport{APIVersion: report.APIVersion, Kind: "RuntimeReport", Runtime: string(c.Runtime), Version: c.Version,
		VersionSource: c.VersionSource, Image: c.Image, Registry: c.Registry, HostRoot: c.HostRoot, Detected: c.Detected,
		Files: c.Files, Proxy: c.Proxy, Auth: c.Auth, Resolver: c.Resolver, Warnings: c.Warnings}
	if c.ConfigPath != nil {
		cp := *c.ConfigPath
		r.ConfigPath = &cp
	}
	if c.Hosts != nil {
		r.Hosts = make([]report.RuntimeReportHost, 0, len(c.Hosts))
	}
	for _, h := range c.Hosts {
		r.Hosts = append(r.Hosts, report.RuntimeReportHost{Host: h.Host, URL: h.URL, Repository: h.Repository, Role: h.Role,
			Capabilities: h.Capabilities, CA: h.CA, Client: h.Client, SkipVerify: h.SkipVerify, PlainHTTP: h.PlainHTTP,
			HTTPFallback: h.HTTPFallback, Header: h.Header, OverridePath: h.OverridePath, DialTimeout: h.DialTimeout,
			Proxy: h.Proxy, Auth: h.Auth, Source: h.Source})
	}
	if t := c.Trust; t != nil {
		r.Trust = &report.RuntimeTrust{File: t.File, Dirs: t.Dirs, CAs: t.CAs, Env: t.Env, Problems: t.Problems}
	}
	return r
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

// Severities of a Warning.
const (
	SeverityError = report.SeverityError
	SeverityInfo  = report.SeverityInfo
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
