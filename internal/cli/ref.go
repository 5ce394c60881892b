package cli

import (
	"fmt"
	"strings"

	"github.com/pullpath/pullpath/internal/registry"
)

// parseImage parses an image reference given on the command line. A reference with credentials
// in it (user:password@registry, as in a URL) is refused without echoing them: the parser's own
// error quotes its input.
func parseImage(s string) (registry.Reference, error) {
	rest, scheme := s, false
	if i := strings.Index(rest, "://"); i >= 0 {
		rest, scheme = rest[i+3:], true
	}
	// the userinfo sits before the first slash; "nginx@sha256:…" has a digest there, no slash
	host, _, path := strings.Cut(rest, "/")
	if at := strings.LastIndex(host, "@"); at >= 0 && (path || scheme) {
		redacted := s[:len(s)-len(rest)] + "***@" + rest[at+1:]
		return registry.Reference{}, fmt.Errorf("invalid image reference %q: credentials do not go in the image reference (use --username with --password-stdin, or --pull-secret)", redacted)
	}
	return registry.ParseReference(s)
}
