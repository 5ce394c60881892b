package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pullpath/pullpath/internal/report"
)

func parseFile(t *testing.T, path string) ([]Message, Format) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	msgs, format, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse(%s) = %v", path, err)
	}
	return msgs, format
}

func TestDescribe(t *testing.T) {
	msgs, format := parseFile(t, "testdata/inputs/describe.txt")
	if format != FormatDescribe {
		t.Fatalf("format %s, want describe", format)
	}
	fs := Explain(msgs)
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1 (the causeless ErrImagePull/BackOff events fold away): %+v", len(fs), fs)
	}
	f := fs[0]
	if f.Class != report.ClassForbidden || f.Host != "gcr.io:443" || f.Count != 4 || f.Image != "gcr.io/maloney-scratch/monolith:1.0.0" {
		t.Errorf("finding = class %s host %q count %d image %q", f.Class, f.Host, f.Count, f.Image)
	}
	if f.Operation != "resolve (HEAD manifest)" && f.Operation != "HEAD manifest" {
		t.Errorf("operation %q", f.Operation)
	}
}

func TestEventsJSONDedupes(t *testing.T) {
	msgs, format := parseFile(t, "testdata/inputs/events.json")
	if format != FormatJSON {
		t.Fatalf("format %s", format)
	}
	fs := Explain(msgs)
	if len(fs) != 2 {
		t.Fatalf("%d findings, want 2: %+v", len(fs), fs)
	}
	if fs[0].Class != report.ClassDNS || fs[0].Count != 5 || fs[0].Resolver != "10.77.0.2:53" || len(fs[0].Sources) != 2 {
		t.Errorf("dns finding = %+v", fs[0])
	}
	if fs[1].Class != report.ClassAuth || fs[1].Host != "registry.lab.test:5000" || !strings.Contains(fs[1].Sources[0], "Pod/api-0") {
		t.Errorf("auth finding = %+v", fs[1])
	}
}

func TestPodYAML(t *testing.T) {
	msgs, format := parseFile(t, "testdata/inputs/pod.yaml")
	if format != FormatYAML || len(msgs) != 2 {
		t.Fatalf("format %s, %d messages", format, len(msgs))
	}
	fs := Explain(msgs)
	if len(fs) != 1 || fs[0].Class != report.ClassTLS || fs[0].Code != report.CodeTLSExpired || fs[0].Host != "registry.lab.test:5006" {
		t.Fatalf("findings = %+v", fs)
	}
	// only a back-off without cause: say so instead of inventing one
	only := Explain(msgs[1:])
	if len(only) != 1 || only[0].Code != report.CodeBackoffNoCause || only[0].Decide == "" || !strings.Contains(only[0].Decide, "registry.lab.test/lab/small:v1") {
		t.Fatalf("back-off only = %+v", only)
	}
}

func TestRawTextBlocks(t *testing.T) {
	in := `E1202 10:26:12.000000    4242 remote_image.go:334] "PullImage from image service failed" err="rpc error: code = NotFound desc = failed to pull and unpack image \"r.example/a:nope\": failed to resolve reference \"r.example/a:nope\": r.example/a:nope: not found" image="r.example/a:nope"
E1202 10:26:13.000000    4242 remote_image.go:334] "PullImage from image service failed" err="rpc error: code = Unknown desc = failed to pull and unpack image \"r.example/b:1\": failed to resolve reference \"r.example/b:1\": failed to do request: Head \"https://r.example/v2/b/manifests/1\": x509: certificate signed by unknown authority" image="r.example/b:1"

FATA[0000] pulling image failed: rpc error: code = Unknown desc = Error reading manifest latest in docker.io/crio/busybox: errors:
denied: requested access to the resource is denied
unauthorized: authentication required
`
	msgs, format, err := Parse(strings.NewReader(in))
	if err != nil || format != FormatText {
		t.Fatal(format, err)
	}
	fs := Explain(msgs)
	want := []report.Class{report.ClassNotFound, report.ClassTLS, report.ClassNotFound}
	if len(fs) != len(want) {
		t.Fatalf("%d findings, want %d: %+v", len(fs), len(want), fs)
	}
	for i, w := range want {
		if fs[i].Class != w {
			t.Errorf("finding %d class %s, want %s (%s)", i, fs[i].Class, w, fs[i].Message)
		}
	}
	if len(fs[2].Alternatives) == 0 || !strings.Contains(fs[2].Decide, "--pull-secret") {
		t.Errorf("ambiguous Docker Hub denial should name the alternative and the deciding command: %+v", fs[2])
	}
}

// Each extraction rule on its own.
func TestExtraction(t *testing.T) {
	cases := []struct {
		msg                      string
		host, addr, resolver, op string
		role                     report.Role
		class                    report.Class
	}{
		{msg: `failed to do request: Head "https://reg.example/v2/a/manifests/1": dial tcp: lookup reg.example on 10.0.0.10:53: read udp 10.0.0.5:1234->10.0.0.10:53: i/o timeout`,
			host: "reg.example:443", resolver: "10.0.0.10:53", op: "HEAD manifest", role: report.RoleRegistry, class: report.ClassDNS},
		{msg: `failed to resolve reference "reg.example/a:1": failed to do request: Head "https://reg.example/v2/a/manifests/1": dial tcp 10.1.2.3:443: connect: connection refused`,
			host: "reg.example:443", addr: "10.1.2.3:443", role: report.RoleRegistry, class: report.ClassRoute},
		{msg: `failed to pull and unpack image "reg.example/a:1": failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://acct.blob.core.windows.net/c/b?sig=SECRET&se=2030": dial tcp 20.1.2.3:443: i/o timeout`,
			host: "acct.blob.core.windows.net:443", addr: "20.1.2.3:443", role: report.RoleBlob, op: "GET blob", class: report.ClassEndpoint},
		{msg: `failed to resolve reference "myreg.azurecr.io/a:1": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://myreg.azurecr.io/oauth2/token?scope=repository%3Aa%3Apull&service=myreg.azurecr.io: 401 Unauthorized`,
			host: "myreg.azurecr.io:443", role: report.RoleToken, op: "token fetch", class: report.ClassAuth},
		{msg: `failed to copy: httpReadSeeker: failed open: unexpected status code https://mirror.example/v2/library/nginx/blobs/sha256:566e?ns=docker.io: 502 Bad Gateway`,
			host: "mirror.example:443", role: report.RoleMirror, class: report.ClassEndpoint},
		// the registry's own [host] written with the default port: containerd still sends ns
		// (names compared as written, registry.go:85-92), yet it is the registry (docs/taxonomy.md#endpoint-roles)
		{msg: `failed to resolve reference "reg.example/a:1": failed to do request: Head "https://reg.example:443/v2/a/manifests/1?ns=reg.example": dial tcp 10.80.0.2:443: connect: network is unreachable`,
			host: "reg.example:443", addr: "10.80.0.2:443", role: report.RoleRegistry, class: report.ClassRoute},
		{msg: `failed to pull and unpack image "reg.example/a:1": failed to resolve image: failed to do request: Head "https://reg.example:443/v2/a/manifests/1?ns=%5BREDACTED%5D": dial tcp 10.80.0.2:443: connect: network is unreachable`,
			host: "reg.example:443", addr: "10.80.0.2:443", role: report.RoleRegistry, class: report.ClassRoute},
		{msg: `failed to resolve reference "reg.example:5000/a:1": failed to do request: Head "http://reg.example:80/v2/a/manifests/1?ns=reg.example%3A5000": dial tcp 10.80.0.2:80: connect: network is unreachable`,
			host: "reg.example:80", addr: "10.80.0.2:80", role: report.RoleMirror, class: report.ClassEndpoint},
		{msg: `failed to pull and unpack image "reg.example/a:1": failed to resolve image: failed to do request: Head "https://mirror.example/v2/a/manifests/1?ns=%5BREDACTED%5D": dial tcp 10.80.0.3:443: connect: network is unreachable`,
			host: "mirror.example:443", addr: "10.80.0.3:443", role: report.RoleMirror, class: report.ClassEndpoint},
		{msg: `failed to do request: Head "https://reg.example/v2/a/manifests/1": proxyconnect tcp: dial tcp 10.9.9.9:3128: i/o timeout`,
			host: "10.9.9.9:3128", addr: "10.9.9.9:3128", role: report.RoleProxy, op: "proxy CONNECT", class: report.ClassProxy},
		{msg: `failed to resolve reference "reg.example/a:1": failed to do request: Head "https://reg.example/v2/a/manifests/1": dial tcp: lookup reg.example on 10.0.0.10:53: dial udp 10.0.0.10:53: connect: network is unreachable`,
			host: "reg.example:443", resolver: "10.0.0.10:53", class: report.ClassDNS},
		{msg: `failed to resolve reference "mtls.example/a:1": failed to do request: Head "https://mtls.example/v2/a/manifests/1": remote error: tls: certificate required`,
			host: "mtls.example:443", role: report.RoleRegistry, class: report.ClassTLS},
		{msg: `error pulling image configuration: download failed after attempts=6: error parsing HTTP 403 response body: invalid character '<' looking for beginning of value: "<?xml version=\"1.0\"?><Error><Code>AuthorizationFailure</Code></Error>"`,
			role: report.RoleBlob, class: report.ClassEndpoint},
	}
	for _, tc := range cases {
		f := Classify(tc.msg)
		if f.Class != tc.class || f.Host != tc.host || (tc.role != "" && f.Role != tc.role) || f.Address != tc.addr || f.Resolver != tc.resolver || (tc.op != "" && f.Operation != tc.op) {
			t.Errorf("Classify(%.80q…)\n got class %s host %q role %s addr %q resolver %q op %q\nwant class %s host %q role %s addr %q resolver %q op %q",
				tc.msg, f.Class, f.Host, f.Role, f.Address, f.Resolver, f.Operation, tc.class, tc.host, tc.role, tc.addr, tc.resolver, tc.op)
		}
	}
}

func TestSecretsRedacted(t *testing.T) {
	msg := `failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://b.s3.amazonaws.com/x?X-Amz-Signature=deadbeefcafe&X-Amz-Credential=AKIAXYZ": ` +
		`dial tcp 1.2.3.4:443: i/o timeout; request.header.authorization="Bearer eyJhbGciOiJSUzI1NiJ9.payload.sig" password=hunter2`
	f := Classify(msg)
	for _, s := range []string{"deadbeefcafe", "AKIAXYZ", "eyJhbGciOiJSUzI1NiJ9", "hunter2"} {
		if strings.Contains(f.Message, s) || strings.Contains(f.URL, s) {
			t.Errorf("secret %q survived: message %q url %q", s, f.Message, f.URL)
		}
	}
}

// Credentials in a pasted command or reference never reach the finding: skopeo's and podman's
// --creds, docker login's -p and --password, user info in a reference; a digest stays.
func TestCommandCredentialsRedacted(t *testing.T) {
	for _, msg := range []string{
		"podman pull --creds admin:hunter2 registry.example.com/a/b:1\nError: initializing source docker://registry.example.com/a/b:1: reading manifest 1 in registry.example.com/a/b: manifest unknown",
		`$ skopeo copy --src-creds "admin:hunter2" docker://registry.example.com/a/b:1 dir:/tmp/x` + "\nFATA[0000] initializing source docker://registry.example.com/a/b:1: unauthorized",
		"docker pull admin:hunter2@registry.example.com/a/b:1\nError response from daemon: manifest unknown",
		"$ docker login -u admin -p hunter2 registry.example.com\nError response from daemon: Get \"https://registry.example.com/v2/\": unauthorized: incorrect username or password",
		"docker login --password=hunter2 registry.example.com: Error response from daemon: Get https://registry.example.com/v2/: x509: certificate signed by unknown authority",
	} {
		f := Classify(msg)
		if out := fmt.Sprintf("%+v", f); strings.Contains(out, "hunter2") {
			t.Errorf("the password survived in %s", out)
		}
	}
	const digest = "docker.io/library/nginx:1.27@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if f := Classify(`Failed to pull image "` + digest + `": manifest unknown`); f.Image != digest || !strings.Contains(f.Message, digest) {
		t.Errorf("a digest reference is not user info: image %q message %q", f.Image, f.Message)
	}
	if f := Classify("docker run -p 3003:3003 ghcr.io/a/b:1\ndocker: Error response from daemon: error from registry: denied"); !strings.Contains(f.Message, "3003:3003") {
		t.Errorf("a port mapping is no password: %q", f.Message)
	}
}

func TestGarbageNeverPanics(t *testing.T) {
	for _, in := range []string{"", "\x00\xff\xfe", "{", "[ERROR ImagePull]: x", "{\"kind\":\"Pod\",\"status\":[1,2]}", "kind: Event\napiVersion: v1\nmessage: [", strings.Repeat("a", 1<<20)} {
		msgs, _, err := Parse(strings.NewReader(in))
		if err != nil {
			continue
		}
		for _, f := range Explain(msgs) {
			if f.Class == "" || !f.Class.Valid() {
				t.Errorf("invalid class for %.20q", in)
			}
		}
	}
	if f := Classify("the cat sat on the mat"); f.Class != report.ClassOther || f.Code != report.CodeUnknown || f.Message == "" {
		t.Errorf("unknown text = %+v", f)
	}
}

func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/inputs/describe.txt", "testdata/inputs/events.json", "testdata/inputs/pod.yaml"} {
		b, _ := os.ReadFile(p)
		f.Add(string(b))
	}
	f.Add(`Failed to pull image "a/b:c": x509: certificate signed by unknown authority`)
	f.Fuzz(func(t *testing.T, in string) {
		msgs, _, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, fd := range Explain(msgs) {
			if !fd.Class.Valid() || fd.Owner != fd.Class.Owner() || fd.Count < 1 {
				t.Fatalf("bad finding %+v", fd)
			}
		}
	})
}

func FuzzClassify(f *testing.F) {
	f.Add(`failed to do request: Head "https://r/v2/a/manifests/1": dial tcp: lookup r on 1.1.1.1:53: no such host`)
	f.Add(`proxyconnect tcp: dial tcp: lookup p: no such host`)
	f.Add("unable to pull a/b: 2 errors occurred:\n\t* Error reading manifest 1 in quay.io/a/b: unauthorized\n\t* denied: denied\n")
	f.Add(`Failed to pull image "r/a": [rpc error: code = Unknown desc = 401 Unauthorized, rpc error: code = Unknown desc = manifest unknown]`)
	f.Add(`pull access denied for a, repository does not exist or may require 'docker login': denied: requested access to the resource is denied`)
	f.Fuzz(func(t *testing.T, in string) {
		fd := Classify(in)
		if !fd.Class.Valid() {
			t.Fatalf("invalid class %q", fd.Class)
		}
		// every finding says whether the text decides it; alternatives are few, distinct and not the class
		if fd.Owner != fd.Class.Owner() || fd.DecidedBecause == "" || fd.Decided && len(fd.Alternatives) > 0 || len(fd.Alternatives) > maxAlternatives {
			t.Fatalf("finding %+v", fd)
		}
		for i, a := range fd.Alternatives {
			if a == fd.Class || !a.Valid() || slices.Contains(fd.Alternatives[:i], a) {
				t.Fatalf("alternatives %v for class %s", fd.Alternatives, fd.Class)
			}
		}
	})
}

// crictl prints its own warnings before the error; they are not failures.
func TestCrictlNoiseIgnored(t *testing.T) {
	in := `time="2026-12-02T14:39:25Z" level=warning msg="Config \"/etc/crictl.yaml\" does not exist, trying next: \"/usr/local/bin/crictl.yaml\""
E1202 14:39:25.821058   27147 remote_image.go:334] "PullImage from image service failed" err="rpc error: code = Unknown desc = failed to pull and unpack image \"r.lab.test:5000/a:v1\": failed to resolve reference \"r.lab.test:5000/a:v1\": pulling from host r.lab.test:5000 failed with status code [manifests v1]: 401 Unauthorized" image="r.lab.test:5000/a:v1"
`
	msgs, _, _ := Parse(strings.NewReader(in))
	fs := Explain(msgs)
	if len(fs) != 1 || fs[0].Class != report.ClassAuth {
		t.Fatalf("findings = %+v", fs)
	}
	if fs := Explain([]Message{{Text: `time="x" level=info msg="starting"`, Count: 1}}); len(fs) != 0 {
		t.Errorf("an info line alone is no failure: %+v", fs)
	}
}

func TestNotTextRefused(t *testing.T) {
	gz := []byte{0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xed, 0x9d, 0xdb, 0x72}
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(i*7919>>3) ^ byte(i) | 1 // no NUL: the UTF-8 check must catch it
	}
	for name, in := range map[string][]byte{"gzip": gz, "random": random, "NUL in text": []byte("Failed to pull image \"a:1\": x\x00y")} {
		_, _, err := Parse(bytes.NewReader(in))
		if !errors.Is(err, ErrNotText) || !strings.Contains(err.Error(), "input is not text") {
			t.Errorf("%s: Parse error = %v, want input is not text", name, err)
		}
	}
	// a few Latin-1 bytes in a real message are text; so is what PowerShell's > writes (UTF-16 with a BOM)
	latin1 := "Failed to pull image \"r\xe9g.example/a:1\": dial tcp 10.0.0.1:443: i/o timeout"
	if msgs, _, err := Parse(strings.NewReader(latin1)); err != nil || len(msgs) != 1 || !utf8.ValidString(msgs[0].Text) {
		t.Errorf("Latin-1 text: %v %+v", err, msgs)
	}
	u16 := []byte{0xff, 0xfe}
	for _, r := range utf16.Encode([]rune("Failed to pull image \"a.example/b:1\": x509: certificate signed by unknown authority\r\n")) {
		u16 = append(u16, byte(r), byte(r>>8))
	}
	msgs, _, err := Parse(bytes.NewReader(u16))
	if err != nil || len(msgs) != 1 {
		t.Fatalf("UTF-16: %v %+v", err, msgs)
	}
	if fs := Explain(msgs); len(fs) != 1 || fs[0].Class != report.ClassTLS {
		t.Errorf("UTF-16 findings = %+v", fs)
	}
	// issue 34: an odd length (a newline appended by "echo >>" or an editor) and big-endian are
	// UTF-16 too; random bytes behind a byte order mark are still binary
	be := []byte{0xfe, 0xff}
	for _, r := range utf16.Encode([]rune("Failed to pull image \"a.example/b:1\": x509: certificate signed by unknown authority\r\n")) {
		be = append(be, byte(r>>8), byte(r))
	}
	for name, in := range map[string][]byte{"LE, odd length": append(slices.Clone(u16), '\n'), "BE": be, "BE, odd length": append(slices.Clone(be), '\n')} {
		if msgs, _, err := Parse(bytes.NewReader(in)); err != nil || len(msgs) != 1 || Explain(msgs)[0].Class != report.ClassTLS {
			t.Errorf("UTF-16 %s: %v %+v", name, err, msgs)
		}
	}
	for name, in := range map[string][]byte{"LE BOM, random": append([]byte{0xff, 0xfe}, random...), "BE BOM, random, odd": append([]byte{0xfe, 0xff}, random[:4095]...)} {
		if _, _, err := Parse(bytes.NewReader(in)); !errors.Is(err, ErrNotText) {
			t.Errorf("%s: Parse error = %v, want input is not text", name, err)
		}
	}
}

// Terminal escapes and other control characters in the input are never written back out.
func TestControlCharactersNeverEchoed(t *testing.T) {
	ev := `{"kind":"EventList","apiVersion":"v1","items":[{"kind":"Event","type":"Warning","reason":"Failed",` +
		`"involvedObject":{"kind":"Pod","name":"web\u001b]0;owned\u0007-1","fieldPath":"spec.containers{app}"},` +
		`"message":"Failed to pull image \"r.example/a:1\u001b[2J\": rpc error: code = Unknown desc = failed to pull and unpack image \"r.example/a:1\": failed to resolve reference \"r.example/a:1\": failed to do request: Head \"https://r.example/v2/a/manifests/1\": dial tcp 10.1.1.1:443: connect: connection refused\u0007\u009b31m\u0085"}]}`
	raw := "\x1b[31mFailed to pull image \"r.example/b:2\": x509: certificate signed by unknown authority\x1b[0m\x07 \x08\x08\x08 \r done\n"
	for name, in := range map[string]string{"events JSON": ev, "raw text": raw} {
		msgs, _, err := Parse(strings.NewReader(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fs := Explain(msgs)
		if len(fs) != 1 {
			t.Fatalf("%s: %d findings", name, len(fs))
		}
		var b bytes.Buffer
		if err := report.WriteFindingsText(&b, fs); err != nil {
			t.Fatal(err)
		}
		if err := report.WriteJSON(&b, report.NewFindings(fs)); err != nil {
			t.Fatal(err)
		}
		var doc report.Findings
		js := b.Bytes()[bytes.IndexByte(b.Bytes(), '{'):]
		if err := json.Unmarshal(js, &doc); err != nil {
			t.Fatal(err)
		}
		all := b.String() + fmt.Sprintf("%+v", doc)
		for _, r := range all {
			if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f {
				t.Errorf("%s: control character %U in the output:\n%s", name, r, b.String())
				break
			}
		}
		if !strings.Contains(doc.Findings[0].Message, `\x07`) {
			t.Errorf("%s: a lone control character should be shown escaped: %q", name, doc.Findings[0].Message)
		}
	}
}

// Messages are quoted byte for byte: redaction replaces query values and nothing else; the
// punctuation after a URL stays where it was (a trailing ':' was once pulled into the query as %3A).
func TestMessagesQuotedByteForByte(t *testing.T) {
	values := regexp.MustCompile(`=[^&\s"':]*`)
	for _, file := range []string{"testdata/corpus.txt", "testdata/lab.txt"} {
		for _, s := range loadCorpus(t, file) {
			got := Classify(s.message).Message
			if values.ReplaceAllString(got, "=") != values.ReplaceAllString(s.message, "=") {
				t.Errorf("%s: message changed beyond redaction:\n in  %q\n out %q", s.source, s.message, got)
			}
		}
	}
	for in, want := range map[string]string{
		`failed to copy: unexpected status code https://mirror.example/v2/library/nginx/blobs/sha256:566e?ns=docker.io: 400 Bad Request`: `failed to copy: unexpected status code https://mirror.example/v2/library/nginx/blobs/sha256:566e?ns=docker.io: 400 Bad Request`,
		`Get https://b.example/data?verify=1577484021-l4Ql8%3D: x509: certificate has expired`:                                           `Get https://b.example/data?verify=REDACTED: x509: certificate has expired`,
		`Get "https://b.example/x?Expires=1&Signature=abc&Key-Pair-Id=K": dial tcp 1.2.3.4:443: i/o timeout`:                             `Get "https://b.example/x?Expires=REDACTED&Signature=REDACTED&Key-Pair-Id=REDACTED": dial tcp 1.2.3.4:443: i/o timeout`,
		`(see https://user:pass@r.example/v2/).`: `(see https://REDACTED@r.example/v2/).`,
	} {
		if got := Classify(in).Message; got != want {
			t.Errorf("Classify(%q).Message =\n %q, want\n %q", in, got, want)
		}
	}
}

// Correct details: the class is the probe's (report.ClassFor), the port is the real one, hosts
// carry their port, and each kind of failure gets its own fix.
func TestDetails(t *testing.T) {
	refused := Classify(`Failed to pull image "registry.corp.example:5000/a:1": failed to resolve reference "registry.corp.example:5000/a:1": failed to do request: Head "https://registry.corp.example:5000/v2/a/manifests/1": dial tcp 10.20.30.40:5000: connect: connection refused`)
	if refused.Host != "registry.corp.example:5000" || refused.Class != report.ClassRoute {
		t.Errorf("refused: %s %q", refused.Class, refused.Host)
	}
	if s := strings.Join(refused.NextSteps, " "); !strings.Contains(s, "TCP 5000") || strings.Contains(s, "443") {
		t.Errorf("advice must name TCP 5000, never 443: %q", s)
	}

	blobTLS := Classify(`failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://prod.blobs.example.net/registry-v2/docker/registry/v2/blobs/sha256/0e/0e6f/data?sig=x": x509: certificate signed by unknown authority`)
	if blobTLS.Role != report.RoleBlob || blobTLS.Code != report.CodeTLSUnknownAuthority || blobTLS.Host != "prod.blobs.example.net:443" ||
		blobTLS.Class != report.ClassFor(report.RoleBlob, report.StepTLS, report.CodeTLSUnknownAuthority) {
		t.Errorf("TLS on a blob host: %s %s %q %s", blobTLS.Class, blobTLS.Code, blobTLS.Host, blobTLS.Role)
	}
	if blobTLS.Class != report.ClassTLS && !slices.Contains(blobTLS.Alternatives, report.ClassTLS) {
		t.Errorf("TLS on a blob host must offer tls: %v", blobTLS.Alternatives)
	}
	token401 := Classify(`failed to resolve reference "r.example/a:1": failed to authorize: failed to fetch oauth token: unexpected status from POST request to https://auth.example/token: 401 Unauthorized`)
	if token401.Class != report.ClassAuth || token401.Role != report.RoleToken || token401.Host != "auth.example:443" {
		t.Errorf("401 at the token realm: %s %s %q", token401.Class, token401.Role, token401.Host)
	}
	blobDNS := Classify(`failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://acct.blob.core.windows.net/c/b?sig=x": dial tcp: lookup acct.blob.core.windows.net on 10.0.0.10:53: no such host`)
	if blobDNS.Class != report.ClassFor(report.RoleBlob, report.StepDNS, report.CodeDNSNXDomain) || blobDNS.Role != report.RoleBlob || !slices.Contains(blobDNS.Alternatives, report.ClassDNS) {
		t.Errorf("NXDOMAIN of a blob host: %s %s %v", blobDNS.Class, blobDNS.Role, blobDNS.Alternatives)
	}

	blob403 := Classify(`failed to pull and unpack image "myreg.azurecr.io/a:1": failed to copy: httpReadSeeker: failed open: unexpected status code https://myreg.azurecr.io/v2/a/blobs/sha256:abc: 403 Forbidden`)
	if blob403.Class != report.ClassEndpoint || blob403.Role != report.RoleBlob || blob403.Code != report.CodeBlobForbidden ||
		len(blob403.Alternatives) == 0 || blob403.Alternatives[0] != report.ClassForbidden || strings.Contains(blob403.NextSteps[0], "AcrPull") {
		t.Errorf("blob 403 after the manifest: %s %s %s alt %v next %q", blob403.Class, blob403.Role, blob403.Code, blob403.Alternatives, blob403.NextSteps)
	}

	stall := Classify(`failed to pull and unpack image "r.example/a:1": failed to copy: read tcp 10.0.0.4:51234->104.18.1.1:443: read: connection timed out`)
	digest := Classify(`failed to pull and unpack image "r.example/a:1": failed commit on ref "layer-sha256:aaa": unexpected commit digest sha256:bbb, expected sha256:aaa: failed precondition`)
	expired := Classify(`error pulling image configuration: download failed after attempts=1: error parsing HTTP 403 response body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"`)
	if stall.Code != report.CodeBlobStalled || digest.Code != report.CodeDigestMismatch || expired.Code != report.CodeBlobForbidden {
		t.Fatalf("codes: stall %s, digest %s, expired %s", stall.Code, digest.Code, expired.Code)
	}
	firsts := map[string]report.Code{}
	for _, f := range []report.Finding{refused, stall, digest, expired, blob403} {
		if prev, ok := firsts[f.NextSteps[0]]; ok {
			t.Errorf("%s and %s share the same first step %q", prev, f.Code, f.NextSteps[0])
		}
		firsts[f.NextSteps[0]] = f.Code
	}
	if !strings.Contains(expired.NextSteps[0], "clock") {
		t.Errorf("an expired signature points at the clock: %q", expired.NextSteps)
	}

	if !strings.Contains(refused.Decide, "pullpath probe registry.corp.example:5000/a:1") || !strings.Contains(refused.Decide, "reads the runtime's config") || !strings.Contains(refused.Decide, "--host-root /host") {
		t.Errorf("decide = %q", refused.Decide)
	}
}

// The mechanisms that generalise beyond the corpus, each on a message written for the test.
func TestGeneralMechanisms(t *testing.T) {
	cases := []struct {
		name, msg string
		class     report.Class
		host      string
		role      report.Role
		alt       report.Class // must be among the alternatives ("" = none required)
		image     string
		decided   bool
		learned   bool // decided and the order of alternatives follow the tables learned from dev: not asserted
	}{
		{name: "kubelet joins one error per credential: the missing tag outranks the anonymous 401",
			msg:   `Failed to pull image "acr1.azurecr.io/app": [rpc error: code = Unknown desc = Error response from daemon: Get https://acr1.azurecr.io/v2/app/manifests/latest: unauthorized: authentication required, rpc error: code = Unknown desc = Error response from daemon: manifest for acr1.azurecr.io/app:latest not found: manifest unknown: manifest unknown]`,
			class: report.ClassNotFound, alt: report.ClassAuth, image: "acr1.azurecr.io/app"},
		// containers/image returns the primary location's error and only prefixes the mirrors'
		// (docker/docker_image_src.go newImageSource): the upstream's error, the mirror's as alternative
		{name: "upstream error first, the mirror's as alternative",
			msg:   `Error initializing source docker://quay.io/org/img:1: (Mirrors also failed: [mirror.corp:5000/org/img:1: Error reading manifest 1 in mirror.corp:5000/org/img: unauthorized: authentication required]): quay.io/org/img:1: error pinging docker registry quay.io: Get "https://quay.io/v2/": dial tcp 10.1.1.1:443: connect: connection refused`,
			class: report.ClassRoute, host: "quay.io:443", role: report.RoleRegistry, alt: report.ClassAuth, image: "quay.io/org/img:1"},
		{name: "IPv6 literal without an IPv6 route",
			msg:   `Error response from daemon: Get "https://r.example/v2/": dial tcp [2001:db8::5]:443: connect: cannot assign requested address`,
			class: report.ClassRoute, host: "r.example:443", decided: true},
		{name: "Windows socket wording",
			msg:   `Error response from daemon: Get "https://r.example/v2/": dial tcp 10.2.2.2:443: connectex: A socket operation was attempted to an unreachable network.`,
			class: report.ClassRoute, host: "r.example:443", decided: true},
		{name: "docker dials its desktop proxy",
			msg:   `Error response from daemon: Get "https://registry-1.docker.io/v2/": dialing registry-1.docker.io:443 container via proxy http://127.0.0.1:3128: connecting to 127.0.0.1:3128: dial tcp 127.0.0.1:3128: connect: connection refused`,
			class: report.ClassProxy, host: "127.0.0.1:3128", role: report.RoleProxy, decided: true},
		{name: "image taken from the manifest URL when no wrapper names it",
			msg:   `failed to do request: Head "https://r.example:5000/v2/team/app/manifests/1.2": x509: certificate signed by unknown authority`,
			class: report.ClassTLS, host: "r.example:5000", image: "r.example:5000/team/app:1.2", decided: true},
		{name: "image from containers/image's reading manifest",
			msg:   `reading manifest v3 in registry.example.org/ns/tool: manifest unknown`,
			class: report.ClassNotFound, image: "registry.example.org/ns/tool:v3", alt: report.ClassOther}, // dev: caches and outages answer so too
		{name: "a bare deadline cannot decide",
			msg:   `rpc error: code = DeadlineExceeded desc = context deadline exceeded`,
			class: report.ClassRoute, alt: report.ClassEndpoint},
		{name: "a mirror answers in its own words, not the upstream registry's",
			msg:   `Error initializing source docker://quay.io/org/img:1: (Mirrors also failed: [harbor.corp:5000/org/img:1: Error reading manifest 1 in harbor.corp:5000/org/img: unauthorized: unauthorized to access repository: org/img, action: pull]): quay.io/org/img:1: error pinging docker registry quay.io: Get "https://quay.io/v2/": dial tcp 10.1.1.1:443: connect: connection refused`,
			class: report.ClassRoute, host: "quay.io:443", role: report.RoleRegistry, alt: report.ClassForbidden, image: "quay.io/org/img:1"},
		{name: "ECR Public's documented 403 (a stale stored token) is not reordered by other registries' 403s",
			msg:   `failed to resolve reference "public.ecr.aws/lambda/nodejs:18": unexpected status from HEAD request to https://public.ecr.aws/v2/lambda/nodejs/manifests/18: 403 Forbidden`,
			class: report.ClassAuth, host: "public.ecr.aws:443", role: report.RoleRegistry, alt: report.ClassForbidden, image: "public.ecr.aws/lambda/nodejs:18"},
		{name: "ghcr.io's denied: denied is credentials first",
			msg:   `Error response from daemon: Head "https://ghcr.io/v2/o/p/manifests/1": denied: denied`,
			class: report.ClassAuth, alt: report.ClassForbidden, image: "ghcr.io/o/p:1"},
		{name: "macOS's connect timeout",
			msg:   `Error response from daemon: Get "https://r.example/v2/": dial tcp 10.3.3.3:443: connect: operation timed out`,
			class: report.ClassRoute, host: "r.example:443", alt: report.ClassOther}, // dev: a registry that was down
		{name: "musl's resolver wording",
			msg:   `failed to do request: Head "https://r.example/v2/a/manifests/1": dial tcp: lookup r.example: Name does not resolve`,
			class: report.ClassDNS, host: "r.example:443", image: "r.example/a:1", decided: true},
		{name: "the resolver unreachable by any socket error",
			msg:   `Error response from daemon: Get "https://r.example/v2/": dial tcp: lookup r.example on 10.0.0.2:53: read udp 10.0.0.5:40000->10.0.0.2:53: read: no route to host`,
			class: report.ClassDNS, decided: true},
		{name: "ECR's missing repository",
			msg:   `CannotPullContainerError: pull image manifest has been retried 5 time(s): RepositoryNotFoundException: The repository with name 'app' does not exist in the registry with id '123'`,
			class: report.ClassNotFound},
		{name: "a credential provider that gave nothing",
			msg:   `Failed getting credential from external registry credential provider: error execing credential provider plugin ecr-credential-provider for image 1.dkr.ecr.eu-west-1.amazonaws.com/a: exit status 1`,
			class: report.ClassAuth, role: report.RoleToken, image: "1.dkr.ecr.eu-west-1.amazonaws.com/a", learned: true},
		{name: "an image built for another architecture",
			msg:   `exec /usr/local/bin/app: exec format error`,
			class: report.ClassPlatform, learned: true},
		{name: "a squid error page",
			msg:   `Error response from daemon: error parsing HTTP 403 response body: invalid character '<': "<html>ERR_ACCESS_DENIED Generated by squid</html>"`,
			class: report.ClassProxy, role: report.RoleProxy, decided: true},
		{name: "a DNS sinkhole answers 0.0.0.0",
			msg:   `Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp 0.0.0.0:443: connect: connection refused`,
			class: report.ClassDNS, host: "registry-1.docker.io:443", decided: false}, // calibrated: no dev message was read so
		{name: "the runtime's own socket is the node, not the path",
			msg:   `PullImage from image service failed: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing dial unix /run/containerd/containerd.sock: connect: connection refused"`,
			class: report.ClassOther},
		{name: "ECS's platform wording",
			msg:   `CannotPullContainerError: image Manifest does not contain descriptor matching platform 'linux/arm64'`,
			class: report.ClassPlatform, learned: true},
		{name: "pasted from an HTML page with entities and typographic quotes",
			msg:   "Failed to pull image \u201cr.example/a:1\u201d: failed to do request: Head &quot;https://r.example/v2/a/manifests/1&quot;: dial tcp: lookup r.example on 10.0.0.2:53: no such host",
			class: report.ClassDNS, host: "r.example:443", image: "r.example/a:1", decided: true},
		{name: "GitLab's wording for a wrong password or token",
			msg:   `Error response from daemon: Get "https://registry.gitlab.com/v2/": unauthorized: HTTP Basic: Access denied. The provided password or token is incorrect`,
			class: report.ClassAuth, alt: report.ClassOther}, // dev: a registry's own bug showed so once
		{name: "containers/image prints Hub's denial without the error code",
			msg:   `Error: reading manifest latest in docker.io/library/nosuch: requested access to the resource is denied`,
			class: report.ClassNotFound, alt: report.ClassAuth, image: "docker.io/library/nosuch:latest"},
		{name: "podman lists the error of each registry a short name was tried on",
			msg:   "Error: error pulling image \"acme/tool:1\": unable to pull acme/tool:1: 2 errors occurred:\n\t* Error initializing source docker://registry.fedoraproject.org/acme/tool:1: Error reading manifest 1 in registry.fedoraproject.org/acme/tool: manifest unknown: manifest unknown\n\t* Error initializing source docker://quay.io/acme/tool:1: Error reading manifest 1 in quay.io/acme/tool: unauthorized: access to the requested resource is not authorized\n",
			class: report.ClassNotFound, alt: report.ClassAuth, image: "registry.fedoraproject.org/acme/tool:1"},
		{name: "docker 17's wording for a missing or private repository",
			msg:   `CannotPullContainerError: API error (404): repository acme/tool not found: does not exist or no pull access`,
			class: report.ClassNotFound, alt: report.ClassAuth},
		{name: "docker 1.x's v1 wordings",
			msg:   `Error pulling image (latest) from docker.io/acme/tool, endpoint: https://registry-1.docker.io/v1/, Authentication is required.`,
			class: report.ClassAuth},
		{name: "Windows socket errors in the system's language",
			msg:   `Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp 44.1.1.1:443: connectex: Es konnte keine Verbindung hergestellt werden, da der Zielcomputer die Verbindung verweigerte.`,
			class: report.ClassRoute, host: "registry-1.docker.io:443", decided: false}, // calibrated: no dev message was read so
		{name: "Windows resolver errors in the system's language",
			msg:   `Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: 不知道这样的主机。`,
			class: report.ClassDNS, host: "registry-1.docker.io:443", decided: true},
		{name: "Hub's reading of 'pull access denied' does not speak for another registry",
			msg:   `Failed to pull image "harbor.corp/proj/app:1": rpc error: code = Unknown desc = failed to pull and unpack image "harbor.corp/proj/app:1": failed to resolve reference "harbor.corp/proj/app:1": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`,
			class: report.ClassAuth, alt: report.ClassNotFound, image: "harbor.corp/proj/app:1"},
		{name: "a 5xx from the blob host may be an outage of the registry's service",
			msg:   `failed to pull and unpack image "r.example/a:1": failed to copy: httpReadSeeker: failed open: unexpected status code https://cdn.example.net/blobs/sha256:abc: 503 Service Unavailable`,
			class: report.ClassEndpoint, role: report.RoleBlob, alt: report.ClassOther},
		{name: "cut off after containerd's transport wrapper: a transport failure, undecided",
			msg:   `failed to pull and unpack image "r.example/a:1": failed to resolve reference "r.example/a:1": failed to do request: Head "https://r.example/v2/a/manifests/1"`,
			class: transportOrder()[0], alt: transportOrder()[1], image: "r.example/a:1"},
		{name: "not found from a Harbor proxy-cache project: the cache's upstream fetch is an alternative",
			msg:   `Failed to pull image "harbor.corp/dockerhub-proxy/library/nginx:1.27": rpc error: code = NotFound desc = failed to pull and unpack image "harbor.corp/dockerhub-proxy/library/nginx:1.27": failed to resolve reference "harbor.corp/dockerhub-proxy/library/nginx:1.27": harbor.corp/dockerhub-proxy/library/nginx:1.27: not found`,
			class: report.ClassNotFound, alt: report.ClassOther, image: "harbor.corp/dockerhub-proxy/library/nginx:1.27"},
		{name: "Harbor relays its upstream's 404",
			msg:   `Error response from daemon: unknown: http status code: 404, body: {"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`,
			class: report.ClassNotFound, alt: report.ClassOther},
		{name: "docker-py's HTTP 404 wording",
			msg:   `HTTP code is 404 which indicates error: no such image - No such image: example.org/team/app:2`,
			class: report.ClassNotFound, alt: report.ClassOther},
		{name: "a client that only says auth error",
			msg:   `fetch manifest failed: getting https://ghcr.io/v2/o/p/manifests/1 failed: auth error`,
			class: report.ClassAuth, host: "ghcr.io:443", alt: report.ClassNotFound},
		{name: "a text without a cause gets the base rate of its role as alternatives",
			msg:   `[ERROR ImagePull]: failed to pull image registry.example.org/ns/app:v1`,
			class: report.ClassOther, image: "registry.example.org/ns/app:v1"}, // its alternatives: TestBaseRateForCauselessText
		{name: "docker-compose v1 names the image in parentheses",
			msg:   "Pulling web (registry.example.com/team/web:1)...\nERROR: manifest unknown",
			class: report.ClassNotFound, image: "registry.example.com/team/web:1", alt: report.ClassOther},
		{name: "the whole name a wrapper gave wins over the daemon's name without its host",
			msg:   `image pull failed for gcr.io/team/tool, this may be because there are no credentials on this request.  details: (Error: image team/tool:latest not found)`,
			class: report.ClassAuth, host: "gcr.io:443", image: "gcr.io/team/tool", decided: true},
		{name: "a Google Cloud project that was shut down: gone, unless restored",
			msg:   `Error response from daemon: Get https://gcr.io/v2/acme-public/tool/manifests/latest: denied: Project acme-public has been deleted.`,
			class: report.ClassNotFound, host: "gcr.io:443", alt: report.ClassOther},
		{name: "object storage names its account's standing: the publisher's side",
			msg:   `error pulling image configuration: error parsing HTTP 403 response body: invalid character '<' looking for beginning of value: "<?xml version='1.0' encoding='UTF-8'?><Error><Code>UserProjectAccountProblem</Code><Message>User project billing account not in good standing.</Message></Error>"`,
			class: report.ClassEndpoint, role: report.RoleBlob, alt: report.ClassOther},
		{name: "a progress line names the image; a 403 while fetching the token is the token realm's",
			msg:   "pulling ghcr.io/acme/tool:latest...\npulling manifest...\nAuthFailed(why: \"received unexpected HTTP status code 403 while retrieving an authentication token\")",
			class: report.ClassAuth, role: report.RoleToken, alt: report.ClassForbidden, image: "ghcr.io/acme/tool:latest"},
		{name: "podman's Trying to pull",
			msg:   "Trying to pull quay.io/acme/tool:v2...\nError: initializing source: reading manifest v2: manifest unknown",
			class: report.ClassNotFound, image: "quay.io/acme/tool:v2", decided: true},
		{name: "any 'image REF' that names its registry host, as a last resort",
			msg:   `Error pulling and saving image gcr.io/acme/base@sha256:d27494f6034ff3cd38bd2cde9bfea019f568565d2bb14d2d450a44cd891cf28c: Bad status during token exchange: 403`,
			class: report.ClassForbidden, host: "gcr.io:443", role: report.RoleToken, image: "gcr.io/acme/base@sha256:d27494f6034ff3cd38bd2cde9bfea019f568565d2bb14d2d450a44cd891cf28c", learned: true},
		{name: "a resolver address the poster masked still leaves the name that failed",
			msg:   `{"level":"fatal","msg":"Command failed","error":"lookup 111122223333.dkr.ecr.eu-west-2.amazonaws.com on <IP.IP.IP.IP>:53: no such host"}`,
			class: report.ClassDNS, host: "111122223333.dkr.ecr.eu-west-2.amazonaws.com:443", decided: true},
		{name: "an EOF at the registry: any transport failure",
			msg:   `Error response from daemon: Get "https://r.example/v2/": EOF`,
			class: report.ClassRoute, host: "r.example:443", alt: report.ClassTLS},
		{name: "a denial in a JSON body",
			msg:   `ERROR - DockerApiException: Docker API responded with status code=InternalServerError, response={"message":"denied"}`,
			class: report.ClassForbidden, decided: true},
		{name: "Azure Container Instances: the image or the credential",
			msg:   `The image 'acme.azurecr.io/app:1' in container group 'web' is not accessible. Please check the image and registry credential.`,
			class: report.ClassAuth, alt: report.ClassNotFound, image: "acme.azurecr.io/app:1"},
		{name: "ECR's API host is where the node's token comes from",
			msg:   "while requesting ECR authorization token RequestError: send request failed\ncaused by: Post https://ecr.us-west-2.amazonaws.com/: dial tcp 10.9.9.9:443: i/o timeout",
			class: report.ClassEndpoint, host: "ecr.us-west-2.amazonaws.com:443", role: report.RoleToken, alt: report.ClassRoute},
		{name: "an IPv6 address on a node whose kernel has no IPv6",
			msg:   `Get "https://auth.docker.io/token?scope=repository%3Aa%2Fb%3Apull&service=registry.docker.io": dial tcp [2600:1f18::1]:443: socket: address family not supported by protocol`,
			class: report.ClassEndpoint, host: "auth.docker.io:443", role: report.RoleToken, alt: report.ClassRoute},
		{name: "ECS's own words for an unreachable ECR API",
			msg:   `ResourceInitializationError: unable to pull secrets or registry auth: The task cannot pull registry auth from Amazon ECR: There is a connection issue between the task and Amazon ECR. Check your task network configuration. operation error ECR: GetAuthorizationToken, exceeded maximum number of attempts, 3`,
			class: report.ClassEndpoint, role: report.RoleToken},
		{name: "docker run names the image before the pull's error",
			msg:   "Unable to find image 'ghcr.io/acme/tool:latest' locally\ndocker: Error response from daemon: error from registry: denied\ndenied\nRun 'docker run --help' for more information",
			class: report.ClassAuth, image: "ghcr.io/acme/tool:latest", alt: report.ClassNotFound},
		{name: "a not-found while extracting a layer is the node's content store, not the registry",
			msg:   `PullImage "r.example/a:1" failed" error="rpc error: code = NotFound desc = failed to pull and unpack image "r.example/a:1": failed to extract layer sha256:7da916cc58ded8ad75b7b05bcda176201c6b8d401643db3ad712dc27641bd152: failed to get reader from content store: content digest sha256:9f8e: not found`,
			class: report.ClassOther, decided: true},
		{name: "Docker Desktop could not fetch its proxy auto-configuration",
			msg:   `Error response from daemon: Get "https://registry-1.docker.io/v2/": rejecting registry-1.docker.io:443 because traffic from evaluating PAC file: getting PAC interpreter: Get "http://wpad/wpad.dat": dial tcp: lookup wpad: no such host`,
			class: report.ClassProxy, role: report.RoleProxy, decided: true},
		{name: "docker's bare status text after the URL: a proxy's refused CONNECT, or the registry's own refusal",
			msg:   `Error response from daemon: Get https://registry.example.com/v2/: Forbidden`,
			class: report.ClassProxy, role: report.RoleProxy, alt: report.ClassForbidden},
		{name: "docker's old timeout wording",
			msg:   `Network timed out while trying to connect to https://index.docker.io/v1/repositories/library/python/images. You may want to check your internet connection or if you are behind a proxy.`,
			class: report.ClassRoute, host: "index.docker.io:443", alt: report.ClassOther},
		{name: "a GitHub Actions token the package does not admit",
			msg:   `Error response from daemon: pull access denied for ghcr.io/acme/tool, repository does not exist or may require 'docker login': denied: installation not allowed to Read organization package`,
			class: report.ClassForbidden, image: "ghcr.io/acme/tool", decided: true},
		{name: "Docker Hub's Tag not found",
			msg:   `Tag v9 not found in repository docker.io/someone/thing`,
			class: report.ClassNotFound, image: "docker.io/someone/thing:v9", decided: true},
	}
	for _, tc := range cases {
		f := Classify(tc.msg)
		if f.Class != tc.class || tc.host != "" && f.Host != tc.host || tc.role != "" && f.Role != tc.role ||
			tc.alt != "" && !slices.Contains(f.Alternatives, tc.alt) || tc.image != "" && f.Image != tc.image || !tc.learned && f.Decided != tc.decided {
			t.Errorf("%s:\n got class %s host %q role %s alt %v image %q decided %v (%s)\nwant class %s host %q role %s alt %s image %q decided %v",
				tc.name, f.Class, f.Host, f.Role, f.Alternatives, f.Image, f.Decided, f.DecidedBecause, tc.class, tc.host, tc.role, tc.alt, tc.image, tc.decided)
		}
		if tc.image != "" && !strings.Contains(f.Decide, "pullpath probe ") || strings.Contains(f.Decide, " IMAGE ") && tc.image != "" {
			t.Errorf("%s: decide %q must be runnable", tc.name, f.Decide)
		}
	}
}

// A text that names no cause lists, most frequent first, the classes dev messages of its role carried.
func TestBaseRateForCauselessText(t *testing.T) {
	saved, savedCodes := phraseTable, codeTable
	defer func() { phraseTable, codeTable = saved, savedCodes }()
	phraseTable = map[phraseKey][]classCount{}
	codeTable = map[codeKey][]classCount{{anyCode, report.RoleRegistry}: {{report.ClassNotFound, 9}, {report.ClassOther, 7}, {report.ClassRoute, 5}, {report.ClassAuth, 4}, {report.ClassTLS, 1}}}
	got := Classify(`[ERROR ImagePull]: failed to pull image registry.example.org/ns/app:v1`)
	want := []report.Class{report.ClassNotFound, report.ClassRoute, report.ClassAuth}
	if got.Class != report.ClassOther || got.Decided || !slices.Equal(got.Alternatives, want) || !strings.HasPrefix(got.Decide, "pullpath probe registry.example.org/ns/app:v1") {
		t.Errorf("got %s %v decided %v decide %q, want other, undecided, alternatives %v and a probe", got.Class, got.Alternatives, got.Decided, got.Decide, want)
	}
}

// Only a cache's own marks make a "not found" a possible upstream failure (a cache project in the
// path, a registry host named for a mirror or cache, Harbor's relayed answer): an image named for
// a proxy, or a URL's API path, are not.
func TestPullThroughCache(t *testing.T) {
	for msg, want := range map[string]bool{
		`failed to resolve reference "registry.k8s.io/kube-proxy:v9.9.9": registry.k8s.io/kube-proxy:v9.9.9: not found`:                           false,
		`failed to resolve reference "mirror.gcr.io/library/nginx:1": mirror.gcr.io/library/nginx:1: not found`:                                   true,
		`manifest for docker.mirrors.example.edu/library/nginx:latest not found: manifest unknown: manifest unknown`:                              true,
		`failed to resolve reference "registry.example.com/team/app:1": registry.example.com/team/app:1: not found`:                               false,
		`failed to resolve reference "proxy.example.com:5000": not found`:                                                                         false,
		`Head "https://r.example/v2/jwilder/nginx-proxy/manifests/latest": not found`:                                                             false,
		`Head "https://harbor.corp/v2/proxy/library/nginx/manifests/latest": not found`:                                                           true,
		`Error response from daemon: unknown: repository proxy/library/nginx not found`:                                                           true,
		`myrepo.com/dockerhub-remote/alpine:3.20: not found`:                                                                                      true,
		`Error response from daemon: unknown: http status code: 404, body: {"errors":[{"code":"MANIFEST_UNKNOWN"}]}`:                              true,
		`failed to resolve reference "nexus.corp:8082/docker-cache/library/busybox:1": nexus.corp:8082/docker-cache/library/busybox:1: not found`: true,
	} {
		if got := pullThroughCache(readFacts(msg)) != ""; got != want {
			t.Errorf("pullThroughCache(%q) = %v, want %v", msg, got, want)
		}
	}
}

// The literal prefilters are necessary conditions: wherever a rule's regexp matches a corpus
// message, its prefilter lets it through, so skipping rules never changes a result.
func TestPrefiltersNeverHideAMatch(t *testing.T) {
	var texts []string
	for _, f := range append(slices.Clone(corpusFiles), "testdata/lab.txt") {
		for _, s := range loadCorpus(t, f) {
			texts = append(texts, readFacts(s.message).text)
		}
	}
	texts = append(texts, "FAILED TO PULL IMAGE \"A\": TOOMANYREQUESTS", "Back-Off Pulling Image \"x\"")
	for i, r := range rules {
		for _, x := range texts {
			if r.re.MatchString(x) && !rulePrefilters()[i].mayMatch(strings.ToLower(x)) {
				t.Errorf("rule %q matches %.80q but its prefilter %q rejects it", r.re, x, rulePrefilters()[i].lits)
			}
		}
	}
	if p := newPrefilter(lazyRE(`lookup \S+(?: on \S+)?: no such host|(?i)TooManyRequests`)); len(p.lits) != 2 {
		t.Errorf("literals = %q", p.lits)
	}
}

func TestTruncatedIsUndecided(t *testing.T) {
	f := Classify(`docker: error pulling image configuration: download failed after attempts=6:`)
	if f.Decided || !strings.Contains(f.DecidedBecause, "cut off") {
		t.Errorf("truncated: decided %v (%s)", f.Decided, f.DecidedBecause)
	}
}

// JSON that is not a Kubernetes object is an error body pasted as it came (docker's
// {"message": …}, a registry's {"errors": […]}): it is read as text, not skipped.
func TestErrorBodiesAreText(t *testing.T) {
	for in, want := range map[string]report.Class{
		`{"message":"Get https://registry-1.docker.io/v2/: dial tcp: lookup registry-1.docker.io on 10.0.0.2:53: no such host"}`: report.ClassDNS,
		`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}`:                                 report.ClassAuth,
		`{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}`:                                  report.ClassForbidden,
	} {
		msgs, _, err := Parse(strings.NewReader(in))
		if err != nil || len(msgs) != 1 {
			t.Fatalf("%s: %v %d messages", in, err, len(msgs))
		}
		if fs := Explain(msgs); fs[0].Class != want {
			t.Errorf("%s: class %s, want %s", in, fs[0].Class, want)
		}
	}
}

// A failure on the path to Docker Hub that names no image still gets a runnable decide line.
func TestDecideOnHubPathWithoutImage(t *testing.T) {
	fd := Classify(`Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp 44.1.1.1:443: i/o timeout`)
	if !strings.Contains(fd.Decide, "pullpath probe "+hubProbeImage) || strings.Contains(fd.Decide, "IMAGE") {
		t.Errorf("decide = %q", fd.Decide)
	}
	// a missing image on an unnamed registry cannot be probed with a stand-in
	if fd := Classify(`Error response from daemon: manifest unknown: manifest unknown`); strings.Contains(fd.Decide, hubProbeImage) {
		t.Errorf("decide = %q", fd.Decide)
	}
}

// TestImageWhereverNamed: the image is read from the command the operator typed, docker's API as
// SDKs print it, "failed to pull REF" and, last, a bare reference naming its registry; never from
// a Go package path, a file path or a documentation link.
func TestImageWhereverNamed(t *testing.T) {
	cases := []struct{ msg, image string }{
		{"cmd: podman pull kind-registry:5000/team/catalog:v4.10\nmsg: non-zero return code", "kind-registry:5000/team/catalog:v4.10"},
		{"$ sudo docker pull --platform linux/amd64 -q reg.example.com/a/b:1\nError response from daemon: manifest unknown", "reg.example.com/a/b:1"},
		{"ctr -n k8s.io images pull reg.example.com/a/b@sha256:" + strings.Repeat("a", 64) + "\nctr: not found", "reg.example.com/a/b@sha256:" + strings.Repeat("a", 64)},
		{"500 Server Error: Internal Server Error for url: http+docker://localhost/v1.45/images/create?tag=2023.2&fromImage=nexus.example.xyz%3A8193%2Fkolla%2Fkeystone: Internal Server Error", "nexus.example.xyz:8193/kolla/keystone:2023.2"},
		{"updater failure: failed to pull ghcr.io/acme/updater: Error response from daemon: toomanyrequests: retry-after: 1s", "ghcr.io/acme/updater"},
		{"Pulling repository reg.example.com/team/app\nError: Authentication is required.", "reg.example.com/team/app"},
		{"Internal error occurred: docker.io/acme/web:1.2.0: toomanyrequests: You have reached your pull rate limit.", "docker.io/acme/web:1.2.0"},
		// the sentence's full stop is not the repository's
		{"Error reading manifest 1.2 in quay.io/acme/web. Retrying", "quay.io/acme/web:1.2"},
		{"github.com/containerd/containerd/remotes/docker.(*dockerResolver).Resolve: EOF", ""},
		{"see https://docs.docker.com/engine/reference/pull/ and /etc/containers/registries.conf: toomanyrequests", ""},
	}
	for _, tc := range cases {
		if got := readFacts(tc.msg).image; got != tc.image {
			t.Errorf("readFacts(%.60q…).image = %q, want %q", tc.msg, got, tc.image)
		}
	}
}

// TestRequestURLsOnly: the host is read from a URL the client requested, never from a link its
// error points the reader to; a reference a forum turned into a link reads as the reference; a
// redacted registry is not taken for a host the text names.
func TestRequestURLsOnly(t *testing.T) {
	cases := []struct{ msg, host string }{
		{"initializing source docker://registry.redhat.io/ocp/cli:v4.8: unable to retrieve auth token: invalid username/password: unauthorized: Please login. Further instructions can be found here: https://access.redhat.com/RegistryAuthentication", "registry.redhat.io:443"},
		{"https://registry-1.docker.io/v2/\n403 Forbidden\nwe now block all IP addresses that are located in … please reach out to https://support.docker.com", "registry-1.docker.io:443"},
		{`Failed to pull image “[123.dkr.ecr.us-east-1.amazonaws.com/nb/emr:latest](http://123.dkr.ecr.us-east-1.amazonaws.com/nb/emr:latest)”: rpc error: code = Unknown desc = no matching manifest for linux/arm64/v8 in the manifest list entries`, "123.dkr.ecr.us-east-1.amazonaws.com:443"},
		{"Error response from daemon: pull access denied for ghcr.io/<org>/<image>, repository does not exist or may require 'docker login': denied: installation not allowed to Read organization package", "ghcr.io:443"},
		{`failed to pull and unpack image "<private_registry>/rancher/wins:v1": failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://mcr.microsoft.com/v2/windows/servercore/blobs/sha256:44": dial tcp 204.79.197.219:443: i/o timeout`, "mcr.microsoft.com:443"},
	}
	for _, tc := range cases {
		if f := Classify(tc.msg); f.Host != tc.host {
			t.Errorf("Classify(%.60q…): host %q role %s, want %q", tc.msg, f.Host, f.Role, tc.host)
		}
	}
	// the foreign layer's host is not the redacted registry: a blob host, the endpoint's class
	if f := Classify(cases[4].msg); f.Role != report.RoleBlob || f.Class != report.ClassEndpoint {
		t.Errorf("foreign layer: role %s class %s, want blob endpoint", f.Role, f.Class)
	}
}

// TestNewerWordings: containers/image's "image index" wording, a bare "denied." with its period,
// Harbor's unknown project, containerd's gRPC NotFound cut before its description, and a 4xx that
// names no cause.
func TestNewerWordings(t *testing.T) {
	cases := []struct {
		name, msg string
		class     report.Class
		alt       report.Class
		decided   bool
	}{
		{"podman 5's image index", `Error: choosing an image from manifest list docker://registry.example.org/ns/app:latest: no image found in image index for architecture amd64, variant "", OS linux`, report.ClassPlatform, "", true},
		{"a bare denied with a period", `docker: Error response from daemon: Head "https://registry.example.org/v2/team/app/manifests/latest": denied.`, report.ClassForbidden, report.ClassAuth, false},
		{"Harbor's unknown project", `images/contour/manifests/v0.11.0: unknown: Project 'project:tanzu-images' not found or deleted.`, report.ClassNotFound, "", false}, // the learned row for a bare "not found" keeps other
		{"gRPC NotFound, cut", `Failed to pull image "registry.example.org/team/db:16.1": rpc error: code = NotFound`, report.ClassNotFound, report.ClassPlatform, false},
		{"a 400 names no cause", `failed to resolve reference "factory.example.dev/installer/abc:v1.7.1": unexpected status from HEAD request to https://factory.example.dev/v2/installer/abc/manifests/v1.7.1: 400 Bad Request`, report.ClassOther, report.ClassNotFound, false},
		{"a 502 is still the server's", `failed to resolve reference "r.example/a:1": unexpected status from HEAD request to https://r.example/v2/a/manifests/1: 502 Bad Gateway`, report.ClassOther, "", true},
	}
	for _, tc := range cases {
		f := Classify(tc.msg)
		if f.Class != tc.class || tc.alt != "" && !slices.Contains(f.Alternatives, tc.alt) || f.Decided != tc.decided {
			t.Errorf("%s: got class %s alt %v decided %v (%s), want %s alt %q decided %v", tc.name, f.Class, f.Alternatives, f.Decided, f.DecidedBecause, tc.class, tc.alt, tc.decided)
		}
	}
}

// TestRealmWrittenWrong: a token realm announced without its host is the token endpoint's
// configuration, never decided against a client that built the URL wrong; GitLab's /jwt/auth
// realm is a token host.
func TestRealmWrittenWrong(t *testing.T) {
	f := Classify(`Error response from daemon: Get http://registry.example.com/v2/: Get /jwt/auth?account=ci&client_id=docker&offline_token=true&service=container_registry: unsupported protocol scheme ""`)
	if f.Class != report.ClassEndpoint || f.Role != report.RoleToken || f.Decided || !slices.Contains(f.Alternatives, report.ClassOther) {
		t.Errorf("relative realm: class %s role %s decided %v alt %v, want endpoint on the token realm, undecided, other beside", f.Class, f.Role, f.Decided, f.Alternatives)
	}
	f = Classify(`Error response from daemon: Get http://docker.example.com:5005/v2/: Get http://gitlab.example.com/jwt/auth?account=me&client_id=docker&offline_token=true&service=container_registry: net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers)`)
	if f.Role != report.RoleToken || f.Host != "gitlab.example.com:80" || f.Class != report.ClassEndpoint {
		t.Errorf("GitLab realm: class %s host %q role %s, want endpoint on gitlab.example.com:80 (token)", f.Class, f.Host, f.Role)
	}
}

// TestOnlyFailuresAreRead: every real message of the corpus and the lab, pasted alone, is read —
// an e2e log's "{kubelet node} Failed: …" too — while text that reports no failure (a kubelet's
// progress line, a stray word) is not: explain exits 0 on it.
func TestOnlyFailuresAreRead(t *testing.T) {
	for _, f := range append(slices.Clone(corpusFiles), "testdata/lab.txt") {
		for _, s := range loadCorpus(t, f) {
			if ms, _, err := Parse(strings.NewReader(s.message)); err != nil || len(ms) == 0 {
				t.Errorf("%s: not read (%v): %.120q", s.source, err, s.message)
			}
		}
	}
	for _, in := range []string{"Started container nginx", "x", `Successfully pulled image "nginx:1" in 2.1s (2.1s including waiting)`,
		`Pulling image "registry.example.com/a:1"`, "Container image \"nginx:1\" already present on machine", "Status: Downloaded newer image for nginx:latest"} {
		if ms, _, err := Parse(strings.NewReader(in)); err != nil || len(ms) != 0 {
			t.Errorf("%q read as %d failures (err %v), want none", in, len(ms), err)
		}
	}
	if _, _, err := Parse(strings.NewReader(`{"kind": "EventList", "items": [`)); err == nil {
		t.Error("cut JSON must still be refused as JSON that does not parse")
	}
}
