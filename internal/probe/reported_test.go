package probe

import (
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// failed is one host's failure as the walk records it: on the host itself, or on an endpoint it led
// to (token realm, blob host).
func failed(host string, role report.Role, code report.Code, status int, resolved bool) hostTry {
	hostRole := report.RoleMirror
	if strings.HasPrefix(host, "registry") {
		hostRole = report.RoleRegistry
	}
	if role == "" {
		role = hostRole
	}
	return hostTry{t: target{role: hostRole, desc: "https://" + host},
		f: &failure{ep: &endpoint{hostport: host, role: role}, code: code, status: status}, resolved: resolved}
}

func dockerNode(version, store string) *runtimeconfig.Config {
	return &runtimeconfig.Config{Runtime: runtimeconfig.Docker, Version: version, ImageStore: &runtimeconfig.ImageStore{Store: store}}
}

// Which host's error each runtime reports when every host failed (policy.reported), docker in both
// of its eras.
func TestPickReported(t *testing.T) {
	const (
		deb   = "20.10.24+dfsg1-1+deb12u1" // Debian's docker.io
		ce28  = "28.5.2-1~debian.12~bookworm"
		ce27  = "27.5.1-1~debian.12~bookworm"
		graph = runtimeconfig.StoreGraphdriver
		ctrd  = runtimeconfig.StoreContainerd
	)
	// a mirror refusing connections, then an upstream without the tag
	refused404 := []hostTry{failed("mirror:443", "", report.CodeTCPRefused, 0, false), failed("registry:443", "", report.CodeManifestUnknown, 404, false)}
	// a mirror that served the manifest, then failed a layer; the upstream's tag missing
	blobThen404 := []hostTry{failed("mirror:443", report.RoleBlob, report.CodeDigestMismatch, 0, true), failed("registry:443", "", report.CodeManifestUnknown, 404, false)}
	// a mirror answering 404, a second one 500, then an upstream refusing connections
	three := []hostTry{failed("mirror:443", "", report.CodeManifestUnknown, 404, false), failed("mirror2:443", "", report.CodeHTTPStatus, 500, false), failed("registry:443", "", report.CodeTCPRefused, 0, false)}
	for _, tc := range []struct {
		name  string
		rt    *runtimeconfig.Config
		tried []hostTry
		want  int
	}{
		{"no runtime read: the last host", nil, refused404, 1},
		{"one host", dockerNode(ce28, ctrd), refused404[:1], 0},
		// containerd's own rules, unchanged
		{"containerd 1.6: the first that is not a 404", &runtimeconfig.Config{Runtime: runtimeconfig.Containerd, Version: "1.6.20~ds1-1+deb12u3"}, refused404, 0},
		{"containerd 2.4: a 404 outranks a connection error", &runtimeconfig.Config{Runtime: runtimeconfig.Containerd, Version: "2.4.2"}, refused404, 1},
		{"containerd 2.4: a resolved host's blob error is the first host's", &runtimeconfig.Config{Runtime: runtimeconfig.Containerd, Version: "2.4.2"}, blobThen404, 0},
		{"CRI-O: the primary, last", &runtimeconfig.Config{Runtime: runtimeconfig.CRIO}, refused404, 1},
		// dockerd's own puller: lastErr is the latest fallback error (distribution/pull.go:131 at
		// v28.5.2, :137 at v20.10.24); a mirror's failure falls back (errors.go continueOnError)
		{"docker 20.10: the last endpoint's", dockerNode(deb, graph), refused404, 1},
		{"docker 28.5 without the containerd store: the last endpoint's", dockerNode(ce28, graph), refused404, 1},
		{"docker 28.5 without the containerd store: three hosts", dockerNode(ce28, graph), three, 2},
		// a mirror that resolved then failed a layer falls back too: the layer's error is a plain
		// error or xfer.DoNotRetry, continueOnError's `case error` (errors.go:142 at v28.5.2,
		// :168 at v20.10.24), and the upstream is pulled from the start
		{"docker 20.10: a mirror resolved, then a blob failed", dockerNode(deb, graph), blobThen404, 1},
		{"docker 28.5: a mirror resolved, then a blob failed", dockerNode(ce28, graph), blobThen404, 1},
		// the containerd image store: the containerd resolver dockerd vendors (v1.7.24 at v27.5.1,
		// v2.1.4 at v28.5.2)
		{"docker 27.5 with the containerd store: containerd 1.x's rule", dockerNode(ce27, ctrd), refused404, 0},
		{"docker 28.5 with the containerd store: containerd 2.x's rule", dockerNode(ce28, ctrd), refused404, 1},
		{"docker 28.5 with the containerd store: a status outranks a 404", dockerNode(ce28, ctrd), three, 1},
		{"docker 27.5 with the containerd store: the first that is not a 404", dockerNode(ce27, ctrd), three, 1},
		{"docker 28.5 with the containerd store: resolved, then a blob failed", dockerNode(ce28, ctrd), blobThen404, 0},
		// what the node does not tell: as before
		{"docker, store unknown", dockerNode(ce28, ""), refused404, 1},
		{"docker, no store read", &runtimeconfig.Config{Runtime: runtimeconfig.Docker, Version: ce28}, blobThen404, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := policyOf(tc.rt).reported(tc.tried); got != tc.want {
				t.Fatalf("pickReported = %d (%s), want %d (%s)", got, tc.tried[got].f.ep.hostport, tc.want, tc.tried[tc.want].f.ep.hostport)
			}
		})
	}
}

// From 28.0 dockerd's own puller stops at a mirror whose error is a context deadline; past the
// /v2/ ping that is its token realm's connection timeout (policy.stops).
func TestStopsPull(t *testing.T) {
	realmTimeout := failed("mirror:443", report.RoleToken, report.CodeTCPTimeout, 0, false)
	for _, tc := range []struct {
		name string
		rt   *runtimeconfig.Config
		try  hostTry
		want bool
	}{
		{"28.5, the mirror's realm timed out", dockerNode("28.5.2", runtimeconfig.StoreGraphdriver), realmTimeout, true},
		{"28.0, the same", dockerNode("28.0.0", runtimeconfig.StoreGraphdriver), realmTimeout, true},
		{"27.5: no context check, it falls back", dockerNode("27.5.1", runtimeconfig.StoreGraphdriver), realmTimeout, false},
		{"20.10: it falls back", dockerNode("20.10.24+dfsg1", runtimeconfig.StoreGraphdriver), realmTimeout, false},
		{"28.5 with the containerd store: containerd's resolver", dockerNode("28.5.2", runtimeconfig.StoreContainerd), realmTimeout, false},
		{"28.5, store unknown", dockerNode("28.5.2", ""), realmTimeout, false},
		{"28.5, the mirror itself timed out: its ping falls back", dockerNode("28.5.2", runtimeconfig.StoreGraphdriver), failed("mirror:443", "", report.CodeTCPTimeout, 0, false), false},
		{"28.5, the realm refused: not a deadline", dockerNode("28.5.2", runtimeconfig.StoreGraphdriver), failed("mirror:443", report.RoleToken, report.CodeTCPRefused, 0, false), false},
		{"28.5, a blob host timed out: the config's error falls back", dockerNode("28.5.2", runtimeconfig.StoreGraphdriver), failed("mirror:443", report.RoleBlob, report.CodeTCPTimeout, 0, true), false},
		{"28.5, the upstream's realm: nothing after it anyway", dockerNode("28.5.2", runtimeconfig.StoreGraphdriver), failed("registry:443", report.RoleToken, report.CodeTCPTimeout, 0, false), false},
		{"containerd", &runtimeconfig.Config{Runtime: runtimeconfig.Containerd, Version: "2.4.2"}, realmTimeout, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := policyOf(tc.rt).stops(tc.try.t, tc.try.f); got != tc.want {
				t.Fatalf("stopsPull = %t, want %t", got, tc.want)
			}
		})
	}
}

// The warnings name the rule that applies.
func TestReportRule(t *testing.T) {
	for _, tc := range []struct {
		rt   *runtimeconfig.Config
		want string
	}{
		{nil, "the last host's"},
		{dockerNode("28.5.2", ""), "the last host's"},
		{dockerNode("20.10.24", runtimeconfig.StoreGraphdriver), "dockerd without the containerd image store"},
		{dockerNode("27.5.1", runtimeconfig.StoreContainerd), "containerd 1.x"},
		{dockerNode("28.5.2", runtimeconfig.StoreContainerd), "containerd 2.x"},
		{&runtimeconfig.Config{Runtime: runtimeconfig.Containerd, Version: "1.6.20"}, "containerd 1.x reports"},
		{&runtimeconfig.Config{Runtime: runtimeconfig.Containerd, Version: "2.4.2"}, "containerd 2.x reports"},
	} {
		if got := policyOf(tc.rt).words; !strings.Contains(got, tc.want) {
			t.Errorf("reportRule(%+v) = %q, want it to say %q", tc.rt, got, tc.want)
		}
	}
}
