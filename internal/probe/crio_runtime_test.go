package probe_test

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// A CRI-O mirror with a path (the Harbor proxy-cache form): containers/image asks the mirror for the
// rewritten repository under the host's /v2 root, and sends no ?ns=. The image's own repository
// does not exist, so a probe that dropped the path would report not_found.
func TestRuntimeCRIOMirrorPathIsUsed(t *testing.T) {
	e := lab(t)
	ca, err := os.ReadFile(e.Lab.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	reg := e.Lab.RegistryAddr()
	fsys := fstest.MapFS{
		"etc/crio/crio.conf": {Data: []byte("[crio]\n")},
		"etc/containers/registries.conf": {Data: []byte(`[[registry]]
prefix = "` + reg + `/alias"
location = "` + reg + `/alias"

[[registry.mirror]]
location = "` + reg + `/team"
`)},
		"etc/containers/certs.d/" + reg + "/ca.crt": {Data: ca},
	}
	image := e.Lab.Ref("alias/app:1.4")
	cfg, err := runtimeconfig.Load(runtimeconfig.Options{Root: fsys, Name: "/host", Image: image})
	if err != nil {
		t.Fatal(err)
	}
	rep := probeWithRuntime(t, e, fsys, cfg, image)
	if rep.Class != report.ClassOK {
		t.Fatalf("class %s (%s), want ok through the mirror's team/ path", rep.Class, rep.Summary)
	}
	rt := rep.Runtime
	if rt == nil || rt.Name != "crio" || len(rt.Hosts) != 2 || rt.Hosts[0].URL != "https://"+reg+"/v2/team" || rt.Hosts[0].Result != "ok" ||
		!strings.HasPrefix(rt.Hosts[0].Source, "/etc/containers/registries.conf:5 ") {
		t.Errorf("runtime section = %+v", rt)
	}
	var manifest, ping bool
	for _, h := range rep.Hops {
		if strings.Contains(h.URL, "ns=") {
			t.Errorf("CRI-O sends no ?ns=: %s", h.URL)
		}
		manifest = manifest || strings.Contains(h.URL, "/v2/team/app/manifests/1.4")
		ping = ping || strings.HasSuffix(h.URL, reg+"/v2/")
	}
	if !manifest || !ping {
		t.Errorf("want GET /v2/ on the host root and the manifest of team/app (ping %t manifest %t): %+v", ping, manifest, rep.Hops)
	}
	if rep.Reference.Repository != "alias/app" {
		t.Errorf("the report names the image as given: %+v", rep.Reference)
	}
}

// An insecure CRI-O registry that speaks plain HTTP: containers/image pings it over HTTPS without
// verification, is answered in HTTP, and falls back to plain HTTP; so does the probe. Without
// insecure, the same registry is a tls failure.
func TestRuntimeCRIOInsecureFallsBackToHTTP(t *testing.T) {
	e := lab(t)
	plain := e.Lab.PlainAddr()
	image := plain + "/team/app:1.4"
	for _, tc := range []struct {
		insecure bool
		class    report.Class
	}{{true, report.ClassOK}, {false, report.ClassTLS}} {
		conf := "[[registry]]\nprefix = \"" + plain + "\"\nlocation = \"" + plain + "\"\n"
		if tc.insecure {
			conf += "insecure = true\n"
		}
		fsys := fstest.MapFS{"etc/crio/crio.conf": {Data: []byte("[crio]\n")}, "etc/containers/registries.conf": {Data: []byte(conf)}}
		cfg, err := runtimeconfig.Load(runtimeconfig.Options{Root: fsys, Name: "/host", Image: image})
		if err != nil {
			t.Fatal(err)
		}
		if h := cfg.Hosts[0]; h.HTTPFallback != tc.insecure || h.SkipVerify != tc.insecure {
			t.Errorf("insecure=%t: host %+v", tc.insecure, h)
		}
		rep := probeWithRuntime(t, e, fsys, cfg, image)
		if rep.Class != tc.class {
			t.Errorf("insecure=%t: class %s (%s), want %s", tc.insecure, rep.Class, rep.Summary, tc.class)
		}
		warned := false
		for _, w := range rep.Warnings {
			warned = warned || w.Code == report.CodeTLSPlainHTTP
		}
		if warned != tc.insecure {
			t.Errorf("insecure=%t: fallback warning %t: %+v", tc.insecure, warned, rep.Warnings)
		}
	}
}

// probeWithRuntime probes image as on a node whose files are fsys (mounted at /host) and whose
// runtime configuration is cfg: the system roots only, the runtime's own trust.
func probeWithRuntime(t *testing.T, e *demo.Env, fsys fs.FS, cfg *runtimeconfig.Config, image string) *report.Probe {
	t.Helper()
	o := e.Options(image)
	o.CAFiles = nil
	o.Runtime, o.HostFile = cfg, runtimeconfig.Root{FS: fsys, Name: "/host"}.ReadFile
	rep, err := probe.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// A mirror that serves the manifest but whose blobs fail, before a primary not in DNS: CRI-O keeps
// the first source whose manifest loads and pulls every blob from it (containers/image
// newImageSource), so its error is the mirror's blob failure and the primary is never tried;
// containerd's fetcher tries every host for the blob and keeps the first error, the mirror's too.
func TestRuntimeMirrorResolvesThenBlobFails(t *testing.T) {
	e := lab(t)
	e.Lab.SetFaults(registrytest.Faults{BlobForbidden: true})
	ca, err := os.ReadFile(e.Lab.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	reg, nx := e.Lab.RegistryAddr(), "nx."+e.Lab.Domain
	image := e.Lab.Ref("team/app:1.4")
	check := func(t *testing.T, rep *report.Probe, tried int) {
		t.Helper()
		if rep.Class != report.ClassEndpoint || rep.Failing == nil || rep.Failing.Role != report.RoleBlob {
			t.Fatalf("class %s failing %+v (%s), want the mirror's blob failure", rep.Class, rep.Failing, rep.Summary)
		}
		n := 0
		for _, h := range rep.Runtime.Hosts {
			if !strings.HasPrefix(h.Result, "not tried") {
				n++
			}
		}
		if n != tried {
			t.Errorf("%d hosts tried, want %d: %+v", n, tried, rep.Runtime.Hosts)
		}
	}
	t.Run("crio", func(t *testing.T) {
		fsys := fstest.MapFS{
			"etc/crio/crio.conf": {Data: []byte("[crio]\n")},
			"etc/containers/registries.conf": {Data: []byte(`[[registry]]
prefix = "` + reg + `"
location = "` + nx + `"

[[registry.mirror]]
location = "` + reg + `"
`)},
			"etc/containers/certs.d/" + reg + "/ca.crt": {Data: ca},
		}
		cfg, err := runtimeconfig.Load(runtimeconfig.Options{Root: fsys, Name: "/host", Image: image})
		if err != nil {
			t.Fatal(err)
		}
		check(t, probeWithRuntime(t, e, fsys, cfg, image), 1)
	})
	t.Run("containerd", func(t *testing.T) {
		cfg, read := node(t, e, `server = "https://`+nx+`"
[host."https://`+reg+`"]
  capabilities = ["pull", "resolve"]
  ca = "/etc/lab/ca.pem"
`, "2.4.2", "")
		o := runtimeOpts(e, cfg, read)
		rep, err := probe.Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		check(t, rep, 2)
	})
}
