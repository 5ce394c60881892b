package events

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// reTermSeq is a terminal escape sequence (CSI, OSC, or a two-byte ESC sequence): formatting of a
// coloured log, never content, so it is removed rather than shown.
var reTermSeq = regexp.MustCompile("\x1b\\[[0-?]*[ -/]*[@-~]|\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)?|\x1b[@-Z\\\\-_]|\u009b[0-?]*[ -/]*[@-~]")

// cleanText makes input text safe to print: terminal escape sequences are removed, every other
// control character (C0 but tab and newline, DEL, C1) is written as \xNN, and invalid UTF-8 as
// U+FFFD. Printable text is returned unchanged, so messages are still quoted byte for byte.
func cleanText(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.ContainsAny(s, "\x1b\u009b") {
		s = reTermSeq.ReplaceAllString(s, "")
	}
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			fmt.Fprintf(&b, `\x%02x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ErrNotText is returned for input that is not text (binary data, a compressed file).
var ErrNotText = errors.New("input is not text")

// asText returns the input as UTF-8 text: a UTF-16 file (what PowerShell's redirection writes)
// is decoded, a UTF-8 byte order mark dropped. Input with NUL bytes, or where invalid UTF-8 and
// control bytes are more than one in twenty, is refused.
func asText(b []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(b, []byte{0xef, 0xbb, 0xbf}):
		b = b[3:]
	case len(b) >= 2 && (b[0] == 0xff && b[1] == 0xfe || b[0] == 0xfe && b[1] == 0xff) && len(b)%2 == 0:
		u := make([]uint16, 0, len(b)/2-1)
		for i := 2; i+1 < len(b); i += 2 {
			if b[0] == 0xff {
				u = append(u, uint16(b[i])|uint16(b[i+1])<<8)
			} else {
				u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
			}
		}
		b = []byte(string(utf16.Decode(u)))
	}
	if n := bytes.Count(b, []byte{0}); n > 0 {
		return nil, fmt.Errorf("%w: %d NUL byte(s), as in binary data (give the text of the events or the log)", ErrNotText, n)
	}
	bad := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != 0x1b && r != '\f' {
			bad++
		}
		i += size
	}
	if bad > 0 && bad*20 > len(b) {
		return nil, fmt.Errorf("%w: %d of %d bytes are neither UTF-8 text nor whitespace (binary or compressed data?)", ErrNotText, bad, len(b))
	}
	return b, nil
}
