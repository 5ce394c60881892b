package creds

import (
	"encoding/base64"
	"testing"
	"time"
)

func TestJWTExpiry(t *testing.T) {
	enc := base64.RawURLEncoding.EncodeToString
	hdr := enc([]byte(`{"alg":"RS256"}`))
	if got, ok := JWTExpiry(hdr + "." + enc([]byte(`{"exp":1796205600,"sub":"x"}`)) + ".c2ln"); !ok || !got.Equal(time.Unix(1796205600, 0)) {
		t.Errorf("JWTExpiry = %s %t, want 2026-12-02T10:00:00Z", got, ok)
	}
	for _, s := range []string{"s3cret-demo-password", hdr + "." + enc([]byte(`{"sub":"x"}`)) + ".c2ln", "a.b.c", hdr + ".!!.c2ln", ""} {
		if got, ok := JWTExpiry(s); ok {
			t.Errorf("JWTExpiry(%q) = %s, want none", s, got)
		}
	}
}
