package credprovider

import (
	"regexp"

	"github.com/pullpath/pullpath/internal/events"
	"github.com/pullpath/pullpath/internal/hoptrace"
)

var (
	reBearer = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`)
	reKV     = regexp.MustCompile(`(?i)\b(password|passwd|secret|client_secret|access_token|refresh_token|token)(=|"\s*:\s*")[^\s"&,}]+`)
	reJWT    = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*`)
)

// redact removes what looks like a credential from a provider's stderr before it becomes
// evidence: explain's redaction (signed URL queries and user info, Authorization values,
// password=/token= pairs, control characters), and on top of it what providers also print: bare
// Bearer/Basic values, JSON "token": "…" pairs and JWTs. The probe scrubs the values it knows on
// top of this.
func redact(s string) string {
	s = events.Redact(s)
	s = reBearer.ReplaceAllString(s, "${1} "+hoptrace.Redacted)
	s = reKV.ReplaceAllString(s, "${1}${2}"+hoptrace.Redacted)
	return reJWT.ReplaceAllString(s, hoptrace.Redacted)
}
