package cri_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/cri"
	"github.com/pullpath/pullpath/internal/cri/critest"
	"github.com/pullpath/pullpath/internal/report"
)

const img = "registry.pullpath.test/team/app:1.4"

// a real containerd 1.6 message (lab fault a4, internal/events/testdata/lab.txt), address changed
const refused = `failed to pull and unpack image "registry.pullpath.test/team/app:1.4": failed to resolve reference "registry.pullpath.test/team/app:1.4": failed to do request: Head "https://registry.pullpath.test/v2/team/app/manifests/1.4": dial tcp 10.0.0.9:443: connect: connection refused`

func dial(t *testing.T, r *critest.Runtime) *cri.Client {
	t.Helper()
	c, err := cri.Dial(context.Background(), r.Socket, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCheck(t *testing.T) {
	ok := &report.Probe{Class: report.ClassOK}
	route := &report.Probe{Class: report.ClassRoute}
	cases := []struct {
		name    string
		setup   func(r *critest.Runtime)
		fresh   bool
		probe   *report.Probe
		result  string
		class   report.Class
		removed bool
		agrees  string // "true", "false", "" (absent)
		note    string
		pulls   int
	}{
		{name: "absent, pull ok, agrees with ok", probe: ok, result: "ok", class: report.ClassOK, agrees: "true", pulls: 1},
		{name: "absent, pull ok, disagrees with route", probe: route, result: "ok", class: report.ClassOK, agrees: "false", note: "disagree", pulls: 1},
		{name: "present, no --cri-fresh: skipped", setup: func(r *critest.Runtime) { r.AddImage(img, "sha256:aa") }, probe: ok,
			result: "skipped", note: "cached-image lie", pulls: 0},
		{name: "present and in use, --cri-fresh: not removed", fresh: true, probe: ok,
			setup:  func(r *critest.Runtime) { r.AddImage(img, "sha256:aa"); r.AddContainer("web", img) },
			result: "skipped", note: "never evicted", pulls: 0},
		{name: "present, unused, --cri-fresh: removed then pulled", fresh: true, probe: ok,
			setup: func(r *critest.Runtime) {
				r.AddImage(img, "sha256:aa")
				r.AddImage("other:1", "sha256:bb")
				r.AddContainer("db", "other:1")
			},
			result: "ok", class: report.ClassOK, removed: true, agrees: "true", pulls: 1},
		{name: "runtime error text: route, agrees with route", setup: func(r *critest.Runtime) { r.FailPulls(refused) }, probe: route,
			result: "failed", class: report.ClassRoute, agrees: "true", pulls: 1},
		{name: "removed, then the pull fails: said", fresh: true, probe: route,
			setup:  func(r *critest.Runtime) { r.AddImage(img, "sha256:aa"); r.FailPulls(refused) },
			result: "failed", class: report.ClassRoute, removed: true, agrees: "true", note: "no longer holds it", pulls: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := critest.Start(t)
			if tc.setup != nil {
				tc.setup(r)
			}
			got := cri.Check(context.Background(), dial(t, r), cri.Request{Image: img, Fresh: tc.fresh, Probe: tc.probe})
			if got.Result != tc.result || got.Class != tc.class || got.Removed != tc.removed {
				t.Errorf("Check = result %s class %q removed %t, want %s %q %t (note %q)", got.Result, got.Class, got.Removed, tc.result, tc.class, tc.removed, got.Note)
			}
			agrees := ""
			if got.Agrees != nil {
				agrees = map[bool]string{true: "true", false: "false"}[*got.Agrees]
			}
			if agrees != tc.agrees {
				t.Errorf("agrees = %q, want %q", agrees, tc.agrees)
			}
			if !strings.Contains(got.Note, tc.note) {
				t.Errorf("note %q, want it to say %q", got.Note, tc.note)
			}
			if n := len(r.Pulls()); n != tc.pulls {
				t.Errorf("%d pulls, want %d", n, tc.pulls)
			}
			if got.Runtime != "containerd v1.6.20-fake" || got.Socket != r.Socket {
				t.Errorf("runtime %q socket %q", got.Runtime, got.Socket)
			}
			if tc.result == "failed" && (got.Host != "registry.pullpath.test:443" || got.Role != report.RoleRegistry || got.Code != report.CodeTCPRefused ||
				!strings.Contains(got.Message, "connection refused")) {
				t.Errorf("failed pull: host %q role %q code %q message %q", got.Host, got.Role, got.Code, got.Message)
			}
			if strings.Contains(tc.note, "evicted") && r.Has(img) == false {
				t.Error("an image in use was removed")
			}
		})
	}
}

func TestPullPassesCredentials(t *testing.T) {
	r := critest.Start(t)
	auth := cri.Auth{Username: "u", Password: "s3cret-pw", ServerAddress: "registry.pullpath.test"}
	cri.Check(context.Background(), dial(t, r), cri.Request{Image: img, Auth: auth})
	p := r.Pulls()
	if len(p) != 1 || p[0].Auth.GetUsername() != "u" || p[0].Auth.GetPassword() != "s3cret-pw" || p[0].Auth.GetServerAddress() != "registry.pullpath.test" {
		t.Fatalf("pulls %v", p)
	}
	// anonymous: no AuthConfig at all, so the runtime uses its own configuration
	cri.Check(context.Background(), dial(t, r), cri.Request{Image: "x.test/a:1"})
	if p := r.Pulls(); len(p) != 2 || p[1].Auth != nil {
		t.Errorf("anonymous pull sent %v", p[1].Auth)
	}
	for _, s := range []string{auth.String(), auth.GoString()} {
		if strings.Contains(s, "s3cret") {
			t.Errorf("Auth printed its secret: %s", s)
		}
	}
}

func TestDialErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := cri.Dial(context.Background(), filepath.Join(dir, "nope.sock"), 0)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing socket: %v", err)
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o600)
	if _, err := cri.Dial(context.Background(), f, 0); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a file: %v", err)
	}
	if _, err := cri.FindSocket(dir, "", ""); err == nil || !strings.Contains(err.Error(), "run/containerd/containerd.sock") {
		t.Errorf("FindSocket of an empty root: %v", err)
	}
	if _, err := cri.FindSocket(dir, "unix:///run/custom.sock", "/etc/default/kubelet:2"); err == nil ||
		!strings.Contains(err.Error(), filepath.Join(dir, "run/custom.sock")+" (the kubelet's endpoint, /etc/default/kubelet:2)") {
		t.Errorf("FindSocket names the kubelet's endpoint it tried: %v", err)
	}
}

// The kubelet's endpoint wins over the default sockets: it is what the kubelet pulls through.
func TestFindSocketPrefersTheKubelets(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"run/containerd/containerd.sock", "srv/cri/runtime.sock"} {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		l, err := net.Listen("unix", full)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}
	for endpoint, want := range map[string]string{
		"unix:///srv/cri/runtime.sock": "srv/cri/runtime.sock",
		"/srv/cri/runtime.sock":        "srv/cri/runtime.sock",
		"unix:///srv/cri/gone.sock":    "run/containerd/containerd.sock", // not there: the defaults
		"":                             "run/containerd/containerd.sock",
		"tcp://127.0.0.1:1":            "run/containerd/containerd.sock",
	} {
		got, err := cri.FindSocket(dir, endpoint, "kubelet.yaml:3")
		if err != nil || got != filepath.Join(dir, want) {
			t.Errorf("%q: %s, %v; want %s", endpoint, got, err, want)
		}
	}
}
