package redact

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

var (
	reURLAll  = regexp.MustCompile(`https?://[^\s"'\\<>\x60]+`)
	reAuthHdr = regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*\[?["']?)(bearer|basic)\s+[A-Za-z0-9._~+/=-]+`)
	reKV      = regexp.MustCompile(`(?i)\b(password|passwd|secret|access_token|refresh_token|token)=([^&\s"]+)`)
	// a pasted command's credentials: skopeo's and podman's --creds USER:PASSWORD, docker login's
	// -p/--password, and a reference with user info (user:password@registry/…)
	reCredFlag = regexp.MustCompile(`(?i)(--(?:src-|dest-)?creds[= ]\s*|--password[= ]\s*|\blogin\s(?:\S+\s+)*?-p\s+)("[^"]*"|'[^']*'|\S+)`)
	reUserInfo = regexp.MustCompile(`(^|[\s"'(=])([^\s"'(=:@/]+):[^\s"'@/]+@((?:[a-zA-Z0-9-]+\.)+[a-zA-Z0-9-]+|localhost)([:/])`)

	// what credential helpers and providers also print: bare Bearer/Basic values, JSON
	// "token": "…" pairs and JWTs
	reBareAuth = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`)
	reJSONKV   = regexp.MustCompile(`(?i)\b(password|passwd|secret|client_secret|access_token|refresh_token|token)(=|"\s*:\s*")[^\s"&,}]+`)
	reJWT      = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*`)
)

// Evidence is another program's text as pullpath shows it: at most MaxEvidence bytes, terminal
// escapes removed and other control characters escaped (Clean), credentials redacted (Text).
func Evidence(msg string) string {
	if len(msg) > MaxEvidence {
		msg = msg[:MaxEvidence]
	}
	return Text(Clean(msg))
}

// Tokens is Evidence for a credential provider's or helper's output, which may also print bare
// tokens: Bearer/Basic values, JSON "token": "…" pairs and JWTs go too.
func Tokens(s string) string {
	s = Evidence(s)
	s = reBareAuth.ReplaceAllString(s, "${1} "+Redacted)
	s = reJSONKV.ReplaceAllString(s, "${1}${2}"+Redacted)
	return reJWT.ReplaceAllString(s, Redacted)
}

// Text removes credentials from a message before it is shown or stored: signed URL queries and
// user info, Authorization values, password= and token= pairs, a pasted command's --creds or
// password. Everything else is kept byte for byte.
func Text(s string) string {
	if strings.Contains(s, "://") {
		s = reURLAll.ReplaceAllStringFunc(s, func(u string) string {
			u, tail := TrimURL(u)
			return urlText(u) + tail
		})
	}
	// the literal checks skip the regexps for the many messages that cannot match
	low := strings.ToLower(s)
	if strings.Contains(low, "authorization") {
		s = reAuthHdr.ReplaceAllString(s, "${1}${2} "+Redacted)
	}
	if strings.Contains(low, "pass") || strings.Contains(low, "secret") || strings.Contains(low, "token") {
		s = reKV.ReplaceAllString(s, "${1}="+Redacted)
	}
	if strings.Contains(low, "creds") || strings.Contains(low, "--password") || strings.Contains(low, "login") {
		s = reCredFlag.ReplaceAllString(s, "${1}"+Redacted)
	}
	if strings.Contains(s, "@") {
		s = reUserInfo.ReplaceAllString(s, "${1}${2}:"+Redacted+"@${3}${4}")
	}
	return s
}

// TrimURL splits a URL found in prose from the punctuation that follows it ("…/v2/: dial",
// "…?ns=docker.io: 400", "(https://…)"): the punctuation is the message's, not the URL's.
func TrimURL(u string) (string, string) {
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

// urlText redacts a URL where it stands: user info and every query value outside the
// probe's allow-list become REDACTED; keys, their order and all other bytes stay as written.
func urlText(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		hostEnd := strings.IndexAny(rest, "/?#")
		if hostEnd < 0 {
			hostEnd = len(rest)
		}
		if at := strings.LastIndexByte(rest[:hostEnd], '@'); at >= 0 {
			u = u[:i+3] + Redacted + rest[at:]
		}
	}
	q := strings.IndexByte(u, '?')
	frag := strings.IndexByte(u, '#')
	if frag >= 0 {
		u = u[:frag+1] + Redacted
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
		if ku, err := url.QueryUnescape(k); err == nil && SafeQueryKey(ku) {
			continue
		}
		if hasV {
			parts[i] = k + "=" + Redacted
		} else if p != "" {
			parts[i] = Redacted
		}
	}
	return u[:q+1] + strings.Join(parts, "&") + u[end:]
}

// reTermSeq is a terminal escape sequence (CSI, OSC, or a two-byte ESC sequence): formatting of a
// coloured log, never content, so it is removed rather than shown.
var reTermSeq = regexp.MustCompile("\x1b\\[[0-?]*[ -/]*[@-~]|\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)?|\x1b[@-Z\\\\-_]|\u009b[0-?]*[ -/]*[@-~]")

// Clean makes input text safe to print: terminal escape sequences are removed, every other
// control character (C0 but tab and newline, DEL, C1) is written as \xNN, a bidirectional
// override or isolate (which reorders what a terminal shows) as \uNNNN, and invalid UTF-8 as
// U+FFFD. Printable text is returned unchanged, so messages are still quoted byte for byte.
func Clean(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.ContainsAny(s, "\x1b\u009b") {
		s = reTermSeq.ReplaceAllString(s, "")
	}
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			fmt.Fprintf(&b, `\x%02x`, r)
			continue
		}
		if bidi(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// bidi reports the bidirectional controls: marks, embeddings, overrides and isolates.
func bidi(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}
