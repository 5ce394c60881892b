package redact

import (
	"strings"
	"testing"
)

// The credential scrub runs before the clip: a Basic value straddling the cut is gone, not left in
// part (the clip used to come first and kept "Basic cm9ib3Q6UzNjcj…").
func TestUntrustedScrubsBeforeClipping(t *testing.T) {
	secret := "cm9ib3Q6UzNjcjN0LXBhc3N3b3JkLTEyMzQ1Njc4OTA="
	body := strings.Repeat("x ", 90) + "Authorization: Basic " + secret + " rest"
	for _, n := range []int{190, 200, 205, 210, 230} {
		got := Untrusted(body, n)
		if len(got) > n {
			t.Errorf("Untrusted(body, %d) is %d bytes", n, len(got))
		}
		for i := 6; i <= len(secret); i++ {
			if strings.Contains(got, secret[:i]) {
				t.Errorf("Untrusted(body, %d) = %q keeps %q of the credential", n, got, secret[:i])
				break
			}
		}
	}
}

// A token-like run split by the cut is dropped whole, even one no scrub rule knows.
func TestUntrustedDropsASplitTokenRun(t *testing.T) {
	got := Untrusted("denied for key 0123456789abcdef0123456789abcdef", 30)
	if got != "denied for key …" {
		t.Errorf("Untrusted = %q, want %q", got, "denied for key …")
	}
	if got := Untrusted("short words only here", 13); got != "short word…" {
		t.Errorf("Untrusted = %q, want %q (a word shorter than a token is cut as text)", got, "short word…")
	}
}

// Escape sequences, CR and the other controls, and bidi overrides never reach a terminal: the
// forged green "pull path holds" line a registry body printed is inert text.
func TestUntrustedCleansControls(t *testing.T) {
	in := "denied\r\x1b[2K\x1b[32mOK  the pull path holds\x1b[0m\x1b]0;title\x07 \u202egnp.exe\u2066 \x9b31m\x00\x7f\nnext"
	got := Untrusted(in, 1000)
	for _, bad := range []string{"\x1b", "\r", "\n", "\x07", "\u202e", "\u2066", "\u009b", "\x00", "\x7f"} {
		if strings.Contains(got, bad) {
			t.Errorf("Untrusted = %q keeps %q", got, bad)
		}
	}
	if !strings.Contains(got, "OK  the pull path holds") || !strings.HasPrefix(got, "denied") {
		t.Errorf("Untrusted = %q: the printable text stays", got)
	}
}

func TestUntrustedBounds(t *testing.T) {
	if got := Untrusted(strings.Repeat("é", 300), 101); len(got) > 101 || !strings.HasSuffix(got, "…") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("Untrusted = %q (%d bytes): cut on a rune boundary within 101 bytes", got, len(got))
	}
	if got := Untrusted(strings.Repeat("a.", 1<<20), 0); len(got) > MaxEvidence {
		t.Errorf("Untrusted(_, 0) is %d bytes, want at most MaxEvidence", len(got))
	}
}
