package events

import (
	"slices"
	"strings"

	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/report"
)

// reading is one error being read: the facts of its text, the rule that matched, and the finding
// the corrections below make of it, in the order classifyOne applies them. Each correction is one
// piece of knowledge about how a rule's literal reading can mislead, and changes the reading only
// when its condition holds.
type reading struct {
	f     facts
	code  report.Code
	layer report.StepName
	// host and role are where the text places the failure; the corrections may move them
	host string
	role report.Role
	// matched is the cause as the text says it (quoted, and the host a rule names is read from
	// it); cause is the same place in the prose, where statuses and class words are read
	matched, cause string
	// hub says Docker Hub is meant: the image's registry, or no image and no URL naming another host
	hub bool
	fd  report.Finding
}

// newReading reads the facts of msg and the first rule, innermost cause first, that matches.
func newReading(msg string) *reading {
	r := &reading{f: readFacts(msg), code: report.CodeUnknown, layer: report.StepConfig}
	r.host, r.role = r.f.failingHost()
	for i, rl := range rules {
		if !rulePrefilters()[i].mayMatch(r.f.proseLow) {
			continue
		}
		if loc := rl.re.FindStringIndex(r.f.prose); loc != nil {
			r.code, r.layer = rl.code, rl.layer
			r.matched, r.cause = r.f.text[loc[0]:loc[1]], r.f.prose[loc[0]:loc[1]]
			break
		}
	}
	return r
}

// proxyIsTheHop: a proxy failure whose text names the target, not the proxy, fails at the proxy.
func (r *reading) proxyIsTheHop() {
	if r.code == report.CodeProxyFailed && r.role != report.RoleProxy {
		r.host, r.role = "", report.RoleProxy
	}
}

// tokenFetch: a failure the text places on the registry happened while getting its token.
func (r *reading) tokenFetch() {
	if (r.role == report.RoleRegistry || r.role == "") && slices.ContainsFunc(tokenWords, func(w string) bool { return strings.Contains(r.f.prose, w) }) {
		r.role = report.RoleToken
	}
}

// byPhase corrects a reading by the phase of the pull the text was in.
func (r *reading) byPhase() {
	r.stalledBeforeBlob()
	r.cutAtEndpoint()
	r.storageRefusal()
}

// stalledBeforeBlob: a read that timed out before any blob was being copied is the registry that
// stopped answering, not a stalled download.
func (r *reading) stalledBeforeBlob() {
	if r.code == report.CodeBlobStalled && !r.f.blobPhase && !strings.Contains(r.f.text, "/blobs/") {
		r.code, r.layer = report.CodeTCPTimeout, report.StepTCP
	}
}

// cutAtEndpoint: the connection to a named token, blob or mirror host was cut mid-answer: that
// host's reachability (endpoint), not an unexplained download failure.
func (r *reading) cutAtEndpoint() {
	if r.code == report.CodeBlobFailed && r.host != "" && (r.role == report.RoleToken || r.role == report.RoleBlob || r.role == report.RoleMirror) {
		r.code, r.layer = report.CodeTCPReset, report.StepTCP
	}
}

// storageRefusal: the manifest passed and the download was refused: object storage, not the identity.
func (r *reading) storageRefusal() {
	if r.code == report.CodeAuth403 && (r.role == report.RoleBlob || r.f.blobPhase && r.role != report.RoleToken && r.role != report.RoleProxy) {
		r.code, r.layer, r.role = report.CodeBlobForbidden, report.StepBlob, report.RoleBlob
		if r.host == r.f.registryHost() {
			r.host = ""
		}
	}
}

// blockedRegistry: registries.conf's refusal names the blocked registry.
func (r *reading) blockedRegistry() {
	if r.code == report.CodeRegistryBlocked && r.host == "" {
		r.host, r.role = reBlocked.FindStringSubmatch(r.matched)[1], report.RoleRegistry
	}
}

// shortName: containers/image refused a short name ("nginx") it could not resolve to one
// registry: no registry was asked, and the docker.io a reference parser would fill in is not the
// host the runtime would have picked (its unqualified-search registries decide that).
func (r *reading) shortName() {
	if r.code == report.CodeInvalidReference && reShortName.MatchString(r.f.text) && r.host == r.f.registry {
		r.host, r.role = "", ""
	}
}

// onTheNode: the node's own disk and the kubelet's own throttle fail on the node, whatever registry
// the text names: no host of the pull is to blame.
func (r *reading) onTheNode() {
	switch r.code {
	case report.CodeDiskFull, report.CodeDiskIO, report.CodeKubeletPullQPS:
		r.host, r.role = "", ""
	}
}

// resetPeer: a reset read or write names the peer it was talking to ("read tcp A->PEER: …
// connection reset by peer"); that is the address the finding names when no dial did.
func (r *reading) resetPeer() {
	if r.code != report.CodeTCPReset || r.fd.Address != "" {
		return
	}
	if m := reResetPeer.FindStringSubmatch(r.f.text); m != nil {
		r.fd.Address = m[1]
	}
}

// reResetPeer is the remote end of a read or write that failed.
var reResetPeer = lazyRE(`(?:read|write) tcp \S+->(\[[0-9a-fA-F:.]+\]:\d+|[0-9.]+:\d+): `)

// start makes the finding of what was read so far.
func (r *reading) start(msg string) {
	f := r.f
	r.host = f.withPort(r.host, r.role)
	r.fd = report.Finding{Code: r.code, Host: r.host, Role: r.role, Message: redact.Text(msg), Image: f.image, Resolver: f.resolver,
		Address: f.addr, URL: f.urlText, Count: 1}
	r.fd.Operation = f.operation(r.role)
	// without an image or a URL naming another host, the docker CLI's default registry is meant
	r.hub = f.registry == "docker.io" || f.registry == "" && f.image == "" && (f.url == nil || hubAlias(f.url.Hostname()) == "docker.io")
}

// ambiguousDenial: "pull access denied" says the registry refused, not whether the repository
// exists; Docker Hub answers a missing one like a private one.
func (r *reading) ambiguousDenial() {
	fd := &r.fd
	if r.hub {
		fd.Code, fd.Class = report.CodeNameUnknown, report.ClassNotFound
		fd.Alternatives = []report.Class{report.ClassAuth}
		fd.Reason = "the registry refused an anonymous or unauthorised pull; Docker Hub answers a repository that does not exist exactly like a private one, so the name is the first suspect"
		return
	}
	fd.Code, fd.Class = report.CodeAuth401, report.ClassAuth
	fd.Alternatives = []report.Class{report.ClassNotFound, report.ClassForbidden}
	fd.Reason = "the registry refused the pull without valid credentials for this repository (it also answers so for a repository that does not exist)"
}

// hubDenial: "requested access to the resource is denied" on Docker Hub is a missing or private
// repository; elsewhere the identity's rights.
func (r *reading) hubDenial() {
	fd := &r.fd
	if r.hub {
		fd.Code, fd.Class = report.CodeNameUnknown, report.ClassNotFound
		fd.Alternatives = []report.Class{report.ClassAuth}
		fd.Reason = "Docker Hub denied access: the repository does not exist under this name, or it is private and no credentials were sent"
		return
	}
	fd.Code, fd.Class = report.CodeAuth403, report.ClassForbidden
	fd.Alternatives = []report.Class{report.ClassAuth}
	fd.Reason = "the registry denied access to the repository for the identity used"
}

// classOf gives the class of the rule's code: on the node or in the pod spec (other), a deadline
// or cancellation without a cause, else what the taxonomy says for this role, step and code, with
// the cause as the alternative when the role decides the class.
func (r *reading) classOf() {
	fd := &r.fd
	switch r.code {
	case report.CodeUnknown, report.CodeBackoffNoCause, report.CodeNeverPull, report.CodeInvalidReference,
		report.CodeDiskFull, report.CodeDiskIO, report.CodeUnpackFailed, report.CodeKubeletPullQPS:
		fd.Class = report.ClassOther // on the node or in the pod spec: no host of the pull to blame
	case report.CodeTimeout:
		fd.Class = report.ClassRoute
		fd.Alternatives = []report.Class{report.ClassEndpoint, report.ClassOther}
	case report.CodeCanceled, report.CodeBlobFailed:
		fd.Class = report.ClassOther
		fd.Alternatives = []report.Class{report.ClassRoute, report.ClassEndpoint}
	case report.CodeManifestUnsupported:
		fd.Class = report.ClassFor(r.role, r.layer, r.code) // platform, as the probe says
		fd.Alternatives = []report.Class{report.ClassOther}
	default:
		// one taxonomy with the probe: the class is what ClassFor says for this role, step and code
		fd.Class = report.ClassFor(r.role, r.layer, r.code)
		// what broke, wherever it broke: when the role decides the class, the cause is the alternative
		inner := report.ClassFor(report.RoleRegistry, r.layer, r.code)
		if resolverFailure[r.code] {
			inner = report.ClassDNS
		}
		if r.code == report.CodeBlobForbidden {
			inner = report.ClassForbidden
		}
		if inner != fd.Class && inner != report.ClassOther {
			fd.Alternatives = append(fd.Alternatives, inner)
		}
	}
}

// anonymous401: Docker Hub and quay.io answer an anonymous pull of a repository that does not
// exist with 401.
func (r *reading) anonymous401() {
	if r.code == report.CodeAuth401 && (r.hub || strings.Contains(r.f.registry, "quay.io") || strings.Contains(r.f.prose, "anonymous")) {
		r.fd.Alternatives = []report.Class{report.ClassNotFound}
	}
}

// staleCredentials403: registries also answer 403 to stale or foreign credentials.
func (r *reading) staleCredentials403() {
	if r.fd.Code == report.CodeAuth403 && r.fd.Class == report.ClassForbidden {
		r.fd.Alternatives = []report.Class{report.ClassAuth}
	}
}

// bareStatus: a bare status text is a proxy's refused CONNECT, or the registry's own answer: a
// refusal, or its service failing.
func (r *reading) bareStatus() {
	if m := reBareStatus.FindStringSubmatch(r.cause); m != nil && r.code == report.CodeProxyFailed {
		alt := report.ClassOther
		if m[1] == "Forbidden" {
			alt = report.ClassForbidden
		}
		r.fd.Alternatives = []report.Class{alt}
	}
}

// eofAtRegistry: an EOF says the connection was closed, not who closed it: any transport failure
// at the registry, in the order dev messages had them.
func (r *reading) eofAtRegistry() {
	if r.code == report.CodeTCPReset && strings.HasSuffix(r.cause, "EOF") && r.role == report.RoleRegistry && len(r.fd.Alternatives) == 0 {
		for _, c := range transportOrder() {
			addAlternative(&r.fd, c)
		}
	}
}

// storageAccount: the storage service names its own account's standing: the publisher's side.
func (r *reading) storageAccount() {
	fd := &r.fd
	if fd.Code == report.CodeBlobForbidden && reStorageAccount.MatchString(r.f.text) {
		fd.Alternatives = append([]report.Class{report.ClassOther}, slices.DeleteFunc(fd.Alternatives, func(c report.Class) bool { return c == report.ClassOther })...)
		fd.Reason = "the blob storage refused the download (403) because the storage account or its billing is in bad standing: the registry publisher's account, which no change on the node fixes"
	}
}

// refused4xx: a registry refusing a request as malformed (400), gone (410) or unacceptable says
// that it refused, not why; registries answer so for a reference they cannot serve.
func (r *reading) refused4xx() {
	fd := &r.fd
	if fd.Code == report.CodeHTTPStatus && re4xx.MatchString(r.cause) {
		fd.Alternatives = []report.Class{report.ClassNotFound}
		fd.Reason = "the registry refused the request with " + strings.TrimSpace(re4xx.FindString(r.cause)) + ", which names no cause; registries answer so for a reference they cannot serve (a name or tag they reject) as well as for a client they will not serve"
	}
}

// unusableScheme: the URL itself was wrong: a realm the registry announced without its host, or a
// client that built the URL wrong; nothing was dialled.
func (r *reading) unusableScheme() {
	fd := &r.fd
	if r.code == report.CodeTCPFailed && strings.HasPrefix(r.cause, "unsupported protocol scheme") {
		fd.Class, fd.Alternatives = report.ClassEndpoint, []report.Class{report.ClassOther}
		if reRelativeRealm.MatchString(r.f.text) {
			fd.Role, fd.Host, fd.Operation = report.RoleToken, "", "token fetch"
		}
		fd.Reason = "the client refused a URL without a usable scheme: a token realm or endpoint written without its host (the registry's auth settings), or a client that built it wrong; nothing was dialled"
	}
}

// grpcNotFound: containerd answers NotFound for a missing image and for an image without the
// node's platform; a text cut before why is either.
func (r *reading) grpcNotFound() {
	if r.code == report.CodeManifestUnknown && reGRPCNotFound.MatchString(r.cause) {
		r.fd.Alternatives = []report.Class{report.ClassPlatform}
		r.fd.Reason = "the runtime answered NotFound and the text is cut before why: containerd answers so for an image or tag the registry does not have, and for an image without the node's platform"
	}
}

// foreignCertificate: a certificate for another domain altogether (no name of it shares the
// host's domain) says the name reached a server that is not the registry's: the registry's own
// misconfiguration (an ingress's default certificate), an interception box, or a resolver or
// /etc/hosts answering the wrong address. The text cannot tell which, so DNS stands beside TLS:
// dev had both behind such certificates (a VPN's resolver, a wildcard record, a stale hosts file).
func (r *reading) foreignCertificate() {
	if r.code == report.CodeTLSNameMismatch {
		if _, foreign := foreignCertNames(r.f.text); foreign {
			addAlternative(&r.fd, report.ClassDNS)
		}
	}
}

// foreignCertNames reads Go's "certificate is valid for A, B, not H" and says whether none of the
// names is of H's domain (its last two labels; a bare name without a dot is never H's).
func foreignCertNames(text string) (names string, foreign bool) {
	m := reValidFor.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	domain := func(h string) string {
		labels := strings.Split(strings.ToLower(strings.TrimPrefix(hostName(h), "*.")), ".")
		if len(labels) < 2 {
			return ""
		}
		return strings.Join(labels[len(labels)-2:], ".")
	}
	want := domain(m[2])
	if want == "" {
		return m[1], false
	}
	for n := range strings.SplitSeq(m[1], ",") {
		if domain(strings.TrimSpace(n)) == want {
			return m[1], false
		}
	}
	return m[1], true
}

// reValidFor is Go's x509.HostnameError: the certificate's names, then the host asked for.
var reValidFor = lazyRE(`certificate is valid for ([^"\n]+?), not ([^\s",]+)`)

// serverError: a 5xx is the server's own failure: a storage or CDN host on the path, or an outage
// of the registry's service that no node-side change fixes.
func (r *reading) serverError() {
	if r.fd.Code == report.CodeHTTPStatus && r.fd.Class != report.ClassOther && re5xx.MatchString(r.cause) {
		r.fd.Alternatives = append(r.fd.Alternatives, report.ClassOther)
	}
}

// cutAfterRequest: containerd wraps only transport errors in "failed to do request": the cut-off
// cause is the name, the connection, TLS or the proxy, in the order dev messages had them.
func (r *reading) cutAfterRequest() {
	if r.code != report.CodeUnknown || !reCutAfterRequest.MatchString(r.f.text) {
		return
	}
	order := transportOrder()
	if r.role != report.RoleRegistry && r.role != "" {
		order = []report.Class{report.ClassFor(r.role, report.StepTCP, report.CodeTCPFailed)}
	}
	r.fd.Class, r.fd.Alternatives = order[0], slices.Clone(order[1:min(len(order), maxAlternatives+1)])
	r.fd.Reason = "the message is cut off right after the request; containerd wraps only transport failures (the name, the connection, TLS, the proxy) in \"failed to do request\""
}

// phraseKey is the row of the learned table the reading is looked up by: its ambiguous phrase on
// the image's registry family (the failing host's, when it is the registry).
func (r *reading) phraseKey() phraseKey {
	ph := findPhrase(r.code, r.cause, r.f)
	if ph == "" {
		return phraseKey{}
	}
	reg := r.f.registry
	if reg == "" && r.role == report.RoleRegistry {
		reg = r.host
	}
	return phraseKey{ph, registryFamily(reg)}
}

// deniedBareHost: "pull access denied for registry.example.com": the reference names a registry
// and no repository, so Docker looked the host name up as a repository on Docker Hub.
func (r *reading) deniedBareHost() bool {
	if (r.code != codeAmbiguousDenied && r.code != codeHubDenied) || !reDeniedBareHost.MatchString(r.f.text) {
		return false
	}
	fd := &r.fd
	fd.Code, fd.Class, fd.Alternatives = report.CodeNameUnknown, report.ClassNotFound, nil
	fd.Reason = "the image reference names a registry host but no repository; Docker read the host name as a repository on Docker Hub, which has none of that name"
	return true
}

// vendorRow applies a registry's documented answer: its causes, likeliest first, and why.
func (r *reading) vendorRow(vrow *denialRow) {
	if vrow == nil {
		return
	}
	fd := &r.fd
	if !denialCodes[fd.Code] {
		// the rules read no denial, the registry's own words name one
		fd.Code = map[report.Class]report.Code{report.ClassAuth: report.CodeAuth401, report.ClassForbidden: report.CodeAuth403}[vrow.classes[0]]
		if fd.Code == "" {
			fd.Code = report.CodeNameUnknown
		}
		fd.Class = vrow.classes[0]
		fd.Reason = reason(*fd, r.f)
	}
	fd.Class, fd.Alternatives = vrow.classes[0], slices.Clone(vrow.classes[1:])
	if r.code == codeAmbiguousDenied || r.code == codeHubDenied {
		// the denial's own reading already said what the registry's row says: lead with who refused
		fd.Reason = refusedBy(r) + "; " + vrow.why
		return
	}
	fd.Reason += "; " + vrow.why
}

// refusedBy says who refused a pull: the registry host the text names, or the registry.
func refusedBy(r *reading) string {
	switch {
	case r.hub:
		return "the pull was refused" // the row names Docker Hub
	case r.fd.Host != "":
		return hostName(r.fd.Host) + " refused the pull"
	}
	return "the registry refused the pull"
}

// pullThroughCache: a pull-through cache answers "not found" too when it could not fetch from its
// upstream (the class first: the scan for a cache's name is for not-found findings only). It
// reports whether the cache's failure became an alternative the registry documents.
func (r *reading) pullThroughCache() bool {
	fd := &r.fd
	if fd.Class != report.ClassNotFound {
		return false
	}
	cache := pullThroughCache(r.f)
	if cache == "" {
		return false
	}
	if !slices.Contains(fd.Alternatives, report.ClassOther) {
		fd.Alternatives = append(fd.Alternatives[:min(len(fd.Alternatives), maxAlternatives-1)], report.ClassOther)
	}
	fd.Reason += "; " + cache + ", which also answers so when its own fetch from the upstream registry failed (upstream unreachable, rate-limited, or the cache's endpoint or credentials misconfigured)"
	return true
}

// statusCodes are the codes of a registry's refusal (401, 403, insufficient_scope), and classCode
// the code of each class a refusal can mean.
var (
	statusCodes = map[report.Code]bool{report.CodeAuth401: true, report.CodeAuth403: true, report.CodeAuthInsufficientScope: true}
	classCode   = map[report.Class]report.Code{report.ClassAuth: report.CodeAuth401, report.ClassForbidden: report.CodeAuth403,
		report.ClassNotFound: report.CodeNameUnknown}
)

// codeAgrees: class and code agree (docs/taxonomy.md: class follows what broke). A status the text
// states (a 401) is what broke: quay.io answers a repository that does not exist with 401, which
// makes not_found likely, yet the class is auth, with the registry's likelier cause first among the
// alternatives. A code pullpath inferred from a denial's wording ("pull access denied") names no
// status: it follows the cause the registry's documented answer puts first, as Docker Hub's
// NAME_UNKNOWN does.
func (r *reading) codeAgrees() {
	fd := &r.fd
	if !statusCodes[fd.Code] {
		return
	}
	want := report.ClassFor(fd.Role, r.layer, fd.Code)
	if fd.Class == want {
		return
	}
	if r.code == codeAmbiguousDenied || r.code == codeHubDenied || !statusCodes[r.code] {
		if c, ok := classCode[fd.Class]; ok {
			fd.Code = c
		}
		return
	}
	if r.code != report.CodeAuth401 {
		return // a stated 403 a registry documents as another cause stays with it (ghcr's expired token): issue 34 asked for the 401
	}
	alts := []report.Class{fd.Class}
	for _, c := range fd.Alternatives {
		if c != want && c != fd.Class {
			alts = append(alts, c)
		}
	}
	fd.Class, fd.Alternatives = want, alts[:min(len(alts), maxAlternatives)]
}

// keepDocumented puts back, as alternatives, the causes a registry documents for its answer that
// the learned table dropped: what the registry documents as ambiguous stays so.
func keepDocumented(fd *report.Finding, documented []report.Class) {
	for _, c := range documented {
		if c == fd.Class || slices.Contains(fd.Alternatives, c) {
			continue
		}
		if len(fd.Alternatives) < maxAlternatives {
			fd.Alternatives = append(fd.Alternatives, c)
		} else {
			fd.Alternatives[len(fd.Alternatives)-1] = c
		}
	}
}
