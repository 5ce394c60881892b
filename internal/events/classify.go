package events

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/pullpath/pullpath/internal/hoptrace"
	"github.com/pullpath/pullpath/internal/report"
)

// rule maps the innermost cause found in a message to a code and the layer it broke at.
type rule struct {
	re    *regexp.Regexp
	code  report.Code
	layer report.StepName
}

// rules are tried in order, innermost cause first: a proxy failure wraps a DNS failure of the
// proxy's name, a DNS failure wraps "dial tcp", TLS errors come before the generic statuses,
// and runtime wrappers (context deadline, back-off) come last.
var rules = []rule{
	// the kubelet's follow-up events name only the waiting reason; the cause is in an earlier event
	{regexp.MustCompile(`^Error: (?:ErrImagePull|ImagePullBackOff|InvalidImageName|ErrImageNeverPull|ImageInspectError|RegistryUnavailable)$`), report.CodeBackoffNoCause, report.StepConfig},
	{regexp.MustCompile(`proxyconnect tcp|Proxy Authentication Required|\b407\b|error connecting to proxy`), report.CodeProxyFailed, report.StepTCP},
	{regexp.MustCompile(`via (?:proxy|HTTPS? proxy) \S+: connecting to \S+: (?:dial tcp|proxyconnect)`), report.CodeProxyFailed, report.StepTCP},
	// containerd wraps only transport errors in "failed to do request"; a bare status text there
	// ("…": Forbidden) is a CONNECT the proxy refused. A registry's own status comes with its number.
	{reProxyConnectRefused, report.CodeProxyFailed, report.StepHTTP},
	{regexp.MustCompile("failed to decode hosts\\.toml|invalid `host` tree"), report.CodeHostsTomlInvalid, report.StepConfig},
	// containers/image (CRI-O, podman, skopeo) refusing a registry its registries.conf blocks
	{regexp.MustCompile(`registry \S+ is blocked in `), report.CodeRegistryBlocked, report.StepConfig},
	{regexp.MustCompile(`lookup \S+(?: on \S+)?: no such host|No such host is known|Name or service not known|nodename nor servname provided|Failed to lookup host: |Could not resolve host`), report.CodeDNSNXDomain, report.StepDNS},
	{regexp.MustCompile(`lookup \S+(?: on \S+)?: server misbehaving`), report.CodeDNSServFail, report.StepDNS},
	{regexp.MustCompile(`lookup \S+ on \S+: (?:dial udp \S+: connect: \w[^"]*|read udp \S+: read: connection refused|write udp \S+: write: \w[^"]*)|:53: read: connection refused`), report.CodeDNSUnreachable, report.StepDNS},
	{regexp.MustCompile(`lookup \S+(?: on \S+)?: (?:read udp \S+ )?i/o timeout|lookup \S+: Try again|Temporary failure in name resolution|lookup \S+: device or resource busy|getaddrinfow`), report.CodeDNSTimeout, report.StepDNS},
	// Go before 1.x printed a resolver timeout as a dial without an address
	{regexp.MustCompile(`dial tcp: i/o timeout`), report.CodeDNSTimeout, report.StepDNS},
	{regexp.MustCompile(`server gave HTTP response to HTTPS client|first record does not look like a TLS handshake`), report.CodeTLSPlainHTTP, report.StepTLS},
	// the reverse: plain HTTP to a TLS port, in Go's and nginx's words, or as containerd before
	// 1.6.25 and 1.7.8 reports it for a localhost registry it speaks plain HTTP to: a bare 400
	// (the lab shows it with 1.6.20)
	{regexp.MustCompile(`Client sent an HTTP request to an HTTPS server|plain HTTP request was sent to HTTPS port|pulling from host (?:localhost|127\.[0-9.]+|\[::1\])(?::\d+)? failed with status code \[[^\]]*\]: 400 Bad Request`), report.CodeTLSRequired, report.StepTLS},
	// a plain-HTTP client got a TLS alert back: the server speaks HTTPS (0x15 0x03 is a TLS alert record)
	{regexp.MustCompile(`malformed HTTP response "\\x15\\x03`), report.CodeTLSHandshake, report.StepTLS},
	{regexp.MustCompile(`certificate is valid for .*, not |certificate is not valid for any names|legacy Common Name field`), report.CodeTLSNameMismatch, report.StepTLS},
	{regexp.MustCompile(`certificate has expired or is not yet valid`), report.CodeTLSExpired, report.StepTLS},
	{regexp.MustCompile(`certificate signed by unknown authority|unable to get local issuer certificate|self[- ]signed certificate`), report.CodeTLSUnknownAuthority, report.StepTLS},
	{regexp.MustCompile(`TLS handshake timeout`), report.CodeTLSHandshakeTimeout, report.StepTLS},
	{regexp.MustCompile(`remote error: tls: (?:certificate required|bad certificate|unknown certificate authority|expired certificate)`), report.CodeTLSClientCert, report.StepTLS},
	{regexp.MustCompile(`\btls: |remote error: tls|handshake failure`), report.CodeTLSHandshake, report.StepTLS},
	// a read that timed out mid-stream is a stall when a blob was being copied (fixed up in Classify)
	{regexp.MustCompile(`read tcp \S+->\S+: (?:read: )?(?:i/o timeout|connection timed out)`), report.CodeBlobStalled, report.StepBlob},
	{regexp.MustCompile(`connection refused|actively refused`), report.CodeTCPRefused, report.StepTCP},
	{regexp.MustCompile(`no route to host|host is unreachable|host unreachable|operation was attempted to an unreachable host`), report.CodeTCPHostUnreachable, report.StepTCP},
	// no source address for the destination's family: an IPv6 literal on a node without IPv6, or a
	// socket source the kernel refuses
	{regexp.MustCompile(`network is unreachable|cannot assign requested address|network unreachable|operation was attempted to an unreachable network|requested address is not valid in its context`), report.CodeTCPNetUnreachable, report.StepTCP},
	{regexp.MustCompile(`connection reset by peer|forcibly closed by the remote host|": EOF\b|: EOF$`), report.CodeTCPReset, report.StepTCP},
	{regexp.MustCompile(`dial tcp(?: \S+)?: i/o timeout|connection timed out|did not properly respond after a period of time|request canceled while waiting for connection|Client\.Timeout exceeded while awaiting headers|\b408 Request Time-?out|wsarecv: A connection attempt failed`), report.CodeTCPTimeout, report.StepTCP},
	// the AWS SDK's wording when the ECR auth API could not be reached at all
	{regexp.MustCompile(`RequestError: send request failed`), report.CodeTCPFailed, report.StepTCP},
	{regexp.MustCompile(`(?i)toomanyrequests|429 Too Many Requests|Status 429|Error 429|pull rate limit`), report.CodeRateLimited, report.StepManifest},
	{regexp.MustCompile(`no match for (?:current )?platform|no matching manifest for|could not find platform|no image found in manifest list for architecture|Error choosing image instance|image operating system "\w+" cannot be used on this platform|OpenRelative failed in Win32`), report.CodePlatformMismatch, report.StepManifest},
	{regexp.MustCompile(`no basic auth credentials|there are no credentials on this request|invalid username/password|incorrect username or password|unable to retrieve auth token`), report.CodeAuth401, report.StepAuth},
	// Harbor answers a user or robot without pull rights so (the text says unauthorized, the cause is rights)
	{regexp.MustCompile(`unauthorized to access repository`), report.CodeAuth403, report.StepAuth},
	{regexp.MustCompile(`pull access denied|repository does not exist or may require`), codeAmbiguousDenied, report.StepAuth},
	{regexp.MustCompile(`does not match bearer token resource|insufficient_scope`), report.CodeAuthInsufficientScope, report.StepAuth},
	// a credential that expired (ECR's 12-hour tokens, a node clock ahead of the issuer)
	{regexp.MustCompile(`(?i)authorization token has expired|\btoken (?:has|is) expired|token used before issued`), report.CodeAuth401, report.StepAuth},
	{regexp.MustCompile(`denied: requested access to the resource is denied`), codeHubDenied, report.StepAuth},
	// 451: the registry refuses this client's location (Docker Hub's export-control block)
	{regexp.MustCompile(`\b403\b|Forbidden|AuthorizationFailure|not authorized to perform this operation|\bdenied:|: denied$|access forbidden|permission_denied|"DENIED"|\b451\b|Unavailable For Legal Reasons`), report.CodeAuth403, report.StepAuth},
	{regexp.MustCompile(`\b401\b|Unauthorized|unauthorized|authentication required|not authorized|"UNAUTHORIZED"`), report.CodeAuth401, report.StepAuth},
	{regexp.MustCompile(`blob unknown|BLOB_UNKNOWN`), report.CodeBlobUnknown, report.StepBlob},
	{regexp.MustCompile(`manifest unknown|MANIFEST_UNKNOWN|name unknown|NAME_UNKNOWN|: not found\b|manifest for \S+ not found|repository \S+ not found|Tag \S+ not found in repository|\bimage \S+ not found\b`), report.CodeManifestUnknown, report.StepManifest},
	{regexp.MustCompile(`unexpected commit digest|verification failed for digest|[Dd]igest did not match|does not match (?:the )?(?:expected )?digest|digest mismatch`), report.CodeDigestMismatch, report.StepBlob},
	{regexp.MustCompile(`unexpected commit size|failed size validation|size mismatch`), report.CodeSizeMismatch, report.StepBlob},
	{regexp.MustCompile(`no space left on device`), report.CodeDiskFull, report.StepBlob},
	{regexp.MustCompile(`input/output error`), report.CodeDiskIO, report.StepBlob},
	{regexp.MustCompile(`failed to register layer|failed to extract layer|ApplyLayer|Untar re-exec error|failed to unpack`), report.CodeUnpackFailed, report.StepBlob},
	{regexp.MustCompile(`unexpected status(?: code)?(?: from \w+ request to)? \S+?: (\d{3})|received unexpected HTTP status: (\d{3})|status code \[?[^\]]*\]?:? ?(\d{3})`), report.CodeHTTPStatus, report.StepHTTP},
	{regexp.MustCompile(`context deadline exceeded|DeadlineExceeded`), report.CodeTimeout, report.StepTCP},
	{regexp.MustCompile(`context canceled|code = Canceled`), report.CodeCanceled, report.StepBlob},
	{regexp.MustCompile(`unexpected EOF`), report.CodeBlobFailed, report.StepBlob},
	{regexp.MustCompile(`ErrImageNeverPull|image pull policy is "Never"|not present with pull policy of Never`), report.CodeNeverPull, report.StepConfig},
	{regexp.MustCompile(`InvalidImageName|invalid reference format|could not parse reference`), report.CodeInvalidReference, report.StepConfig},
	{regexp.MustCompile(`(?i)back-off pulling image|ImagePullBackOff|ErrImagePull`), report.CodeBackoffNoCause, report.StepConfig},
}

var reBlocked = regexp.MustCompile(`^registry (\S+) is blocked in `)

// rulePrefilters hold each rule's literal precondition, in the order of rules.
var rulePrefilters = func() []prefilter {
	out := make([]prefilter, len(rules))
	for i, r := range rules {
		out[i] = newPrefilter(r.re)
	}
	return out
}()

// maxMessage bounds the text one finding is read from.
const maxMessage = 64 << 10

var reProxyConnectRefused = regexp.MustCompile(`failed to do request: (?:Get|Head|Post|GET|HEAD|POST) "?[^"\s]+"?: (?:Forbidden|Bad Gateway|Service Unavailable|Gateway Timeout|Bad Request|Not Found|Method Not Allowed|Internal Server Error|Unauthorized)\b`)

// Pseudo-codes resolved by the ambiguity rules below.
const (
	codeAmbiguousDenied report.Code = "_PULL_ACCESS_DENIED"
	codeHubDenied       report.Code = "_DENIED"
)

var resolverFailure = map[report.Code]bool{report.CodeDNSServFail: true, report.CodeDNSUnreachable: true, report.CodeDNSTimeout: true}

// Classify reads one failure message and returns its finding. Unknown text is class other with the
// message kept; it never fails. A message that joins several errors (one per credential the
// kubelet tried, mirrors then upstream) is read error by error: the most decisive one gives the
// class and host, the others' classes follow as alternatives.
func Classify(msg string) report.Finding {
	if len(msg) > maxMessage {
		// real messages are a few KiB; a hostile or runaway line must not cost seconds of regexps
		msg = msg[:maxMessage]
	}
	msg = cleanText(msg)
	if parts := splitErrors(msg); len(parts) > 1 {
		return classifyMany(msg, parts)
	}
	fd, _ := classifyOne(msg)
	return fd
}

// errPart is one error of a joined message; mirror says it came from a mirror the runtime tried first.
type errPart struct {
	text   string
	mirror bool
}

var (
	// the kubelet joins the error of each credential it tried: "[rpc error: …, rpc error: …]"
	reRPCList = regexp.MustCompile(`\[(rpc error: .*)\]\s*$`)
	reRPCSep  = regexp.MustCompile(`, rpc error: `)
	// containers/image (CRI-O, podman): "(Mirrors also failed: [m: err]): upstream: err"
	reMirrors = regexp.MustCompile(`\(Mirrors also failed: \[(.*)\]\): (.*)$`)
)

// splitErrors returns the errors a message joins, each with the wrapper that names the image.
func splitErrors(msg string) []errPart {
	if !strings.Contains(msg, "rpc error: ") && !strings.Contains(msg, "Mirrors also failed") {
		return nil
	}
	if loc := reMirrors.FindStringSubmatchIndex(msg); loc != nil {
		prefix := msg[:loc[0]]
		return []errPart{{text: prefix + msg[loc[2]:loc[3]], mirror: true}, {text: prefix + msg[loc[4]:loc[5]]}}
	}
	if loc := reRPCList.FindStringSubmatchIndex(msg); loc != nil {
		prefix := msg[:loc[0]]
		var out []errPart
		for _, p := range reRPCSep.Split(msg[loc[2]:loc[3]], -1) {
			if !strings.HasPrefix(p, "rpc error: ") {
				p = "rpc error: " + p
			}
			out = append(out, errPart{text: prefix + p})
		}
		return out
	}
	return nil
}

// decisiveness ranks classes when one message carries several errors: a platform mismatch, a
// missing tag or a certificate error says more than the generic 401 of an anonymous retry or a 5xx.
var decisiveness = map[report.Class]int{report.ClassPlatform: 0, report.ClassNotFound: 1, report.ClassTLS: 2, report.ClassProxy: 3,
	report.ClassDNS: 4, report.ClassRoute: 5, report.ClassEndpoint: 6, report.ClassForbidden: 7, report.ClassRateLimit: 8,
	report.ClassAuth: 9, report.ClassOther: 10}

func classifyMany(msg string, parts []errPart) report.Finding {
	var best report.Finding
	var bestMatched string
	bestRank := 99
	var all []report.Finding
	for _, p := range parts {
		fd, matched := classifyOne(p.text)
		if p.mirror && fd.Role == report.RoleRegistry {
			fd.Role = report.RoleMirror
		}
		rank := decisiveness[fd.Class]
		if p.mirror && fd.Code != report.CodeUnknown {
			rank = -1 // the runtime was configured to pull from the mirror: its error is the one meant
		}
		if rank < bestRank {
			best, bestMatched, bestRank = fd, matched, rank
		}
		all = append(all, fd)
	}
	for _, fd := range all {
		if fd.Class != best.Class && !slices.Contains(best.Alternatives, fd.Class) && fd.Code != report.CodeUnknown {
			best.Alternatives = append(best.Alternatives, fd.Class)
		}
	}
	best.Message = redactText(msg)
	best.Decided, best.DecidedBecause = decided(best, bestMatched)
	if len(parts) > 1 && best.Decided {
		best.DecidedBecause += fmt.Sprintf(" (the most decisive of %d errors in the message)", len(parts))
	}
	return best
}

// classifyOne reads one error and returns its finding and the text of the cause it matched.
func classifyOne(msg string) (report.Finding, string) {
	f := readFacts(msg)
	host, role := f.failingHost()
	code, layer := report.CodeUnknown, report.StepConfig
	matched := ""
	lower := strings.ToLower(f.text)
	for i, r := range rules {
		if !rulePrefilters[i].mayMatch(lower) {
			continue
		}
		if loc := r.re.FindStringIndex(f.text); loc != nil {
			code, layer = r.code, r.layer
			matched = f.text[loc[0]:loc[1]]
			break
		}
	}
	if code == report.CodeProxyFailed && role != report.RoleProxy {
		// the message names the target, not the proxy: the proxy is the failing hop
		host, role = "", report.RoleProxy
	}
	if (role == report.RoleRegistry || role == "") && (strings.Contains(f.text, "failed to authorize") || strings.Contains(f.text, "anonymous token") || strings.Contains(f.text, "auth token")) {
		role = report.RoleToken
	}
	switch {
	case code == report.CodeBlobStalled && !f.blobPhase && !strings.Contains(f.text, "/blobs/"):
		// a read that timed out before any blob was being copied: the registry stopped answering
		code, layer = report.CodeTCPTimeout, report.StepTCP
	case code == report.CodeAuth403 && (role == report.RoleBlob || f.blobPhase && role != report.RoleToken && role != report.RoleProxy):
		// the manifest passed and the download was refused: object storage, not the identity
		code, layer, role = report.CodeBlobForbidden, report.StepBlob, report.RoleBlob
		if host == f.registryHost() {
			host = ""
		}
	}
	if m := reBlocked.FindStringSubmatch(matched); m != nil && host == "" {
		host, role = m[1], report.RoleRegistry
	}
	host = f.withPort(host, role)
	fd := report.Finding{Code: code, Host: host, Role: role, Message: redactText(msg), Image: f.image, Resolver: f.resolver,
		Address: f.addr, URL: f.urlText, Count: 1}
	fd.Operation = f.operation(role)
	hub := f.registry == "docker.io" || (f.registry == "" && f.image == "")

	switch code {
	case codeAmbiguousDenied:
		if hub {
			fd.Code, fd.Class = report.CodeNameUnknown, report.ClassNotFound
			fd.Alternatives = []report.Class{report.ClassAuth}
			fd.Reason = "the registry refused an anonymous or unauthorised pull; Docker Hub answers a repository that does not exist exactly like a private one, so the name is the first suspect"
		} else {
			fd.Code, fd.Class = report.CodeAuth401, report.ClassAuth
			fd.Alternatives = []report.Class{report.ClassNotFound, report.ClassForbidden}
			fd.Reason = "the registry refused the pull without valid credentials for this repository (it also answers so for a repository that does not exist)"
		}
	case codeHubDenied:
		if hub {
			fd.Code, fd.Class = report.CodeNameUnknown, report.ClassNotFound
			fd.Alternatives = []report.Class{report.ClassAuth}
			fd.Reason = "Docker Hub denied access: the repository does not exist under this name, or it is private and no credentials were sent"
		} else {
			fd.Code, fd.Class = report.CodeAuth403, report.ClassForbidden
			fd.Alternatives = []report.Class{report.ClassAuth}
			fd.Reason = "the registry denied access to the repository for the identity used"
		}
	default:
		switch code {
		case report.CodeUnknown, report.CodeBackoffNoCause, report.CodeNeverPull, report.CodeInvalidReference,
			report.CodeDiskFull, report.CodeDiskIO, report.CodeUnpackFailed:
			fd.Class = report.ClassOther // on the node or in the pod spec: no host of the pull to blame
		case report.CodeTimeout:
			fd.Class = report.ClassRoute
			fd.Alternatives = []report.Class{report.ClassEndpoint, report.ClassOther}
		case report.CodeCanceled, report.CodeBlobFailed:
			fd.Class = report.ClassOther
			fd.Alternatives = []report.Class{report.ClassRoute, report.ClassEndpoint}
		default:
			// one taxonomy with the probe: the class is what ClassFor says for this role, step and code
			fd.Class = report.ClassFor(role, layer, code)
			// what broke, wherever it broke: when the role decides the class, the cause is the alternative
			inner := report.ClassFor(report.RoleRegistry, layer, code)
			if resolverFailure[code] {
				inner = report.ClassDNS
			}
			if code == report.CodeBlobForbidden {
				inner = report.ClassForbidden
			}
			if inner != fd.Class && inner != report.ClassOther {
				fd.Alternatives = append(fd.Alternatives, inner)
			}
		}
		if code == report.CodeAuth401 && (hub || strings.Contains(f.registry, "quay.io") || strings.Contains(f.text, "anonymous")) {
			fd.Alternatives = []report.Class{report.ClassNotFound}
		}
		if fd.Code == report.CodeAuth403 && fd.Class == report.ClassForbidden {
			// registries also answer 403 to stale or foreign credentials
			fd.Alternatives = []report.Class{report.ClassAuth}
		}
		fd.Reason = reason(fd, f)
		if v := vendorMeaning(f, fd); v != nil {
			fd.Class, fd.Alternatives = v.classes[0], slices.Clone(v.classes[1:])
			fd.Reason += "; " + v.why
		}
	}
	fd.Owner, fd.OwnerText = fd.Class.Owner(), fd.Class.OwnerText()
	fd.Decided, fd.DecidedBecause = decided(fd, matched)
	fd.NextSteps = nextSteps(fd, f)
	fd.Decide = decide(fd, f)
	return fd, matched
}

// vendorPhrase is what a registry's own words meant in the threads of the dev corpus: the causes
// behind the phrase, most frequent first.
type vendorPhrase struct {
	registry, phrase *regexp.Regexp
	classes          []report.Class
	why              string
}

var vendorPhrases = []vendorPhrase{
	{regexp.MustCompile(`(^|\.)ghcr\.io$`), regexp.MustCompile(`denied: denied|\bdenied$`), []report.Class{report.ClassAuth, report.ClassForbidden, report.ClassNotFound},
		"ghcr.io answers \"denied\" to missing or stale credentials (a PAT without read:packages) more often than to a package the identity may not read"},
	{regexp.MustCompile(`(^|\.)gitlab\.`), regexp.MustCompile(`access forbidden`), []report.Class{report.ClassNotFound, report.ClassForbidden, report.ClassAuth},
		"GitLab's registry answers 403 \"access forbidden\" for a project or image path that does not exist as for one the identity may not read"},
}

// vendorMeaning finds the registry-specific reading of an ambiguous denial.
func vendorMeaning(f facts, fd report.Finding) *vendorPhrase {
	if fd.Code != report.CodeAuth401 && fd.Code != report.CodeAuth403 {
		return nil
	}
	reg := f.registry
	if reg == "" {
		reg = hostName(fd.Host)
	}
	for i := range vendorPhrases {
		v := &vendorPhrases[i]
		if v.registry.MatchString(hostName(reg)) && v.phrase.MatchString(f.text) {
			return v
		}
	}
	return nil
}

// reTruncated is a message cut before its end: a trailing colon, an ellipsis, an open quote.
var reTruncated = regexp.MustCompile(`(?:[:(\[,"]|…|\.\.\.|\[\.\.\.\])\s*$`)

// decided says whether the text settles the class, and why in one line.
func decided(fd report.Finding, matched string) (bool, string) {
	switch fd.Code {
	case report.CodeUnknown:
		if reTruncated.MatchString(fd.Message) {
			return false, "the message is cut off before its cause"
		}
		return false, "no cause pullpath knows is named in the text"
	case report.CodeBackoffNoCause:
		return false, "a back-off or follow-up event that carries no cause; the cause is in an earlier event, or in the probe"
	case report.CodeTimeout, report.CodeCanceled:
		return false, "a deadline or cancellation with no cause underneath: the text does not say which step was slow"
	case report.CodeBlobFailed:
		return false, "the download broke off without saying why"
	}
	if strings.HasSuffix(matched, "EOF") {
		return false, "an EOF says the connection was closed, not who closed it (a firewall, a proxy, the server)"
	}
	if len(fd.Alternatives) > 0 {
		alts := make([]string, len(fd.Alternatives))
		for i, a := range fd.Alternatives {
			alts[i] = string(a)
		}
		return false, fmt.Sprintf("%q is also what %s looks like; the probe from the node decides", clip(matched, 60), strings.Join(alts, " or "))
	}
	return true, fmt.Sprintf("the message names the cause: %q", clip(matched, 80))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func reason(fd report.Finding, f facts) string {
	h := fd.Host
	if h == "" {
		h = "the host"
	}
	on := ""
	if f.resolver != "" {
		on = " (asked " + f.resolver + ")"
	}
	switch fd.Code {
	case report.CodeProxyFailed:
		if reProxyConnectRefused.MatchString(f.text) {
			target := "the registry"
			if f.url != nil {
				target = f.url.Host
			}
			return "the HTTP proxy in the runtime's environment refused to open a tunnel to " + target + " (a bare status after \"failed to do request\" is the proxy's CONNECT answer, not the registry's)"
		}
		return fmt.Sprintf("the runtime sends the pull through an HTTP proxy (%s) that it cannot use", h)
	case report.CodeRegistryBlocked:
		return fmt.Sprintf("the runtime's registries.conf blocks %s (blocked = true) and no mirror served the pull: it refuses the pull without contacting anything", h)
	case report.CodeHostsTomlInvalid:
		return "containerd rejected a hosts.toml and silently ignored its settings (its ca among them), so TLS then fails with an unknown authority"
	case report.CodeDNSNXDomain:
		return fmt.Sprintf("the node's resolver%s says %s does not exist (NXDOMAIN)", on, h)
	case report.CodeDNSServFail:
		return fmt.Sprintf("the node's resolver%s failed to resolve %s (SERVFAIL: a broken forwarder or zone)", on, h)
	case report.CodeDNSUnreachable:
		return fmt.Sprintf("the node cannot reach its resolver%s: the DNS query to port 53 failed before any answer", on)
	case report.CodeDNSTimeout:
		return fmt.Sprintf("the node's resolver%s did not answer for %s in time", on, h)
	case report.CodeTLSPlainHTTP:
		return fmt.Sprintf("%s answered plain HTTP where the runtime speaks HTTPS", h)
	case report.CodeTLSRequired:
		return fmt.Sprintf("%s speaks only TLS and the runtime sends it plain HTTP (containerd before 1.6.25 and 1.7.8 does so for a localhost registry with no server configured)", h)
	case report.CodeTLSNameMismatch:
		return fmt.Sprintf("the certificate %s presents is not valid for that name", h)
	case report.CodeTLSExpired:
		return fmt.Sprintf("the certificate %s presents has expired (or the node's clock is wrong)", h)
	case report.CodeTLSUnknownAuthority:
		return fmt.Sprintf("the certificate %s presents is signed by an authority the runtime does not trust (a private CA, or a TLS-inspecting proxy)", h)
	case report.CodeTLSClientCert:
		return fmt.Sprintf("%s refused the TLS session over the client certificate: it requires one it trusts (mTLS), and the runtime presented none or another", h)
	case report.CodeTLSHandshakeTimeout:
		return fmt.Sprintf("TCP to %s connected but the TLS handshake never completed: MTU, a DPI firewall or a proxy in the way", h)
	case report.CodeTCPRefused:
		return fmt.Sprintf("the connection to %s was refused: nothing listens there, or a firewall rejects", addrOr(f, h))
	case report.CodeTCPHostUnreachable, report.CodeTCPNetUnreachable:
		return fmt.Sprintf("the node has no working route to %s", addrOr(f, h))
	case report.CodeTCPTimeout:
		return fmt.Sprintf("the connection to %s timed out: packets are dropped (firewall, security group, missing route or return path)", addrOr(f, h))
	case report.CodeTCPReset:
		return fmt.Sprintf("the connection to %s was reset mid-way (a firewall or proxy cutting it)", addrOr(f, h))
	case report.CodeRateLimited:
		return fmt.Sprintf("%s throttles this client (429)", h)
	case report.CodePlatformMismatch:
		return "the image has no manifest for the node's OS/architecture"
	case report.CodeAuth401:
		return fmt.Sprintf("%s requires credentials that were not presented or not accepted (401)", h)
	case report.CodeAuthInsufficientScope:
		return "the token the registry issued does not cover pulling this repository (insufficient scope)"
	case report.CodeAuth403:
		return fmt.Sprintf("%s denied the request (403): the identity lacks rights, or a network rule blocks this client", h)
	case report.CodeBlobForbidden:
		if reExpiredSignature.MatchString(f.text) {
			return fmt.Sprintf("the blob host (%s) refused the download because the signed URL had expired (403): the node's clock, or a download delayed past the URL's lifetime", h)
		}
		return fmt.Sprintf("the manifest was served, then the blob host (%s) refused the download (403): a storage firewall, private endpoint or VPC endpoint policy, or a rewritten/expired signed URL", h)
	case report.CodeBlobStalled:
		return fmt.Sprintf("the blob download from %s started and then stopped delivering bytes (a read timed out mid-stream)", h)
	case report.CodeDigestMismatch:
		return "the downloaded bytes do not match the digest the manifest names: altered or truncated on the way (a caching proxy or mirror, a TLS-inspecting middlebox) or corrupt in storage"
	case report.CodeSizeMismatch:
		return "the downloaded blob has another size than the manifest says: truncated or altered on the way, or corrupt in storage"
	case report.CodeManifestUnknown, report.CodeNameUnknown:
		return "the repository, tag or digest does not exist in the registry"
	case report.CodeBlobUnknown:
		return "the registry lists a blob it cannot serve"
	case report.CodeDiskFull:
		return "the node ran out of disk space while unpacking the image (the runtime's root, e.g. /var/lib/containerd)"
	case report.CodeDiskIO:
		return "the node's disk failed while writing the image"
	case report.CodeUnpackFailed:
		return "the download worked; unpacking a layer on the node failed"
	case report.CodeHTTPStatus:
		return fmt.Sprintf("%s answered an unexpected HTTP status", h)
	case report.CodeTimeout:
		return "the pull ran out of time (the client's or kubelet's deadline): a silent network drop or a stalled download"
	case report.CodeCanceled:
		return "the pull was cancelled before it finished, usually by the kubelet's runtime request timeout while a large or slow download was running"
	case report.CodeBlobFailed:
		return "the download broke off mid-way"
	case report.CodeNeverPull:
		return "imagePullPolicy is Never and the image is not on the node"
	case report.CodeInvalidReference:
		return "the image reference in the pod spec is malformed"
	case report.CodeBackoffNoCause:
		return "the kubelet is backing off after earlier failures; this event does not carry the cause: read the earlier \"Failed to pull image\" event, or probe"
	}
	return "pullpath does not recognise this message"
}

func addrOr(f facts, h string) string {
	if f.addr != "" && h != "the host" && h != "" {
		return h + " (" + f.addr + ")"
	}
	if f.addr != "" {
		return f.addr
	}
	return h
}

// reExpiredSignature is object storage saying the signed URL is no longer valid.
var reExpiredSignature = regexp.MustCompile(`(?i)request has expired|signature (?:not valid in the specified time|expired)|url signature expired|ExpiredToken|token is expired`)

// nextSteps lists what to check for this finding's code first (a refused connection, a stall and
// a digest mismatch do not share a fix), with the names and the port from the message.
func nextSteps(fd report.Finding, f facts) []string {
	h := fd.Host
	if h == "" {
		h = "the failing host"
	}
	port := f.port(fd.Host)
	where := addrOr(f, h)
	allow := ""
	if fd.Role == report.RoleBlob || fd.Role == report.RoleToken || fd.Role == report.RoleMirror {
		allow = fmt.Sprintf("%s is a %s endpoint of this pull: allow it like the registry itself (firewall, proxy allowlist, private DNS); list every host with: pullpath probe --allowlist %s", h, roleWord(fd.Role), imageOr(fd))
	}
	steps := func(s ...string) []string {
		if allow != "" {
			s = append(s, allow)
		}
		return s
	}
	switch fd.Code {
	case report.CodeRegistryBlocked:
		return []string{"remove blocked = true from the [[registry]] entry for this prefix (/etc/containers/registries.conf or a registries.conf.d drop-in), or give it a mirror that serves the image; pullpath runtime --host-root shows the entry"}
	case report.CodeTCPRefused:
		return steps(fmt.Sprintf("nothing accepts TCP %s at %s: check that the service listens on port %s (the registry, its load balancer or ingress), and that the port in the image reference or mirror is right", port, where, port),
			fmt.Sprintf("or a firewall actively rejects TCP %s (a REJECT rule, a host firewall on the registry)", port))
	case report.CodeTCPTimeout:
		return steps(fmt.Sprintf("packets to %s on TCP %s are dropped: check the security rules / firewall for TCP %s at both ends and the node's effective route", where, port, port),
			"check the return path (asymmetric routing through a firewall drops the replies)")
	case report.CodeTCPHostUnreachable, report.CodeTCPNetUnreachable:
		return steps(fmt.Sprintf("the node has no working route to %s: check its route table (UDR, VPN, peering, gateway); for an IPv6 address, that the node has IPv6 connectivity at all", where))
	case report.CodeTCPReset:
		return steps(fmt.Sprintf("a middlebox resets TCP %s to %s (firewall, IPS, proxy): check its logs and rules for this destination", port, where),
			"a TLS-inspecting or SNI-filtering firewall resets connections to names it does not allow")
	case report.CodeTLSHandshakeTimeout:
		return steps(fmt.Sprintf("TCP %s to %s connects but TLS never completes: check the path MTU (VPN, overlay: large handshake packets dropped), a DPI firewall, or a proxy the runtime should be using", port, h))
	case report.CodeBlobForbidden:
		if reExpiredSignature.MatchString(f.text) {
			return []string{"check the node's clock (timedatectl, chrony/NTP): signed blob URLs are valid for minutes",
				"check for a proxy or scanner that holds the download until the URL expires"}
		}
		return steps(fmt.Sprintf("check the storage account / bucket network rules (firewall, private endpoint, VPC endpoint policy) for the node's egress address towards %s", h),
			"check that no proxy rewrites the signed URL (a stripped or re-encoded query is refused with 403)",
			"only if storage allows the node: the pull identity's rights (the registry signs URLs only for identities it authorised)")
	case report.CodeBlobStalled:
		return steps(fmt.Sprintf("the download from %s stopped mid-way: check proxy/firewall idle timeouts and the link's throughput (pullpath probe measures both)", h),
			"a large image on a slow link also hits the kubelet's runtime-request-timeout (2m by default): raise it only once the path is known good")
	case report.CodeDigestMismatch, report.CodeSizeMismatch:
		return []string{"purge this blob from any pull-through cache or mirror on the path and pull again",
			"pull once bypassing proxies and TLS-inspecting middleboxes to see which one alters the bytes; if it persists, the blob is corrupt in the registry: push the image again"}
	case report.CodeRateLimited:
		return []string{"authenticate pulls (imagePullSecrets: authenticated quotas are higher) or use a pull-through mirror",
			"check for a shared egress address (NAT) that pools many nodes' anonymous quota"}
	}
	switch fd.Class {
	case report.ClassDNS:
		s := []string{fmt.Sprintf("from the node (not a pod): resolve %s with the node's resolver%s", hostName(h), orEmpty(" "+f.resolver)),
			"check the DNS servers the node uses (VNet/VPC DNS settings), private zone links and conditional forwarders"}
		if fd.Code == report.CodeDNSUnreachable || fd.Code == report.CodeDNSTimeout {
			s[0] = fmt.Sprintf("check that the node reaches its resolver%s on UDP/TCP 53 (routes, security rules, the resolver's health)", orEmpty(" "+f.resolver))
		}
		return s
	case report.ClassRoute:
		return []string{fmt.Sprintf("check the node's effective route to %s and the security rules for TCP %s at both ends", where, port),
			"check the return path (asymmetric routing through a firewall drops the replies)"}
	case report.ClassEndpoint:
		if fd.Code == report.CodeDNSNXDomain || resolverFailure[fd.Code] {
			return steps(fmt.Sprintf("resolve %s from the node: a private DNS zone or split-horizon view must hold it too", hostName(h)))
		}
		return steps(fmt.Sprintf("check what %s answers from the node (pullpath probe shows each step)", h))
	case report.ClassTLS:
		if fd.Code == report.CodeTLSPlainHTTP {
			return []string{fmt.Sprintf("serve TLS on %s, or declare it plain HTTP for the runtime (containerd: certs.d/%s/hosts.toml server = \"http://%s\")", h, certsDir(h), h)}
		}
		if fd.Code == report.CodeTLSRequired {
			return []string{fmt.Sprintf("have the runtime speak HTTPS to %s (containerd: certs.d/%s/hosts.toml server = \"https://%s\" with its ca, or skip_verify), or upgrade containerd to 1.6.25+/1.7.8+, which tries HTTPS first for localhost", h, certsDir(h), h)}
		}
		if fd.Code == report.CodeHostsTomlInvalid {
			return []string{"fix the hosts.toml containerd rejected (containerd 1.6 needs a [host.\"…\"] table or an empty [host]); see pullpath runtime"}
		}
		if fd.Code == report.CodeTLSClientCert {
			return []string{fmt.Sprintf("give the runtime the client certificate %s expects: containerd certs.d/%s/hosts.toml client = [\"cert\", \"key\"]", h, certsDir(h))}
		}
		if fd.Code == report.CodeTLSExpired {
			return []string{fmt.Sprintf("check the validity dates of the certificate %s serves, and the node's clock (timedatectl)", h),
				"a TLS-inspecting proxy with an expired certificate of its own shows the same error"}
		}
		return []string{fmt.Sprintf("inspect the certificate %s serves: names, issuer, validity", h),
			fmt.Sprintf("trust its CA for the runtime: containerd certs.d/%s/hosts.toml ca = \"…\", or the node's CA bundle, then restart the runtime", certsDir(h))}
	case report.ClassAuth:
		return []string{"check the pod's imagePullSecrets (namespace, registry key, expiry) or the kubelet credential provider / node identity",
			"confirm the repository name: some registries answer 401 for a repository that does not exist"}
	case report.ClassForbidden:
		return []string{"grant the identity pull rights on this repository (e.g. AcrPull, ECR repository policy, GAR Artifact Registry Reader)", "check the registry's network rules for the node's egress address"}
	case report.ClassNotFound:
		return []string{fmt.Sprintf("check the image reference %s: registry, repository, tag or digest", orDash(fd.Image)), "check that the release pipeline pushed it"}
	case report.ClassPlatform:
		return []string{"publish a manifest for the node's platform (multi-arch build), or schedule the pod on matching nodes"}
	case report.ClassProxy:
		return []string{fmt.Sprintf("check the runtime's proxy environment (HTTP(S)_PROXY in its systemd unit): the proxy %s must resolve and accept connections", h),
			"add private registries to NO_PROXY"}
	}
	return nil
}

// certsDir is containerd's certs.d directory name for a host: the name alone on 443, host:port otherwise.
func certsDir(h string) string {
	if name, p, err := net.SplitHostPort(h); err == nil && p == "443" {
		return name
	}
	return h
}

// hostName is a host without its port.
func hostName(h string) string {
	if name, _, err := net.SplitHostPort(h); err == nil {
		return name
	}
	return h
}

func imageOr(fd report.Finding) string {
	if fd.Image == "" {
		return "IMAGE"
	}
	return fd.Image
}

func roleWord(r report.Role) string {
	switch r {
	case report.RoleToken:
		return "token (auth realm)"
	case report.RoleBlob:
		return "blob download (redirect)"
	case report.RoleMirror:
		return "mirror"
	}
	return string(r)
}

// decide is the one command that settles the diagnosis from the node.
func decide(fd report.Finding, f facts) string {
	if fd.Class == report.ClassOther && fd.Code != report.CodeBackoffNoCause && fd.Code != report.CodeTimeout && fd.Code != report.CodeCanceled {
		return ""
	}
	img := fd.Image
	if img == "" {
		img = "IMAGE"
	}
	cmd := "pullpath probe " + img + decideWhere
	if len(fd.Alternatives) > 0 && (fd.Class == report.ClassNotFound || fd.Class == report.ClassAuth) {
		// anonymous first: then again with the pod's own secret tells a missing repository from a private one
		cmd += "; then again with --pull-secret and the pod's pull secret (kubectl get secret -o yaml)"
	}
	return cmd
}

// decideWhere says where the probe pulls the way the runtime does: on the node it reads the
// runtime's configuration by itself; in a pod it needs the host mounted.
const decideWhere = "   # on the node (reads the runtime's config), or in a hostNetwork pod with dnsPolicy: Default and the host mounted: --host-root /host"

func orEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "in the pod spec"
	}
	return s
}

var (
	reURLAll  = regexp.MustCompile(`https?://[^\s"'\\<>\x60]+`)
	reAuthHdr = mustLit(`(?i)(authorization["']?\s*[:=]\s*\[?["']?)(bearer|basic)\s+[A-Za-z0-9._~+/=-]+`)
	reKV      = mustLit(`(?i)\b(password|passwd|secret|access_token|refresh_token|token)=([^&\s"]+)`)
)

// Redact is a message as explain shows it: at most maxMessage bytes, terminal escapes removed and
// other control characters escaped, credentials redacted (signed URL queries, Authorization
// values, password= and token= pairs). For another program's text shown as evidence (a runtime's
// error, a credential provider's stderr); Classify's Message is the same.
func Redact(msg string) string {
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	return redactText(cleanText(msg))
}

// redactText removes credentials from a message before it is shown or stored: signed URL queries,
// Authorization headers, password= and token= pairs. Everything else is kept byte for byte.
func redactText(s string) string {
	if strings.Contains(s, "://") {
		s = reURLAll.ReplaceAllStringFunc(s, func(u string) string {
			u, tail := trimURL(u)
			return redactURLText(u) + tail
		})
	}
	low := strings.ToLower(s)
	if reAuthHdr.pf.mayMatch(low) {
		s = reAuthHdr.ReplaceAllString(s, "${1}${2} "+hoptrace.Redacted)
	}
	if reKV.pf.mayMatch(low) {
		s = reKV.ReplaceAllString(s, "${1}="+hoptrace.Redacted)
	}
	return s
}

// trimURL splits a URL found in prose from the punctuation that follows it ("…/v2/: dial",
// "…?ns=docker.io: 400", "(https://…)"): the punctuation is the message's, not the URL's.
func trimURL(u string) (string, string) {
	end := len(u)
	for end > 0 {
		c := u[end-1]
		if c == '.' || c == ',' || c == ';' || c == ':' || c == '!' || c == '\'' ||
			c == ')' && strings.Count(u[:end], "(") < strings.Count(u[:end], ")") ||
			c == ']' && strings.Count(u[:end], "[") < strings.Count(u[:end], "]") {
			end--
			continue
		}
		break
	}
	return u[:end], u[end:]
}

// redactURLText redacts a URL where it stands: user info and every query value outside the
// probe's allow-list become REDACTED; keys, their order and all other bytes stay as written.
func redactURLText(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		hostEnd := strings.IndexAny(rest, "/?#")
		if hostEnd < 0 {
			hostEnd = len(rest)
		}
		if at := strings.LastIndexByte(rest[:hostEnd], '@'); at >= 0 {
			u = u[:i+3] + hoptrace.Redacted + rest[at:]
		}
	}
	q := strings.IndexByte(u, '?')
	frag := strings.IndexByte(u, '#')
	if frag >= 0 {
		u = u[:frag+1] + hoptrace.Redacted
	}
	if q < 0 || frag >= 0 && frag < q {
		return u
	}
	end := len(u)
	if frag >= 0 {
		end = frag
	}
	parts := strings.Split(u[q+1:end], "&")
	for i, p := range parts {
		k, _, hasV := strings.Cut(p, "=")
		if ku, err := url.QueryUnescape(k); err == nil && hoptrace.SafeQueryKey(ku) {
			continue
		}
		if hasV {
			parts[i] = k + "=" + hoptrace.Redacted
		} else if p != "" {
			parts[i] = hoptrace.Redacted
		}
	}
	return u[:q+1] + strings.Join(parts, "&") + u[end:]
}
