package report

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// APIVersion is the version of the JSON documents pullpath writes.
const APIVersion = "pullpath/v1alpha1"

// Probe is the result of one probe of one image from one network namespace.
// It is the JSON contract of `pullpath probe -o json` (docs/contract.md).
type Probe struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"` // "ProbeReport"
	Node       string `json:"node,omitempty"`
	Image      string `json:"image"`
	Reference  Ref    `json:"reference"`
	Platform   string `json:"platform"`

	Class       Class    `json:"class"`
	Owner       Owner    `json:"owner"` // stable token ("network", "dns", …); empty for ok and other
	OwnerText   string   `json:"ownerText,omitempty"`
	Code        Code     `json:"code"`
	Summary     string   `json:"summary"`
	WhereToLook string   `json:"whereToLook,omitempty"`
	Failing     *Failing `json:"failing"` // null when Class is ok
	Evidence    []string `json:"evidence,omitempty"`
	Alternative string   `json:"alternative,omitempty"` // when another reading of the same evidence is plausible
	// Interrupted is set when the run ended before a verdict (--timeout, a signal): the report is
	// partial, Failing names the step that was cut, and Class is other.
	Interrupted *Interruption `json:"interrupted,omitempty"`
	// CredentialSource names the identity the probe presented: "flag (…)", "pull secret FILE …",
	// "docker config", "credential provider NAME (file:line)", "runtime config (…)", "anonymous …".
	CredentialSource string `json:"credentialSource,omitempty"`
	// CredentialExpiry says when what the probe presented, or was given, stops working, where the
	// evidence shows it; absent when nothing is known.
	CredentialExpiry []Expiry `json:"credentialExpiry,omitempty"`

	Endpoints []Endpoint `json:"endpoints"`
	Download  Download   `json:"download"`
	Resolver  Resolver   `json:"resolver"`
	Trust     Trust      `json:"trust"`
	Runtime   *Runtime   `json:"runtime,omitempty"` // with --host-root: the runtime's hosts as tried
	CRI       *CRIResult `json:"cri,omitempty"`     // with --cri: the runtime's own pull
	Warnings  []Warning  `json:"warnings,omitempty"`
	Steps     []Step     `json:"steps"`
	Hops      []Hop      `json:"hops"`

	Started  time.Time `json:"started"`
	Duration Duration  `json:"durationMs"`
}

// Expiry is when one credential dies, and what says so. Remaining is counted from when the probe
// saw the evidence: 0, and Expired, when it was already past.
type Expiry struct {
	What      ExpiryWhat   `json:"what"`
	Expires   time.Time    `json:"expires"`
	Source    ExpirySource `json:"source"`
	Remaining Duration     `json:"remainingMs"`
	Expired   bool         `json:"expired,omitempty"`
}

// NewExpiry is what expires at exp, seen at now.
func NewExpiry(what ExpiryWhat, exp time.Time, source ExpirySource, now time.Time) Expiry {
	x := Expiry{What: what, Expires: exp.UTC(), Source: source, Remaining: Duration(exp.Sub(now))}
	if x.Remaining <= 0 {
		x.Remaining, x.Expired = 0, true
	}
	return x
}

// ExpiryWhat names what expires.
type ExpiryWhat string

const (
	ExpiryCredential    ExpiryWhat = "credential"     // what the probe presented (a JWT password, identity or registry token)
	ExpiryRegistryToken ExpiryWhat = "registry-token" // the bearer token the token realm issued; renewed at every pull
	ExpiryProviderCache ExpiryWhat = "provider-cache" // the kubelet's cache of a credential provider's answer
)

// ExpirySource is the evidence an expiry comes from.
type ExpirySource string

const (
	SourceJWTExp               ExpirySource = "jwt-exp"              // the exp claim of a JWT, read without verifying
	SourceExpiresIn            ExpirySource = "expires_in"           // the token response's expires_in (from issued_at, else its arrival)
	SourceCacheDuration        ExpirySource = "cacheDuration"        // the provider's CredentialProviderResponse
	SourceDefaultCacheDuration ExpirySource = "defaultCacheDuration" // the provider's config, when the response sets none
)

// Interruption says where a run was cut.
type Interruption struct {
	Reason string   `json:"reason"`           // "timeout" (--timeout ran out) or "canceled" (a signal, the caller)
	Signal string   `json:"signal,omitempty"` // the signal, when the command line knows it
	Step   StepName `json:"step"`             // the step in progress
	Host   string   `json:"host"`             // host:port it was in progress on
	Role   Role     `json:"role"`
}

// Ref is the parsed image reference as the runtime sees it.
type Ref struct {
	Registry   string `json:"registry"` // host[:port] as written (docker.io for Docker Hub)
	Host       string `json:"host"`     // host:port actually dialed (registry-1.docker.io:443 for Docker Hub)
	Repository string `json:"repository"`
	Tag        string `json:"tag,omitempty"`
	Digest     string `json:"digest,omitempty"`
}

// Failing names where the path broke.
type Failing struct {
	Host string   `json:"host"` // host:port
	Role Role     `json:"role"`
	Step StepName `json:"step"`
	Code Code     `json:"code"`
}

// Endpoint is one host:port the pull touched, with the result of each layer on it.
type Endpoint struct {
	Host      string               `json:"host"` // host:port as dialed
	Role      Role                 `json:"role"`
	Addresses []Address            `json:"addresses"`
	Steps     map[StepName]Verdict `json:"steps"`
	Via       string               `json:"via,omitempty"` // how the pull reached it ("WWW-Authenticate realm", "307 from registry.example:443")
}

// Address is one resolved address of an endpoint.
type Address struct {
	IP     string `json:"ip"`
	Scope  string `json:"scope"` // "private", "public", "loopback", "link-local"
	Route  string `json:"route,omitempty"`
	Dialed string `json:"dialed,omitempty"` // "ok", "refused", "timeout", ...
}

// Download is what the blob phase achieved.
type Download struct {
	Layers   int   `json:"layers"` // layer blobs fully downloaded (the config blob is counted in Blobs); reached, with Partial
	Blobs    int   `json:"blobs"`
	Expected int   `json:"expected"` // blobs the manifest lists (config + layers)
	Bytes    int64 `json:"bytes"`
	Verified bool  `json:"verified"` // every blob downloaded and its digest and size checked
	// Partial says the blob phase was cut short on purpose: "no-download" (--no-download) means each
	// layer was reached through its redirects and its first byte read, not downloaded; "sample" (the
	// resident agent's quick rounds) means the config blob alone was read; never verified.
	Partial  string   `json:"partial,omitempty"`
	Duration Duration `json:"durationMs"`
	MBps     float64  `json:"mbps"`
}

// Resolver records which resolver configuration the probe used.
type Resolver struct {
	Source      string   `json:"source"` // the resolv.conf read, or "--dns-server"
	Nameservers []string `json:"nameservers"`
	Search      []string `json:"search,omitempty"`
	Ndots       int      `json:"ndots"`
	HostsFile   string   `json:"hostsFile,omitempty"`
}

// Runtime records the runtime configuration a runtime-faithful probe followed.
type Runtime struct {
	Name     string        `json:"name"`
	Version  string        `json:"version,omitempty"`
	HostRoot string        `json:"hostRoot"`
	Detected string        `json:"detected,omitempty"` // read without --host-root because this file exists
	Hosts    []RuntimeHost `json:"hosts"`
}

// RuntimeHost is one host the runtime tries, in order, and how the probe's attempt on it ended.
type RuntimeHost struct {
	URL    string `json:"url"`
	Role   Role   `json:"role"`
	Source string `json:"source"`
	Trust  string `json:"trust,omitempty"` // what the runtime trusts for the host: the node's bundle, ca files, skip_verify
	Result string `json:"result"`          // "ok", "<class> <code> at <layer>", "not tried", "skipped: <why>"
}

// Trust records the TLS trust the probe used.
type Trust struct {
	SystemRoots bool `json:"systemRoots"`
	// Source says whose system roots: the node's bundle under the host root in a node probe, else
	// this machine's (a probe without a host root trusts what the machine it runs on trusts)
	Source   string   `json:"source,omitempty"`
	Node     bool     `json:"node,omitempty"` // the roots are the node's
	CAFiles  []string `json:"caFiles,omitempty"`
	Insecure bool     `json:"insecure"`
}

// Warning is a caveat that does not break the path on its own.
type Warning struct {
	Code    Code   `json:"code"`
	Host    string `json:"host,omitempty"`
	Message string `json:"message"`
}

// Step is one observation: one layer of one endpoint, with the evidence behind the verdict.
type Step struct {
	Step     StepName `json:"step"`
	Endpoint string   `json:"endpoint"`
	Role     Role     `json:"role"`
	Verdict  Verdict  `json:"verdict"`
	Code     Code     `json:"code,omitempty"`
	Summary  string   `json:"summary"`
	Evidence Evidence `json:"evidence"`
	Duration Duration `json:"durationMs"`
}

// Evidence is the typed detail behind a step; at most a few fields are set.
type Evidence struct {
	DNS   *DNS     `json:"dns,omitempty"`
	Dials []Dial   `json:"dials,omitempty"`
	TLS   *TLS     `json:"tls,omitempty"`
	HTTP  *HTTP    `json:"http,omitempty"`
	Lines []string `json:"lines,omitempty"`
}

// DNS is the evidence of one name resolution through the node's resolver.
type DNS struct {
	Name    string     `json:"name"`
	Source  string     `json:"source"` // "dns", "hosts file", "literal"
	Server  string     `json:"server,omitempty"`
	CNAMEs  []string   `json:"cnames,omitempty"`
	Addrs   []string   `json:"addrs,omitempty"`
	Queries []DNSQuery `json:"queries,omitempty"`
}

// DNSQuery is one question sent to one server.
type DNSQuery struct {
	Server string   `json:"server"`
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Rcode  string   `json:"rcode,omitempty"`
	Error  string   `json:"error,omitempty"`
	RTT    Duration `json:"rttMs"`
}

// Dial is one TCP connection attempt to one address.
type Dial struct {
	Addr     string   `json:"addr"`
	Route    string   `json:"route,omitempty"`
	Error    string   `json:"error,omitempty"`
	Duration Duration `json:"durationMs"`
}

// TLS is the evidence of one handshake.
type TLS struct {
	Version    string        `json:"version,omitempty"`
	ServerName string        `json:"serverName"`
	Chain      []Certificate `json:"chain,omitempty"`
	Error      string        `json:"error,omitempty"`
	Verified   bool          `json:"verified"`
}

// Certificate summarises one certificate of a chain; never the raw PEM.
type Certificate struct {
	Subject   string    `json:"subject"`
	Issuer    string    `json:"issuer"`
	DNSNames  []string  `json:"dnsNames,omitempty"`
	IPs       []string  `json:"ips,omitempty"`
	NotBefore time.Time `json:"notBefore"`
	NotAfter  time.Time `json:"notAfter"`
}

// HTTP is the evidence of one request/response, redacted at capture.
type HTTP struct {
	Method     string   `json:"method"`
	URL        string   `json:"url"`
	Status     int      `json:"status,omitempty"`
	ErrorCodes []string `json:"errorCodes,omitempty"` // registry errors[].code
	Message    string   `json:"message,omitempty"`
	Challenge  string   `json:"challenge,omitempty"` // WWW-Authenticate, as received (it carries no secret)
	Location   string   `json:"location,omitempty"`  // redacted
}

// Hop is one HTTP round trip of the pull, recorded by hoptrace.
type Hop struct {
	Seq      int      `json:"seq"`
	Role     Role     `json:"role"`
	Method   string   `json:"method"`
	URL      string   `json:"url"` // redacted: signed query values removed
	Host     string   `json:"host"`
	Addr     string   `json:"addr,omitempty"`   // the address dialed for this hop
	Reused   bool     `json:"reused,omitempty"` // over a kept-alive connection: no dial or handshake of its own
	TLS      string   `json:"tls,omitempty"`
	Status   int      `json:"status,omitempty"`
	Error    string   `json:"error,omitempty"`
	Phase    StepName `json:"phase"` // the last layer reached
	Duration Duration `json:"durationMs"`
}

// Findings is the JSON contract of `pullpath explain -o json`.
type Findings struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Findings   []Finding `json:"findings"`
}

// Finding is one classified failure message.
type Finding struct {
	Class        Class    `json:"class"`
	Owner        Owner    `json:"owner"`
	OwnerText    string   `json:"ownerText,omitempty"`
	Code         Code     `json:"code"`
	Host         string   `json:"host,omitempty"`
	Role         Role     `json:"role,omitempty"`
	Message      string   `json:"message"`
	Reason       string   `json:"reason"`
	Image        string   `json:"image,omitempty"`
	Operation    string   `json:"operation,omitempty"`
	Resolver     string   `json:"resolver,omitempty"`
	Address      string   `json:"address,omitempty"`
	URL          string   `json:"url,omitempty"`
	Alternatives []Class  `json:"alternatives,omitempty"`
	Decide       string   `json:"decide,omitempty"`
	NextSteps    []string `json:"nextSteps,omitempty"`
	Count        int      `json:"count"`
	Sources      []string `json:"sources,omitempty"`

	// Decided says whether the text alone settles the class (Alternatives, most likely first, are
	// empty then); DecidedBecause is the one-line reason: the cause the message names, or why not.
	Decided        bool   `json:"decided"`
	DecidedBecause string `json:"decidedBecause"`
	SourcesOmitted int    `json:"sourcesOmitted,omitempty"` // sources left out of Sources
}

// Duration is a time.Duration that reads and writes JSON as milliseconds (a float with microsecond
// precision): the one duration unit of every pullpath document.
type Duration time.Duration

// MarshalJSON writes the duration in milliseconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, math.Round(float64(d)/1e3)/1e3, 'f', -1, 64), nil
}

// UnmarshalJSON reads milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	ms, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration: want milliseconds, got %s", b)
	}
	*d = Duration(ms * 1e6)
	return nil
}

// Std is the duration as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// Allowlist is the JSON contract of `pullpath probe --allowlist -o json`.
type Allowlist struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"` // "Allowlist"
	Image      string      `json:"image"`
	Complete   bool        `json:"complete"` // the walk reached every host the pull touches
	Hosts      []AllowHost `json:"hosts"`
	// StoppedAt is where the walk stopped when it is not complete; Undiscovered says which hosts it
	// therefore could not learn.
	StoppedAt    *Failing `json:"stoppedAt,omitempty"`
	Undiscovered []string `json:"undiscovered,omitempty"`
}

// AllowHost is one host:port the pull touched.
type AllowHost struct {
	Host string `json:"host"`
	Role Role   `json:"role"`
	Via  string `json:"via,omitempty"`
}
