package events

import (
	"slices"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/report"
)

// A status is read only where the text states one: the HTTP status of a response, a code field,
// a registry's error code. Never from an image reference, a host name, a path, a digest, a query
// value or a port; and a class word in a name counts no more than a number.
func TestStatusOnlyWhereStated(t *testing.T) {
	timeout := `Failed to pull image "REF": rpc error: code = Unknown desc = failed to pull and unpack image "REF": failed to resolve reference "REF": failed to do request: Head "https://HOST/v2/REPO/manifests/TAG": dial tcp 10.1.2.3:443: i/o timeout`
	for _, n := range []struct{ host, repo, tag string }{
		{"corp.example", "team/svc", "1"},
		{"corp.example", "team/svc-407", "1"},
		{"corp.example", "team/app-401", "1"},
		{"corp.example", "team-429/svc", "1"},
		{"corp.example", "team/web", "503"},
		{"registry-403.corp.example", "team/svc", "1"},
		{"registry-proxy.corp", "denied-team/app", "tls-svc"},
		{"x509.corp.example", "unauthorized/notfound", "timeout"},
		{"proxy-451.corp.example", "team/denied", "x509"},
	} {
		ref := n.host + "/" + n.repo + ":" + n.tag
		msg := strings.NewReplacer("REF", ref, "HOST", n.host, "REPO", n.repo, "TAG", n.tag).Replace(timeout)
		if fd := Classify(msg); fd.Class != report.ClassRoute || fd.Code != report.CodeTCPTimeout || fd.Image != ref || fd.Host != n.host+":443" {
			t.Errorf("%s: %s %s image %q host %q, want route TCP_TIMEOUT", ref, fd.Class, fd.Code, fd.Image, fd.Host)
		}
	}
	for _, c := range []struct {
		msg  string
		want report.Code
	}{
		// issue 25: the token fetch got 401; the repository's name holds 407
		{`Failed to pull image "quay.io/team-16/svc-407:1": rpc error: code = Unknown desc = failed to pull and unpack image "quay.io/team-16/svc-407:1": failed to resolve reference "quay.io/team-16/svc-407:1": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://quay.io/v2/auth?scope=repository%3Ateam-16%2Fsvc-407%3Apull&service=quay.io: 401 Unauthorized`, report.CodeAuth401},
		// a port, a digest, a query value, a host
		{`Failed to pull image "registry.corp.example:407/team/app:1": failed to do request: Head "https://registry.corp.example:407/v2/team/app/manifests/1": dial tcp 10.1.2.3:407: i/o timeout`, report.CodeTCPTimeout},
		{`Failed to pull image "team/app@sha256:407…": dial tcp 10.1.2.3:443: i/o timeout`, report.CodeTCPTimeout},
		{`Failed to pull image "corp.example/team/app:1": failed to do request: Head "https://corp.example/v2/team/app/manifests/1?digest=407": dial tcp 10.1.2.3:443: i/o timeout`, report.CodeTCPTimeout},
		{`lookup registry-407.corp.example on 10.0.0.2:53: no such host`, report.CodeDNSNXDomain},
		{`Error response from daemon: Get https://corp.example/v2/team/451-app/manifests/1: unauthorized: authentication required`, report.CodeAuth401},
		// where the text states the status, it is read
		{`failed to resolve reference "corp.example/team/app:1": unexpected status from HEAD request to https://corp.example/v2/team/app/manifests/1: 407 Proxy Authentication Required`, report.CodeProxyFailed},
		{`Error response from daemon: Get "https://corp.example/v2/": HTTP 407`, report.CodeProxyFailed},
		{`failed to resolve reference "corp.example/team/app:1": pulling from host corp.example failed with status code [manifests 1]: 407 Proxy Authentication Required`, report.CodeProxyFailed},
		{`Error: unexpected status: 407`, report.CodeProxyFailed},
		{`rpc error: code = Unknown desc = failed to pull image: status: 407`, report.CodeProxyFailed},
		{`failed to resolve reference "corp.example/team-407/app:1": unexpected status from HEAD request to https://corp.example/v2/team-407/app/manifests/1: 429 Too Many Requests`, report.CodeRateLimited},
		{`failed to resolve reference "corp.example/team/app-429:1": unexpected status from HEAD request to https://corp.example/v2/team/app-429/manifests/1: 403 Forbidden`, report.CodeAuth403},
	} {
		if fd := Classify(c.msg); fd.Code != c.want {
			t.Errorf("%s (%s), want %s: %s", fd.Code, fd.Class, c.want, c.msg)
		}
	}
}

// Every name the extractor reads is masked in the prose, including those of the reImage patterns
// nameSpans leaves out for speed (imageFoundOtherwise): over the corpus and the lab strings.
func TestProseMasksEveryName(t *testing.T) {
	files := append(slices.Clone(corpusFiles), "testdata/lab.txt")
	patterns := append(append([]litRegexp{}, reImage...), nameSpans...)
	patterns = append(patterns, reRefIn, reLookup, reDial, reProxy, reViaProxy, reConnectingTo, reNamed, reInRepo)
	missed := 0
	for _, file := range files {
		for _, s := range loadCorpus(t, file) {
			for _, part := range append(splitErrors(redact.Clean(s.message)), errPart{text: redact.Clean(s.message)}) {
				f := readFacts(part.text)
				for _, re := range patterns {
					for _, m := range re.FindAllStringSubmatchIndex(f.text, -1) {
						for g := 2; g+1 < len(m); g += 2 {
							if m[g] < 0 || m[g] == m[g+1] {
								continue
							}
							want := []byte(f.text)
							maskRange(want, f.text, m[g], m[g+1])
							for i := m[g]; i < m[g+1]; i++ {
								if want[i] != f.text[i] && f.prose[i] == f.text[i] {
									missed++
									if !heldOut(s.source) {
										t.Errorf("%s: %q (%s) is not masked in the prose", s.source, f.text[m[g]:m[g+1]], re)
									}
									break
								}
							}
						}
					}
				}
			}
		}
	}
	if missed > 0 {
		t.Errorf("%d names not masked", missed)
	}
}
