package creds

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"time"
)

// JWTExpiry reads the exp claim of s when s is a JWT (header.payload.signature, base64url JSON).
// The signature is not checked: the expiry is evidence for a report, never a decision to trust.
// Nothing of s is returned or logged.
func JWTExpiry(s string) (time.Time, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || len(s) > 64<<10 {
		return time.Time{}, false
	}
	var hdr map[string]any
	if !decodeSegment(parts[0], &hdr) {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if !decodeSegment(parts[1], &claims) || claims.Exp == nil {
		return time.Time{}, false
	}
	f, err := claims.Exp.Float64()
	if err != nil || f <= 0 || f > math.MaxInt32*4 || math.IsNaN(f) {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
}

func decodeSegment(seg string, v any) bool {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(seg, "="))
	if err != nil {
		return false
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	return d.Decode(v) == nil
}

// Expiry is the JWT expiry of the secret c presents, if it is one: its registry token, password
// or identity (refresh) token, in the order the probe prefers them.
func (c Credential) Expiry() (time.Time, bool) {
	for _, s := range []string{c.RegistryToken, c.Password, c.IdentityToken} {
		if s == "" {
			continue
		}
		if t, ok := JWTExpiry(s); ok {
			return t, true
		}
	}
	return time.Time{}, false
}
