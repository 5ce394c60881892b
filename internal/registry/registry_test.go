package registry

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseReference(t *testing.T) {
	cases := []struct {
		in                                string
		registry, host, repo, tag, digest string
	}{
		{"nginx", "docker.io", "registry-1.docker.io:443", "library/nginx", "latest", ""},
		{"docker.io/library/nginx:1.27", "docker.io", "registry-1.docker.io:443", "library/nginx", "1.27", ""},
		{"index.docker.io/team/app", "docker.io", "registry-1.docker.io:443", "team/app", "latest", ""},
		{"myreg.azurecr.io/team/app:1.4", "myreg.azurecr.io", "myreg.azurecr.io:443", "team/app", "1.4", ""},
		{"localhost:5000/app:v1", "localhost:5000", "localhost:5000", "app", "v1", ""},
		{"[::1]:5000/app:v1", "[::1]:5000", "[::1]:5000", "app", "v1", ""},
		{"reg.example/app@sha256:" + strings.Repeat("a", 64), "reg.example", "reg.example:443", "app", "", "sha256:" + strings.Repeat("a", 64)},
	}
	for _, tc := range cases {
		r, err := ParseReference(tc.in)
		if err != nil {
			t.Errorf("ParseReference(%q) error %v", tc.in, err)
			continue
		}
		if r.Registry != tc.registry || r.Host != tc.host || r.Repository != tc.repo || r.Tag != tc.tag || r.Digest != tc.digest {
			t.Errorf("ParseReference(%q) = %+v", tc.in, r)
		}
	}
	for _, bad := range []string{"", " ", "UPPER/app", "app:", "app@sha256:short", "https://reg.example/app", "reg.example/app:tag with space", strings.Repeat("x/", 3000)} {
		if _, err := ParseReference(bad); err == nil {
			t.Errorf("ParseReference(%q): want error", bad)
		}
	}
}

func TestParseChallenge(t *testing.T) {
	c, err := ParseChallenge(`Bearer realm="https://auth.example/token",service="reg.example",scope="repository:a/b:pull,push",error="insufficient_scope"`)
	if err != nil {
		t.Fatal(err)
	}
	if c.Scheme != "bearer" || c.Params["realm"] != "https://auth.example/token" || c.Params["service"] != "reg.example" ||
		c.Params["scope"] != "repository:a/b:pull,push" || c.Params["error"] != "insufficient_scope" {
		t.Errorf("got %+v", c)
	}
	c, err = ParseChallenge(`Basic realm="Registry Realm"`)
	if err != nil || c.Scheme != "basic" || c.Params["realm"] != "Registry Realm" {
		t.Errorf("basic = %+v %v", c, err)
	}
	c, err = ParseChallenge(`bearer REALM=https://a/t , service=x`)
	if err != nil || c.Params["realm"] != "https://a/t" || c.Params["service"] != "x" {
		t.Errorf("unquoted = %+v %v", c, err)
	}
	c, err = ParseChallenge(`Bearer realm="a\"b"`)
	if err != nil || c.Params["realm"] != `a"b` {
		t.Errorf("escaped = %+v %v", c, err)
	}
	for _, bad := range []string{"", "   ", `Bearer service="x"`, `Bearer realm="unterminated`, `"quoted" realm=x`, strings.Repeat("a", 20000)} {
		if _, err := ParseChallenge(bad); err == nil {
			t.Errorf("ParseChallenge(%q): want error", bad)
		}
	}
}

func TestParseManifest(t *testing.T) {
	d := "sha256:" + strings.Repeat("b", 64)
	m, err := ParseManifest("", []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"digest":"`+d+`","size":10},"layers":[{"digest":"`+d+`","size":20}]}`))
	if err != nil || m.Index || m.Config.Size != 10 || len(m.Layers) != 1 {
		t.Errorf("manifest = %+v %v", m, err)
	}
	m, err = ParseManifest(MediaDockerList, []byte(`{"schemaVersion":2,"manifests":[{"digest":"`+d+`","size":5,"platform":{"os":"linux","architecture":"arm64"}}]}`))
	if err != nil || !m.Index || m.Manifests[0].Platform.Architecture != "arm64" {
		t.Errorf("index = %+v %v", m, err)
	}
	for name, body := range map[string]string{
		"not json":         `{`,
		"schema 1":         `{"schemaVersion":1,"fsLayers":[{}]}`,
		"bad digest":       `{"config":{"digest":"sha256:zz","size":1},"layers":[]}`,
		"negative size":    `{"config":{"digest":"` + d + `","size":-1}}`,
		"empty index":      `{"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`,
		"neither":          `{"schemaVersion":2}`,
		"index bad digest": `{"manifests":[{"digest":"md5:1","size":1}]}`,
	} {
		if _, err := ParseManifest("", []byte(body)); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
}

func TestPlatformMatch(t *testing.T) {
	node, _ := ParsePlatform("linux/arm64")
	for m, want := range map[Platform]bool{
		{OS: "linux", Architecture: "arm64"}:                true,
		{OS: "linux", Architecture: "arm64", Variant: "v8"}: true,
		{OS: "linux", Architecture: "aarch64"}:              true,
		{OS: "linux", Architecture: "amd64"}:                false,
		{OS: "windows", Architecture: "arm64"}:              false,
		{OS: "linux", Architecture: "arm", Variant: "v7"}:   false,
	} {
		if got := node.Match(m); got != want {
			t.Errorf("linux/arm64 Match(%s) = %t, want %t", m, got, want)
		}
	}
	for _, bad := range []string{"", "linux", "/amd64", "a/b/c/d"} {
		if _, err := ParsePlatform(bad); err == nil {
			t.Errorf("ParsePlatform(%q): want error", bad)
		}
	}
}

func TestParseErrorsAndToken(t *testing.T) {
	e := ParseErrors([]byte(`{"errors":[{"code":"DENIED","message":"no"}]}`))
	if len(e) != 1 || e[0].Code != "DENIED" {
		t.Errorf("ParseErrors = %+v", e)
	}
	if ParseErrors([]byte(`<html>`)) != nil {
		t.Error("html body: want nil")
	}
	if tok, err := ParseToken([]byte(`{"access_token":"x"}`)); err != nil || tok != "x" {
		t.Errorf("access_token = %q %v", tok, err)
	}
	if _, err := ParseToken([]byte(`{}`)); err == nil {
		t.Error("empty token response: want error")
	}
}

func FuzzParseChallenge(f *testing.F) {
	f.Add(`Bearer realm="https://auth.example/token",service="reg",scope="repository:a:pull"`)
	f.Add(`Basic realm=x`)
	f.Add(`Bearer realm="a\"b", error=insufficient_scope`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseChallenge(s)
		if err == nil && c.Scheme == "" {
			t.Fatalf("no scheme without error for %q", s)
		}
	})
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"config":{"digest":"sha256:` + strings.Repeat("a", 64) + `","size":1},"layers":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest("", b)
		if err == nil && !m.Index && !ValidDigest(m.Config.Digest) {
			t.Fatal("accepted a manifest with an invalid config digest")
		}
	})
}

func TestReferenceErrorsSayWhy(t *testing.T) {
	for in, want := range map[string]string{
		"registry.example/App:1": "lowercase",
		"r.example/a@sha256:12":  "64 hex",
		"r.example/a:":           "tag after ':' is empty",
		"r.example/a b:1":        "contains whitespace",
	} {
		_, err := ParseReference(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseReference(%q) = %v, want it to say %q", in, err, want)
		}
	}
}

// TestUnsupportedManifestIsATypedError: the probe tells a manifest the runtime will not use
// (platform) from a broken one by errors.Is, not by its text.
func TestUnsupportedManifestIsATypedError(t *testing.T) {
	for _, tc := range []struct {
		name, mediaType, body string
		want                  bool
	}{
		{"schema 1", "application/vnd.docker.distribution.manifest.v1+prettyjws", `{"schemaVersion":1,"name":"a","tag":"b","fsLayers":[]}`, true},
		{"unknown media type", "application/x-other", `{"schemaVersion":2,"mediaType":"application/x-other"}`, true},
		{"not JSON", MediaOCIManifest, `{`, false},
	} {
		_, err := ParseManifest(tc.mediaType, []byte(tc.body))
		if err == nil || errors.Is(err, ErrUnsupportedManifest) != tc.want {
			t.Errorf("%s: ParseManifest = %v; errors.Is(ErrUnsupportedManifest) want %v", tc.name, err, tc.want)
		}
	}
}

func TestParseTokenResponseLifetime(t *testing.T) {
	tok, err := ParseTokenResponse([]byte(`{"token":"t","expires_in":300,"issued_at":"2026-12-02T09:00:00Z"}`))
	if err != nil || tok.Token != "t" || tok.ExpiresIn != 300 || !tok.IssuedAt.Equal(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("ParseTokenResponse = %+v %v", tok, err)
	}
	tok, err = ParseTokenResponse([]byte(`{"access_token":"a","expires_in":"3600"}`))
	if err != nil || tok.Token != "a" || tok.ExpiresIn != 3600 || !tok.IssuedAt.IsZero() {
		t.Errorf("string expires_in: %+v %v", tok, err)
	}
	if tok, _ := ParseTokenResponse([]byte(`{"token":"t"}`)); tok.ExpiresIn != 0 {
		t.Errorf("no expires_in: %d", tok.ExpiresIn)
	}
}
