package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/cri/critest"
	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/registrytest"
)

type criDoc struct {
	Class string `json:"class"`
	CRI   *struct {
		Socket        string
		Runtime       string
		PresentBefore bool
		Removed       bool
		Result        string
		Class         string
		Code          string
		Host          string
		Role          string
		Message       string
		Agrees        *bool
		Note          string
	} `json:"cri"`
}

func TestProbeCRI(t *testing.T) {
	e := lab(t)
	image := e.Lab.Ref("team/app:1.4")
	closed := e.Lab.RegistryHost + ":" + registrytest.ClosedPort()
	closedImage := closed + "/team/app:1.4"
	// containerd 1.6's own text for a refused port (lab fault a4), on the lab's host
	refused := `failed to pull and unpack image "` + closedImage + `": failed to resolve reference "` + closedImage + `": failed to do request: Head "https://` +
		closed + `/v2/team/app/manifests/1.4": dial tcp 127.0.0.1:` + strings.Split(closed, ":")[1] + `: connect: connection refused`
	cases := []struct {
		name    string
		image   string
		setup   func(r *critest.Runtime)
		fresh   bool
		code    int
		class   string // the probe's
		result  string
		cclass  string
		removed bool
		agrees  *bool
		note    string
	}{
		{name: "absent: pulled, agrees with an ok probe", image: image, code: 0, class: "ok", result: "ok", cclass: "ok", agrees: ptr(true)},
		{name: "cached: skipped, the cached-image lie", image: image, setup: func(r *critest.Runtime) { r.AddImage(image, "sha256:aa") },
			code: 0, class: "ok", result: "skipped", note: "cached-image lie"},
		{name: "cached and in use, --cri-fresh: not removed", image: image, fresh: true,
			setup: func(r *critest.Runtime) { r.AddImage(image, "sha256:aa"); r.AddContainer("web", image) },
			code:  0, class: "ok", result: "skipped", note: "never evicted"},
		{name: "cached and unused, --cri-fresh: removed then pulled", image: image, fresh: true,
			setup: func(r *critest.Runtime) { r.AddImage(image, "sha256:aa") },
			code:  0, class: "ok", result: "ok", cclass: "ok", removed: true, agrees: ptr(true)},
		{name: "runtime refused: route, agrees with a route probe", image: closedImage, setup: func(r *critest.Runtime) { r.FailPulls(refused) },
			code: 1, class: "route", result: "failed", cclass: "route", agrees: ptr(true)},
		{name: "runtime pulls what the probe cannot: disagree", image: closedImage, code: 1, class: "route", result: "ok", cclass: "ok", agrees: ptr(false), note: "disagree"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := critest.Start(t)
			if tc.setup != nil {
				tc.setup(rt)
			}
			args := labArgs(e, "-u", demo.User, "--password-stdin", "-o", "json", "--cri="+rt.Socket)
			if tc.fresh {
				args = append(args, "--cri-fresh")
			}
			r := run(t, demo.Password+"\n", append(args, tc.image)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, tc.code, r.out, r.errOut)
			}
			var doc criDoc
			if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
				t.Fatal(err)
			}
			c := doc.CRI
			if doc.Class != tc.class || c == nil {
				t.Fatalf("probe class %s, cri %+v; want %s and a cri section", doc.Class, c, tc.class)
			}
			if c.Result != tc.result || c.Class != tc.cclass || c.Removed != tc.removed || c.Socket != rt.Socket || c.Runtime != "containerd v1.6.20-fake" {
				t.Errorf("cri = %+v, want result %s class %q removed %t", *c, tc.result, tc.cclass, tc.removed)
			}
			if (c.Agrees == nil) != (tc.agrees == nil) || c.Agrees != nil && *c.Agrees != *tc.agrees {
				t.Errorf("agrees = %v, want %v", c.Agrees, tc.agrees)
			}
			if !strings.Contains(c.Note, tc.note) {
				t.Errorf("note %q, want %q in it", c.Note, tc.note)
			}
			if tc.result == "failed" && (c.Host != closed || c.Role != "registry" || c.Code != "TCP_REFUSED") {
				t.Errorf("runtime failure read as host %s role %s code %s", c.Host, c.Role, c.Code)
			}
			if tc.note == "never evicted" && (!rt.Has(tc.image) || len(rt.Removed()) > 0) {
				t.Error("an image in use was removed")
			}
			// the runtime pulled with the walk's credentials
			for _, p := range rt.Pulls() {
				if p.Auth.GetUsername() != demo.User || p.Auth.GetPassword() != demo.Password || p.Auth.GetServerAddress() != "" {
					t.Errorf("PullImage got user %q and not the walk's credentials", p.Auth.GetUsername())
				}
			}
		})
	}
}

func TestProbeCRIText(t *testing.T) {
	e := lab(t)
	rt := critest.Start(t)
	image := e.Lab.Ref("team/app:1.4")
	rt.AddImage(image, "sha256:aa")
	r := run(t, demo.Password+"\n", labArgs(e, "-u", demo.User, "--password-stdin", "--cri="+rt.Socket, image)...)
	flat := strings.Join(strings.Fields(r.out), " ")
	if r.code != 0 || !strings.Contains(flat, "cri containerd v1.6.20-fake's own pull skipped: the image is already in the runtime's store: a pull of a cached image proves nothing") {
		t.Errorf("exit %d, text:\n%s", r.code, r.out)
	}
	// the verdict line first, the runtime's right after it
	if lines := strings.Split(r.out, "\n"); len(lines) < 3 || !strings.HasPrefix(lines[0], "OK") || !strings.HasPrefix(lines[2], "  cri       ") {
		t.Errorf("runtime line not beside the verdict:\n%s", r.out)
	}
}

// The password reaches the runtime and never the output, even when the runtime echoes it.
func TestProbeCRISecrets(t *testing.T) {
	e := lab(t)
	rt := critest.Start(t)
	image := e.Lab.Ref("team/app:1.4")
	rt.FailPulls(`failed to pull and unpack image "` + image + `": failed to resolve reference "` + image + `": failed to authorize: failed to fetch oauth token: unexpected status from GET request to https://` +
		e.Lab.AuthAddr() + `/token?scope=repository%3Ateam%2Fapp%3Apull&service=registry&password=` + demo.Password + `: 401 Unauthorized`)
	for _, o := range []string{"json", "text"} {
		r := run(t, demo.Password+"\n", labArgs(e, "-u", demo.User, "--password-stdin", "-v", "-o", o, "--cri="+rt.Socket, image)...)
		if !strings.Contains(r.out, "failed") {
			t.Errorf("-o %s: no failed runtime pull:\n%s", o, r.out)
		}
		if strings.Contains(r.out+r.errOut, demo.Password) {
			t.Errorf("-o %s: the password is in the output", o)
		}
	}
	if p := rt.Pulls(); len(p) != 2 || p[0].Auth.GetPassword() != demo.Password {
		t.Errorf("the runtime did not get the walk's credentials")
	}
}

func TestProbeCRIErrors(t *testing.T) {
	e := lab(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cri=" + t.TempDir() + "/none.sock"}, "does not exist"},
		{[]string{"--cri-fresh"}, "--cri-fresh needs --cri"},
	} {
		r := run(t, "", append(labArgs(e, "--anonymous"), append(tc.args, e.Lab.Ref("team/app:1.4"))...)...)
		if r.code != 2 || !strings.Contains(r.errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.errOut, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// --cri with no value finds the runtime's socket under the node's root, in the documented order.
func TestProbeCRIFindsSocket(t *testing.T) {
	e := lab(t)
	root, err := os.MkdirTemp("", "crr") // socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	withNodeRoot(t, root)
	r := run(t, "", labArgs(e, "--anonymous", "--cri", e.Lab.Ref("team/app:1.4"))...)
	if r.code != 2 || !strings.Contains(r.errOut, "no CRI socket found") || !strings.Contains(r.errOut, filepath.Join(root, "var/run/crio/crio.sock")) {
		t.Fatalf("no socket: exit %d, stderr %q", r.code, r.errOut)
	}
	rt := critest.StartAt(t, filepath.Join(root, "run/k3s/containerd/containerd.sock"))
	r = run(t, demo.Password+"\n", labArgs(e, "-u", demo.User, "--password-stdin", "-o", "json", "--cri", e.Lab.Ref("team/app:1.4"))...)
	var doc criDoc
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v: %s %s", r.code, err, r.out, r.errOut)
	}
	if doc.CRI == nil || doc.CRI.Socket != rt.Socket || doc.CRI.Result != "ok" || len(rt.Pulls()) != 1 {
		t.Errorf("cri %+v, want the k3s socket %s and one pull", doc.CRI, rt.Socket)
	}
}
