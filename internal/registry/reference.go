package registry

import (
	"fmt"
	"net"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Reference is an image reference resolved the way containerd resolves it.
type Reference struct {
	Original   string
	Registry   string // as named: "docker.io", "myreg.azurecr.io", "localhost:5000"
	Host       string // host:port to dial: docker.io becomes registry-1.docker.io:443
	Repository string // "library/nginx"
	Tag        string // "latest" when neither tag nor digest is given
	Digest     string
}

// Identifier is the tag or digest to ask the registry for; the digest wins, as in containerd.
func (r Reference) Identifier() string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Tag
}

// String is the fully qualified reference.
func (r Reference) String() string {
	s := r.Registry + "/" + r.Repository
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// maxReference bounds the input; real references are far shorter (distribution allows 255 for the name).
const maxReference = 4096

// ParseReference parses an image reference with Docker's defaults (docker.io, library/, latest).
// A malformed reference is an error, never a panic.
func ParseReference(s string) (Reference, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Reference{}, fmt.Errorf("empty image reference")
	}
	if len(s) > maxReference {
		return Reference{}, fmt.Errorf("image reference is %d bytes long; refusing more than %d", len(s), maxReference)
	}
	if strings.Contains(s, "://") {
		return Reference{}, fmt.Errorf("invalid image reference %q: give registry/repository[:tag|@digest], not a URL", s)
	}
	ref, err := name.ParseReference(s)
	if err != nil {
		return Reference{}, fmt.Errorf("invalid image reference %q: %s", s, refHint(s, err))
	}
	out := Reference{
		Original:   s,
		Registry:   ref.Context().RegistryStr(),
		Repository: ref.Context().RepositoryStr(),
	}
	switch r := ref.(type) {
	case name.Tag:
		out.Tag = r.TagStr()
	case name.Digest:
		out.Digest = r.DigestStr()
		// name.Digest keeps a tag given together with the digest ("repo:tag@sha256:...") in its
		// original string only; containerd ignores that tag, and so do we.
	}
	if out.Registry == name.DefaultRegistry { // "index.docker.io"
		out.Registry = "docker.io"
	}
	host := APIHost(out.Registry)
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "443")
	}
	out.Host = host
	return out, nil
}

// refHint says what is wrong with a reference the parser rejected, in the runtime's terms.
func refHint(s string, err error) string {
	repo := s
	if i := strings.IndexAny(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	if j := strings.Index(repo, "/"); j >= 0 {
		repo = repo[j+1:] // the registry part may have capitals; the repository may not
	}
	switch {
	case strings.ToLower(repo) != repo:
		return "repository names must be lowercase"
	case strings.HasSuffix(s, ":"):
		return "the tag after ':' is empty"
	case strings.Contains(s, "@") && !ValidDigest(s[strings.LastIndex(s, "@")+1:]):
		return "a digest must look like @sha256:<64 hex characters>"
	case strings.ContainsAny(s, " \t"):
		return "references contain no spaces"
	}
	return err.Error()
}

// APIHost is the host a runtime talks to for a registry name: containerd's default for docker.io
// is registry-1.docker.io; every other registry is its own host.
func APIHost(registry string) string {
	if registry == "docker.io" {
		return "registry-1.docker.io"
	}
	return registry
}
