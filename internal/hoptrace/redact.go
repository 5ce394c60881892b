package hoptrace

import (
	"net/url"
	"sort"
	"strings"
)

// safeQueryKeys are query keys whose values carry no credential. Everything else in a query is
// replaced: signed storage URLs (X-Amz-Signature, sig, se, Signature, Policy, Key-Pair-Id,
// X-Goog-Signature, token, ...) carry credentials in the query, and new schemes keep appearing.
var safeQueryKeys = map[string]bool{
	"service": true, "scope": true, "n": true, "last": true, "digest": true, "ns": true,
	"mount": true, "from": true,
}

// SafeQueryKey reports whether a query key's value is kept by RedactURL (case-insensitive).
func SafeQueryKey(k string) bool { return safeQueryKeys[strings.ToLower(k)] }

// Redacted is the placeholder for a removed value.
const Redacted = "REDACTED"

// RedactURL returns u as a string without user info and with every query value outside a small
// allow-list replaced by REDACTED. Keys stay visible: "which signature scheme" is useful evidence.
func RedactURL(u *url.URL) string {
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
					if safeQueryKeys[strings.ToLower(k)] {
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

// RedactString redacts a URL given as text; text that is not a URL is returned with any
// query part removed.
func RedactString(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if i := strings.IndexByte(s, '?'); i >= 0 {
			return s[:i] + "?" + Redacted
		}
		return s
	}
	return RedactURL(u)
}
