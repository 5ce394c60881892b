package registry

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/distribution/reference"
	"github.com/google/go-containerregistry/pkg/name"
)

// TestReferenceRefusals covers what a walkthrough found accepted or badly worded: each refusal
// names its rule and the offending part, in one line.
func TestReferenceRefusals(t *testing.T) {
	hex64 := strings.Repeat("a", 64)
	for _, tc := range []struct{ in, rule, says string }{
		{"-", RulePath, `"-" must start and end with a letter or digit`},
		{"reg.example:99999/app:1", RulePort, "port 99999 of registry"},
		{"reg.example:0/app:1", RulePort, "port 0 of registry"},
		{"reg.example:/app:1", RulePort, `port ""`},
		{"reg.example//app:1", RulePath, `repository "/app" has an empty path component`},
		{"reg.example/app/:1", RulePath, "empty path component"},
		{"reg.example/:1", RulePath, "repository path after the registry is empty"},
		{" nginx ", RuleWhitespace, `contains whitespace (" " at byte 0)`},
		{"nginx\n", RuleWhitespace, `contains whitespace ("\n" at byte 5)`},
		{"my reg/app", RuleWhitespace, "contains whitespace"},
		{"BAD REF", RuleWhitespace, "contains whitespace"},
		{"reg.example/app:" + strings.Repeat("a", 129), RuleTag, "is 129 characters; at most 128"},
		{"reg.example/app:-x", RuleTag, "must start with a letter, digit or '_'"},
		{"reg.example/app:a+b", RuleTag, `"+" is not allowed`},
		{"app:", RuleTag, "tag after ':' is empty"},
		{"app@", RuleDigest, "digest after '@' is empty"},
		{"app@sha256:" + strings.Repeat("a", 63), RuleDigest, "sha256 needs 64 hex characters, not 63"},
		{"app@sha256:" + strings.Repeat("A", 64), RuleDigest, "needs lowercase hex"},
		{"app@md5:" + strings.Repeat("a", 32), RuleDigest, `algorithm "md5" is not supported`},
		{"app@latest", RuleDigest, "must look like sha256:<64 hex characters>"},
		{"registry.example/App:1", RuleUppercase, `repository "App" must be lowercase`},
		{"Nginx", RuleUppercase, `repository "Nginx" must be lowercase`},
		{"UPPER/app", RuleUpperFirst, `first component "UPPER"`},
		{"Reg_example.io/app", RuleDomain, `label "Reg_example"`},
		{"reg_example.io:5000/app", RuleDomain, `label "reg_example"`},
		{"reg..example/app", RuleDomain, "empty label"},
		{"-reg.example/app", RuleDomain, `label "-reg"`},
		{"[::1/app", RuleDomain, "no closing ']'"},
		{"[fe80::1%eth0]:5000/app", RuleDomain, "not an IPv6 address"},
		{"[::1]x/app", RuleDomain, "only ':port' may follow"},
		{"reg.example/a..b", RulePath, `"a..b" must start and end`},
		{"reg.example/a___b", RulePath, `"a___b"`},
		{"reg.example/a$b", RulePath, `"$" is not allowed`},
		{hex64, RuleIdentifier, "image ID"},
		{"https://reg.example/app", RuleURL, "not a URL"},
		{"reg.example/" + strings.Repeat("a", 250), RuleNameLength, "is 262 characters; at most 255"},
		{"", RuleEmpty, "empty"},
		{strings.Repeat("x/", 3000), RuleTooLong, "6000 bytes"},
		{"reg.example/app:1\x00", RuleControl, `"\x00" at byte 17`},
	} {
		_, err := ParseReference(tc.in)
		var re *ReferenceError
		if !errors.As(err, &re) {
			t.Errorf("ParseReference(%q) = %v, want a *ReferenceError", tc.in, err)
			continue
		}
		msg := err.Error()
		if re.Rule != tc.rule || !strings.Contains(msg, tc.says) || strings.Contains(msg, "\n") || len(msg) > 400 {
			t.Errorf("ParseReference(%q) = %s (rule %s), want rule %s saying %q in one line", tc.in, msg, re.Rule, tc.rule, tc.says)
		}
	}
}

// TestReferenceRedactsUserInfo: the parser never echoes user info, whoever calls it.
func TestReferenceRedactsUserInfo(t *testing.T) {
	for _, in := range []string{
		"user:s3cret@reg.example/app:1",
		"user:s3cret@reg.example:5000/app@sha256:" + strings.Repeat("a", 64),
		"https://user:s3cret@reg.example/app",
		"user:s3cret@@reg.example/a b",
		"us3cret@reg.example/app",
	} {
		_, err := ParseReference(in)
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "***@reg.example") {
			t.Errorf("ParseReference(%q) = %v, want a refusal with the user info redacted", in, err)
		}
	}
}

// legacyParse is the parser this package had before it followed the grammar itself
// (go-containerregistry's name.ParseReference after trimming space), kept to check that every
// reference it parsed and the grammar allows still parses the same.
func legacyParse(s string) (Reference, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxReference || strings.Contains(s, "://") {
		return Reference{}, false
	}
	ref, err := name.ParseReference(s)
	if err != nil {
		return Reference{}, false
	}
	out := Reference{Original: s, Registry: ref.Context().RegistryStr(), Repository: ref.Context().RepositoryStr()}
	switch r := ref.(type) {
	case name.Tag:
		out.Tag = r.TagStr()
	case name.Digest:
		out.Digest = r.DigestStr()
	}
	if out.Registry == name.DefaultRegistry {
		out.Registry = "docker.io"
	}
	host := APIHost(out.Registry)
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "443")
	}
	out.Host = host
	return out, true
}

// distributionAccepts is what containerd and the kubelet accept (distribution/reference
// ParseDockerRef), with the name it gives.
func distributionAccepts(s string) (domain, path, tag, digest string, ok bool) {
	named, err := reference.ParseDockerRef(s)
	if err != nil {
		return "", "", "", "", false
	}
	domain, path = reference.Domain(named), reference.Path(named)
	if t, isTagged := named.(reference.Tagged); isTagged {
		tag = t.Tag()
	}
	if d, isDigested := named.(reference.Digested); isDigested {
		digest = d.Digest().String()
	}
	return domain, path, tag, digest, true
}

// stricterRules are where pullpath refuses what distribution/reference accepts, on purpose.
var stricterRules = map[string]bool{RulePort: true, RuleUpperFirst: true, RuleDomain: true, RuleNameLength: true}

// checkAgainstDistribution is the property shared by the corpus test and the fuzzer.
func checkAgainstDistribution(t *testing.T, s string) {
	t.Helper()
	r, err := ParseReference(s)
	domain, path, tag, digest, distOK := distributionAccepts(s)
	if err != nil {
		var re *ReferenceError
		if !errors.As(err, &re) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("ParseReference(%q) = %v: want a one-line *ReferenceError", s, err)
		}
		// the only domains distribution takes and pullpath refuses are malformed IPv6 addresses
		if distOK && (!stricterRules[re.Rule] || re.Rule == RuleDomain && !strings.HasPrefix(s, "[")) {
			t.Fatalf("ParseReference(%q) = %v (rule %s), but distribution/reference accepts it", s, err, re.Rule)
		}
		return
	}
	if !distOK {
		t.Fatalf("ParseReference(%q) = %+v, but distribution/reference refuses it", s, r)
	}
	if domain == "" { // the whole name is a path to distribution; containerd dials its first component
		domain, path, _ = strings.Cut(path, "/")
	}
	if r.Registry != domain || r.Repository != path || r.Tag != tag || r.Digest != digest {
		t.Fatalf("ParseReference(%q) = %s/%s tag %q digest %q; distribution/reference: %s/%s tag %q digest %q", s, r.Registry, r.Repository, r.Tag, r.Digest, domain, path, tag, digest)
	}
	if r.Repository == "" || r.Host == "" || (r.Tag == "" && r.Digest == "") || r.Original != s {
		t.Fatalf("ParseReference(%q) = %+v: incomplete without error", s, r)
	}
	again, err := ParseReference(r.String())
	again.Original = r.Original
	if err != nil || again != r {
		t.Fatalf("ParseReference(%q).String() = %q parses to %+v, %v; want %+v", s, r.String(), again, err, r)
	}
}

// TestReferenceCompat runs the references of the repository's tests and event corpus through the
// old parser, the new one and distribution/reference.
func TestReferenceCompat(t *testing.T) {
	f, err := os.Open("testdata/references.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	refs := []string{"nginx", "docker.io/library/nginx:1.27", "index.docker.io/team/app", "localhost:5000/app:v1",
		"[::1]:5000/app:v1", "reg.example:5000/a/b:c@sha256:" + strings.Repeat("0", 64), "Reg.Example/app", "a/b/c/d:_x",
		"reg.example/a__b/c-----d/e.f:1.0-rc_1", "my_reg.example/app:1", "reg.example/app@sha512:" + strings.Repeat("f", 128), "localhost", "localhost:5000"}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			refs = append(refs, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var kept, refused int
	for _, s := range refs {
		checkAgainstDistribution(t, s)
		old, oldOK := legacyParse(s)
		_, _, _, _, distOK := distributionAccepts(s)
		if !oldOK || !distOK || old.Original != s { // old.Original != s: the old parser trimmed it
			continue
		}
		r, err := ParseReference(s)
		if err != nil {
			var re *ReferenceError
			if errors.As(err, &re) && stricterRules[re.Rule] {
				refused++
				t.Logf("now refused on purpose: %v", err)
				continue
			}
			t.Errorf("ParseReference(%q) = %v; the old parser and distribution/reference accept it", s, err)
			continue
		}
		if r != old {
			t.Errorf("ParseReference(%q) = %+v; the old parser gave %+v", s, r, old)
		}
		kept++
	}
	t.Logf("%d strings, %d parse as before, %d now refused by a stricter rule", len(refs), kept, refused)
	if kept < 100 {
		t.Errorf("only %d references compared; the corpus lost its references", kept)
	}
}

func FuzzParseReference(f *testing.F) {
	for _, s := range []string{"nginx", "reg.example:5000/a/b:c@sha256:" + strings.Repeat("0", 64), "[::1]:5000/app",
		"-", "reg.example:99999/app:1", "reg.example//app:1", " nginx", "BAD REF", "user:pw@reg.example/app",
		"Reg.Example:443/a__b/c--d:T.1", "index.docker.io/app@sha512:" + strings.Repeat("a", 128)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkAgainstDistribution(t, s)
		// user info of 8 bytes or more that occurs once never reaches the message
		rest, scheme := s, false
		if i := strings.Index(rest, "://"); i >= 0 {
			rest, scheme = rest[i+3:], true
		}
		host, _, slash := strings.Cut(rest, "/")
		// counted in the quoted input: quoting can make the user info appear again ("\x00" + "00")
		if at := strings.LastIndex(host, "@"); (slash || scheme) && at >= 8 && strings.Count(strconv.Quote(s), host[:at]) == 1 {
			if _, err := ParseReference(s); err == nil || strings.Contains(err.Error(), host[:at]) {
				t.Fatalf("ParseReference(%q) = %v: want a refusal without the user info", s, err)
			}
		}
	})
}
