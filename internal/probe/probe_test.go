package probe_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/events"
	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/resolver"
)

var (
	envOnce sync.Once
	env     *demo.Env
	envErr  error
	envMu   sync.Mutex // scenarios share one lab's fault switch
)

func lab(t *testing.T) *demo.Env {
	t.Helper()
	envOnce.Do(func() { env, envErr = demo.Setup(context.Background(), 64<<10) })
	if envErr != nil {
		t.Fatalf("lab: %v", envErr)
	}
	envMu.Lock()
	t.Cleanup(func() { env.Lab.SetFaults(registrytest.Faults{}); envMu.Unlock() })
	return env
}

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		env.Close() // the shared lab's servers and its temp dir (CA files)
	}
	os.Exit(code)
}

// Every fault class the lab can stage is diagnosed with the right class, host role, layer and code.
func TestScenarios(t *testing.T) {
	for _, s := range demo.Scenarios() {
		t.Run(s.Name, func(t *testing.T) {
			e := lab(t)
			rep, err := probe.Run(context.Background(), s.Stage(e))
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if err := s.Check(rep); err != nil {
				t.Fatalf("%v\nevidence: %s", err, strings.Join(rep.Evidence, "\n"))
			}
			if rep.Class != report.ClassOK {
				if rep.Owner != rep.Class.Owner() || rep.WhereToLook == "" || rep.Summary == "" {
					t.Errorf("owner %q, whereToLook %q, summary %q: want all set", rep.Owner, rep.WhereToLook, rep.Summary)
				}
				if rep.Failing.Host == "" || !strings.Contains(rep.Failing.Host, ":") {
					t.Errorf("failing host %q, want host:port", rep.Failing.Host)
				}
			}
		})
	}
}

func TestHealthyPathRecordsEveryEndpointAndHop(t *testing.T) {
	e := lab(t)
	rep, err := probe.Run(context.Background(), e.Options(e.Lab.Ref("team/app:1.4")))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK || rep.Failing != nil {
		t.Fatalf("class %s failing %+v, want ok", rep.Class, rep.Failing)
	}
	roles := map[report.Role]string{}
	for _, ep := range rep.Endpoints {
		roles[ep.Role] = ep.Host
		for _, l := range []report.StepName{report.StepDNS, report.StepRoute, report.StepTCP, report.StepTLS, report.StepHTTP} {
			if ep.Steps[l] != report.Pass {
				t.Errorf("endpoint %s layer %s = %q, want pass", ep.Host, l, ep.Steps[l])
			}
		}
	}
	want := map[report.Role]string{report.RoleRegistry: e.Lab.RegistryAddr(), report.RoleToken: e.Lab.AuthAddr(), report.RoleBlob: e.Lab.BlobAddr()}
	for r, h := range want {
		if roles[r] != h {
			t.Errorf("endpoint of role %s = %q, want %q", r, roles[r], h)
		}
	}
	d := rep.Download
	if d.Blobs != 4 || d.Layers != 3 || !d.Verified || d.Bytes <= 3*64<<10 {
		t.Errorf("download = %+v, want 4 blobs, 3 layers, verified, > 192 KiB", d)
	}
	// one hop per request: ping, token, HEAD+GET manifest, and 4 × (307 + 200) for the blobs
	if len(rep.Hops) != 1+1+2+8 {
		t.Errorf("%d hops, want 12", len(rep.Hops))
	}
	a := probe.Allowlist(rep)
	var got []string
	for _, h := range a.Hosts {
		got = append(got, h.Host)
	}
	if !a.Complete || a.Undiscovered != nil || strings.Join(got, ",") != strings.Join(sorted(e.Lab.AuthAddr(), e.Lab.BlobAddr(), e.Lab.RegistryAddr()), ",") {
		t.Errorf("Allowlist() = %+v", a)
	}
}

// A walk that stopped early says which hosts it could not learn, instead of passing one host off as
// the whole list.
func TestAllowlistOfAnIncompleteWalk(t *testing.T) {
	e := lab(t)
	e.Lab.SetFaults(registrytest.Faults{Cert: registrytest.CertRogue})
	rep, err := probe.Run(context.Background(), e.Options(e.Lab.Ref("team/app:1.4")))
	if err != nil {
		t.Fatal(err)
	}
	a := probe.Allowlist(rep)
	if a.Complete || len(a.Hosts) != 1 || a.Hosts[0].Host != e.Lab.RegistryAddr() || a.StoppedAt == nil || a.StoppedAt.Step != report.StepTLS {
		t.Fatalf("Allowlist() = %+v", a)
	}
	if len(a.Undiscovered) != 2 || !strings.Contains(a.Undiscovered[0], "token realm") || !strings.Contains(a.Undiscovered[1], "blob hosts") {
		t.Errorf("undiscovered = %q", a.Undiscovered)
	}
	// the realm is known once the challenge was read; the blob hosts are not when the manifest is missing
	e.Lab.SetFaults(registrytest.Faults{})
	rep, _ = probe.Run(context.Background(), e.Options(e.Lab.Ref("team/app:missing")))
	a = probe.Allowlist(rep)
	if a.Complete || len(a.Hosts) != 2 || len(a.Undiscovered) != 1 || !strings.Contains(a.Undiscovered[0], "blob hosts") {
		t.Errorf("missing tag: Allowlist() = %+v", a)
	}
}

func sorted(s ...string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// Hostile registries get findings, never hangs or panics.
func TestHostileRegistry(t *testing.T) {
	cases := []struct {
		name   string
		faults registrytest.Faults
		image  string
		tweak  func(*probe.Options)
		class  report.Class
		code   report.Code
	}{
		{name: "manifest larger than 4 MiB", faults: registrytest.Faults{HugeManifest: true}, class: report.ClassOther, code: report.CodeManifestTooLarge},
		{name: "huge error bodies", faults: registrytest.Faults{ErrorBodyBytes: 8 << 20}, image: "team/app:gone", class: report.ClassNotFound, code: report.CodeManifestUnknown},
		{name: "redirect loop", faults: registrytest.Faults{RedirectLoop: true}, class: report.ClassOther, code: report.CodeHTTPRedirectLoop},
		{name: "endless blob body", faults: registrytest.Faults{BlobEndless: true}, class: report.ClassEndpoint, code: report.CodeSizeMismatch},
		{name: "garbage WWW-Authenticate", faults: registrytest.Faults{Challenge: `Bearer realm=`}, class: report.ClassOther, code: report.CodeAuthChallengeInvalid},
		{name: "realm that is not a URL", faults: registrytest.Faults{Challenge: `Bearer realm="ftp://x",service="y"`}, class: report.ClassOther, code: report.CodeAuthChallengeInvalid},
		{name: "registry accepts but never answers", faults: registrytest.Faults{Stall: true},
			tweak: func(o *probe.Options) { o.HeaderTimeout = 300 * time.Millisecond }, class: report.ClassOther, code: report.CodeHTTPTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := lab(t)
			img := "team/app:1.4"
			if tc.image != "" {
				img = tc.image
			}
			o := e.Options(e.Lab.Ref(img))
			if tc.tweak != nil {
				tc.tweak(&o)
			}
			e.Lab.SetFaults(tc.faults)
			start := time.Now()
			rep, err := probe.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Class != tc.class || rep.Code != tc.code {
				t.Fatalf("class %s code %s (%s), want %s %s", rep.Class, rep.Code, rep.Summary, tc.class, tc.code)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

func TestBadInputIsAnError(t *testing.T) {
	for _, img := range []string{"", "UPPER/Case:1", "registry.example/app:", "https://registry.example/app:1", "a/b@sha256:xyz", strings.Repeat("a", 5000)} {
		if _, err := probe.Run(context.Background(), probe.Options{Image: img}); err == nil {
			t.Errorf("Run(%q) = nil error, want a usage error", img)
		}
	}
	if _, err := probe.Run(context.Background(), probe.Options{Image: "r.example/a:1", CAFiles: []string{"/nonexistent/ca.pem"}}); err == nil {
		t.Error("unreadable --ca-file: want an error")
	}
	if _, err := probe.Run(context.Background(), probe.Options{Image: "r.example/a:1", Platform: "linux"}); err == nil {
		t.Error("bad --platform: want an error")
	}
}

// A public answer for a registry that must be private is a dns finding, before anything is dialed.
func TestExpectPrivate(t *testing.T) {
	e := lab(t)
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	// 198.51.100.0/24 is TEST-NET-2 (documentation): never dialed, the probe stops at the DNS layer
	e.Lab.DNS.SetCNAME("pl."+e.Lab.Domain, "pl.privatelink."+e.Lab.Domain)
	e.Lab.DNS.SetA("pl.privatelink."+e.Lab.Domain, mustAddr("198.51.100.7"))
	t.Cleanup(func() { e.Lab.DNS.Delete("pl." + e.Lab.Domain); e.Lab.DNS.Delete("pl.privatelink." + e.Lab.Domain) })
	o.Image = "pl." + e.Lab.Domain + ":443/team/app:1.4"
	o.ExpectPrivate = true
	rep, err := probe.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassDNS || rep.Code != report.CodeDNSPublicForPrivate || rep.Failing.Step != report.StepDNS {
		t.Fatalf("class %s code %s, want dns %s", rep.Class, rep.Code, report.CodeDNSPublicForPrivate)
	}
	if !strings.Contains(rep.Summary, "privatelink") || !strings.Contains(rep.Summary, "198.51.100.7") {
		t.Errorf("summary %q should name the CNAME and the public address", rep.Summary)
	}
	if len(rep.Hops) != 0 {
		t.Errorf("%d hops: nothing may be dialed after a dns failure", len(rep.Hops))
	}
	b, _ := json.Marshal(rep)
	if !strings.Contains(string(b), `"failing":{"host":"pl.`) {
		t.Errorf("json failing: %s", b)
	}
}

// A resolv.conf without a nameserver (an empty file) is named as such where to look, not as an
// empty list of servers ("(, from FILE)").
func TestResolverWithoutNameserver(t *testing.T) {
	e := lab(t)
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	empty, err := resolver.ParseConf(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	empty.Source = "/node/etc/resolv.conf"
	o.Resolver = empty
	rep, err := probe.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	want := "the resolver this node uses (no nameserver in /node/etc/resolv.conf): it must resolve "
	if rep.Class != report.ClassDNS || !strings.HasPrefix(rep.WhereToLook, want) {
		t.Errorf("class %s, where to look %q; want dns and %q…", rep.Class, rep.WhereToLook, want)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// A misbehaving server echoes our Authorization into its error body, which the probe quotes as
// evidence: the report must still carry no credential.
func TestEchoedCredentialsAreScrubbed(t *testing.T) {
	e := lab(t)
	e.Lab.SetFaults(registrytest.Faults{EchoAuth: true})
	rep, err := probe.Run(context.Background(), e.Options(e.Lab.Ref("team/app:no-such-tag")))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassNotFound {
		t.Fatalf("class %s", rep.Class)
	}
	b, _ := json.Marshal(rep)
	out := string(b)
	if !strings.Contains(out, "you sent: Bearer REDACTED") {
		t.Errorf("the echoed header should appear scrubbed in the evidence: %s", out)
	}
	for _, secret := range []string{e.Lab.Token(), demo.Password} {
		if strings.Contains(out, secret) {
			t.Errorf("secret %q leaked into the report", secret)
		}
	}
}

// Some registries let GET /v2/ through and challenge only on the repository; containerd answers the
// challenge wherever it comes, and so must the probe.
func TestChallengeOnTheManifest(t *testing.T) {
	e := lab(t)
	e.Lab.SetFaults(registrytest.Faults{OpenPing: true})
	rep, err := probe.Run(context.Background(), e.Options(e.Lab.Ref("team/app:1.4")))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK {
		t.Fatalf("class %s (%s): the challenge on the manifest should be answered", rep.Class, rep.Summary)
	}
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	o.Credential.Password = "wrong"
	if rep, _ = probe.Run(context.Background(), o); rep.Class != report.ClassAuth || rep.Failing.Role != report.RoleToken {
		t.Fatalf("wrong password behind an open ping: class %s failing %+v", rep.Class, rep.Failing)
	}
}

// A schema 1 manifest is a manifest the runtime cannot use: platform, as explain reads
// containerd's and go-containerregistry's refusals of it (one taxonomy).
func TestSchema1IsPlatform(t *testing.T) {
	e := lab(t)
	m := `{"schemaVersion":1,"name":"team/old","tag":"1","architecture":"amd64","fsLayers":[{"blobSum":"sha256:a3ed95caeb02ffe68cdd9fd84406680ae93d633cb16422d00e8a7c22955b46d4"}],"history":[{"v1Compatibility":"{}"}]}`
	if err := e.Lab.PushRaw(context.Background(), "team/old:1", []byte(m), "application/vnd.docker.distribution.manifest.v1+prettyjws"); err != nil {
		t.Fatal(err)
	}
	rep, err := probe.Run(context.Background(), e.Options(e.Lab.Ref("team/old:1")))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassPlatform || rep.Code != report.CodeManifestUnsupported || rep.Failing.Role != report.RoleRegistry {
		t.Fatalf("class %s code %s role %s (%s), want platform MANIFEST_UNSUPPORTED at the registry", rep.Class, rep.Code, rep.Failing.Role, rep.Summary)
	}
	f := events.Classify(`failed to pull and unpack image "` + e.Lab.Ref("team/old:1") + `": failed to resolve reference: ` +
		`schema 1 support is disabled by default since containerd v2.0, see https://github.com/containerd/containerd/blob/main/docs/containerd-2.0.md#schema1-images`)
	if f.Class != rep.Class || f.Code != rep.Code {
		t.Errorf("explain says %s %s, the probe %s %s", f.Class, f.Code, rep.Class, rep.Code)
	}
}
