package report

import (
	"fmt"
	"strings"
)

// StepName is one step of the pull path, in the order the runtime traverses it.
type StepName int

// The layers of evidence per endpoint (docs/taxonomy.md#steps), in pull order.
const (
	StepConfig StepName = iota
	StepDNS
	StepRoute
	StepTCP
	StepTLS
	StepHTTP
	StepAuth
	StepManifest
	StepBlob
)

var layerNames = [...]string{"config", "dns", "route", "tcp", "tls", "http", "auth", "manifest", "blob"}

// EndpointSteps are the layers shown per endpoint in the inventory, in order.
var EndpointSteps = []StepName{StepDNS, StepRoute, StepTCP, StepTLS, StepHTTP, StepAuth, StepManifest, StepBlob}

func (l StepName) String() string {
	if l < 0 || int(l) >= len(layerNames) {
		return fmt.Sprintf("step(%d)", int(l))
	}
	return layerNames[l]
}

// MarshalText renders the layer as its lowercase name ("dns").
func (l StepName) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText parses a layer name.
func (l *StepName) UnmarshalText(b []byte) error {
	for i, n := range layerNames {
		if n == string(b) {
			*l = StepName(i)
			return nil
		}
	}
	return fmt.Errorf("unknown layer %q", b)
}

// Verdict is the result of one observation.
type Verdict string

// Verdicts.
const (
	Pass Verdict = "pass"
	Warn Verdict = "warn" // works, but not the way the node would, or with a caveat
	Fail Verdict = "fail"
	Skip Verdict = "skip" // an earlier layer failed
)

// Role is what an endpoint is for in the pull.
type Role string

// Endpoint roles (docs/taxonomy.md#endpoint-roles).
const (
	RoleRegistry Role = "registry"
	RoleToken    Role = "token"
	RoleBlob     Role = "blob"
	RoleMirror   Role = "mirror"
	RoleProxy    Role = "proxy"
)

// Class is the diagnosis: which part of the pull path broke (docs/taxonomy.md).
type Class string

// Classes (docs/taxonomy.md#classes).
const (
	ClassOK        Class = "ok"
	ClassDNS       Class = "dns"
	ClassRoute     Class = "route"
	ClassEndpoint  Class = "endpoint"
	ClassTLS       Class = "tls"
	ClassAuth      Class = "auth"
	ClassForbidden Class = "forbidden"
	ClassNotFound  Class = "not_found"
	ClassPlatform  Class = "platform"
	ClassRateLimit Class = "rate_limit"
	ClassProxy     Class = "proxy"
	ClassOther     Class = "other"
)

// Owner is who fixes a class of failure: a stable token scripts can route on. OwnerText says it in prose.
type Owner string

// Owners (docs/taxonomy.md#classes): one token per team that fixes a class.
const (
	OwnerNetwork     Owner = "network"     // routes, firewalls, security rules, allowlists
	OwnerDNS         Owner = "dns"         // resolvers, private zones, forwarders
	OwnerRegistry    Owner = "registry"    // the registry's operator: quotas, storage, its own bugs
	OwnerIdentity    Owner = "identity"    // pull secrets, credential providers, role assignments
	OwnerPKI         Owner = "pki"         // certificates and the trust the runtime is given
	OwnerNodeConfig  Owner = "node-config" // the node's runtime configuration: proxy, hosts.toml
	OwnerApplication Owner = "application" // the image reference, the build, the release pipeline
)

type classInfo struct {
	owner     Owner
	ownerText string
	what      string
	lookAt    string
	ordinal   int
}

var classes = map[Class]classInfo{
	ClassOK:        {"", "", "the whole path holds, every layer downloaded and verified", "", 0},
	ClassDNS:       {OwnerDNS, "DNS (the node's resolver and the private zones it sees)", "the node's resolver cannot resolve a name of the pull, or resolves it to the wrong place", "VNet/VPC DNS settings, private zone links, the resolver the node actually uses", 1},
	ClassRoute:     {OwnerNetwork, "network (routes and security rules between the node and the registry API)", "no network path from the node to the registry API address", "effective routes on the node NIC, gateway transit, security rules at both ends, the return path", 2},
	ClassEndpoint:  {OwnerNetwork, "network + registry (every host the registry hands out must be allowed, resolvable and routed)", "the registry API works but another host handed out during the pull fails", "every hostname the registry hands out during the pull (the allowlist): token realm, blob redirect / data endpoint, mirror", 3},
	ClassTLS:       {OwnerPKI, "PKI / node config (the certificate, and the trust the runtime is configured with)", "certificate not trusted, wrong name, expired, or plain HTTP where HTTPS is expected", "the server certificate's name and chain, and the trust the runtime is configured with (certs.d/<host>/hosts.toml ca, the node's CA bundle)", 4},
	ClassAuth:      {OwnerIdentity, "identity (pull secret, credential provider, node identity)", "no or wrong credentials (401)", "the pull secret, the kubelet credential provider, the node identity", 5},
	ClassForbidden: {OwnerIdentity, "identity (the rights of the pull identity; or the registry's network rules)", "the identity lacks rights, or a registry network rule denies (403)", "the scope of the pull identity (role assignment on this repository); the registry's network rules", 6},
	ClassNotFound:  {OwnerApplication, "application (the image reference and the pipeline that pushes it)", "repository, tag or digest absent", "the image reference in the pod spec, the release pipeline that should have pushed it", 7},
	ClassPlatform:  {OwnerApplication, "application (the image build)", "no manifest for the node's OS/architecture", "the image build: publish a manifest for this platform", 8},
	ClassRateLimit: {OwnerRegistry, "registry (its quota; or use a mirror)", "the registry throttles (429)", "the registry quota, authenticated pulls, a pull-through mirror", 9},
	ClassProxy:     {OwnerNodeConfig, "node config (the runtime's proxy environment)", "an HTTP proxy on the runtime's path fails", "the runtime's proxy environment (HTTPS_PROXY, NO_PROXY in the containerd unit)", 10},
	ClassOther:     {"", "", "anything else (disk, unpack, registry bug, unknown)", "the evidence below and the registry's own logs", 11},
}

// Owner returns who fixes this class (docs/taxonomy.md#classes); empty for ok and other.
func (c Class) Owner() Owner { return classes[c].owner }

// OwnerText is the owner in prose, for people; empty for ok and other.
func (c Class) OwnerText() string { return classes[c].ownerText }

// What is the one-line meaning of the class.
func (c Class) What() string { return classes[c].what }

// LookAt is the generic "where to look" of the class.
func (c Class) LookAt() string { return classes[c].lookAt }

// Valid reports whether c is one of the classes (docs/taxonomy.md#classes).
func (c Class) Valid() bool { _, ok := classes[c]; return ok }

// Classes lists every class in taxonomy order.
func Classes() []Class {
	out := make([]Class, len(classes))
	for c, i := range classes {
		out[i.ordinal] = c
	}
	return out
}

// Code is a stable machine code shared by probe and explain ("DNS_NXDOMAIN").
type Code string

// Stable codes. Add, never rename: scripts match on them.
const (
	CodeOK                    Code = "OK"
	CodeDNSNXDomain           Code = "DNS_NXDOMAIN"
	CodeDNSNoData             Code = "DNS_NO_ADDRESSES"
	CodeDNSServFail           Code = "DNS_SERVFAIL"
	CodeDNSRefused            Code = "DNS_REFUSED"
	CodeDNSTimeout            Code = "DNS_TIMEOUT"
	CodeDNSUnreachable        Code = "DNS_RESOLVER_UNREACHABLE"
	CodeDNSNoResolver         Code = "DNS_NO_RESOLVER"
	CodeDNSPublicForPrivate   Code = "DNS_PUBLIC_ADDRESS"
	CodeDNSNameInvalid        Code = "DNS_NAME_INVALID" // a host handed out that is no DNS name (> 253, a label > 63): never resolved
	CodeRouteNone             Code = "ROUTE_NONE"
	CodeTCPTimeout            Code = "TCP_TIMEOUT"
	CodeTCPRefused            Code = "TCP_REFUSED"
	CodeTCPHostUnreachable    Code = "TCP_HOST_UNREACHABLE"
	CodeTCPNetUnreachable     Code = "TCP_NETWORK_UNREACHABLE"
	CodeTCPReset              Code = "TCP_RESET"
	CodeTCPFailed             Code = "TCP_FAILED"
	CodeTLSUnknownAuthority   Code = "TLS_UNKNOWN_AUTHORITY"
	CodeTLSNameMismatch       Code = "TLS_NAME_MISMATCH"
	CodeTLSExpired            Code = "TLS_EXPIRED"
	CodeTLSInvalid            Code = "TLS_INVALID_CERTIFICATE"
	CodeTLSPlainHTTP          Code = "HTTP_PLAIN_ON_TLS"
	CodeTLSRequired           Code = "HTTP_PLAIN_TO_TLS" // the reverse: plain HTTP sent to a port that speaks only TLS
	CodeRegistryBlocked       Code = "REGISTRY_BLOCKED"  // the runtime's own configuration refuses the registry (CRI-O blocked)
	CodeTLSHandshakeTimeout   Code = "TLS_HANDSHAKE_TIMEOUT"
	CodeTLSHandshake          Code = "TLS_HANDSHAKE_FAILED"
	CodeTLSClientCert         Code = "TLS_CLIENT_CERT_REJECTED"
	CodeTLSInsecure           Code = "TLS_VERIFY_DISABLED"
	CodeHTTPTimeout           Code = "HTTP_TIMEOUT"
	CodeHTTPStatus            Code = "HTTP_UNEXPECTED_STATUS"
	CodeHTTPNotRegistry       Code = "HTTP_NOT_A_REGISTRY"
	CodeHTTPFailed            Code = "HTTP_FAILED"
	CodeHTTPRedirectLoop      Code = "HTTP_REDIRECT_LOOP"
	CodeHTTPDowngrade         Code = "HTTP_REDIRECT_TO_PLAIN_HTTP"
	CodeAuthChallengeInvalid  Code = "AUTH_CHALLENGE_INVALID"
	CodeAuth401               Code = "AUTH_401"
	CodeAuth403               Code = "AUTH_403"
	CodeAuthInsufficientScope Code = "AUTH_INSUFFICIENT_SCOPE"
	CodeAuthTokenInvalid      Code = "AUTH_TOKEN_RESPONSE_INVALID"
	// the kubelet credential provider failed (exit, timeout, bad response) or gave nothing for the image
	CodeCredentialProviderFailed Code = "CREDENTIAL_PROVIDER_FAILED"
	CodeCredentialProviderNoAuth Code = "CREDENTIAL_PROVIDER_NO_AUTH"
	// a warning: several credentials from the kubelet's providers match; the kubelet tries each in turn
	CodeCredentialProviderMore Code = "CREDENTIAL_PROVIDER_MORE"
	// a warning: the pod's pull secrets (several covering entries, or one and then the node's
	// credential providers' answers) give several credentials; the kubelet tries each in turn
	CodePullSecretMore      Code = "PULL_SECRET_MORE"
	CodeRealmUnreachable    Code = "REALM_UNREACHABLE"
	CodeRealmLocal          Code = "REALM_LOCAL_ADDRESS" // a token host on a loopback or link-local address the registry is not on: no credentials given
	CodeRateLimited         Code = "RATE_LIMITED"
	CodeManifestUnknown     Code = "MANIFEST_UNKNOWN"
	CodeNameUnknown         Code = "NAME_UNKNOWN"
	CodeManifestInvalid     Code = "MANIFEST_INVALID"
	CodeManifestTooLarge    Code = "MANIFEST_TOO_LARGE"
	CodeManifestUnsupported Code = "MANIFEST_UNSUPPORTED"
	CodeManifestDigest      Code = "MANIFEST_DIGEST_MISMATCH"
	CodePlatformMismatch    Code = "PLATFORM_NO_MATCH"
	CodeBlobUnknown         Code = "BLOB_UNKNOWN"
	CodeBlobRedirectFailed  Code = "BLOB_REDIRECT_UNREACHABLE"
	CodeBlobForbidden       Code = "BLOB_FORBIDDEN"
	CodeBlobStalled         Code = "BLOB_STALLED"
	CodeDigestMismatch      Code = "DIGEST_MISMATCH"
	CodeSizeMismatch        Code = "SIZE_MISMATCH"
	CodeBlobFailed          Code = "BLOB_FAILED"
	CodeProxyFailed         Code = "PROXY_FAILED"
	CodeProxyLoop           Code = "PROXY_LOOP"
	// a warning: a host the runtime reaches through its proxy is internal by the node's evidence
	CodeProxyWithoutNoProxy Code = "PROXY_WITHOUT_NO_PROXY"
	CodeTimeout             Code = "TIMEOUT"
	CodeCanceled            Code = "CANCELED"
	CodeHostsTomlInvalid    Code = "HOSTS_TOML_INVALID"
	CodeDiskFull            Code = "DISK_FULL"
	CodeDiskIO              Code = "DISK_IO_ERROR"
	CodeUnpackFailed        Code = "UNPACK_FAILED"
	CodeBackoffNoCause      Code = "BACKOFF_NO_CAUSE"
	CodeNeverPull           Code = "IMAGE_NEVER_PULL"
	CodeInvalidReference    Code = "INVALID_REFERENCE"
	CodeKubeletPullQPS      Code = "KUBELET_PULL_QPS" // the kubelet's own registryPullQPS throttle, not the registry's
	CodeHostSkipped         Code = "HOST_SKIPPED"
	CodeNotDownloaded       Code = "NOT_DOWNLOADED" // --no-download: layers reached, not downloaded
	CodeCAFileMissing       Code = "CA_FILE_MISSING"
	CodeCAFileUnparsable    Code = "CA_FILE_UNPARSABLE"
	CodeClientCertMissing   Code = "CLIENT_CERT_MISSING"
	CodeClientCertInvalid   Code = "CLIENT_CERT_INVALID"
	CodeUnknown             Code = "UNKNOWN"
)

// Known reports whether c is one of the stable codes: a code read from a node's report is used
// only when it is (watch says UNKNOWN otherwise).
func (c Code) Known() bool { return knownCodes[c] }

// knownCodes are the constants above (TestKnownCodesAreTheConstants keeps them in step).
var knownCodes = map[Code]bool{
	CodeOK:                       true,
	CodeDNSNXDomain:              true,
	CodeDNSNoData:                true,
	CodeDNSServFail:              true,
	CodeDNSRefused:               true,
	CodeDNSTimeout:               true,
	CodeDNSUnreachable:           true,
	CodeDNSNoResolver:            true,
	CodeDNSPublicForPrivate:      true,
	CodeDNSNameInvalid:           true,
	CodeRouteNone:                true,
	CodeTCPTimeout:               true,
	CodeTCPRefused:               true,
	CodeTCPHostUnreachable:       true,
	CodeTCPNetUnreachable:        true,
	CodeTCPReset:                 true,
	CodeTCPFailed:                true,
	CodeTLSUnknownAuthority:      true,
	CodeTLSNameMismatch:          true,
	CodeTLSExpired:               true,
	CodeTLSInvalid:               true,
	CodeTLSPlainHTTP:             true,
	CodeTLSRequired:              true,
	CodeRegistryBlocked:          true,
	CodeTLSHandshakeTimeout:      true,
	CodeTLSHandshake:             true,
	CodeTLSClientCert:            true,
	CodeTLSInsecure:              true,
	CodeHTTPTimeout:              true,
	CodeHTTPStatus:               true,
	CodeHTTPNotRegistry:          true,
	CodeHTTPFailed:               true,
	CodeHTTPRedirectLoop:         true,
	CodeHTTPDowngrade:            true,
	CodeAuthChallengeInvalid:     true,
	CodeAuth401:                  true,
	CodeAuth403:                  true,
	CodeAuthInsufficientScope:    true,
	CodeAuthTokenInvalid:         true,
	CodeCredentialProviderFailed: true,
	CodeCredentialProviderNoAuth: true,
	CodeCredentialProviderMore:   true,
	CodePullSecretMore:           true,
	CodeRealmUnreachable:         true,
	CodeRealmLocal:               true,
	CodeRateLimited:              true,
	CodeManifestUnknown:          true,
	CodeNameUnknown:              true,
	CodeManifestInvalid:          true,
	CodeManifestTooLarge:         true,
	CodeManifestUnsupported:      true,
	CodeManifestDigest:           true,
	CodePlatformMismatch:         true,
	CodeBlobUnknown:              true,
	CodeBlobRedirectFailed:       true,
	CodeBlobForbidden:            true,
	CodeBlobStalled:              true,
	CodeDigestMismatch:           true,
	CodeSizeMismatch:             true,
	CodeBlobFailed:               true,
	CodeProxyFailed:              true,
	CodeProxyLoop:                true,
	CodeProxyWithoutNoProxy:      true,
	CodeTimeout:                  true,
	CodeCanceled:                 true,
	CodeHostsTomlInvalid:         true,
	CodeDiskFull:                 true,
	CodeDiskIO:                   true,
	CodeUnpackFailed:             true,
	CodeBackoffNoCause:           true,
	CodeNeverPull:                true,
	CodeInvalidReference:         true,
	CodeKubeletPullQPS:           true,
	CodeHostSkipped:              true,
	CodeNotDownloaded:            true,
	CodeCAFileMissing:            true,
	CodeCAFileUnparsable:         true,
	CodeClientCertMissing:        true,
	CodeClientCertInvalid:        true,
	CodeUnknown:                  true,
}

// TLSOnlyPortAnswer is how web servers answer plain HTTP on a port that speaks only TLS (Go's
// net/http, nginx), as a regular expression: the probe reads it in a 400 body, explain in a
// runtime's error text; both give CodeTLSRequired.
const TLSOnlyPortAnswer = `Client sent an HTTP request to an HTTPS server|plain HTTP request was sent to HTTPS port`

// ClassFor maps where a failure was observed to its class, following docs/taxonomy.md: class follows what
// broke, role says where. A certificate failure is tls and a credential failure auth on any host;
// a host other than the registry API that cannot be reached (dns, route, tcp) or fails at the
// storage level (a 403 or 5xx from object storage) is endpoint.
func ClassFor(role Role, step StepName, code Code) Class {
	switch code {
	case CodeAuth401:
		return ClassAuth
	case CodeAuth403:
		if role == RoleBlob {
			return ClassEndpoint // a 403 from object storage is a network rule or an expired signature, not identity
		}
		return ClassForbidden
	case CodeAuthInsufficientScope:
		return ClassForbidden
	case CodeRateLimited:
		return ClassRateLimit
	case CodeProxyFailed:
		return ClassProxy
	case CodeDigestMismatch:
		// the bytes, not a host's reachability: altered on the way, corrupt in storage, or a
		// client's bug; the same class on the registry and on a blob host, in the probe and explain
		return ClassOther
	}
	// class follows what broke, role says where (docs/taxonomy.md): a certificate failure is tls on any
	// host — a TLS-inspecting firewall in front of the blob storage is tls, role blob
	if role != RoleProxy && code != CodeTLSHandshakeTimeout && (step == StepTLS || code == CodeTLSPlainHTTP || code == CodeHTTPDowngrade) {
		return ClassTLS
	}
	switch role {
	case RoleToken, RoleBlob, RoleMirror:
		return ClassEndpoint // reachability of a host other than the registry API
	case RoleProxy:
		return ClassProxy
	}
	if code == CodeTLSHandshakeTimeout {
		// TCP connected but the handshake never finished: MTU, a DPI firewall or a proxy, not PKI
		return ClassRoute
	}
	switch code {
	case CodeManifestUnknown, CodeNameUnknown, CodeBlobUnknown:
		return ClassNotFound
	case CodePlatformMismatch, CodeManifestUnsupported:
		// no manifest the node's runtime can use (its platform, or a format it no longer reads
		// such as schema 1): fixed in the image build, like a missing platform
		return ClassPlatform
	case CodeTLSPlainHTTP, CodeHTTPDowngrade, CodeHostsTomlInvalid:
		return ClassTLS
	case CodeDNSPublicForPrivate:
		return ClassDNS
	}
	switch step {
	case StepDNS:
		return ClassDNS
	case StepRoute, StepTCP:
		return ClassRoute
	case StepTLS:
		return ClassTLS
	}
	return ClassOther
}

// ParseClass accepts a class name, case-insensitively.
func ParseClass(s string) (Class, error) {
	c := Class(strings.ToLower(strings.TrimSpace(s)))
	if !c.Valid() {
		return "", fmt.Errorf("unknown class %q", s)
	}
	return c, nil
}
