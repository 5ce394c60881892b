package events

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/report"
)

// The metamorphic test of issue 25: a message whose image references, repository paths and host
// names are renamed to names holding a status-like number (400 to 599) or a class word must read
// the same. The names here are found by this file's own patterns, not by the extractor's, so a
// name the extractor does not know is renamed too.

var (
	classWords = []string{"proxy", "denied", "timeout", "tls", "x509", "unauthorized", "notfound"}
	nameBases  = []string{"svc", "team", "app", "web", "api", "core", "img", "build"}
	// how a new name is put together: b a base, w a class word, n a number from 400 to 599
	nameForms  = []string{"b-n", "w-b", "b-w", "w-n", "n", "w", "bn", "wn", "n-b", "w-b-n", "b.w", "b_w"}
	reHostName = regexp.MustCompile(`^` + pHost + `$`)
	reLabel    = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)
	reSegment  = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	reTag      = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	// vendor names are read as the vendor wherever they stand (registries.go): a random name must
	// not bring one in
	reVendorWord = regexp.MustCompile(`docker|quay|gcr|ghcr|ecr|amazonaws|azurecr|gitlab|harbor|jfrog|artifactory|nexus|k8s|github|localhost|redhat`)
)

// renamer maps each old name to a new one, the same old name always to the same new name, and
// two old names never to one new name.
type renamer struct {
	rng               *rand.Rand
	base              string // when set (the fuzz target), the base of every new name
	hosts, segs, tags map[string]string
	used              map[string]bool
}

func newRenamer(seed uint64, base string) *renamer {
	return &renamer{rng: rand.New(rand.NewPCG(seed, 25)), base: base, hosts: map[string]string{}, segs: map[string]string{},
		tags: map[string]string{}, used: map[string]bool{}}
}

// candidate is a new name: a base, a class word, a number from 400 to 599, or a mix.
func (r *renamer) candidate() string {
	b := r.base
	if b == "" {
		b = nameBases[r.rng.IntN(len(nameBases))]
	}
	w := classWords[r.rng.IntN(len(classWords))]
	n := fmt.Sprint(400 + r.rng.IntN(200))
	var sb strings.Builder
	for _, c := range nameForms[r.rng.IntN(len(nameForms))] {
		switch c {
		case 'b':
			sb.WriteString(b)
		case 'w':
			sb.WriteString(w)
		case 'n':
			sb.WriteString(n)
		default:
			sb.WriteRune(c)
		}
	}
	return sb.String()
}

// fresh returns a new name that valid accepts and no other old name has.
func (r *renamer) fresh(valid func(string) bool) (string, bool) {
	for range 64 {
		c := r.candidate()
		if r.used[c] || !valid(c) {
			continue
		}
		r.used[c] = true
		return c, true
	}
	return "", false
}

// cacheName says a name reads as a pull-through cache's (classify.go's pullThroughCache reads
// that from names on purpose): a new name must say so exactly when the old one did.
func cacheName(s string) bool {
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '/' }) {
		if reCacheSegment.MatchString(l) || reCacheHost.MatchString(l) {
			return true
		}
	}
	return false
}

// hostMeaning is what a host name says by itself in the taxonomy: its registry's family, Docker
// Hub, a token, storage or documentation host. A renamed host must say the same.
func hostMeaning(h string) string {
	u := &url.URL{Host: h}
	return fmt.Sprint(hubAlias(h) == "docker.io", registryFamily(h), isTokenHost(h), storageHost.MatchString(h), isDocLink(u),
		notImageHosts[h], strings.HasSuffix(h, ".docker.com") || strings.HasSuffix(h, ".docker.io"), cacheName(h))
}

func (r *renamer) host(h string) string {
	low := strings.ToLower(h)
	if low != h || !reHostName.MatchString(h) || net.ParseIP(h) != nil {
		return h
	}
	if n, ok := r.hosts[h]; ok {
		return n
	}
	n := h
	labels := strings.Split(h, ".")
	want := hostMeaning(h)
	// c (one label or two, "svc.tls") in front of rest keeps the host valid and its meaning
	ok := func(rest []string) func(string) bool {
		return func(c string) bool {
			for _, l := range strings.Split(c, ".") {
				if !reLabel.MatchString(l) {
					return false
				}
			}
			nh := strings.Join(append([]string{c}, rest...), ".")
			return !reVendorWord.MatchString(c) && hostMeaning(nh) == want && !r.used[nh]
		}
	}
	// a new first label, else a new label in front: a host keeps a dot and its vendor's suffix
	if len(labels) > 1 {
		if c, found := r.fresh(ok(labels[1:])); found {
			n = strings.Join(append([]string{c}, labels[1:]...), ".")
		} else if c, found := r.fresh(ok(labels)); found {
			n = c + "." + h
		}
	}
	r.hosts[h], r.used[n] = n, true
	return n
}

// segment renames one component of a repository path; Docker Hub's library namespace stays.
func (r *renamer) segment(s string) string {
	if s == "library" || !reSegment.MatchString(s) || cacheName(s) || reVendorWord.MatchString(s) {
		return s
	}
	if n, ok := r.segs[s]; ok {
		return n
	}
	// no dot: a first component with one names a registry host. A name with a digit or a
	// separator is renamed wherever it stands, so its new name keeps one: a plain word outside
	// a name's place ("nginx: …" as a tool's prefix) reads as prose, whatever the rewrite
	shaped := strings.ContainsAny(s, "-._0123456789")
	n, found := r.fresh(func(c string) bool {
		return reSegment.MatchString(c) && !strings.Contains(c, ".") && !cacheName(c) && !reVendorWord.MatchString(c) &&
			(!shaped || strings.ContainsAny(c, "-_0123456789"))
	})
	if !found {
		n = s
	}
	r.segs[s] = n
	return n
}

func (r *renamer) tag(s string) string {
	if s == "" || strings.HasPrefix(s, "sha256") {
		return s
	}
	if n, ok := r.tags[s]; ok {
		return n
	}
	n, found := r.fresh(func(c string) bool { return reTag.MatchString(c) && !reVendorWord.MatchString(c) })
	if !found {
		n = s
	}
	r.tags[s] = n
	return n
}

// path renames each component of a repository path ("team-16/svc-407").
func (r *renamer) path(p, sep string) string {
	parts := strings.Split(p, sep)
	for i, s := range parts {
		parts[i] = r.segment(s)
	}
	return strings.Join(parts, sep)
}

// ref renames an image reference as the rewrite renamed its parts; what was not renamed stays.
func (r *renamer) ref(ref string) string {
	if h, _, _ := strings.Cut(ref, ":"); !strings.Contains(ref, "/") && strings.Contains(h, ".") {
		return r.hostPort(ref)
	}
	rest, digest, _ := strings.Cut(ref, "@")
	tag := ""
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		rest, tag = rest[:i], rest[i+1:]
	}
	host := ""
	if first, p, ok := strings.Cut(rest, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		host, rest = first, p
	}
	var sb strings.Builder
	if host != "" {
		sb.WriteString(r.hostPort(host) + "/")
	}
	parts := strings.Split(rest, "/")
	for i, s := range parts {
		if n, ok := r.segs[s]; ok {
			parts[i] = n
		} else if n, ok := r.hosts[s]; ok {
			parts[i] = n // a component the text also names as a host, renamed as one everywhere
		}
	}
	sb.WriteString(strings.Join(parts, "/"))
	if tag != "" {
		if n, ok := r.tags[tag]; ok {
			tag = n
		}
		sb.WriteString(":" + tag)
	}
	if digest != "" {
		if t, rest, ok := strings.Cut(digest, ":"); ok && t != "sha256" {
			if n, ok := r.tags[t]; ok {
				digest = n + ":" + rest // a tag with a colon, which the extractor joins as a digest
			}
		}
		sb.WriteString("@" + digest)
	}
	return sb.String()
}

// refPath is a reference's repository path, without its registry, tag or digest.
func refPath(ref string) string {
	rest := repoOf(ref)
	if first, p, ok := strings.Cut(rest, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return p
	}
	return rest
}

// refParts renames the parts of a reference found where only its whole can be replaced.
func (r *renamer) refParts(ref string) {
	rest, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		r.tag(rest[i+1:])
		rest = rest[:i]
	}
	if first, p, ok := strings.Cut(rest, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		h, _, _ := strings.Cut(first, ":")
		r.host(h)
		rest = p
	}
	r.path(rest, "/")
}

// hostPort renames the host of "host:port" or "host" if the rewrite renamed it.
func (r *renamer) hostPort(hp string) string {
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		h, p = hp, ""
	}
	if n, ok := r.hosts[h]; ok {
		h = n
	}
	if p == "" {
		return h
	}
	return net.JoinHostPort(h, p)
}

const (
	pHost = `(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z][a-z0-9-]*[a-z0-9]`
	pSeg  = `[a-zA-Z0-9]+(?:(?:[._]|__|-+)[a-zA-Z0-9]+)*` // upper case too: texts hide names as "XXXXX"
	pPath = pSeg + `(?:/` + pSeg + `)*`
	pTag  = `[\w](?:[\w-]|\.[\w-]){0,127}` // no "..": podman's "Trying to pull REF..." ends the tag
	pRef  = `(?:(?:` + pHost + `|localhost|[a-z0-9-]+:\d+|\d+\.\d+\.\d+\.\d+)(?::\d+|:port)?/)?` + pPath + `(?::` + pTag + `)?(?:@sha256:[0-9a-f]{6,64})?`
)

var (
	reTURL = regexp.MustCompile(`https?://([^\s"'\\<>\x60)\]/?#]+)([^\s"'\\<>\x60)\]]*)`)
	// a reference that names its registry, standing alone
	reTHostRef = regexp.MustCompile(`(?:^|[\s"'(=\[,])((?:` + pHost + `|localhost)(?::\d+)?/` + pPath + `(?::` + pTag + `)?(?:@sha256:[0-9a-f]{6,64})?)`)
	// a reference without its registry, where the text says it is one
	reTWrapped   = regexp.MustCompile(`(?:pull access denied for (` + pRef + `),|manifest for (` + pRef + `) not found|repository (` + pRef + `) not found|[Ii]mage (` + pRef + `) not found|(?:[Ii]mage|reference|ref) \\?"(` + pRef + `)\\?"|image '(` + pRef + `)'|\b(?:docker|podman|crictl|nerdctl|buildah) pull (` + pRef + `)(?:\s|$)|(?:^|[\s"'(=])docker://(` + pRef + `)|[Ff]ailed to pull (?:and unpack )?image (` + pRef + `)(?::\s|:?$)|for image (` + pRef + `)(?:\s|$)|\((` + pRef + `)\)\.\.\.|[Tt]rying to pull (?:docker://)?(` + pRef + `)\.\.\.|(?:failed to resolve ref|image pull failed for|from flag value|load metadata for|initializing source|pulling repository) "?(?:docker://)?(` + pRef + `)|\bpull (?:-{1,2}[\w-]+(?:=\S+| [a-z]+/[\w/]+)? )+(` + pRef + `)(?:\s|$))`)
	reTFromImage = regexp.MustCompile(`\bfromImage=([^&\s"]+)`)
	// the tag beside it in docker's images/create query
	reTQueryTag = regexp.MustCompile(`images/create\?(?:[^\s"]*&)?tag=([^&\s"]+)`)
	// a tag, then the repository it was looked for in
	reTTagIn = regexp.MustCompile(`(?:[Rr]eading manifest|Tag) (` + pTag + `) (?:in|not found in repository) (` + pRef + `)`)
	// a host name where the text says it is one
	reTHostCtx  = regexp.MustCompile(`(?:lookup |dial tcp |connecting to |pulling from host |registry |wanted to match |, not |host |proxy |for )(` + pHost + `)(?::\d+)?(?:[\s:,;"')]|$)`)
	reTHostPort = regexp.MustCompile(`(?:^|[\s"'(=\[,@])(` + pHost + `):\d+\b`)
	reTValidFor = regexp.MustCompile(`certificate is valid for ([^\n]*?), not `)
	// registry API paths in a URL
	reTAPIPath = regexp.MustCompile(`^/v2/(` + pPath + `)/(?:manifests/(` + pTag + `)?|blobs/|tags/)|^/v1/repositories/(` + pPath + `)/`)
	reTScope   = regexp.MustCompile(`scope=repository(?:%3[Aa]|:)([a-z0-9._-]+(?:(?:%2[Ff]|/)[a-z0-9._-]+)*)(?:%3[Aa]|:)`)
	// file names a loose reference pattern would take for a repository's last component
	reTFileName = regexp.MustCompile(`\.(?:go|html?|md|json|toml|ya?ml|conf|sock|so|py|pyc|gch|hpp|txt|log|sh)$`)
)

type edit struct {
	start, end int
	repl       string
}

// rewrite renames every image reference, repository path and host name in msg, consistently.
func (r *renamer) rewrite(msg string) string {
	var edits []edit
	var refs []string // the references found, renamed wherever else they stand
	add := func(start, end int, repl string) {
		if start < end && msg[start:end] != repl {
			edits = append(edits, edit{start, end, repl})
		}
	}
	hostEdit := func(start, end int) {
		h := msg[start:end]
		if notImageHosts[h] || isDocLink(&url.URL{Host: h}) {
			return
		}
		add(start, end, r.host(h))
	}
	pathEdits := func(start int, p, sep string) {
		off := start
		for i, s := range strings.Split(p, sep) {
			if i > 0 {
				off += len(sep)
			}
			add(off, off+len(s), r.segment(s))
			off += len(s)
		}
	}
	refEdits := func(start int, ref string) {
		ref = strings.TrimRight(ref, ".") // the sentence's, or a progress line's "..."
		if reTFileName.MatchString(repoOf(ref)) {
			return
		}
		if h, _, _ := strings.Cut(ref, ":"); !strings.Contains(ref, "/") && strings.Contains(h, ".") {
			// "registry.example.com:5000": a host and its port, not a repository and its tag
			if reHostName.MatchString(h) {
				hostEdit(start, start+len(h))
			}
			return
		}
		refs = append(refs, ref)
		rest, _, _ := strings.Cut(ref, "@")
		if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
			tag := rest[i+1:]
			add(start+i+1, start+i+1+len(tag), r.tag(tag))
			rest = rest[:i]
		}
		off := 0
		if first, _, ok := strings.Cut(rest, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
			h, _, _ := strings.Cut(first, ":")
			if notImageHosts[h] || isDocLink(&url.URL{Host: h}) {
				return
			}
			hostEdit(start, start+len(h))
			off = len(first) + 1
		}
		pathEdits(start+off, rest[off:], "/")
	}
	for _, m := range reTURL.FindAllStringSubmatchIndex(msg, -1) {
		hp := strings.TrimRight(msg[m[2]:m[3]], ".,;:")
		if strings.Contains(hp, "@") {
			continue
		}
		h := hp
		if i := strings.LastIndexByte(hp, ':'); i >= 0 && !strings.HasSuffix(hp, "]") {
			h = hp[:i]
		}
		if isDocLink(&url.URL{Host: h}) {
			continue
		}
		hostEdit(m[2], m[2]+len(h))
		rest := msg[m[4]:m[5]]
		if pm := reTAPIPath.FindStringSubmatchIndex(rest); pm != nil {
			for g := 1; g <= 3; g++ {
				if pm[2*g] < 0 {
					continue
				}
				s := rest[pm[2*g]:pm[2*g+1]]
				if g == 2 {
					if !strings.HasPrefix(s, "sha256") {
						s = strings.TrimRight(s, ".:-")
						add(m[4]+pm[2*g], m[4]+pm[2*g]+len(s), r.tag(s))
					}
					continue
				}
				pathEdits(m[4]+pm[2*g], s, "/")
			}
		}
		for _, sm := range reTScope.FindAllStringSubmatchIndex(rest, -1) {
			p := rest[sm[2]:sm[3]]
			sep := "/"
			if strings.Contains(strings.ToUpper(p), "%2F") {
				sep = p[strings.Index(strings.ToUpper(p), "%2F"):][:3]
			}
			pathEdits(m[4]+sm[2], p, sep)
		}
	}
	for _, m := range reTHostRef.FindAllStringSubmatchIndex(msg, -1) {
		refEdits(m[2], msg[m[2]:m[3]])
	}
	for _, m := range reTWrapped.FindAllStringSubmatchIndex(msg, -1) {
		for g := 1; 2*g < len(m); g++ {
			if m[2*g] >= 0 {
				refEdits(m[2*g], msg[m[2*g]:m[2*g+1]])
			}
		}
	}
	for _, m := range reTFromImage.FindAllStringSubmatchIndex(msg, -1) {
		// docker's API request: the image as a query value
		if ref, err := url.QueryUnescape(msg[m[2]:m[3]]); err == nil {
			r.refParts(ref)
			add(m[2], m[3], url.QueryEscape(r.ref(ref)))
		}
	}
	for _, m := range reTQueryTag.FindAllStringSubmatchIndex(msg, -1) {
		if tag, err := url.QueryUnescape(msg[m[2]:m[3]]); err == nil && !strings.HasPrefix(tag, "sha256") {
			add(m[2], m[3], url.QueryEscape(r.tag(tag)))
		}
	}
	for _, m := range reTTagIn.FindAllStringSubmatchIndex(msg, -1) {
		if tag := msg[m[2]:m[3]]; !strings.HasPrefix(tag, "sha256") {
			add(m[2], m[3], r.tag(tag))
		}
		refEdits(m[4], msg[m[4]:m[5]])
	}
	for _, re := range []*regexp.Regexp{reTHostCtx, reTHostPort} {
		for _, m := range re.FindAllStringSubmatchIndex(msg, -1) {
			if !reTFileName.MatchString(msg[m[2]:m[3]]) {
				hostEdit(m[2], m[3])
			}
		}
	}
	for _, m := range reTValidFor.FindAllStringSubmatchIndex(msg, -1) {
		off := m[2]
		for i, name := range strings.Split(msg[m[2]:m[3]], ", ") {
			if i > 0 {
				off += 2
			}
			if reHostName.MatchString(name) {
				hostEdit(off, off+len(name))
			}
			off += len(name)
		}
	}
	// every other occurrence of a renamed host or repository path, wherever it stands
	var olds []string
	for h := range r.hosts {
		olds = append(olds, h)
	}
	for s := range r.segs {
		if strings.ContainsAny(s, "-._0123456789") {
			olds = append(olds, s) // a bare word ("nginx") may be prose too: renamed only where it stands as a name
		}
	}
	for _, ref := range refs {
		if strings.ContainsAny(ref, "/:") {
			olds = append(olds, ref)
		}
		if p := refPath(ref); strings.Contains(p, "/") {
			olds = append(olds, p)
		}
	}
	sort.Slice(olds, func(i, j int) bool { return len(olds[i]) > len(olds[j]) })
	for _, old := range olds {
		for i := 0; ; {
			j := strings.Index(msg[i:], old)
			if j < 0 {
				break
			}
			s, e := i+j, i+j+len(old)
			i = e
			if s > 0 && isNameByte(msg[s-1]) || e < len(msg) && (isNameByte(msg[e]) && msg[e] != '.' || msg[e] == '.' && e+1 < len(msg) && isNameByte(msg[e+1])) {
				continue
			}
			if n, ok := r.hosts[old]; ok {
				add(s, e, n)
			} else if n, ok := r.segs[old]; ok {
				add(s, e, n)
			} else if !strings.ContainsAny(old, ":@") && refPath(old) == old {
				add(s, e, r.path(old, "/"))
			} else {
				add(s, e, r.ref(old))
			}
		}
	}
	// apply, the first and longest of overlapping edits (they agree: one old name, one new name)
	sort.Slice(edits, func(i, j int) bool {
		if edits[i].start != edits[j].start {
			return edits[i].start < edits[j].start
		}
		return edits[i].end > edits[j].end
	})
	var sb strings.Builder
	at := 0
	for _, e := range edits {
		if e.start < at {
			continue
		}
		sb.WriteString(msg[at:e.start])
		sb.WriteString(e.repl)
		at = e.end
	}
	sb.WriteString(msg[at:])
	return sb.String()
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// verdict is what the rewrite must not change.
func verdict(fd report.Finding) string {
	return fmt.Sprintf("%s %s decided=%v", fd.Class, fd.Code, fd.Decided)
}

// rewriteChange compares explain's first finding on a message and on its rewrite: the class, code
// and decided flag must stay; the image and host follow the rewrite. It returns what changed.
func rewriteChange(msg string, r *renamer) (rw, verdictChange, fieldChange, fieldFamily string) {
	rw = r.rewrite(msg)
	if rw == msg {
		return rw, "", "", ""
	}
	a, b := Classify(msg), Classify(rw)
	if verdict(a) != verdict(b) {
		verdictChange = verdict(a) + " → " + verdict(b)
	}
	if wi, wh := r.ref(a.Image), r.hostPort(a.Host); b.Image != wi || b.Host != wh {
		fieldChange = fmt.Sprintf("image %q host %q, want %q %q", b.Image, b.Host, wi, wh)
		fieldFamily = fieldDiff("image", b.Image, wi) + fieldDiff("host", b.Host, wh)
	}
	return rw, verdictChange, fieldChange, fieldFamily
}

func diffCount(a, b []string) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// fieldDiff says which part of a field differs, without its text (held-out messages are not shown).
func fieldDiff(field, got, want string) string {
	switch {
	case got == want:
		return ""
	case got == "" || want == "":
		return field + " empty in one reading; "
	case refPath(got) != refPath(want):
		return fmt.Sprintf("%s path (%d of %d components differ); ", field, diffCount(strings.Split(refPath(got), "/"), strings.Split(refPath(want), "/")), len(strings.Split(refPath(want), "/")))
	}
	gh, _, _ := strings.Cut(got, "/")
	wh, _, _ := strings.Cut(want, "/")
	if gh != wh {
		return field + " registry host; "
	}
	return field + " tag or digest; "
}

// rewriteVariants is how many renamings each message is read under.
const rewriteVariants = 4

func seedOf(s string, v int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64() + uint64(v)
}

// TestRewriteInvariant: explain reads a status only where the text states one and a class word
// only in prose, never in a name. Over the whole corpus (dev and held-out) and the lab strings,
// every message is read again with its names renamed; held-out messages are reported as counts
// only, like TestCorpus's figures.
func TestRewriteInvariant(t *testing.T) {
	parts := map[string][]sample{}
	for _, file := range corpusFiles {
		for _, s := range loadCorpus(t, file) {
			part := "dev"
			if heldOut(s.source) {
				part = "held-out"
			}
			parts[part] = append(parts[part], s)
		}
	}
	parts["lab"] = loadCorpus(t, "testdata/lab.txt")
	for _, part := range []string{"dev", "held-out", "lab"} {
		renamed, changed, moved := 0, 0, 0
		families := map[string]int{}
		for _, s := range parts[part] {
			var vc, fc string
			any := false
			for v := range rewriteVariants {
				rw, c, f, ff := rewriteChange(s.message, newRenamer(seedOf(s.message, v), ""))
				if f != "" && fc == "" {
					families["fields: "+ff]++
				}
				any = any || rw != s.message
				if c != "" && vc == "" {
					vc = c
					if part != "held-out" {
						t.Logf("CHANGED %s: %s\n  %.600s\n  %.600s", s.source, c, s.message, rw)
					}
				}
				if f != "" && fc == "" {
					fc = f
					if part != "held-out" {
						t.Logf("FIELDS %s: %s\n  %.600s\n  %.600s", s.source, f, s.message, rw)
					}
				}
			}
			if any {
				renamed++
			}
			if vc != "" {
				changed++
				families[vc]++
			}
			if fc != "" {
				moved++
			}
		}
		t.Logf("%s: %d messages, %d with names renamed (%d renamings each); first finding changed on %d, image/host not following the rewrite on %d",
			part, len(parts[part]), renamed, rewriteVariants, changed, moved)
		if part == "held-out" {
			for _, f := range slices.Sorted(maps.Keys(families)) {
				t.Logf("held-out change: %s ×%d", f, families[f])
			}
		}
		if changed > 0 || moved > 0 {
			t.Errorf("%s: the rewrite changed the first finding of %d messages and its image or host of %d", part, changed, moved)
		}
	}
}

// FuzzRewriteInvariant renames the names of a corpus or lab message after a random base: the
// first finding's class, code and decided flag stay, its image and host follow the rewrite.
func FuzzRewriteInvariant(f *testing.F) {
	var msgs []string
	for _, file := range append(slices.Clone(corpusFiles), "testdata/lab.txt") {
		for _, s := range loadCorpus(f, file) {
			msgs = append(msgs, s.message)
		}
	}
	f.Add(uint16(0), uint64(1), "svc")
	f.Add(uint16(7), uint64(407), "team-16")
	f.Add(uint16(300), uint64(429), "registry")
	f.Fuzz(func(t *testing.T, i uint16, seed uint64, base string) {
		base = fuzzBase(base)
		if base == "" {
			t.Skip()
		}
		msg := msgs[int(i)%len(msgs)]
		rw, c, fc, _ := rewriteChange(msg, newRenamer(seed, base))
		if c != "" || fc != "" {
			t.Errorf("renamed with base %q: %s%s\n  %s\n  %s", base, c, fc, msg, rw)
		}
	})
}

// fuzzBase makes a valid name out of random bytes: lowercase letters and digits joined by
// dashes, without a vendor's name.
func fuzzBase(s string) string {
	var sb strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			if dash && sb.Len() > 0 {
				sb.WriteByte('-')
			}
			sb.WriteRune(c)
			dash = false
		default:
			dash = true
		}
		if sb.Len() >= 24 {
			break
		}
	}
	b := sb.String()
	if reVendorWord.MatchString(b) || cacheName(b) {
		return ""
	}
	return b
}
