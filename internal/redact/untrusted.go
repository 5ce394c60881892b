package redact

import (
	"strings"
	"unicode/utf8"
)

// Untrusted is the door for every string a registry, a node or a tenant supplies: control and
// escape characters cleaned (Clean; newlines and tabs become spaces, so it stays one line),
// credentials scrubbed (Tokens' rules), and only then clipped to at most max bytes, "…" marking a
// cut. Scrubbing before clipping means a credential cannot straddle the cut, and a token-like run
// the cut would split is dropped whole rather than left in part. max <= 0 means MaxEvidence.
func Untrusted(s string, max int) string {
	if max <= 0 || max > MaxEvidence {
		max = MaxEvidence
	}
	s = clip(s, MaxEvidence) // bounds the work below; the cut cannot leave part of a token either
	s = Clean(s)
	if strings.ContainsAny(s, "\n\t") {
		s = strings.NewReplacer("\n", " ", "\t", " ").Replace(s)
	}
	s = Text(s)
	s = reBareAuth.ReplaceAllString(s, "${1} "+Redacted)
	s = reJSONKV.ReplaceAllString(s, "${1}${2}"+Redacted)
	s = reJWT.ReplaceAllString(s, Redacted)
	return clip(s, max)
}

// minTokenRun is the shortest run of token characters a cut drops whole: as short as the bare
// Bearer/Basic values Tokens removes.
const minTokenRun = 8

// clip cuts s to at most n bytes, "…" included, on a rune boundary. When the cut falls inside a run
// of token characters (base64, base64url, hex, JWT) of minTokenRun or more, the run goes: half a
// credential is still a credential.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…"
	end := max(n-len(ell), 0)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	if tokenByte(s[end]) && end > 0 && tokenByte(s[end-1]) {
		start := end
		for start > 0 && tokenByte(s[start-1]) {
			start--
		}
		stop := end
		for stop < len(s) && tokenByte(s[stop]) {
			stop++
		}
		if stop-start >= minTokenRun {
			end = start
		}
	}
	return s[:end] + ell
}

func tokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("._~+/=-", c) >= 0
}
