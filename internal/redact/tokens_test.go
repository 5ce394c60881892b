package redact

import (
	"strings"
	"testing"
)

// A provider's stderr loses every credential shape before it becomes evidence.
func TestTokensFromProviderStderr(t *testing.T) {
	in := "GET https://user:pw-1234@login.example/token?sig=SIG-SECRET&service=acr failed\n" +
		"Authorization: Bearer BEARER-SECRET-123\n" +
		`{"access_token": "JSON-SECRET-456", "expires_in": 3600}` + "\n" +
		"token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJub2RlIn0.c2lnbmF0dXJl\n" +
		"password=PW-SECRET-789 \x1b[2J done"
	out := Tokens(in)
	for _, secret := range []string{"pw-1234", "SIG-SECRET", "BEARER-SECRET-123", "JSON-SECRET-456", "eyJhbGciOiJIUzI1NiJ9", "PW-SECRET-789", "\x1b"} {
		if strings.Contains(out, secret) {
			t.Errorf("%q survived redaction:\n%s", secret, out)
		}
	}
	for _, kept := range []string{"login.example/token", "service=acr", `"expires_in": 3600`, "done"} {
		if !strings.Contains(out, kept) {
			t.Errorf("%q should be kept:\n%s", kept, out)
		}
	}
}
