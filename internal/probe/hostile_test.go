package probe_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/internal/report"
)

// A registry's error body with escape sequences printed a forged green "pull path holds" line and
// cleared the screen in `probe -v`: it reaches the report, and the terminal, as inert text.
func TestHostileErrorBodyIsCleaned(t *testing.T) {
	e := lab(t)
	forged := "\x1b[2J\x1b[H\x1b[32mOK  the pull path holds\x1b[0m\r\u202eevil\x9b2J"
	e.Lab.SetFaults(registrytest.Faults{ErrorBody: forged})
	rep, err := probe.Run(context.Background(), e.Options(e.Lab.Ref("team/app:no-such-tag")))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassNotFound {
		t.Fatalf("class %s code %s: %s", rep.Class, rep.Code, rep.Summary)
	}
	var out bytes.Buffer
	if err := report.WriteText(&out, rep, report.TextOptions{Verbose: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rep)
	for what, s := range map[string]string{"text": out.String(), "json": string(b)} {
		for _, bad := range []string{"\x1b", "\r", "\u202e", "\u009b", `\u001b`, `\r`} {
			if strings.Contains(s, bad) {
				t.Errorf("the %s report carries %q from the registry's body", what, bad)
			}
		}
	}
	if !strings.Contains(out.String(), "the pull path holds") {
		t.Errorf("the body's printable text is still quoted as evidence:\n%s", out.String())
	}
}

// The scrub ran after the 200-character clip, so a credential straddling the cut survived in part
// ("Basic cm9ib3Q6UzNjcj…"). Every cut position around the limit is tried.
func TestCredentialStraddlingTheClipIsGone(t *testing.T) {
	e := lab(t)
	basic := base64.StdEncoding.EncodeToString([]byte(demo.User + ":" + demo.Password))
	for pad := 170; pad <= 200; pad += 3 {
		e.Lab.SetFaults(registrytest.Faults{ErrorBody: strings.Repeat("x", pad) + " you sent Basic " + basic + " and " + demo.Password})
		rep, err := probe.Run(context.Background(), e.Options(e.Lab.Ref("team/app:no-such-tag")))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rep)
		for _, secret := range []string{basic[:8], demo.Password[:8]} {
			if strings.Contains(string(b), secret) {
				t.Errorf("pad %d: %q, part of a credential, is in the report", pad, secret)
			}
		}
	}
}

// A token realm or blob redirect naming a 200,000-character host came back as a 200,012-character
// failing.host (a 3.2 MB report). Such a host is refused where it is read, and named cut. (A
// challenge longer than 16 KiB was, and is, refused whole as AUTH_CHALLENGE_INVALID.)
func TestHostLongerThanADNSNameIsRefused(t *testing.T) {
	huge := strings.Repeat("a", 200_000)
	long63 := strings.Repeat("b", 64) + ".pullpath.test"
	for _, tc := range []struct {
		name   string
		faults registrytest.Faults
		role   report.Role
	}{
		{"realm", registrytest.Faults{Realm: "https://" + huge[:12_000] + "/token"}, report.RoleToken}, // a challenge is read up to 16 KiB
		{"blob redirect", registrytest.Faults{BlobHost: huge + ":443"}, report.RoleBlob},
		{"label of 64", registrytest.Faults{BlobHost: long63 + ":443"}, report.RoleBlob},
		{"dotted realm", registrytest.Faults{Realm: "https://" + strings.Repeat("abcdefgh.", 30) + "test/token"}, report.RoleToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := lab(t)
			e.Lab.SetFaults(tc.faults)
			rep, err := probe.Run(context.Background(), e.Options(e.Lab.Ref("team/app:1.4")))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(rep)
			t.Logf("report: %d bytes, failing %+v", len(b), rep.Failing)
			if rep.Code != report.CodeDNSNameInvalid || rep.Class != report.ClassEndpoint || rep.Failing == nil || rep.Failing.Role != tc.role || rep.Failing.Step != report.StepDNS {
				t.Fatalf("class %s code %s failing %+v, want endpoint DNS_NAME_INVALID at dns of the %s host", rep.Class, rep.Code, rep.Failing, tc.role)
			}
			if n := len(rep.Failing.Host); n > 70 || !strings.HasSuffix(rep.Failing.Host, "…:443") && tc.name != "label of 64" {
				t.Errorf("failing.host %q (%d bytes): want the host cut to 60 bytes and its port", rep.Failing.Host, n)
			}
			if len(b) > 64<<10 {
				t.Errorf("the report is %d bytes", len(b))
			}
		})
	}
}

// A registry elsewhere whose token realm is on the node's loopback (or a metadata service) gets no
// credentials presented there and no token from it; the report names the host and says the runtime
// would follow it. The registry is reached through the runtime's proxy (so it is not on the node's
// loopback), the realm directly (NO_PROXY): all of it on loopback in this test.
func TestLocalRealmGetsNoCredentials(t *testing.T) {
	e := lab(t)
	px, err := registrytest.StartConnectProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	authBefore := e.Lab.Count("auth")
	hosts := "server = \"https://" + e.Lab.RegistryAddr() + "\"\nca = \"/etc/lab/ca.pem\"\n[host]\n"
	unit := "[Service]\nEnvironment=\"HTTPS_PROXY=http://" + px.Addr + "\"\nEnvironment=\"NO_PROXY=" + e.Lab.AuthHost + "\"\n"
	cfg, read := node(t, e, hosts, "1.7.24", unit)
	rep, err := probe.Run(context.Background(), runtimeOpts(e, cfg, read))
	if err != nil {
		t.Fatal(err)
	}
	var warned *report.Warning
	for i, w := range rep.Warnings {
		if w.Code == report.CodeRealmLocal {
			warned = &rep.Warnings[i]
		}
	}
	if warned == nil || warned.Host != e.Lab.AuthAddr() || !strings.Contains(warned.Message, "loopback address 127.0.0.1") || !strings.Contains(warned.Message, "containerd") {
		t.Fatalf("warnings %+v: want %s on %s", rep.Warnings, report.CodeRealmLocal, e.Lab.AuthAddr())
	}
	if n := e.Lab.Count("auth") - authBefore; n != 0 {
		t.Errorf("the realm was asked %d times", n)
	}
	if rep.Class != report.ClassAuth || rep.Code != report.CodeAuth401 || !strings.Contains(rep.Summary, "withheld") {
		t.Errorf("class %s code %s: %s; want auth 401 naming the withheld credentials", rep.Class, rep.Code, rep.Summary)
	}
	if !strings.Contains(strings.Join(px.Targets(), " "), e.Lab.RegistryAddr()) {
		t.Errorf("the registry went through the proxy: %v", px.Targets())
	}
	// the same registry reached directly is on loopback with its realm: the path holds
	cfg, read = node(t, e, hosts, "1.7.24", "")
	if rep, _ := probe.Run(context.Background(), runtimeOpts(e, cfg, read)); rep.Class != report.ClassOK {
		t.Errorf("loopback registry, loopback realm: class %s %s", rep.Class, rep.Summary)
	}
}
