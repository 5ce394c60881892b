package registry

import (
	"fmt"
	"strings"

	"github.com/pullpath/pullpath/internal/redact"
)

// Challenge is one parsed WWW-Authenticate challenge (RFC 7235 §4.1).
type Challenge struct {
	Scheme string            // "bearer" or "basic", lowercased
	Params map[string]string // keys lowercased: realm, service, scope, error
}

// maxChallenge bounds the header we parse; real ones are a few hundred bytes.
const maxChallenge = 16 << 10

// ParseChallenge parses the first challenge of a WWW-Authenticate header value, as the
// distribution token spec sends it: `Bearer realm="https://auth/token",service="reg",scope="repository:x:pull"`.
func ParseChallenge(h string) (Challenge, error) {
	h = strings.TrimSpace(h)
	if h == "" {
		return Challenge{}, fmt.Errorf("empty WWW-Authenticate header")
	}
	if len(h) > maxChallenge {
		return Challenge{}, fmt.Errorf("WWW-Authenticate header is %d bytes; refusing more than %d", len(h), maxChallenge)
	}
	scheme, rest, _ := strings.Cut(h, " ")
	if !isToken(scheme) {
		return Challenge{}, fmt.Errorf("WWW-Authenticate %q: no auth scheme", clip(h))
	}
	c := Challenge{Scheme: strings.ToLower(scheme), Params: map[string]string{}}
	s := strings.TrimSpace(rest)
	for s != "" {
		i := strings.IndexByte(s, '=')
		if i <= 0 {
			// token68 or a second challenge: stop at what we understood
			break
		}
		key := strings.ToLower(strings.TrimSpace(s[:i]))
		if !isToken(key) {
			break
		}
		s = strings.TrimLeft(s[i+1:], " \t")
		var val string
		if strings.HasPrefix(s, `"`) {
			var b strings.Builder
			j := 1
			closed := false
			for ; j < len(s); j++ {
				ch := s[j]
				if ch == '\\' && j+1 < len(s) {
					j++
					b.WriteByte(s[j])
					continue
				}
				if ch == '"' {
					closed = true
					j++
					break
				}
				b.WriteByte(ch)
			}
			if !closed {
				return Challenge{}, fmt.Errorf("WWW-Authenticate %q: unterminated quoted value of %s", clip(h), key)
			}
			val = b.String()
			s = s[j:]
		} else {
			j := strings.IndexByte(s, ',')
			if j < 0 {
				j = len(s)
			}
			val = strings.TrimSpace(s[:j])
			s = s[j:]
		}
		if _, dup := c.Params[key]; !dup {
			c.Params[key] = val
		}
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, ",") {
			s = strings.TrimLeft(s[1:], " \t")
		}
	}
	if c.Scheme == "bearer" && c.Params["realm"] == "" {
		return c, fmt.Errorf("WWW-Authenticate %q: Bearer challenge without a realm", clip(h))
	}
	return c, nil
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}

// clip is a header as an error quotes it: cleaned, scrubbed, then cut (redact.Untrusted).
func clip(s string) string { return redact.Untrusted(s, 200) }
