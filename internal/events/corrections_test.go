package events

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/pullpath/pullpath/internal/report"
)

// readRaw is a reading as the rules left it, before any correction.
func readRaw(msg string) *reading { return newReading(msg) }

// readStarted is a reading with its finding started, before the finding's class.
func readStarted(msg string) *reading {
	r := newReading(msg)
	r.proxyIsTheHop()
	r.tokenFetch()
	r.byPhase()
	r.blockedRegistry()
	r.start(msg)
	return r
}

// readFound is a reading up to its finding's class, before the corrections of the finding.
func readFound(msg string) *reading {
	r := readStarted(msg)
	switch r.code {
	case codeAmbiguousDenied, codeHubDenied:
	default:
		r.classOf()
	}
	return r
}

func (r *reading) String() string {
	return fmt.Sprintf("code %s layer %s host %q role %s; finding %s/%s alt %v host %q role %s", r.code, r.layer, r.host, r.role, r.fd.Class, r.fd.Code, r.fd.Alternatives, r.fd.Host, r.fd.Role)
}

// Each correction of classifyOne changes a reading when its condition holds (msg), and leaves a
// reading it does not concern as it was (not).
func TestCorrections(t *testing.T) {
	const (
		manifests = `failed to resolve reference "r.example/a:1": failed to do request: Head "https://r.example/v2/a/manifests/1": `
		blob      = `failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://r.example/v2/a/blobs/sha256:0a1b2c3d4e": `
	)
	type tc struct {
		name string
		read func(string) *reading
		fix  func(*reading)
		msg  string
		want func(*reading) bool
		not  string
	}
	cls := func(c report.Class, alt ...report.Class) func(*reading) bool {
		return func(r *reading) bool { return r.fd.Class == c && slices.Equal(r.fd.Alternatives, alt) }
	}
	for _, c := range []tc{
		{"proxyIsTheHop", readRaw, (*reading).proxyIsTheHop,
			manifests + `error connecting to proxy`,
			func(r *reading) bool { return r.role == report.RoleProxy && r.host == "" },
			manifests + `dial tcp 10.0.0.5:443: connect: connection refused`},
		{"tokenFetch", readRaw, (*reading).tokenFetch,
			`Error response from daemon: Get "https://r.example/v2/": unable to retrieve auth token: invalid username/password`,
			func(r *reading) bool { return r.role == report.RoleToken },
			`Error response from daemon: Get "https://r.example/v2/": unauthorized: invalid username/password`},
		{"stalledBeforeBlob", readRaw, (*reading).stalledBeforeBlob,
			manifests + `read tcp 10.0.0.1:5555->1.2.3.4:443: read: connection timed out`,
			func(r *reading) bool { return r.code == report.CodeTCPTimeout && r.layer == report.StepTCP },
			blob + `read tcp 10.0.0.1:5555->1.2.3.4:443: read: connection timed out`},
		{"cutAtEndpoint", readRaw, (*reading).cutAtEndpoint,
			`failed to authorize: failed to fetch anonymous token: Get "https://auth.example/token?scope=repository%3Aa%3Apull": unexpected EOF`,
			func(r *reading) bool { return r.code == report.CodeTCPReset },
			manifests + `unexpected EOF`},
		{"storageRefusal", readRaw, (*reading).storageRefusal,
			`failed to copy: httpReadSeeker: failed open: unexpected status code https://bucket.s3.amazonaws.com/docker/blobs/sha256/0a/data?X-Amz-Signature=x: 403 Forbidden`,
			func(r *reading) bool { return r.code == report.CodeBlobForbidden && r.role == report.RoleBlob },
			manifests + `unexpected status code https://r.example/v2/a/manifests/1: 403 Forbidden`},
		{"blockedRegistry", readRaw, (*reading).blockedRegistry,
			`registry docker.io is blocked in /etc/containers/registries.conf or /etc/containers/registries.conf.d`,
			func(r *reading) bool { return r.host == "docker.io" && r.role == report.RoleRegistry },
			manifests + `dial tcp 10.0.0.5:443: connect: connection refused`},
		{"ambiguousDenial on Hub", readStarted, (*reading).ambiguousDenial,
			`Error response from daemon: pull access denied for nosuchuser/app, repository does not exist or may require 'docker login'`,
			func(r *reading) bool {
				return r.fd.Class == report.ClassNotFound && r.fd.Code == report.CodeNameUnknown
			},
			``},
		{"ambiguousDenial elsewhere", readStarted, (*reading).ambiguousDenial,
			`Error response from daemon: pull access denied for r.example/team/app, repository does not exist or may require 'docker login'`,
			cls(report.ClassAuth, report.ClassNotFound, report.ClassForbidden),
			``},
		{"hubDenial on Hub", readStarted, (*reading).hubDenial,
			`denied: requested access to the resource is denied`,
			cls(report.ClassNotFound, report.ClassAuth),
			``},
		{"hubDenial elsewhere", readStarted, (*reading).hubDenial,
			`failed to resolve reference "r.example/team/app:1": r.example/team/app: requested access to the resource is denied`,
			cls(report.ClassForbidden, report.ClassAuth),
			``},
		{"classOf", readStarted, (*reading).classOf,
			`failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://bucket.s3.amazonaws.com/x/data": dial tcp: lookup bucket.s3.amazonaws.com on 10.0.0.2:53: no such host`,
			cls(report.ClassEndpoint, report.ClassDNS),
			``},
		{"classOf deadline", readStarted, (*reading).classOf,
			manifests + `context deadline exceeded`,
			cls(report.ClassRoute, report.ClassEndpoint, report.ClassOther),
			``},
		{"anonymous401", readFound, (*reading).anonymous401,
			`failed to resolve reference "quay.io/team/app:1": failed to fetch anonymous token: unexpected status: 401 Unauthorized`,
			cls(report.ClassAuth, report.ClassNotFound),
			`failed to resolve reference "r.example/team/app:1": unexpected status: 401 Unauthorized`},
		{"staleCredentials403", readFound, (*reading).staleCredentials403,
			manifests + `unexpected status code https://r.example/v2/a/manifests/1: 403 Forbidden`,
			cls(report.ClassForbidden, report.ClassAuth),
			manifests + `unexpected status code https://r.example/v2/a/manifests/1: 401 Unauthorized`},
		{"bareStatus", readFound, (*reading).bareStatus,
			`Error response from daemon: Get "https://r.example/v2/": Forbidden`,
			cls(report.ClassProxy, report.ClassForbidden),
			manifests + `proxyconnect tcp: dial tcp 10.0.0.5:3128: connect: connection refused`},
		{"eofAtRegistry", readFound, (*reading).eofAtRegistry,
			`Error response from daemon: Get "https://r.example/v2/": EOF`,
			func(r *reading) bool { return r.fd.Class == report.ClassRoute && len(r.fd.Alternatives) == 3 },
			`Error response from daemon: Get "https://r.example/v2/": read: connection reset by peer`},
		{"storageAccount", readFound, (*reading).storageAccount,
			`failed to copy: httpReadSeeker: failed open: unexpected status code https://storage.googleapis.com/bucket/data: 403 Forbidden <Code>UserProjectAccountProblem</Code>`,
			func(r *reading) bool { return r.fd.Alternatives[0] == report.ClassOther },
			`failed to copy: httpReadSeeker: failed open: unexpected status code https://storage.googleapis.com/bucket/data: 403 Forbidden`},
		{"refused4xx", readFound, (*reading).refused4xx,
			manifests + `unexpected status code https://r.example/v2/a/manifests/1: 400 Bad Request`,
			func(r *reading) bool { return slices.Equal(r.fd.Alternatives, []report.Class{report.ClassNotFound}) },
			manifests + `unexpected status code https://r.example/v2/a/manifests/1: 502 Bad Gateway`},
		{"unusableScheme", readFound, (*reading).unusableScheme,
			`failed to authorize: failed to fetch oauth token: Post "/jwt/auth": unsupported protocol scheme ""`,
			cls(report.ClassEndpoint, report.ClassOther),
			`RequestError: send request failed`},
		{"grpcNotFound", readFound, (*reading).grpcNotFound,
			`Failed to pull image "r.example/a:1": rpc error: code = NotFound desc = failed to pull and unpack image`,
			cls(report.ClassNotFound, report.ClassPlatform),
			manifests + `not found`},
		{"serverError", readFound, (*reading).serverError,
			`failed to copy: httpReadSeeker: failed open: unexpected status code https://bucket.s3.amazonaws.com/x/data: 502 Bad Gateway`,
			func(r *reading) bool {
				return r.fd.Class == report.ClassEndpoint && slices.Contains(r.fd.Alternatives, report.ClassOther)
			},
			`failed to copy: httpReadSeeker: failed open: unexpected status code https://bucket.s3.amazonaws.com/x/data: 416 Requested Range Not Satisfiable`},
		{"cutAfterRequest", readFound, (*reading).cutAfterRequest,
			manifests[:len(manifests)-2],
			func(r *reading) bool { return r.fd.Class == transportOrder()[0] },
			`the registry exploded with an error`},
		{"deniedBareHost", readFound, func(r *reading) { r.deniedBareHost() },
			`Error response from daemon: pull access denied for r.example.com, repository does not exist or may require 'docker login'`,
			cls(report.ClassNotFound),
			`Error response from daemon: pull access denied for r.example.com/app, repository does not exist or may require 'docker login'`},
		{"pullThroughCache", readFound, func(r *reading) { r.pullThroughCache() },
			`failed to resolve reference "harbor.example/dockerhub-proxy/library/app:1": harbor.example/dockerhub-proxy/library/app:1: not found`,
			func(r *reading) bool { return slices.Contains(r.fd.Alternatives, report.ClassOther) },
			`failed to resolve reference "harbor.example/team/app:1": harbor.example/team/app:1: not found`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.want(c.read(c.msg)) {
				t.Fatalf("%s: the reading holds before the correction; the case does not test it: %s", c.name, c.read(c.msg))
			}
			r := c.read(c.msg)
			before := r.String()
			c.fix(r)
			if !c.want(r) {
				t.Errorf("%s(%q):\n before %s\n after  %s", c.name, c.msg, before, r)
			}
			if c.not == "" {
				return
			}
			n := c.read(c.not)
			saved := *n
			c.fix(n)
			if !reflect.DeepEqual(saved, *n) {
				t.Errorf("%s changed a reading it does not concern (%q):\n before %s\n after  %s", c.name, c.not, &saved, n)
			}
		})
	}
}

// vendorRow puts a registry's documented causes in place of the rules' reading; keepDocumented
// gives back the documented causes the learned table dropped, replacing the last alternative when
// the list is full.
func TestVendorRowAndKeepDocumented(t *testing.T) {
	r := readFound(`failed to resolve reference "myacr.azurecr.io/app:1": unexpected status: 401 Unauthorized`)
	row := registryMeaning(r.f, r.fd, r.code, r.hub)
	if row == nil || row.family != "acr" {
		t.Fatalf("no ACR row: %v", row)
	}
	r.vendorRow(row)
	if r.fd.Class != report.ClassAuth || !slices.Equal(r.fd.Alternatives, []report.Class{report.ClassForbidden, report.ClassNotFound}) {
		t.Errorf("vendorRow: %s", r)
	}
	r.vendorRow(nil) // no row: nothing changes
	fd := report.Finding{Class: report.ClassAuth, Alternatives: []report.Class{report.ClassRoute, report.ClassDNS, report.ClassTLS}}
	keepDocumented(&fd, []report.Class{report.ClassAuth, report.ClassNotFound})
	if !slices.Equal(fd.Alternatives, []report.Class{report.ClassRoute, report.ClassDNS, report.ClassNotFound}) {
		t.Errorf("keepDocumented: %v", fd.Alternatives)
	}
}

// phraseKey names the ambiguous phrase and the registry family it is looked up on.
func TestPhraseKeyOfReading(t *testing.T) {
	r := readFound(`failed to resolve reference "quay.io/team/app:1": unexpected status: 401 Unauthorized`)
	if k := r.phraseKey(); k != (phraseKey{"401", "quay"}) {
		t.Errorf("phraseKey = %v", k)
	}
	if k := readFound(`dial tcp 10.0.0.5:443: connect: connection refused`).phraseKey(); k != (phraseKey{}) {
		t.Errorf("a refusal has no ambiguous phrase: %v", k)
	}
}

// A short name refused by containers/image's short-name policy names no host: the runtime asked
// none, and docker.io is only what a reference parser fills in (issue 34: explain named
// registry-1.docker.io).
func TestShortNameNamesNoHost(t *testing.T) {
	for _, msg := range []string{
		`Failed to pull image "nginx": rpc error: code = Unknown desc = short-name resolution enforced but cannot prompt without a TTY`,
		`Failed to pull image "alpine": short name mode is enforcing, but image name alpine:latest returns ambiguous list`,
		`Error: short-name "nginx" did not resolve to an alias and no unqualified-search registries are defined in "/etc/containers/registries.conf"`,
	} {
		fd := Classify(msg)
		if fd.Code != report.CodeInvalidReference || fd.Host != "" || fd.Role != "" {
			t.Errorf("Classify(%q) = %s host %q role %q; want INVALID_REFERENCE and no host", msg, fd.Code, fd.Host, fd.Role)
		}
	}
	// a qualified reference still names its registry
	if fd := Classify(`Failed to pull image "quay.io/team/app:1": rpc error: code = NotFound desc = manifest unknown`); fd.Host != "quay.io:443" {
		t.Errorf("a qualified image: host %q, want quay.io:443", fd.Host)
	}
}

// Class and code agree (issue 34): a 401 the text states is auth, whatever a registry's
// ambiguity makes likelier (quay.io answers a repository that does not exist with 401: not_found
// leads the alternatives); a code pullpath inferred from a denial's wording follows the class.
func TestClassAndCodeAgree(t *testing.T) {
	quay := Classify(`Failed to pull image "quay.io/team/app:1": rpc error: code = Unknown desc = unauthorized: access to the requested resource is not authorized`)
	if quay.Code != report.CodeAuth401 || quay.Class != report.ClassAuth || len(quay.Alternatives) == 0 || quay.Alternatives[0] != report.ClassNotFound {
		t.Errorf("quay's 401: %s %s alt %v; want AUTH_401 auth, not_found first among the alternatives", quay.Class, quay.Code, quay.Alternatives)
	}
	// a stated 403 that a registry documents as a missing repository or a stale token (ghcr.io,
	// GitLab) still leads with that cause: issue 34 asked for the 401; see codeAgrees
	byCode := map[report.Code]report.Class{report.CodeAuth401: report.ClassAuth, report.CodeNameUnknown: report.ClassNotFound}
	denials := []report.Class{report.ClassAuth, report.ClassForbidden, report.ClassNotFound}
	n := 0
	for _, file := range corpusFiles {
		for _, s := range loadCorpus(t, file) {
			fd := Classify(s.message)
			want, ok := byCode[fd.Code]
			if !ok || !slices.Contains(denials, fd.Class) {
				continue // a denial read as another kind of failure (a token host's endpoint, a learned other)
			}
			n++
			if fd.Class != want && report.ClassFor(fd.Role, report.StepAuth, fd.Code) == fd.Class {
				continue // ClassFor's own exceptions (a 403 from object storage)
			}
			if fd.Class != want {
				t.Errorf("%s: class %s with code %s", s.source, fd.Class, fd.Code)
			}
		}
	}
	if n < 100 {
		t.Errorf("only %d denials in the corpus: the check checks little", n)
	}
}

// DIGEST_MISMATCH has one class in explain and the probe (issue 34: other in explain, endpoint
// in the probe on a blob host): the bytes broke, not a host's reachability.
func TestDigestMismatchOneClass(t *testing.T) {
	for _, role := range []report.Role{"", report.RoleRegistry, report.RoleBlob, report.RoleMirror} {
		if c := report.ClassFor(role, report.StepBlob, report.CodeDigestMismatch); c != report.ClassOther {
			t.Errorf("ClassFor(%q, blob, DIGEST_MISMATCH) = %s, want other", role, c)
		}
	}
	for _, msg := range []string{
		`Failed to pull image "registry.example.com/team/app:1": rpc error: code = Unknown desc = failed to pull and unpack image "registry.example.com/team/app:1": failed to copy: httpReadSeeker: failed open: unexpected commit digest sha256:aaaa, expected sha256:bbbb: failed precondition`,
		`filesystem layer verification failed for digest sha256:4f4fb700ef54461cfa02571ae0db9a0dc1e0cdb5577484a6d75e68dc38e8acc1`,
		`Error: writing blob: storing blob to file "/var/tmp/storage1/1": happened during read: Digest did not match, expected sha256:4f4fb700ef54461cfa02571ae0db9a0dc1e0cdb5577484a6d75e68dc38e8acc1, got sha256:5f4fb700ef54461cfa02571ae0db9a0dc1e0cdb5577484a6d75e68dc38e8acc1`,
	} {
		if fd := Classify(msg); fd.Code != report.CodeDigestMismatch || fd.Class != report.ClassOther {
			t.Errorf("Classify(%.60q…) = %s %s (role %q), want other DIGEST_MISMATCH", msg, fd.Class, fd.Code, fd.Role)
		}
	}
}
