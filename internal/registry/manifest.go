package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Media types the runtime accepts, in the Accept order containerd sends.
const (
	MediaOCIIndex       = "application/vnd.oci.image.index.v1+json"
	MediaDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	MediaDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	MediaDockerSchema1  = "application/vnd.docker.distribution.manifest.v1+prettyjws"
)

// AcceptManifests is the Accept header of a manifest request.
var AcceptManifests = strings.Join([]string{MediaOCIIndex, MediaDockerList, MediaOCIManifest, MediaDockerManifest, "*/*"}, ", ")

// MaxManifestBytes caps a manifest body, as containerd does (4 MiB).
const MaxManifestBytes = 4 << 20

// Descriptor points at a blob or manifest (OCI image-spec descriptor).
type Descriptor struct {
	MediaType string    `json:"mediaType"`
	Digest    string    `json:"digest"`
	Size      int64     `json:"size"`
	URLs      []string  `json:"urls,omitempty"`
	Platform  *Platform `json:"platform,omitempty"`
}

// Platform is an OS/architecture pair.
type Platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
}

func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// ParsePlatform parses "os/arch[/variant]".
func ParsePlatform(s string) (Platform, error) {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(s)), "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return Platform{}, fmt.Errorf("invalid platform %q: want os/arch[/variant], e.g. linux/amd64", s)
	}
	p := Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p.Normalize(), nil
}

// Normalize applies containerd's platform normalisation for matching (arm64 → v8, arm → v7, amd64 → no variant).
func (p Platform) Normalize() Platform {
	switch p.Architecture {
	case "aarch64":
		p.Architecture = "arm64"
	case "x86_64", "x86-64":
		p.Architecture = "amd64"
	}
	switch p.Architecture {
	case "arm64":
		if p.Variant == "8" || p.Variant == "" {
			p.Variant = "v8"
		}
	case "arm":
		if p.Variant == "" {
			p.Variant = "v7"
		}
	case "amd64":
		if p.Variant == "v1" {
			p.Variant = ""
		}
	}
	return p
}

// Match reports whether a manifest for m runs on p (p is the node's platform).
func (p Platform) Match(m Platform) bool {
	p, m = p.Normalize(), m.Normalize()
	if p.OS != m.OS || p.Architecture != m.Architecture {
		return false
	}
	return m.Variant == "" || p.Variant == "" || m.Variant == p.Variant
}

// Manifest is a parsed image manifest or index.
type Manifest struct {
	MediaType string
	Index     bool
	Manifests []Descriptor // index entries
	Config    Descriptor
	Layers    []Descriptor
}

var digestRE = regexp.MustCompile(`^sha256:[a-f0-9]{64}$|^sha512:[a-f0-9]{128}$`)

// ValidDigest reports whether d is a sha256 or sha512 digest in canonical form.
func ValidDigest(d string) bool { return digestRE.MatchString(d) }

// ErrUnsupportedManifest is a manifest the runtime will not use (schema 1, an unknown media type):
// a platform matter, fixed in the image build, not a transport or integrity failure.
var ErrUnsupportedManifest = errors.New("unsupported manifest")

// unsupported is an ErrUnsupportedManifest whose text says which (the report quotes it as is).
type unsupported struct{ msg string }

func (e unsupported) Error() string        { return e.msg }
func (e unsupported) Is(target error) bool { return target == ErrUnsupportedManifest }

// ParseManifest parses a manifest body; contentType is the response's Content-Type.
func ParseManifest(contentType string, body []byte) (*Manifest, error) {
	var raw struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []Descriptor `json:"manifests"`
		Config        *Descriptor  `json:"config"`
		Layers        []Descriptor `json:"layers"`
		FSLayers      []any        `json:"fsLayers"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("manifest is not valid JSON: %v", err)
	}
	mt := raw.MediaType
	if mt == "" {
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.TrimSpace(mt)
	}
	if raw.SchemaVersion == 1 || mt == MediaDockerSchema1 || len(raw.FSLayers) > 0 {
		return nil, unsupported{"schema 1 manifest: containerd 2.x and current registries refuse it; rebuild and push the image"}
	}
	m := &Manifest{MediaType: mt}
	switch {
	case mt == MediaOCIIndex || mt == MediaDockerList || (raw.Config == nil && len(raw.Manifests) > 0):
		m.Index = true
		m.Manifests = raw.Manifests
		for _, d := range m.Manifests {
			if !ValidDigest(d.Digest) || d.Size < 0 {
				return nil, fmt.Errorf("index entry has an invalid descriptor (digest %q, size %d)", clip(d.Digest), d.Size)
			}
		}
		if len(m.Manifests) == 0 {
			return nil, fmt.Errorf("index lists no manifests")
		}
	case raw.Config != nil:
		m.Config = *raw.Config
		m.Layers = raw.Layers
		for _, d := range append([]Descriptor{m.Config}, m.Layers...) {
			if !ValidDigest(d.Digest) || d.Size < 0 {
				return nil, fmt.Errorf("manifest has an invalid descriptor (digest %q, size %d)", clip(d.Digest), d.Size)
			}
		}
	default:
		return nil, unsupported{fmt.Sprintf("unsupported manifest media type %q", clip(mt))}
	}
	return m, nil
}

// ImageConfig is the part of an image config that decides the platform.
type ImageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
}

// APIError is one entry of a registry error body (distribution spec "errors").
type APIError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ParseErrors extracts errors[].code and message from an error body; not-JSON yields nil.
func ParseErrors(body []byte) []APIError {
	var e struct {
		Errors []APIError `json:"errors"`
	}
	if json.Unmarshal(body, &e) != nil {
		return nil
	}
	for i := range e.Errors {
		e.Errors[i].Code = clip(e.Errors[i].Code)
		e.Errors[i].Message = clip(e.Errors[i].Message)
	}
	return e.Errors
}

// ParseToken extracts the bearer token from a token-realm response (token or access_token).
func ParseToken(body []byte) (string, error) {
	t, err := ParseTokenResponse(body)
	return t.Token, err
}

// Token is a token realm's answer (distribution token spec): the bearer token, and its lifetime
// when the realm states one.
type Token struct {
	Token     string
	ExpiresIn int       // seconds; 0 when absent (the spec then assumes 60)
	IssuedAt  time.Time // zero when absent or not RFC 3339
}

// ParseTokenResponse reads a token-realm response (token or access_token, expires_in, issued_at).
func ParseTokenResponse(body []byte) (Token, error) {
	var t struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
		ExpiresIn   any    `json:"expires_in"`
		IssuedAt    string `json:"issued_at"`
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return Token{}, fmt.Errorf("token response is not JSON")
	}
	out := Token{Token: t.Token}
	if out.Token == "" {
		out.Token = t.AccessToken
	}
	if out.Token == "" {
		return Token{}, fmt.Errorf("token response has neither token nor access_token")
	}
	// a number per the spec; some realms send it as a string
	switch v := t.ExpiresIn.(type) {
	case float64:
		if v > 0 && v < 1<<31 {
			out.ExpiresIn = int(v)
		}
	case string:
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			out.ExpiresIn = n
		}
	}
	if at, err := time.Parse(time.RFC3339, t.IssuedAt); err == nil {
		out.IssuedAt = at.UTC()
	}
	return out, nil
}
