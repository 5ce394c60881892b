package registry

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reference is an image reference resolved the way containerd resolves it.
type Reference struct {
	Original   string
	Registry   string // as named: "docker.io", "myreg.azurecr.io", "localhost:5000"
	Host       string // host:port to dial: docker.io becomes registry-1.docker.io:443
	Repository string // "library/nginx"
	Tag        string // "latest" when neither tag nor digest is given
	Digest     string
}

// Identifier is the tag or digest to ask the registry for; the digest wins, as in containerd.
func (r Reference) Identifier() string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Tag
}

// Name is the repository's full name without tag or digest, host[:port]/repository with Docker
// Hub's as docker.io/library/…: the name the kubelet looks credentials up under
// (ParseNormalizedNamed(image).Name(), pkg/util/parsers/parsers.go:33-38) and sends its credential
// providers.
func (r Reference) Name() string { return r.Registry + "/" + r.Repository }

// String is the fully qualified reference.
func (r Reference) String() string {
	s := r.Registry + "/" + r.Repository
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// ReferenceError is a reference the grammar refuses: the rule broken and the part that breaks it.
// Neither field nor the message carries user info (user:password@).
type ReferenceError struct {
	Ref    string // the input as shown: user info redacted, a long input elided in the middle
	Rule   string // short stable name of the rule, one of the Rule* constants
	Reason string // one line naming the offending part and what the rule wants
}

func (e *ReferenceError) Error() string {
	if e.Ref == "" {
		return "invalid image reference: " + e.Reason
	}
	return fmt.Sprintf("invalid image reference %q: %s", e.Ref, e.Reason)
}

// Rules a reference can break. The grammar is distribution/reference v0.6.0 regexp.go and
// normalize.go, which containerd's CRI applies to every pull (v2.4.2
// internal/cri/server/images/image_pull.go:153 ParseDockerRef); pullpath is stricter only where
// marked "pullpath", never looser.
const (
	RuleEmpty      = "empty"
	RuleTooLong    = "too-long"    // input over maxReference bytes (pullpath's bound)
	RuleURL        = "url"         // a scheme is not part of the grammar
	RuleUserInfo   = "user-info"   // user:password@ is not part of the grammar
	RuleWhitespace = "whitespace"  // no rule of the grammar admits a space
	RuleControl    = "control"     // nor a control character
	RuleIdentifier = "identifier"  // normalize.go:57: a bare 64-hex string is an image ID
	RuleDomain     = "domain"      // regexp.go:61,91,99-110; pullpath also parses an IPv6 address
	RulePort       = "port"        // regexp.go:65 allows any digits; pullpath also wants 1-65535
	RuleUpperFirst = "upper-first" // pullpath: "Foo/app" would make containerd dial host "Foo" (normalize.go:152)
	RulePath       = "path"        // regexp.go:44,53,123,129
	RuleUppercase  = "uppercase"   // reference.go:192, normalize.go:67
	RuleNameLength = "name-length" // pullpath, as containerd v1.6 reference/docker/reference.go:219: domain/path <= 255
	RuleTag        = "tag"         // regexp.go:68
	RuleDigest     = "digest"      // regexp.go:81 + go-digest Validate: known algorithm, lowercase hex of its length
)

const (
	// maxReference bounds the input before any work; the grammar's own bound is 255 for the name.
	maxReference = 4096
	// maxName is the longest normalized name, domain included (containerd v1.6
	// reference/docker/reference.go:219; distribution v0.6.0 reference.go:209 bounds the path alone).
	maxName = 255
	maxTag  = 128
)

var (
	// pathComponentRE is distribution's pathComponent (regexp.go:44,53,123).
	pathComponentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)
	// domainLabelRE is distribution's domainNameComponent (regexp.go:61).
	domainLabelRE = regexp.MustCompile(`^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])$`)
	// tagRE is distribution's tag (regexp.go:68); \w is ASCII in RE2, as in Go's regexp there.
	tagRE = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	// identifierRE is distribution's anchoredIdentifierRegexp (regexp.go:85,140).
	identifierRE = regexp.MustCompile(`^[a-f0-9]{64}$`)
	// digestAlgorithmRE is the algorithm part of distribution's digestPat (regexp.go:81).
	digestAlgorithmRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*$`)
)

// digestHexLen is the encoded length per algorithm go-digest v1.0.0 registers (algorithm.go:33-35).
var digestHexLen = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

// ParseReference parses an image reference with Docker's defaults (docker.io, library/, latest),
// by the grammar containerd applies. Nothing is trimmed: a malformed reference is a
// *ReferenceError naming the rule and the part, never a panic.
func ParseReference(s string) (Reference, error) {
	fail := func(rule, format string, args ...any) (Reference, error) {
		return Reference{}, &ReferenceError{Ref: showRef(s), Rule: rule, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case s == "":
		return Reference{}, &ReferenceError{Rule: RuleEmpty, Reason: "the reference is empty"}
	case len(s) > maxReference:
		return fail(RuleTooLong, "it is %d bytes long; a name is at most %d characters", len(s), maxName)
	case strings.Contains(s, "://"):
		return fail(RuleURL, "give registry/repository[:tag|@digest], not a URL")
	case hasUserInfo(s):
		return fail(RuleUserInfo, "user info (user:password@) does not go in an image reference")
	}
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return fail(RuleWhitespace, "contains whitespace (%q at byte %d)", string(firstRune(s[i:])), i)
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return fail(RuleControl, "contains a control character (%q at byte %d)", string(firstRune(s[i:])), i)
	}
	if identifierRE.MatchString(s) {
		return fail(RuleIdentifier, "a 64-character hex string is an image ID, not a repository name")
	}

	// name[:tag][@digest]: the digest follows the first '@'; the tag is the last ':' after the
	// last '/', because a port's ':' comes before the first '/'.
	name, digest, hasDigest := strings.Cut(s, "@")
	var tag string
	hasTag := false
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, tag, hasTag = name[:i], name[i+1:], true
	}
	if name == "" {
		return fail(RulePath, "the repository name is empty")
	}

	// Domain split and Docker Hub normalization, as normalize.go:126-168 (splitDockerDomain).
	domain, remote := "docker.io", name
	if first, rest, ok := strings.Cut(name, "/"); ok {
		switch {
		case first == "localhost" || strings.ContainsAny(first, ".:"):
			domain, remote = first, rest
		case strings.ToLower(first) != first:
			return fail(RuleUpperFirst, "first component %q has capitals but no '.' or ':port', so containerd would take it for a registry host; a repository must be lowercase", elide(first))
		}
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	// A first component that is no domain by regexp.go:99-110 but a lowercase path component
	// ("my_reg.example") makes the whole name a path for distribution (reference.go:200-207), and
	// containerd still dials that component (v2.4.2 pkg/reference/reference.go:132 Hostname).
	if err := checkDomain(domain); err != nil && !(err.rule == RuleDomain && pathComponentRE.MatchString(domain)) {
		return fail(err.rule, "%s", err.reason)
	}
	if err := checkPath(remote); err != nil {
		return fail(err.rule, "%s", err.reason)
	}
	if domain == "docker.io" && !strings.Contains(remote, "/") {
		remote = "library/" + remote
	}
	if n := len(domain) + 1 + len(remote); n > maxName {
		return fail(RuleNameLength, "the name %q is %d characters; at most %d", elide(domain+"/"+remote), n, maxName)
	}
	if hasTag {
		if err := checkTag(tag); err != nil {
			return fail(err.rule, "%s", err.reason)
		}
	}
	if hasDigest {
		if err := checkDigest(digest); err != nil {
			return fail(err.rule, "%s", err.reason)
		}
	}

	out := Reference{Original: s, Registry: domain, Repository: remote, Tag: tag, Digest: digest}
	switch {
	case hasDigest:
		out.Tag = "" // containerd ignores a tag given together with a digest (ParseDockerRef)
	case !hasTag:
		out.Tag = "latest"
	}
	host := APIHost(domain)
	if !hasPort(host) {
		host += ":443"
	}
	out.Host = host
	return out, nil
}

type ruleError struct{ rule, reason string }

// checkDomain checks host[:port], host being DNS labels or a bracketed IPv6 address
// (regexp.go:91,99-110); the port must be 1-65535, which the grammar leaves to the dialer.
func checkDomain(d string) *ruleError {
	host, port, hasPort := d, "", false
	if strings.HasPrefix(d, "[") {
		end := strings.IndexByte(d, ']')
		if end < 0 {
			return &ruleError{RuleDomain, fmt.Sprintf("registry %q: an IPv6 address has no closing ']'", elide(d))}
		}
		host = d[:end+1]
		switch rest := d[end+1:]; {
		case rest == "":
		case rest[0] == ':':
			port, hasPort = rest[1:], true
		default:
			return &ruleError{RuleDomain, fmt.Sprintf("registry %q: only ':port' may follow an IPv6 address", elide(d))}
		}
		inner := host[1 : len(host)-1]
		a, err := netip.ParseAddr(inner)
		if err != nil || !a.Is6() || a.Zone() != "" || strings.Contains(inner, ".") {
			return &ruleError{RuleDomain, fmt.Sprintf("registry %q: %q is not an IPv6 address (hex and ':' only, no zone)", elide(d), elide(host))}
		}
	} else {
		if i := strings.IndexByte(d, ':'); i >= 0 {
			host, port, hasPort = d[:i], d[i+1:], true
		}
		if host == "" {
			return &ruleError{RuleDomain, fmt.Sprintf("registry %q: the host is empty", elide(d))}
		}
		for _, label := range strings.Split(host, ".") {
			if label == "" {
				return &ruleError{RuleDomain, fmt.Sprintf("registry host %q has an empty label", elide(host))}
			}
			if !domainLabelRE.MatchString(label) {
				return &ruleError{RuleDomain, fmt.Sprintf("registry host label %q: letters, digits and inner '-' only", elide(label))}
			}
		}
	}
	if hasPort {
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return &ruleError{RulePort, fmt.Sprintf("port %q of registry %q: a port is digits", elide(port), elide(d))}
		}
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return &ruleError{RulePort, fmt.Sprintf("port %s of registry %q is out of range 1-65535", elide(port), elide(d))}
		}
	}
	return nil
}

// checkPath checks the repository path: lowercase components joined by single '/'
// (regexp.go:123,129).
func checkPath(p string) *ruleError {
	if p == "" {
		return &ruleError{RulePath, "the repository path after the registry is empty"}
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == "":
			return &ruleError{RulePath, fmt.Sprintf("repository %q has an empty path component ('//' or a '/' at an end)", elide(p))}
		case pathComponentRE.MatchString(c):
			continue
		case pathComponentRE.MatchString(strings.ToLower(c)):
			return &ruleError{RuleUppercase, fmt.Sprintf("repository %q must be lowercase", elide(p))}
		}
		if i := strings.IndexFunc(c, func(r rune) bool {
			return !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789._-", unicode.ToLower(r))
		}); i >= 0 {
			return &ruleError{RulePath, fmt.Sprintf("repository path component %q: %q is not allowed (lowercase letters, digits, '.', '_', '-')", elide(c), string(firstRune(c[i:])))}
		}
		return &ruleError{RulePath, fmt.Sprintf("repository path component %q must start and end with a letter or digit, with one '.', one or two '_', or '-'s between them", elide(c))}
	}
	return nil
}

// checkTag checks a tag: [\w][\w.-]{0,127} (regexp.go:68).
func checkTag(t string) *ruleError {
	switch {
	case t == "":
		return &ruleError{RuleTag, "the tag after ':' is empty"}
	case tagRE.MatchString(t):
		return nil
	case len(t) > maxTag:
		return &ruleError{RuleTag, fmt.Sprintf("tag %q is %d characters; at most %d", elide(t), len(t), maxTag)}
	case strings.IndexByte("-.", t[0]) >= 0:
		return &ruleError{RuleTag, fmt.Sprintf("tag %q must start with a letter, digit or '_'", elide(t))}
	}
	i := strings.IndexFunc(t, func(r rune) bool {
		return !(r < utf8.RuneSelf && (r == '_' || r == '.' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)))
	})
	if i < 0 {
		i = 0
	}
	return &ruleError{RuleTag, fmt.Sprintf("tag %q: %q is not allowed (letters, digits, '_', '.', '-')", elide(t), string(firstRune(t[i:])))}
}

// checkDigest checks algorithm:hex as distribution's digestPat (regexp.go:81) and go-digest's
// Validate: a registered algorithm and lowercase hex of its length.
func checkDigest(d string) *ruleError {
	alg, enc, ok := strings.Cut(d, ":")
	switch {
	case d == "":
		return &ruleError{RuleDigest, "the digest after '@' is empty; a digest looks like sha256:<64 hex characters>"}
	case !ok || !digestAlgorithmRE.MatchString(alg):
		return &ruleError{RuleDigest, fmt.Sprintf("digest %q must look like sha256:<64 hex characters>", elide(d))}
	}
	n, known := digestHexLen[alg]
	switch {
	case !known:
		return &ruleError{RuleDigest, fmt.Sprintf("digest algorithm %q is not supported (sha256, sha384, sha512)", elide(alg))}
	case strings.Trim(enc, "0123456789abcdef") != "":
		return &ruleError{RuleDigest, fmt.Sprintf("digest %q: %s needs lowercase hex", elide(d), alg)}
	case len(enc) != n:
		return &ruleError{RuleDigest, fmt.Sprintf("digest %q: %s needs %d hex characters, not %d", elide(d), alg, n, len(enc))}
	}
	return nil
}

// hasUserInfo reports a URL-style user:password@ before the first '/'. A digest's '@' never
// precedes a '/', so this refuses nothing the grammar accepts.
func hasUserInfo(s string) bool {
	host, _, slash := strings.Cut(s, "/")
	return slash && strings.Contains(host, "@")
}

// showRef is the input as an error may show it: with user info (up to the last '@' before the
// first '/', or after "scheme://") replaced by "***", and elided in the middle when long.
func showRef(s string) string {
	prefix, rest := "", s
	if i := strings.Index(rest, "://"); i >= 0 {
		prefix, rest = rest[:i+3], rest[i+3:]
	}
	host, path, slash := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(host, '@'); at >= 0 && (slash || prefix != "") {
		rest = "***@" + host[at+1:]
		if slash {
			rest += "/" + path
		}
	}
	return elide(prefix + rest)
}

// elide shortens a long string for a one-line message.
func elide(s string) string {
	const head, tail = 60, 20
	if len(s) <= head+tail+10 {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)…%s", s[:head], len(s), s[len(s)-tail:])
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

func hasPort(hostport string) bool {
	if strings.HasPrefix(hostport, "[") {
		return strings.Contains(hostport, "]:")
	}
	return strings.Contains(hostport, ":")
}

// APIHost is the host a runtime talks to for a registry name: containerd's default for docker.io
// is registry-1.docker.io; every other registry is its own host.
func APIHost(registry string) string {
	if registry == "docker.io" {
		return "registry-1.docker.io"
	}
	return registry
}
