package events

import (
	"net"
	"net/url"
	"strings"

	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

// facts is what can be read off a message before classifying it.
type facts struct {
	text      string // normalised: escapes undone, whitespace collapsed
	lower     string // text lowercased once, for the prefilters of every table
	prose     string // text with its names masked (prose.go): what statuses and class words are read from
	proseLow  string // prose lowercased
	image     string
	registry  string // the image's registry, normalised ("docker.io")
	pulled    string // the same, only when the text names the image pulled (not read off a URL)
	url       *url.URL
	urlText   string // redacted
	lookup    string // host in "lookup HOST"
	resolver  string // server in "lookup HOST on SERVER"
	addr      string // ip:port in "dial tcp IP:PORT"
	proxy     string // proxy host in "proxyconnect tcp: dial tcp HOST"
	namedHost string // "pulling from host X", "error pinging docker registry X", "reading manifest .. in X/repo"
	certHost  string // "x509: … wanted to match X", "certificate is valid for A, not X"
	method    string
	blobPhase bool // containerd's copy phase or docker's config download: the manifest already worked
}

// optTag is a reference's optional ":tag". No "..": podman's "Trying to pull REF..." ends the tag.
const optTag = `(?::[\w](?:[\w-]|\.[\w-])*)?`

var (
	reImage = []litRegexp{
		mustLit(`(?i)(?:failed to pull (?:and unpack )?image|pulling image|back-off pulling image|failed to resolve reference|pullimage|failed pulling image|failed to get sandbox image) \\?"([^"\\\s]+)\\?"`),
		mustLit(`(?i)failed to pull image ([^\s:"]+(?::[^\s:"]+)?(?:@sha256:[a-f0-9]{64})?)(?::\s|:?$)`),
		mustLit(`(?i)pull access denied for ([^\s,]+),`),
		mustLit(`(?i)manifest for (\S+) not found`),
		mustLit(`(?i)\bimage ([a-z0-9][^\s:"]*/[^\s:"]+` + optTag + `) not found|repository ((?:[a-z0-9-]+\.)+[a-z0-9-]+(?::\d+)?/[^\s:"]+) not found`),
		mustLit(`(?i)for image (\S+?)$|for image (\S+)\s`),
		mustLit(`(?:^|[\s"'(=])docker://([^\s:]+/[^\s:@]+` + optTag + `(?:@sha256:[a-f0-9]{64})?)`),
		// a client's progress line: podman's "Trying to pull REF...", tart's "pulling REF..."
		mustLit(`(?i)(?:trying to pull|pulling) ((?:[a-z0-9-]+\.)+[a-z0-9-]+(?::\d+)?/[^\s"]+?)\.\.\.`),
		// docker-compose v1: "Pulling web (registry.example.com/team/web:1)..."
		mustLit(`Pulling [\w.-]+ \(([^()\s]+)\)\.\.\.`),
		// docker run: "Unable to find image 'REF' locally", then the pull's error
		mustLit(`Unable to find image '([^'\s]+)' locally`),
		// Azure Container Instances: "The image 'REF' in container group …"
		mustLit(`(?i)\bthe image '([^'\s]+)' in container group`),
		// last: "image REF" wherever REF names its registry host
		mustLit(`(?i)\bimage "?((?:[a-z0-9-]+\.)+[a-z0-9-]+(?::\d+)?/[^\s:"@,]+` + optTag + `(?:@sha256:[a-f0-9]{64})?)`),
		mustLit(`(?i)(?:failed to resolve ref|image pull failed for|from flag value) "?([a-z0-9][^\s",]*/[^\s",]+?)"?(?:,|:\s)`),
		mustLit(`(?i)(?:load metadata for|failed to resolve source metadata for|initializing source) (?:docker://)?([a-z0-9][^\s:"]*/[^\s:"@]+` + optTag + `(?:@sha256:[a-f0-9]{64})?)`),
		// the pull as the operator typed it, and docker's v1-era progress line
		mustLit(`(?i)\b(?:docker|podman|nerdctl|buildah|crictl|ctr(?: -n[= ]?\S+)?(?: images?| i)?)(?: image)? pull (?:-{1,2}[\w-]+(?:=\S+)? (?:(?:linux|windows|darwin)/\S+ )?)*(?:docker://)?([a-z0-9][^\s"']*)`),
		mustLit(`(?i)\bpulling repository ([a-z0-9][^\s"']*)`),
		// "failed to pull REF:" without the word image, where REF names its registry
		mustLit(`(?i)\bfailed to pull ((?:[a-z0-9-]+\.)+[a-z0-9-]+(?::\d+)?/[^\s:"@,]+` + optTag + `(?:@sha256:[a-f0-9]{64})?)(?::\s|[\s,]|$)`),
	}
	// a reference standing alone, wherever its first component is a registry host: the last
	// resort, after the request paths. Not after "/" or "://" (paths and URLs), not a Go package
	// path in a stack trace (the delimiter after it excludes "pkg.(*T)"), not a documentation link.
	reBareRef = mustLit(`(?:^|[\s"'(=\[])((?:[a-z0-9-]+\.)+[a-z]{2,}(?::\d+)?/[a-z0-9._-]+(?:/[a-z0-9._-]+)*(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?)(?:[\s"',;)\]]|:\s|:?$|\.\s)`)
	// docker's API as SDKs (docker-py, compose v1, Ansible) print it: the image is a query parameter
	reFromImage = mustLit(`/images/create\?(\S*?\bfromImage=[^&\s"]+\S*)`)
	// without a wrapper that names the image, the registry API path and the client's words name it
	// docker's dialer: "dialing H:443 container via direct connection …: connecting to X:P: dial tcp …"
	reViaProxy     = mustLit(`via (?:HTTPS? )?proxy (?:https?://)?(\[[0-9a-fA-F:.]+\]:\d+|[^\s:/\[\]]+:\d+)`)
	reCertFor      = mustLit(`(?:but wanted to match|certificate is valid for [^\n]*?, not) ([a-zA-Z0-9*][a-zA-Z0-9.*\[\]-]*\.[a-zA-Z\]]{2,})`)
	reConnectingTo = mustLit(`: connecting to (\[[0-9a-fA-F:.]+\]:\d+|[^\s:\[\]]+:\d+): `)
	reManifestPath = lazyRE(`^/v2/(.+)/manifests/([^/?#]+)$`)
	reRefIn        = mustLit(`(?:[Rr]eading manifest|Tag) (\S+?) (?:in|not found in repository) ((?:[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}(?::\d+)?|localhost(?::\d+)?)/[a-z0-9._/-]+)`)
	reURL          = mustLit(`https?://[^\s"'\\<>\x60)\]]+`)
	reMethod       = mustLit(`\b(Get|Head|Post|GET|HEAD|POST)\s+"?https?://`)
	reLookup       = mustLit(`lookup ([^\s:]+?)(?: on (\[[0-9a-fA-F:.]+\]:\d+|[0-9.]+:\d+|<[^\s<>]+>:\d+))?: |Failed to lookup host: ([^\s:]+?)\.?$|Could not resolve host: ([^\s:]+)`)
	reDial         = mustLit(`dial tcp (\[[0-9a-fA-F:.]+\]:\d+|[0-9.]+:\d+)`)
	reProxy        = mustLit(`(?:proxyconnect tcp: dial tcp|error connecting to proxy https?://\S+: dial tcp)(?: (\[[0-9a-fA-F:.]+\]:\d+|[^\s:]+:\d+)|: lookup ([^\s:]+))`)
	reNamed        = mustLit(`(?:pulling from host|error pinging docker registry|pinging container registry) ([^\s:]+(?::\d+)?)`)
	reInRepo       = mustLit(`(?:reading manifest|Error reading manifest) \S+ in ([a-zA-Z0-9.-]+\.[a-zA-Z]{2,}(?::\d+)?|localhost(?::\d+)?)/`)
	// escapes and entities of the places text is pasted from (JSON, Go's %q, HTML pages, word
	// processors' quotes), undone so the rules see the error as the runtime wrote it
	reEscapes = strings.NewReplacer(`\\\"`, `"`, `\"`, `"`, `\\n`, " ", `\n`, " ", `\t`, " ", `\r`, " ",
		`\u0026`, "&", `\u003c`, "<", `\u003e`, ">", `\u0027`, "'", `\u003d`, "=",
		"&quot;", `"`, "&#34;", `"`, "&#39;", "'", "&#x27;", "'", "&lt;", "<", "&gt;", ">", "&amp;", "&",
		"\u201c", `"`, "\u201d", `"`, "\u2018", "'", "\u2019", "'", "\u00a0", " ")
	reBlobPath = lazyRE(`/blobs/|registry-v2/|/containers/images/|/data\?|/data$`)
)

// image returns the first image reference re finds in t, or "".
func (re litRegexp) image(t, low string) string {
	if m := re.find(t, low); m != nil {
		for _, g := range m[1:] {
			if g != "" {
				return strings.TrimRight(g, ".,;:")
			}
		}
	}
	return ""
}

// hasRegistryHost says the reference names its registry (a first component with a dot, a port
// or localhost), as the distribution reference grammar decides.
func hasRegistryHost(ref string) bool {
	first, _, ok := strings.Cut(ref, "/")
	return ok && (strings.ContainsAny(first, ".:") || first == "localhost")
}

// repoOf is a reference without its tag or digest.
func repoOf(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref = ref[:i]
	}
	return ref
}

// reAutoLink is a reference a forum turned into a link to itself ("[host/app:1](http://host/app:1)").
var reAutoLink = lazyRE(`\[([^\]\s]+)\]\(https?://([^)\s]+)\)`)

func unlink(t string) string {
	if !strings.Contains(t, "](http") {
		return t
	}
	return reAutoLink.ReplaceAllStringFunc(t, func(m string) string {
		if sm := reAutoLink.FindStringSubmatch(m); sm[1] == sm[2] {
			return sm[1]
		}
		return m
	})
}

func readFacts(msg string) facts {
	f := facts{text: strings.Join(strings.Fields(unlink(reEscapes.Replace(msg))), " ")}
	f.lower = strings.ToLower(f.text)
	t, low := f.text, f.lower
	for i, re := range reImage {
		if img := re.image(t, low); img != "" {
			f.image = img
			if !hasRegistryHost(img) {
				// the daemon often names the repository without its host ("image td/app:latest
				// not found") where an earlier wrapper named it whole: prefer the whole name
				for _, other := range reImage[i+1:] {
					if whole := other.image(t, low); hasRegistryHost(whole) && strings.HasSuffix(repoOf(whole), "/"+repoOf(img)) {
						f.image = whole
						break
					}
				}
			}
			break
		}
	}
	if f.image != "" && !plausibleImage(f.image) {
		f.image = ""
	}
	named := f.image != ""
	if f.image == "" {
		f.image = f.imageFromPaths()
	}
	if f.image == "" {
		f.image = imageFromAPI(t, low)
	}
	if f.image == "" {
		if img := reBareRef.image(t, low); img != "" && plausibleImage(img) {
			f.image = img
		}
	}
	if f.image != "" {
		if ref, err := registry.ParseReference(f.image); err == nil {
			f.registry = hubAlias(ref.Registry)
		} else if first, _, ok := strings.Cut(f.image, "/"); ok && (strings.HasPrefix(first, "<") || hasRegistryHost(f.image)) {
			// text is not a pull: a reference cut from it may break the grammar (a trailing "/", a
			// placeholder "registry.<myip>.nip.io", a redacted "<private_registry>") and still name
			// its registry, which is all the reading needs
			f.registry = hubAlias(strings.ToLower(first))
		}
		if named {
			f.pulled = f.registry
		}
	}
	var last *url.URL
	urls := reURL.findAllIndex(t, low)
	for _, loc := range urls {
		u := strings.TrimRight(t[loc[0]:loc[1]], ".,;:")
		pu, err := url.Parse(u)
		if err != nil || pu.Host == "" || isDocLink(pu) || !requestURL(t[:loc[0]], pu) {
			continue
		}
		last = pu
	}
	if last != nil {
		f.url = last
		f.urlText = redact.URL(last)
	}
	if ms := reMethod.findAll(t, low); len(ms) > 0 {
		f.method = strings.ToUpper(ms[len(ms)-1][1])
	}
	if m := reLookup.find(t, low); m != nil {
		f.lookup, f.resolver = m[1]+m[3]+m[4], m[2]
	}
	if ms := reDial.findAll(t, low); len(ms) > 0 {
		f.addr = ms[len(ms)-1][1]
	}
	if m := reProxy.find(t, low); m != nil {
		f.proxy = m[1]
		if f.proxy == "" {
			f.proxy = m[2]
		}
	} else if m := reViaProxy.find(t, low); m != nil {
		f.proxy = m[1]
	} else if m := reConnectingTo.find(t, low); m != nil && f.url != nil && !strings.EqualFold(hostName(m[1]), f.url.Hostname()) {
		// the daemon dialed another host than the request's: its (desktop or corporate) proxy
		f.proxy = m[1]
	}
	if m := reNamed.find(t, low); m != nil {
		f.namedHost = m[1]
	} else if m := reInRepo.find(t, low); m != nil {
		f.namedHost = m[1]
	} else if m := reCertFor.find(t, low); m != nil && f.url == nil {
		f.certHost = m[1] // the name the client wanted the certificate to carry: the host it dialed
	}
	if f.registry == "" && f.namedHost != "" {
		f.registry = hubAlias(f.namedHost)
	}
	f.blobPhase = strings.Contains(t, "failed to copy") || strings.Contains(t, "httpReadSeeker") || strings.Contains(t, "httpReaderSeeker") ||
		strings.Contains(t, "error pulling image configuration") || strings.Contains(t, "parsing image configuration")
	f.prose, f.proseLow = proseOf(&f, urls)
	return f
}

// reRequestBefore is what a client writes right before a URL it requested: a method, "request
// to", "url:", an open quote.
var reRequestBefore = lazyRE(`(?i)(?:\b(?:get|head|post|put|patch)|request to|status code|url:?|for|from|failed open:|\bat|=)\s*"?$|"$`)

// requestURL says whether a URL in the text is one the client requested, not a link its error
// points the reader to ("Further instructions: https://…", "reach out to https://support…"): the
// registry API's paths, a token or storage request, or a URL written as a request is written.
func requestURL(before string, u *url.URL) bool {
	p := u.Path
	if strings.HasPrefix(p, "/v2") || strings.HasPrefix(p, "/v1/") || u.RawQuery != "" || tokenURL(u) || storageHost.MatchString(u.Hostname()) {
		return true
	}
	return reRequestBefore.MatchString(before[max(0, len(before)-24):])
}

func isDocLink(u *url.URL) bool {
	h := strings.ToLower(u.Hostname())
	return h == "www.docker.com" || h == "docs.docker.com" || h == "aka.ms" || strings.HasPrefix(h, "docs.") || h == "cloud.google.com" || h == "learn.microsoft.com" || h == "docs.aws.amazon.com" ||
		strings.Contains(u.Path, "increase-rate-limit") || h == "github.com"
}

// hubAlias folds Docker Hub's many names into docker.io.
func hubAlias(h string) string {
	switch strings.ToLower(h) {
	case "docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com", "registry.docker.io":
		return "docker.io"
	}
	return strings.ToLower(h)
}

// storageHost matches object storage and CDN hosts registries redirect blob downloads to.
var storageHost = lazyRE(`(?i)(cloudfront\.net|cloudfront\.docker\.com|cloudflare\.docker\.com|r2\.cloudflarestorage\.com|blob\.core\.windows\.net|\.data\.azurecr\.io$|(^|\.)s3[.-].*amazonaws\.com|^storage\.googleapis\.com|pkg-containers\.githubusercontent\.com|^cdn\d*\.quay\.io|quay-registry\.s3)`)

// tokenURL reports whether u is a token realm request.
func tokenURL(u *url.URL) bool {
	p := strings.ToLower(u.Path)
	h := strings.ToLower(u.Hostname())
	q := u.Query()
	// GitLab's realm is /jwt/auth; a login asks a realm with account= and no scope=
	return strings.HasSuffix(p, "/token") || strings.Contains(p, "/oauth2/token") || p == "/auth" || strings.HasSuffix(p, "/jwt/auth") ||
		isTokenHost(h) || (q.Get("service") != "" && (q.Get("scope") != "" || q.Get("account") != ""))
}

// isTokenHost reports a host that serves only tokens (Docker Hub's and its regional auth hosts).
// ECR's auth API (api.ecr.<region>.amazonaws.com, ecr-fips) hands out the registry's credentials.
func isTokenHost(h string) bool {
	// ECR's API (GetAuthorizationToken) answers at api.ecr.<region>, and at ecr.<region> for older SDKs
	return h == "auth.docker.io" || strings.HasPrefix(h, "dockerauth.") || strings.HasPrefix(h, "api.ecr") || strings.HasPrefix(h, "ecr-fips.") ||
		strings.HasPrefix(h, "ecr.") && (strings.HasSuffix(h, ".amazonaws.com") || strings.HasSuffix(h, ".amazonaws.com.cn"))
}

// failingHost names the host the failure happened on, and its role in the pull.
func (f facts) failingHost() (string, report.Role) {
	switch {
	case f.proxy != "":
		return f.proxy, report.RoleProxy
	case f.lookup != "" && !strings.Contains(f.text, "proxyconnect"):
		return f.lookup, f.roleOf(f.lookup, f.url)
	case f.url != nil:
		return f.url.Host, f.roleOf(f.url.Hostname(), f.url)
	case f.namedHost != "":
		return f.namedHost, report.RoleRegistry
	case f.certHost != "":
		return f.certHost, f.roleOf(f.certHost, nil)
	case f.registry != "":
		if f.blobPhase {
			return "", report.RoleBlob
		}
		return f.registry, report.RoleRegistry
	case f.blobPhase:
		return "", report.RoleBlob
	}
	return "", ""
}

func (f facts) roleOf(host string, u *url.URL) report.Role {
	host = strings.ToLower(host)
	if u != nil && strings.EqualFold(u.Hostname(), host) {
		if tokenURL(u) {
			return report.RoleToken
		}
		if ns := u.Query().Get("ns"); ns != "" {
			if strings.Contains(ns, "REDACTED") {
				// containerd 2.x's CRI redacts every query value in its errors
				// (internal/cri/util/sanitize.go:53-75, commit 3e2cee2bf): the image pulled names it
				ns = f.pulled
			}
			if ns != "" && nsIsHost(u, ns) {
				// a [host] naming the registry with its default port (https://R:443 for R) still gets
				// ns, containerd compares names as written: it is the registry (docs/taxonomy.md#endpoint-roles)
				return report.RoleRegistry
			}
			return report.RoleMirror // containerd tags mirror requests with ?ns=<upstream>
		}
		if u.Path == "/v2/" || u.Path == "/v2" || u.Path == "/v1/_ping" {
			return report.RoleRegistry // only a registry API is pinged, whatever its name
		}
	}
	if isTokenHost(host) {
		return report.RoleToken
	}
	if storageHost.MatchString(host) {
		return report.RoleBlob
	}
	if f.registry != "" && hubAlias(host) != f.registry && !sameRegistry(host, f.registry) {
		return report.RoleBlob // a host other than the image's registry: a redirect target
	}
	if f.registry == "" && u != nil && strings.EqualFold(u.Hostname(), host) && !strings.HasPrefix(u.Path, "/v2/") && !strings.HasPrefix(u.Path, "/v1/") && reBlobPath.MatchString(u.Path) {
		return report.RoleBlob
	}
	return report.RoleRegistry
}

// nsIsHost says the registry ns names is u's scheme, host and port, default ports made explicit.
func nsIsHost(u *url.URL, ns string) bool {
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "http":
		port = "80"
	default:
		port = "443"
	}
	name, nsPort, err := net.SplitHostPort(ns)
	if err != nil {
		name, nsPort = ns, "443"
	}
	return strings.EqualFold(u.Hostname(), name) && port == nsPort
}

func sameRegistry(host, reg string) bool {
	h, _, err := net.SplitHostPort(reg)
	if err != nil {
		h = reg
	}
	return strings.EqualFold(hubAlias(host), hubAlias(h))
}

// operation names what the runtime was doing, from the URL and the wrapper text.
func (f facts) operation(role report.Role) string {
	switch {
	case role == report.RoleToken:
		return "token fetch"
	case role == report.RoleProxy:
		return "proxy CONNECT"
	case f.url != nil:
		p := f.url.Path
		switch {
		case p == "/v2/" || p == "/v2" || strings.HasSuffix(p, "/_ping"):
			return "ping (GET /v2/)"
		case strings.Contains(p, "/manifests/"):
			m := f.method
			if m == "" {
				m = "GET"
			}
			return m + " manifest"
		case strings.Contains(p, "/blobs/") || role == report.RoleBlob:
			return "GET blob"
		}
	case f.blobPhase:
		return "GET blob"
	case strings.Contains(f.text, "failed to resolve reference"):
		return "resolve (HEAD manifest)"
	}
	return ""
}

// registryHost is the image registry's host as the runtime dials it ("registry-1.docker.io:443").
func (f facts) registryHost() string {
	if f.registry == "" {
		return ""
	}
	return f.withPort(registry.APIHost(f.registry), report.RoleRegistry)
}

// withPort writes a host as host:port, the way the probe names endpoints: the port the message
// shows (the URL's, the dialed address's), else the scheme's (443, or 80 for http://). A proxy
// named only by a failed lookup keeps its bare name: the text does not say its port.
func (f facts) withPort(h string, role report.Role) string {
	if h == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(h); err == nil {
		return h
	}
	if role == report.RoleProxy {
		return h
	}
	name := strings.Trim(h, "[]")
	if h == "docker.io" {
		name = registry.APIHost(h)
	}
	if f.url != nil && strings.EqualFold(f.url.Hostname(), name) {
		if p := f.url.Port(); p != "" {
			return net.JoinHostPort(name, p)
		}
		if strings.EqualFold(f.url.Scheme, "http") {
			return net.JoinHostPort(name, "80")
		}
		return net.JoinHostPort(name, "443")
	}
	if f.addr != "" && (f.lookup == "" || strings.EqualFold(f.lookup, name)) && f.url == nil {
		if _, p, err := net.SplitHostPort(f.addr); err == nil {
			return net.JoinHostPort(name, p)
		}
	}
	return net.JoinHostPort(name, "443")
}

// port is the TCP port the failing connection used: the dialed address's, else the host's.
func (f facts) port(host string) string {
	if f.addr != "" {
		if _, p, err := net.SplitHostPort(f.addr); err == nil {
			return p
		}
	}
	if _, p, err := net.SplitHostPort(host); err == nil {
		return p
	}
	return "443"
}

// imageFromPaths reads the image off a registry API URL (/v2/<repo>/manifests/<ref>) or the
// client's "reading manifest <ref> in <host>/<repo>", so the decide line can name it.
func (f facts) imageFromPaths() string {
	if m := reRefIn.FindStringSubmatch(f.text); m != nil {
		return joinRef(strings.TrimRight(m[2], "."), m[1]) // the sentence's full stop is not the name's
	}
	for _, u := range reURL.FindAllString(f.text, -1) {
		pu, err := url.Parse(strings.TrimRight(u, ".,;:"))
		if err != nil || pu.Host == "" {
			continue
		}
		if m := reManifestPath.FindStringSubmatch(pu.Path); m != nil {
			host := pu.Host
			if hubAlias(pu.Hostname()) == "docker.io" {
				host = "docker.io"
			} else if strings.HasSuffix(host, ":443") {
				host = strings.TrimSuffix(host, ":443")
			}
			return joinRef(host+"/"+m[1], m[2])
		}
	}
	return ""
}

func joinRef(repo, ref string) string {
	if strings.Contains(ref, ":") {
		return repo + "@" + ref // a digest
	}
	return repo + ":" + ref
}

// imageFromAPI reads the image from a docker API request a client printed ("…/images/create?
// tag=2023.2&fromImage=host%3A8193%2Fkolla%2Fkeystone"), escapes undone.
func imageFromAPI(t, low string) string {
	m := reFromImage.find(t, low)
	if m == nil {
		return ""
	}
	q, err := url.ParseQuery(strings.TrimRight(m[1], ".,;:"))
	if err != nil || q.Get("fromImage") == "" {
		return ""
	}
	img := q.Get("fromImage")
	if tag := q.Get("tag"); tag != "" && !strings.Contains(img, "@") && repoOf(img) == img {
		if strings.HasPrefix(tag, "sha256:") {
			return img + "@" + tag
		}
		return img + ":" + tag
	}
	return img
}

// notImageHosts name Go module paths and documentation, which the last-resort reading of a bare
// reference would otherwise take for a registry.
var notImageHosts = map[string]bool{"github.com": true, "golang.org": true, "k8s.io": true, "sigs.k8s.io": true, "gopkg.in": true,
	"google.golang.org": true, "go.etcd.io": true, "go.opentelemetry.io": true, "gitlab.com": true, "bitbucket.org": true}

// plausibleImage refuses what a loose pattern took for a reference: a Go package or doc link, a
// file name.
func plausibleImage(ref string) bool {
	first, _, _ := strings.Cut(ref, "/")
	host := strings.ToLower(hostName(first))
	if notImageHosts[host] || strings.HasPrefix(host, "docs.") || strings.HasPrefix(host, "www.") {
		return false
	}
	// user info ("user:password@registry/…") is no reference, and never shown
	if at := strings.IndexByte(ref, '@'); at >= 0 && !strings.HasPrefix(ref[at:], "@sha256:") {
		return false
	}
	return !strings.HasSuffix(ref, ".go") && !strings.HasSuffix(ref, ".html") && !strings.HasSuffix(ref, ".md")
}
