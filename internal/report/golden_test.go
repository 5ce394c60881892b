package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files of the text renderers")

// demoLike is a broken report shaped like the demo's "blob host unreachable", with the long lines a
// real node gives: a privatelink host, several addresses, a runtime with a mirror, a warning.
func demoLike() *Probe {
	return &Probe{Image: "registry.pullpath.test:34841/team/app:1.4", Platform: "linux/amd64", Node: "demo-node",
		Class: ClassEndpoint, Owner: ClassEndpoint.Owner(), OwnerText: ClassEndpoint.OwnerText(), Code: CodeTCPRefused,
		Summary: "cannot open a TCP connection to blobs.pullpath.test:45871: connection refused (the host answers, nothing listens on the port, or a firewall rejects)",
		Failing: &Failing{Host: "blobs.pullpath.test:45871", Role: RoleBlob, Step: StepTCP, Code: CodeTCPRefused},
		Evidence: []string{"dial 127.0.0.1:45871 [127.0.0.1 dev lo src 127.0.0.1]: dial tcp 127.0.0.1:45871: connect: connection refused after 50µs",
			"via https://myregistry.privatelink.westeurope.azurecr.io/v2/team/app/blobs/sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef → 307"},
		WhereToLook: "blobs.pullpath.test:45871 is a blob endpoint (307 from registry.pullpath.test:34841): it must be reachable from the node just like the registry API; add it to the firewall/proxy allowlist, private DNS and routes (the full list: pullpath probe --allowlist)",
		Resolver:    Resolver{Source: "pullpath demo DNS server", Nameservers: []string{"127.0.0.1:49009"}},
		Runtime: &Runtime{Name: "containerd", Version: "1.7.24", HostRoot: "/host", Hosts: []RuntimeHost{
			{URL: "https://mirror.corp.example/v2", Role: RoleMirror, Source: "/etc/containerd/certs.d/registry.pullpath.test:34841/hosts.toml:3", Result: "endpoint TCP_TIMEOUT at tcp"},
			{URL: "https://registry.pullpath.test:34841/v2", Role: RoleRegistry, Source: "server", Result: "endpoint TCP_REFUSED at tcp"}}},
		Download: Download{Expected: 4},
		Duration: Duration(12 * time.Millisecond),
		Warnings: []Warning{{Code: CodeTLSInsecure, Message: "certificates were not verified (--insecure): the verdict says nothing about the trust the node's runtime would apply"}},
		Endpoints: []Endpoint{
			{Host: "registry.pullpath.test:34841", Role: RoleRegistry, Addresses: []Address{{IP: "127.0.0.1", Scope: "loopback"}},
				Steps: map[StepName]Verdict{StepDNS: Pass, StepRoute: Pass, StepTCP: Pass, StepTLS: Pass, StepHTTP: Pass, StepAuth: Pass, StepManifest: Pass}},
			{Host: "auth.pullpath.test:45125", Role: RoleToken, Addresses: []Address{{IP: "127.0.0.1", Scope: "loopback"}},
				Steps: map[StepName]Verdict{StepDNS: Pass, StepRoute: Pass, StepTCP: Pass, StepTLS: Pass, StepHTTP: Pass, StepAuth: Pass}},
			{Host: "myregistry.westeurope.data.privatelink.azurecr.io:443", Role: RoleBlob, Addresses: []Address{{IP: "10.1.2.3", Scope: "private"}, {IP: "fd00::1234", Scope: "private"}, {IP: "20.50.60.70", Scope: "public"}},
				Steps: map[StepName]Verdict{StepDNS: Warn, StepRoute: Pass, StepTCP: Pass, StepTLS: Pass, StepHTTP: Pass, StepBlob: Pass}},
			{Host: "blobs.pullpath.test:45871", Role: RoleBlob, Addresses: []Address{{IP: "127.0.0.1", Scope: "loopback"}},
				Steps: map[StepName]Verdict{StepDNS: Pass, StepRoute: Pass, StepTCP: Fail, StepTLS: Skip, StepHTTP: Skip, StepAuth: Skip, StepManifest: Skip, StepBlob: Skip}},
		},
		Steps: []Step{{Step: StepTCP, Endpoint: "blobs.pullpath.test:45871", Role: RoleBlob, Verdict: Fail, Code: CodeTCPRefused, Summary: "cannot open a TCP connection to blobs.pullpath.test:45871: connection refused (the host answers, nothing listens on the port, or a firewall rejects)"}},
		Hops:  []Hop{{Seq: 7, Role: RoleBlob, Method: "GET", URL: "https://blobs.pullpath.test:45871/data/sha256:0123?sig=REDACTED&se=REDACTED", Error: "dial tcp 127.0.0.1:45871: connect: connection refused", Duration: Duration(time.Millisecond)}},
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./internal/report -update rewrites it); got:\n%s", path, got)
	}
}

// fits fails for any line wider than width, in runes; only an unbreakable word may exceed it.
func fits(t *testing.T, out string, width int) {
	t.Helper()
	for i, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) <= width {
			continue
		}
		f := strings.Fields(l)
		if len(f) == 1 || utf8.RuneCountInString(f[len(f)-1]) > width/2 { // a URL on its own line
			continue
		}
		t.Errorf("line %d is %d columns wide (> %d): %q", i+1, utf8.RuneCountInString(l), width, l)
	}
}

func TestTextNarrowGolden(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		var b bytes.Buffer
		if err := WriteText(&b, demoLike(), TextOptions{Verbose: verbose}); err != nil { // width unknown: 80
			t.Fatal(err)
		}
		out := b.String()
		fits(t, out, 80)
		if strings.Contains(out, "\x1b[") {
			t.Error("colour without a terminal")
		}
		name := "probe-narrow.golden"
		if verbose {
			name = "probe-narrow-verbose.golden"
		}
		golden(t, name, out)
	}
}

func TestTextWideGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, demoLike(), TextOptions{Width: 200}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	fits(t, out, 200)
	if !strings.Contains(out, "ENDPOINT  ") || !strings.Contains(out, "ADDRESSES") || !strings.Contains(out, "  FAIL  skip") {
		t.Errorf("a 200-column terminal should get the wide inventory:\n%s", out)
	}
	golden(t, "probe-wide.golden", out)
}

func TestTextNarrowAt60(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, demoLike(), TextOptions{Width: 60}); err != nil {
		t.Fatal(err)
	}
	fits(t, b.String(), 60)
	// the privatelink host is longer than its column: it gets a line of its own
	if !strings.Contains(b.String(), "\nmyregistry.westeurope.data.privatelink.azurecr.io:443\n") {
		t.Errorf("long host not on its own line:\n%s", b.String())
	}
}

func TestTextColour(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, demoLike(), TextOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{styleBold + "BROKEN" + styleReset, styleYellow + "WARNING" + styleReset, styleBold + "✗" + styleReset, styleYellow + "!" + styleReset} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	fits(t, stripANSI(out), 80)
	// colour codes take no columns: the layout is the plain one
	var plain bytes.Buffer
	_ = WriteText(&plain, demoLike(), TextOptions{})
	if stripANSI(out) != plain.String() {
		t.Errorf("coloured layout differs from the plain one:\n%s\nvs\n%s", stripANSI(out), plain.String())
	}
}

func stripANSI(s string) string {
	for _, c := range []string{styleRed, styleBold, styleYellow, styleGreen, styleReset} {
		s = strings.ReplaceAll(s, c, "")
	}
	return s
}

func TestFindingsNarrowGolden(t *testing.T) {
	f := Finding{Class: ClassForbidden, Owner: ClassForbidden.Owner(), OwnerText: ClassForbidden.OwnerText(), Code: CodeAuth403, Host: "gcr.io", Role: RoleRegistry,
		Reason: "gcr.io denied the request (403): the identity lacks rights, or a network rule blocks this client", Image: "gcr.io/maloney-scratch/monolith:1.0.0",
		Operation: "resolve (HEAD manifest)", Alternatives: []Class{ClassAuth}, Count: 4,
		NextSteps: []string{"grant the identity pull rights on this repository (e.g. AcrPull, ECR repository policy)", "check the registry's network rules for the node's egress address"},
		Decide:    "pullpath probe gcr.io/maloney-scratch/monolith:1.0.0   # on the node, or in a hostNetwork pod with dnsPolicy: Default",
		Message:   `Failed to pull image "gcr.io/maloney-scratch/monolith:1.0.0": rpc error: code = Unknown desc = failed to pull and unpack image "gcr.io/maloney-scratch/monolith:1.0.0": failed to resolve reference "gcr.io/maloney-scratch/monolith:1.0.0": pulling from host gcr.io failed with status code [manifests 1.0.0]: 403 Forbidden`,
		Sources:   []string{"line 18, event Failed"}}
	var b bytes.Buffer
	if err := WriteFindingsTextWith(&b, []Finding{f}, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	fits(t, b.String(), 80)
	golden(t, "findings-narrow.golden", b.String())
	b.Reset()
	_ = WriteFindingsTextWith(&b, []Finding{f}, TextOptions{Color: true})
	if !strings.Contains(b.String(), "class "+styleBold+"forbidden"+styleReset) {
		t.Errorf("class not coloured:\n%s", b.String())
	}
	// a decided finding's command confirms it; only an undecided one's decides
	f.Decided, f.Alternatives = true, nil
	b.Reset()
	_ = WriteFindingsTextWith(&b, []Finding{f}, TextOptions{})
	if !strings.Contains(b.String(), "\n    confirm    pullpath probe gcr.io/") || strings.Contains(b.String(), "    decide ") || strings.Contains(b.String(), "undecided") {
		t.Errorf("decided finding's command row:\n%s", b.String())
	}
}
