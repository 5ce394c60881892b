package events

import (
	"slices"
	"strings"

	"github.com/pullpath/pullpath/internal/redact"
)

// The rules read a status or a class word only where the message states it, never in a name:
// the repository "team-16/svc-407" is no HTTP 407, the host "tls-svc.corp" no TLS failure, the
// tag "denied:1" no denial (issue 25). prose is the message with every name masked: image
// references, repository paths and tags, host names, URLs past their scheme (path and query
// values), digests, and ports of three digits (a status's shape). Letters and digits of a name
// become "x", a port's "0", so the prose has the text's length and a rule's match is quoted from
// the text at the same place. IP literals and localhost stay: fixed forms that hold neither a
// status (an octet is at most 255) nor a class word, and that some rules read (a sinkhole's
// 0.0.0.0, the plain-HTTP localhost registry).

var (
	// references and paths where the wording says what they are, beyond those the extractor reads
	// (wrappedNames reads those after "image" and "reference")
	reNameWrapped = []litRegexp{
		mustLit(`(?i)\brepository ([a-z0-9][\w./:@-]*) not found`),
		mustLit(`[Ii]mage ([^\s"]+) not found`),
		mustLit(`Pulling from ([\w./:-]+)`),
		mustLit(`(?:[Rr]eading manifest|Tag) (\S+?) (?:in|not found in repository) ([^\s:"]+(?::\d+)?/[^\s:"]+)`),
		mustLit(`(?i)\b(?:pull|pulling) repository ([a-z0-9][\w./:@-]*?):?(?:\s|$)`),
		mustLit(`(?i)trying to pull ([^\s"]+?)(?:\.\.\.|\s|$)`),
		mustLit(`docker://([^\s"']+?)(?::\s|[\s"',]|:?$)`),
	}
	// the words after which the extractor reads a host (extract.go's reLookup, reProxy, reNamed…)
	hostWords = []string{"lookup ", "host: ", "host ", "registry ", "dial tcp ", "connecting to ", "proxy ", "match ", "not "}
	// a file or unit the shape of a host name ("hosts.toml"), or code ("main.go:36")
	reFileName = lazyRE(`\.(?:go|toml|json|conf|ya?ml|sock|socket|service|mount|target|timer|slice|exe|dat|pem|crt|cert|key|log|txt|sh|py|pyc|md|html?|so|tar|gz|tgz|zip|xml|ini|cfg|js|ts|rs|hpp|gch|lock|pid|tmp|list|repo|sum|mod)$`)
	reDigest   = mustLit(`sha256:[0-9a-f]{3,}`)
	// every name of a certificate's list, not only the one the extractor reads
	reCertNames = mustLit(`certificate is valid for ([^\n]*?), not `)
	reCertName  = lazyRE(`[\w*][\w.*-]*\.[\w-]+`)
)

// nameSpans are patterns whose groups are names: the extractor's, for the references it reads
// by their wording (one without its registry), and reNameWrapped. Names with a registry host,
// hosts with a dot and ports are found by their shape (nameTokens), the hosts the extractor read
// by its facts. Left out, for speed, are reImage's patterns whose names are found otherwise: the
// quoted references after "image" or "reference" and the commands' "docker pull REF"
// (wrappedNames), and those that read only a reference with its registry (nameTokens);
// TestProseMasksEveryName holds the selection to that.
var nameSpans = func() []litRegexp {
	var out []litRegexp
	for i, re := range reImage {
		if imageFoundOtherwise[i] {
			continue
		}
		if strings.HasPrefix(re.String(), `(?i)(?:failed to resolve ref|image pull failed for|from flag value) "?`) {
			// "failed to resolve ref ", not the "failed to resolve reference" of every containerd
			// error: a narrower literal than the prefilter derives, so the pattern runs less often
			re.pf.lits = []string{"failed to resolve ref ", "image pull failed for ", "from flag value "}
		}
		out = append(out, re)
	}
	return append(append(out, reNameWrapped...), reFromImage, reCertFor, litRegexp{reBlocked, newPrefilter(reBlocked)})
}()

// imageFoundOtherwise are the indexes in reImage of the patterns nameSpans leaves out: the quoted
// wrappers (0) and "failed to pull image REF:" (1, wrappedNames'), "image REF not found" (4),
// docker:// (6) and "pulling repository" (15, reNameWrapped's), those with a registry host only
// (7, 11, 16) and the commands (14, wrappedNames').
var imageFoundOtherwise = map[int]bool{0: true, 1: true, 4: true, 6: true, 7: true, 11: true, 14: true, 15: true, 16: true}

// proseOf masks the names of f.text; urls are the URLs reURL found in it.
func proseOf(f *facts, urls [][]int) (prose, lower string) {
	t := f.text
	var b []byte
	var found []string // names seen, masked wherever else they stand
	// the copy is made on the first name masked, from whichever loop finds it
	mask := func(s, e int) {
		if b == nil {
			b = []byte(t)
		}
		maskRange(b, t, s, e)
	}
	maskName := func(s, e int) {
		if s < 0 || s >= e {
			return
		}
		mask(s, e)
		if name := t[s:e]; strings.ContainsAny(name, "./:") {
			found = append(found, name)
		}
	}
	for _, loc := range urls {
		u, _ := redact.TrimURL(t[loc[0]:loc[1]])
		if i := strings.Index(u, "://"); i >= 0 {
			maskName(loc[0]+i+3, loc[0]+len(u))
		}
	}
	low := f.lower
	groups := func(ms [][]int) {
		for _, m := range ms {
			for g := 2; g+1 < len(m); g += 2 {
				maskName(m[g], m[g+1])
			}
		}
	}
	for _, re := range nameSpans {
		if re.pf.mayMatch(low) {
			groups(re.FindAllStringSubmatchIndex(t, -1))
		}
	}
	for _, tok := range nameTokens(t) {
		maskName(tok[0], tok[1])
	}
	for _, tok := range wrappedNames(t) {
		maskName(tok[0], tok[1])
	}
	// the hosts the extractor read ("lookup registry on …", "dial tcp proxy:3128"): one with a dot
	// or a port is a name wherever it stands, a single word where the wording puts a host
	for _, h := range []string{f.lookup, f.resolver, f.addr, f.proxy, f.namedHost, f.certHost} {
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, ".:") {
			found = append(found, h)
			continue
		}
		for _, before := range hostWords {
			for i := 0; ; {
				k := strings.Index(t[i:], before+h)
				if k < 0 {
					break
				}
				s := i + k + len(before)
				if e := s + len(h); e == len(t) || !nameByte(t[e]) {
					maskName(s, e)
				}
				i = s
			}
		}
	}
	if reCertNames.pf.mayMatch(low) {
		for _, m := range reCertNames.FindAllStringSubmatchIndex(t, -1) {
			for _, n := range reCertName.FindAllStringIndex(t[m[2]:m[3]], -1) {
				if !reFileName.MatchString(t[m[2]+n[0] : m[2]+n[1]]) {
					maskName(m[2]+n[0], m[2]+n[1])
				}
			}
		}
	}
	if reDigest.pf.mayMatch(low) {
		for _, m := range reDigest.FindAllStringIndex(t, -1) {
			maskName(m[0], m[1])
		}
	}
	// a name the patterns found once is a name wherever else it stands (a reference repeated
	// outside its wrapper, a repository's component as a tool's prefix "svc-407: …"); a bare word
	// ("nginx") is masked only where a pattern put it: it may be prose too
	for _, name := range found {
		if !strings.Contains(name, "/") {
			continue
		}
		name, _, _ = strings.Cut(name, "?")
		for _, c := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == ':' || r == '@' }) {
			// not a number alone: a port, or a tag that may be the status the text states too
			if len(c) > 1 && strings.ContainsAny(c, "-._0123456789") && !allDigits(c) {
				found = append(found, c)
			}
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	for _, name := range found {
		for i := 0; ; {
			j := strings.Index(t[i:], name)
			if j < 0 {
				break
			}
			s, e := i+j, i+j+len(name)
			i = s + 1
			if s > 0 && nameByte(t[s-1]) || e < len(t) && nameByte(t[e]) && (t[e] != '.' || e+1 < len(t) && nameByte(t[e+1])) {
				continue
			}
			mask(s, e) // not maskName: found is being read
		}
	}
	if b == nil {
		return t, low
	}
	prose = string(b)
	if len(low) != len(t) {
		return prose, strings.ToLower(prose)
	}
	lb := []byte(low)
	for i := range b {
		if b[i] != t[i] {
			lb[i] = b[i]
		}
	}
	return prose, string(lb)
}

// maskRange masks the name t[s:e] in b: a host and its port, a reference, or a URL past its scheme.
func maskRange(b []byte, t string, s, e int) {
	name := t[s:e]
	// the first component: a host, with a port when a path follows or the host has a dot
	first, rest, slash := strings.Cut(name, "/")
	if i := strings.IndexAny(first, "?#"); i >= 0 {
		first, slash = first[:i], true
	}
	host, port := first, ""
	if h, p, ok := cutPort(first); ok && (slash || strings.Contains(h, ".") || fixedHost(h)) {
		host, port = first[:len(first)-len(p)-1], p // brackets kept
	}
	at := s
	if fixedHost(strings.Trim(host, "[]")) {
		at += len(host)
	} else {
		maskAlnum(b, at, at+len(host))
		at += len(host)
	}
	if port != "" {
		at++ // ':'
		if len(port) == 3 {
			for i := at; i < at+3; i++ {
				b[i] = '0'
			}
		}
		at += len(port)
	} else if len(first) > len(host) {
		maskAlnum(b, at, s+len(first))
		at = s + len(first)
	}
	if slash && rest == "wpad.dat" {
		return // the proxy auto-discovery file's fixed name, which the PAC rule reads
	}
	maskAlnum(b, at, e)
}

func maskAlnum(b []byte, s, e int) {
	for i := s; i < e; i++ {
		if c := b[i]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b[i] = 'x'
		}
	}
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// fixedHost is a host name nobody chose: an IP literal or localhost.
func fixedHost(h string) bool {
	return isIP(h) || strings.EqualFold(h, "localhost")
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// nameTokens finds names by their shape, wherever they stand: a reference that names its registry
// ("registry.example.com:5000/team/app:1", "kind-registry:5000/app"), a host with a dot, with or
// without a port, and an IP literal with its port. A run of name characters is cut from the text
// and judged whole, so "i/o", "linux/arm64" or "x509:" are not taken, nor a file ("hosts.toml",
// "proc.go:271"). A host without a port or a path must be lower case: "Client.Timeout" is Go's.
func nameTokens(t string) [][2]int {
	var out [][2]int
	for i := 0; i < len(t); {
		if !tokenByte(t[i]) {
			i++
			continue
		}
		s, marks := i, false
		for i < len(t) && tokenByte(t[i]) {
			marks = marks || t[i] == '.' || t[i] == ':' || t[i] == '/'
			i++
		}
		e := i
		if !marks {
			continue // a word: no host, port or path
		}
		if j := strings.LastIndex(t[s:e], "://"); j >= 0 {
			s += j + 3 // a URL's (reURL's) or another scheme's ("docker://"): the name after it
		}
		if strings.HasPrefix(t[s:e], "/v2/") || strings.HasPrefix(t[s:e], "/v1/") {
			out = append(out, [2]int{s + 4, e}) // a registry API path outside a URL ("from request \"/v2/…\"")
			continue
		}
		for s < e && (t[s] == '[' && !strings.Contains(t[s:e], "]:") || t[s] == ':' || t[s] == '/') {
			s++
		}
		for e > s && strings.IndexByte(".:]", t[e-1]) >= 0 && !(t[e-1] == ']' && strings.Contains(t[s:e], "[")) {
			e--
		}
		if s < e && isNameToken(t[s:e]) {
			out = append(out, [2]int{s, e})
		}
	}
	return out
}

func tokenByte(c byte) bool {
	return nameByte(c) || c == ':' || c == '/' || c == '@' || c == '[' || c == ']'
}

// isNameToken says whether a run of name characters is a host or a reference by its shape.
func isNameToken(tok string) bool {
	first, _, slash := strings.Cut(tok, "/")
	host, port := first, ""
	if i := strings.LastIndexByte(first, ':'); i >= 0 {
		h, p, ok := cutPort(first)
		if !ok {
			return false // a colon but no port: "x509:", a tag, a time
		}
		host, port = h, p
	}
	switch {
	case isIP(host):
		return port != "" // an address alone is no name; with its port, the port may look like a status
	case slash && (port != "" && isLabel(host) || strings.EqualFold(host, "localhost")):
		return true // "kind-registry:5000/app", "localhost/app"
	case !strings.Contains(host, ".") || reFileName.MatchString(first):
		return false
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if !isLabel(l) {
			return false
		}
	}
	tld := labels[len(labels)-1]
	for i := 0; i < len(tld); i++ {
		if c := tld[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return len(tld) >= 2 && (slash || port != "" || strings.ToLower(host) == host)
}

func isLabel(l string) bool {
	if l == "" || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// cutPort splits "host:port" and "[v6]:port" where the port is digits; net.SplitHostPort would
// allocate an error for every word with a colon.
func cutPort(s string) (host, port string, ok bool) {
	if strings.HasPrefix(s, "[") {
		i := strings.Index(s, "]:")
		if i < 0 || !allDigits(s[i+2:]) {
			return "", "", false
		}
		return s[1:i], s[i+2:], true
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 || strings.IndexByte(s[:i], ':') >= 0 || !allDigits(s[i+1:]) {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// isIP says whether h is an IPv4 or IPv6 literal, without allocating as net.ParseIP does.
func isIP(h string) bool {
	if strings.Contains(h, ":") {
		for i := 0; i < len(h); i++ {
			if c := h[i] | 0x20; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == ':' || c == '.') {
				return false
			}
		}
		return strings.Count(h, ":") >= 2
	}
	parts := 0
	for p := range strings.SplitSeq(h, ".") {
		if len(p) == 0 || len(p) > 3 || !allDigits(p) || len(p) == 3 && p > "255" {
			return false
		}
		parts++
	}
	return parts == 4
}

// wrappedNames finds the names the wording around them marks: a quoted token after "image",
// "images", "reference" or "ref" ("Failed to pull image \"svc-407\"", "image 'app'"), after
// "name", "id" or "projects=" in single quotes (ECR's "with name 'team/app'", gcloud's
// "--projects='team-451'"), and an unquoted one after "pull image", "fetch base image" and the
// like when a colon, a comma or the end follows ("unable to pull image app:1: …").
func wrappedNames(t string) [][2]int {
	var out [][2]int
	for i := 0; i < len(t); i++ {
		q := t[i]
		if q != '"' && q != '\'' {
			continue
		}
		j := i + 1
		for j < len(t) && t[j] != q && t[j] != ' ' && t[j] != '\\' {
			j++
		}
		if j >= len(t) || t[j] != q || j == i+1 {
			continue
		}
		before := strings.TrimSuffix(t[:i], "\\")
		w := lastWord(before)
		switch {
		case q == '"' && (w == "reference" || w == "ref"), hasSuffixFold(w, "image") || hasSuffixFold(w, "images"), // "PullImage"
			q == '\'' && (w == "name" || w == "id" || strings.HasSuffix(before, "projects=") || strings.HasSuffix(before, "project=")):
			out = append(out, [2]int{i + 1, j})
		}
		i = j
	}
	for i := 0; ; {
		k := strings.Index(t[i:], " image ")
		if k < 0 {
			break
		}
		at := i + k + len(" image ")
		i = at
		w := lastWord(t[:at-len(" image ")])
		if w == "base" {
			w = lastWord(strings.TrimSuffix(t[:at-len(" image ")], "base"))
		}
		switch strings.ToLower(w) {
		case "pull", "fetch", "pulling", "pulled", "find":
		default:
			continue
		}
		e := at
		for e < len(t) && (nameByte(t[e]) || t[e] == '/' || t[e] == ':' || t[e] == '@') {
			e++
		}
		name := strings.TrimRight(t[at:e], ":")
		if end := at + len(name); name != "" && (end == len(t) || t[end] == ',' || strings.HasPrefix(t[end:], ": ") || t[end:] == ":") {
			out = append(out, [2]int{at, end})
		}
	}
	// a command as typed: "docker pull [--platform linux/arm64] [docker://]REF"
	for i := 0; ; {
		k := strings.Index(t[i:], " pull ")
		if k < 0 {
			break
		}
		at := i + k + len(" pull ")
		i = at
		switch strings.ToLower(lastWord(t[:at-len(" pull ")])) {
		case "docker", "podman", "nerdctl", "buildah", "crictl", "ctr", "image", "images", "i":
		default:
			continue
		}
		for at < len(t) && t[at] == '-' { // flags, and a platform's value
			for at < len(t) && t[at] != ' ' {
				at++
			}
			at++
			for _, platform := range []string{"linux/", "windows/", "darwin/"} {
				if strings.HasPrefix(t[min(at, len(t)):], platform) {
					for at < len(t) && t[at] != ' ' {
						at++
					}
					at++
				}
			}
		}
		if at >= len(t) {
			break
		}
		if strings.HasPrefix(t[at:], "docker://") {
			at += len("docker://")
		}
		e := at
		for e < len(t) && t[e] != ' ' && t[e] != '"' && t[e] != '\'' {
			e++
		}
		if e > at {
			out = append(out, [2]int{at, e})
		}
	}
	return out
}

// lastWord is the word s ends with, after at most one space.
func lastWord(s string) string {
	s = strings.TrimSuffix(s, " ")
	i := len(s)
	for i > 0 && (s[i-1] >= 'a' && s[i-1] <= 'z' || s[i-1] >= 'A' && s[i-1] <= 'Z' || s[i-1] == '=' || s[i-1] == '-') {
		i--
	}
	return s[i:]
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}
