//go:build !probeonly

package report

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

func TestWriteTextBroken(t *testing.T) {
	p := &Probe{Image: "r.example/a:1", Platform: "linux/amd64", Node: "n1", Class: ClassEndpoint, Owner: ClassEndpoint.Owner(), OwnerText: ClassEndpoint.OwnerText(), Code: CodeTCPRefused,
		Summary: "cannot open a TCP connection to blobs.example:443", Failing: &Failing{Host: "blobs.example:443", Role: RoleBlob, Step: StepTCP, Code: CodeTCPRefused},
		Evidence: []string{"", "dial 10.0.0.3:443: connection refused"}, WhereToLook: "the allowlist",
		Resolver: Resolver{Source: "/etc/resolv.conf", Nameservers: []string{"10.0.0.10:53"}},
		Endpoints: []Endpoint{{Host: "blobs.example:443", Role: RoleBlob, Addresses: []Address{{IP: "10.0.0.3", Scope: "private"}},
			Steps: map[StepName]Verdict{StepDNS: Pass, StepTCP: Fail, StepTLS: Skip}}},
		Warnings: []Warning{{Code: CodeTLSInsecure, Message: "--insecure"}}}
	var b bytes.Buffer
	if err := WriteText(&b, p, TextOptions{Width: 200}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"BROKEN  class endpoint · blobs.example:443 (blob) · step tcp · TCP_REFUSED\n",
		"  owner     network + registry (every host the registry hands out must be allowed, resolvable and routed) [network]\n",
		"  evidence  dial 10.0.0.3:443: connection refused\n", // the empty first line is skipped, not a dangling label
		"  look at   the allowlist\n",
		"  WARNING   TLS_VERIFY_DISABLED: --insecure\n",
		"blobs.example:443  blob  10.0.0.3 (private)  pass  ·      FAIL  skip",
		"resolver  10.0.0.10:53 from /etc/resolv.conf\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// a resolv.conf without a nameserver says so, not an empty list
	p.Resolver.Nameservers = nil
	b.Reset()
	if err := WriteText(&b, p, TextOptions{Width: 200}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "resolver  no nameserver in /etc/resolv.conf\n") {
		t.Errorf("empty resolver:\n%s", out)
	}
}

func TestProbeJSONContract(t *testing.T) {
	ok := &Probe{APIVersion: APIVersion, Kind: "ProbeReport", Image: "a", Class: ClassOK, Code: CodeOK,
		Endpoints: []Endpoint{{Host: "r:443", Role: RoleRegistry, Steps: map[StepName]Verdict{StepDNS: Pass}, Addresses: []Address{}}},
		Download:  Download{Layers: 3, Bytes: 10, Verified: true}}
	b, err := json.Marshal(ok)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"image", "class", "owner", "failing", "endpoints", "download"} {
		if _, present := m[k]; !present {
			t.Errorf("key %q missing from %s", k, b)
		}
	}
	if m["failing"] != nil {
		t.Errorf("failing must be null when ok: %v", m["failing"])
	}
	if !strings.Contains(string(b), `"steps":{"dns":"pass"}`) {
		t.Errorf("layers should marshal by name: %s", b)
	}
}

func TestFindingsText(t *testing.T) {
	var b bytes.Buffer
	_ = WriteFindingsText(&b, nil)
	if !strings.Contains(b.String(), "no image pull failure") {
		t.Errorf("empty: %q", b.String())
	}
	b.Reset()
	_ = WriteFindingsText(&b, []Finding{{Class: ClassAuth, Owner: ClassAuth.Owner(), Code: CodeAuth401, Host: "r", Role: RoleToken, Reason: "401",
		Count: 3, Alternatives: []Class{ClassNotFound}, NextSteps: []string{"a", "b"}, Message: strings.Repeat("x", 700)}})
	out := b.String()
	for _, want := range []string{"[1] class auth · r (token) · AUTH_401 · seen 3×", "or         not_found", "next       1. a", "           2. b", " … (100 more bytes", "· undecided"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestClassesAndLayers(t *testing.T) {
	if len(Classes()) != 12 || Classes()[0] != ClassOK || Classes()[11] != ClassOther {
		t.Errorf("Classes() = %v", Classes())
	}
	var l StepName
	if err := l.UnmarshalText([]byte("manifest")); err != nil || l != StepManifest {
		t.Errorf("UnmarshalText = %v %v", l, err)
	}
	if err := l.UnmarshalText([]byte("nope")); err == nil {
		t.Error("unknown layer: want error")
	}
	for _, tc := range []struct {
		role  Role
		layer StepName
		code  Code
		want  Class
	}{
		{RoleRegistry, StepDNS, CodeDNSNXDomain, ClassDNS},
		{RoleBlob, StepDNS, CodeDNSNXDomain, ClassEndpoint},
		{RoleToken, StepAuth, CodeAuth401, ClassAuth},
		{RoleBlob, StepBlob, CodeAuth403, ClassEndpoint},
		{RoleRegistry, StepManifest, CodeAuth403, ClassForbidden},
		{RoleRegistry, StepManifest, CodeManifestUnsupported, ClassPlatform},
		{RoleRegistry, StepTLS, CodeTLSHandshakeTimeout, ClassRoute},
		{RoleRegistry, StepTLS, CodeTLSPlainHTTP, ClassTLS},
		{RoleProxy, StepTCP, CodeTCPRefused, ClassProxy},
		{RoleMirror, StepTCP, CodeTCPRefused, ClassEndpoint},
	} {
		if got := ClassFor(tc.role, tc.layer, tc.code); got != tc.want {
			t.Errorf("ClassFor(%s, %s, %s) = %s, want %s", tc.role, tc.layer, tc.code, got, tc.want)
		}
	}
}

// A node's report (verify, watch) or a registry's words reach the terminal: every renderer shows
// their escape sequences, CR and bidi overrides as text, and keeps its own colours.
func TestRenderersDoNotObeyEscapes(t *testing.T) {
	evil := "x\x1b[2J\x1b[32mOK  the pull path holds\x1b[0m\r\u202eevil"
	p := &Probe{Image: "r.example/a:1" + evil, Class: ClassEndpoint, Code: CodeTCPRefused, Summary: "s" + evil,
		Failing:   &Failing{Host: "h" + evil + ":443", Role: RoleBlob, Step: StepTCP, Code: CodeTCPRefused},
		Evidence:  []string{evil},
		Endpoints: []Endpoint{{Host: "h" + evil + ":443", Role: RoleBlob, Steps: map[StepName]Verdict{StepTCP: Fail}}},
		Steps:     []Step{{Endpoint: "h:443", Verdict: Fail, Summary: evil}}, Hops: []Hop{{URL: "https://h/" + evil}}}
	v := &Verification{Image: "r.example/a:1", Class: ClassEndpoint, Pools: []PoolResult{{Pool: "p" + evil, Node: "n" + evil, Class: ClassEndpoint, Probe: p}}}
	for _, o := range []TextOptions{{Verbose: true, Color: true}, {Width: 40}} {
		var b bytes.Buffer
		if err := WriteText(&b, p, o); err != nil {
			t.Fatal(err)
		}
		if err := WriteVerifyText(&b, v); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, bad := range []string{"\x1b[2J", "\x1b[32mOK", "\r", "\u202e"} {
			if strings.Contains(out, bad) {
				t.Errorf("%+v: the output carries %q:\n%s", o, bad, out)
			}
		}
		if o.Color && !strings.Contains(out, styleBold+"BROKEN"+styleReset) {
			t.Errorf("pullpath's own colours are kept:\n%s", out)
		}
	}
}

// Code.Known's set is every Code constant of the package, no more.
func TestKnownCodesAreTheConstants(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, sp := range g.Specs {
					vs := sp.(*ast.ValueSpec)
					if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" || len(vs.Values) != 1 {
						continue
					}
					lit, ok := vs.Values[0].(*ast.BasicLit)
					if !ok {
						continue
					}
					n++
					if c := Code(strings.Trim(lit.Value, `"`)); !c.Known() {
						t.Errorf("%s is not Known", c)
					}
				}
			}
		}
	}
	if n != len(knownCodes) || n < 70 {
		t.Errorf("%d Code constants, %d known codes", n, len(knownCodes))
	}
	if Code("x\x1b[2J").Known() {
		t.Error("an unknown code is Known")
	}
}
