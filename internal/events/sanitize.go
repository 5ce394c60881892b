package events

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNotText is returned for input that is not text (binary data, a compressed file).
var ErrNotText = errors.New("input is not text")

// asText returns the input as UTF-8 text: a UTF-16 file (what PowerShell's redirection writes)
// is decoded, a UTF-8 byte order mark dropped. Input with NUL bytes, or where invalid UTF-8 and
// control bytes are more than one in twenty, is refused.
func asText(b []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(b, []byte{0xef, 0xbb, 0xbf}):
		b = b[3:]
	case len(b) >= 2 && (b[0] == 0xff && b[1] == 0xfe || b[0] == 0xfe && b[1] == 0xff):
		u := make([]uint16, 0, len(b)/2-1)
		for i := 2; i+1 < len(b); i += 2 {
			if b[0] == 0xff {
				u = append(u, uint16(b[i])|uint16(b[i+1])<<8)
			} else {
				u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
			}
		}
		ascii := 0
		for _, c := range u {
			if c < utf8.RuneSelf {
				ascii++
			}
		}
		if ascii*2 < len(u) {
			// pull errors, events and describe output are mostly ASCII whatever the language
			// around them: random bytes that start like a byte order mark are not
			return nil, fmt.Errorf("%w: a UTF-16 byte order mark, then %d of %d characters outside ASCII (binary data?)", ErrNotText, len(u)-ascii, len(u))
		}
		text := []byte(string(utf16.Decode(u)))
		if len(b)%2 == 1 && b[len(b)-1] != 0 && b[len(b)-1] < utf8.RuneSelf {
			// an odd length: a UTF-16 file with one byte appended in another encoding (a newline
			// an editor or "echo >>" added); a UTF-16 file cut in the middle of a unit loses it
			text = append(text, b[len(b)-1])
		}
		b = text
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
