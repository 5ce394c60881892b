package report

import "unicode/utf8"

// Clip returns s cut to at most n bytes, followed by "…" when it was cut; s itself when it fits.
// The one UTF-8 rule of every clip in pullpath: the cut moves back to the first byte of the rune
// it falls in, so a multi-byte character is never split (the result may be a few bytes shorter).
func Clip(s string, n int) string {
	head := clipHead(s, n)
	if len(head) == len(s) {
		return s
	}
	return head + "…"
}

// clipHead is at most n bytes of s, cut on a rune boundary (Clip's rule), without the "…".
func clipHead(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
