package registry

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"

	"github.com/pullpath/pullpath/internal/redact"
)

// MaxHostName is the longest DNS name as text (RFC 1035 §2.3.4: 255 octets on the wire).
const MaxHostName = 253

// maxLabel is the longest label of a DNS name (RFC 1035 §2.3.4).
const maxLabel = 63

// ErrHostName is matched by every refusal of CheckHost.
var ErrHostName = errors.New("not a DNS name")

// CheckHost refuses a host (without port) that no resolver can be asked for: longer than a DNS
// name, or with a label longer than 63. Go's resolver, and so containerd's, fails such a name
// with "no such host"; refusing it where it is read keeps a hostile Location or token realm from
// carrying a megabyte into every report, condition and event. An address literal passes.
func CheckHost(host string) error {
	h := strings.TrimSuffix(host, ".")
	if _, err := netip.ParseAddr(h); err == nil {
		return nil
	}
	if len(h) > MaxHostName {
		return fmt.Errorf("%w: %d characters, more than %d", ErrHostName, len(h), MaxHostName)
	}
	for _, l := range strings.Split(h, ".") {
		if len(l) > maxLabel {
			return fmt.Errorf("%w: a label of %d characters, more than %d", ErrHostName, len(l), maxLabel)
		}
	}
	return nil
}

// ShownHost is a host as reports name it: whole when it is a DNS name, else cleaned and cut to
// its first 60 bytes, with "…" (a refused host is still named, never carried whole).
func ShownHost(host string) string {
	if CheckHost(host) == nil && redact.Clean(host) == host {
		return host
	}
	h := redact.Clean(host)
	if len(h) <= 60 {
		return h
	}
	end := 60
	for end > 0 && !utf8.RuneStart(h[end]) {
		end--
	}
	return h[:end] + "…"
}
