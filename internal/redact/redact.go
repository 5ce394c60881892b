// Package redact removes credentials from what pullpath shows, logs and stores: URLs (user info,
// signed query values), free text from other programs (Authorization values, password= and
// token= pairs, pasted --creds), header values and proxy URLs. It sits on the bottom floor
// (standard library only) so that every package that handles a credential, from the node probe
// to explain, uses the same rules.
package redact

import (
	"net/url"
	"sort"
	"strings"
)

// Redacted is the placeholder for a removed value.
const Redacted = "REDACTED"

// MaxEvidence bounds another program's text kept as evidence.
const MaxEvidence = 64 << 10

// safeQueryKeys are query keys whose values carry no credential. Everything else in a query is
// replaced: signed storage URLs (X-Amz-Signature, sig, se, Signature, Policy, Key-Pair-Id,
// X-Goog-Signature, token, ...) carry credentials in the query, and new schemes keep appearing.
var safeQueryKeys = map[string]bool{
	"service": true, "scope": true, "n": true, "last": true, "digest": true, "ns": true,
	"mount": true, "from": true,
}

// SafeQueryKey reports whether a query key's value is kept by URL (case-insensitive).
func SafeQueryKey(k string) bool { return safeQueryKeys[strings.ToLower(k)] }

// URL returns u as a string without user info and with every query value outside a small
// allow-list replaced by REDACTED. Keys stay visible: "which signature scheme" is useful evidence.
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		q, err := url.ParseQuery(c.RawQuery)
		if err != nil {
			c.RawQuery = Redacted
		} else {
			keys := make([]string, 0, len(q))
			for k := range q {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var b strings.Builder
			for i, k := range keys {
				for j, v := range q[k] {
					if i+j > 0 {
						b.WriteByte('&')
					}
					b.WriteString(url.QueryEscape(k))
					b.WriteByte('=')
					if SafeQueryKey(k) {
						b.WriteString(url.QueryEscape(v))
					} else {
						b.WriteString(Redacted)
					}
				}
			}
			c.RawQuery = b.String()
		}
	}
	c.Fragment = ""
	c.RawFragment = ""
	return c.String()
}

// URLString redacts a URL given as text; text that is not a URL is returned with any query part
// removed.
func URLString(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if i := strings.IndexByte(s, '?'); i >= 0 {
			return s[:i] + "?" + Redacted
		}
		return s
	}
	return URL(u)
}

// ProxyURL hides the user info of a proxy URL given as text, keeping where it points.
func ProxyURL(s string) string {
	if s == "" {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	c := *u
	c.User = url.User(Redacted)
	return c.String()
}

// Header returns a header's values, all replaced when its name says it carries a credential.
func Header(name string, vals []string) []string {
	ln := strings.ToLower(name)
	for _, w := range []string{"auth", "token", "key", "secret", "cookie"} {
		if strings.Contains(ln, w) {
			out := make([]string, len(vals))
			for i := range vals {
				out[i] = Redacted
			}
			return out
		}
	}
	return vals
}
