//go:build !probeonly

package cli

import (
	"archive/tar"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pullpath/pullpath/internal/probebin"
)

// goBuild builds a static linux/arch program whose build info reads like a pullpath build: a
// module named github.com/pullpath/pullpath with its main package at cmd/pullpath (or at pkg),
// built with tags. A few MB, built from the standard library only, never from the network.
func goBuild(t *testing.T, arch, pkg, tags string) []byte {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build a test program")
	}
	dir := t.TempDir()
	main := filepath.Join(dir, filepath.FromSlash(pkg), "main.go")
	if err := os.MkdirAll(filepath.Dir(main), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module github.com/pullpath/pullpath\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main, []byte("package main\n\nfunc main() { println(\"a pullpath of the tests\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(goTool, "build", "-tags", tags, "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", out, "./"+pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOWORK=off", "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build for linux/%s: %v\n%s", arch, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dynamicELF is minimalELF with a PT_INTERP program header: what a `go build` with cgo links.
func dynamicELF(t *testing.T, arch string) []byte {
	t.Helper()
	h := minimalELF(t, arch)
	binary.LittleEndian.PutUint64(h[32:], 64) // e_phoff
	binary.LittleEndian.PutUint16(h[56:], 1)  // e_phnum
	ph := make([]byte, 56)
	binary.LittleEndian.PutUint32(ph, uint32(3)) // PT_INTERP
	return append(h, ph...)
}

// writeBins writes each binary as dir/pullpath-linux-<arch>.
func writeBins(t *testing.T, bins map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for arch, b := range bins {
		if err := os.WriteFile(filepath.Join(dir, "pullpath-linux-"+arch), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The watcher image: an OCI index of linux/amd64 and linux/arm64, each one layer in name order
// with the full pullpath at /pullpath (executable by anyone, owned by root, epoch times) and the
// CA bundle, run as 65532; pushed twice from the same inputs, it has the same digest, and
// scripts/build.sh's output directory works as well as pullpath-linux-<arch>.
func TestImagePushWatcher(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	host, caFile, tr := testRegistry(t)
	bins := map[string][]byte{"amd64": goBuild(t, "amd64", "cmd/pullpath", ""), "arm64": goBuild(t, "arm64", "cmd/pullpath", "")}
	dir := writeBins(t, bins)
	args := []string{"--binary-dir", dir, "--ca-file", caFile, "--add-ca", caFile, "--no-system-cas"}
	start := time.Now()
	res := run(t, "", append([]string{"image", "push", "--watcher", host + "/tools/pullpath:v1"}, args...)...)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.errOut)
	}
	t.Logf("built and pushed in %s (binaries %d and %d bytes)", time.Since(start).Round(time.Millisecond), len(bins["amd64"]), len(bins["arm64"]))
	printed := strings.TrimSpace(res.out)
	if !strings.HasPrefix(printed, host+"/tools/pullpath@sha256:") {
		t.Fatalf("printed %q, want the digest reference", printed)
	}
	ref, err := name.ParseReference(printed)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref, remote.WithTransport(tr))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || len(im.Manifests) != 2 {
		t.Fatalf("index %s with %d manifests, want an OCI index of 2", im.MediaType, len(im.Manifests))
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	var archs []string
	for _, m := range im.Manifests {
		if m.Platform == nil || m.Platform.OS != "linux" {
			t.Fatalf("manifest %s: platform %+v", m.Digest, m.Platform)
		}
		arch := m.Platform.Architecture
		archs = append(archs, arch)
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != arch || cf.OS != "linux" || !slices.Equal(cf.Config.Entrypoint, []string{"/pullpath"}) || cf.Config.User != "65532:65532" {
			t.Errorf("%s: config %s/%s entrypoint %q user %q, want /pullpath as 65532:65532", arch, cf.OS, cf.Architecture, cf.Config.Entrypoint, cf.Config.User)
		}
		entries := layerEntries(t, img)
		var names []string
		for _, e := range entries {
			names = append(names, e.h.Name)
			if e.h.Uid != 0 || e.h.Gid != 0 || e.h.Uname != "" || e.h.Gname != "" || !e.h.ModTime.Equal(time.Unix(0, 0)) {
				t.Errorf("%s: %s owned by %d:%d (%q:%q) at %v, want root and the epoch", arch, e.h.Name, e.h.Uid, e.h.Gid, e.h.Uname, e.h.Gname, e.h.ModTime)
			}
		}
		if want := []string{"etc/", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt", "pullpath"}; !slices.Equal(names, want) {
			t.Errorf("%s: layer %q, want %q (sorted)", arch, names, want)
		}
		for _, e := range entries {
			switch e.h.Name {
			case "pullpath":
				// 65532 runs it (others' r-x) and cannot change it (no w but the owner's)
				if e.h.Mode != 0o755 || string(e.data) != string(bins[arch]) {
					t.Errorf("%s: /pullpath mode %o, %d bytes; want 0755 and the linux/%s build (%d bytes)", arch, e.h.Mode, len(e.data), arch, len(bins[arch]))
				}
			case "etc/ssl/certs/ca-certificates.crt":
				if e.h.Mode != 0o644 || string(e.data) != string(ca) {
					t.Errorf("%s: the CA bundle (mode %o) is %q, want exactly the --add-ca file", arch, e.h.Mode, e.data)
				}
			}
		}
	}
	if slices.Sort(archs); !slices.Equal(archs, []string{"amd64", "arm64"}) {
		t.Errorf("platforms %v, want amd64 and arm64", archs)
	}

	// the same inputs, another tag and another run: the same digest
	again := run(t, "", append([]string{"image", "push", "--watcher", host + "/tools/pullpath:v2"}, args...)...)
	if strings.TrimSpace(again.out) != printed {
		t.Errorf("second push printed %q, want %q (reproducible)", again.out, printed)
	}
	// scripts/build.sh's layout, one platform
	dist := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dist, "pullpath_v1.2.3_linux_arm64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dist, "pullpath_v1.2.3_linux_arm64", "pullpath"), bins["arm64"], 0o755); err != nil {
		t.Fatal(err)
	}
	res = run(t, "", "image", "push", "--watcher", host+"/tools/pullpath:arm", "--platform", "linux/arm64", "--binary-dir", dist, "--ca-file", caFile, "--no-system-cas")
	if res.code != 0 {
		t.Fatalf("from build.sh's output: exit %d: %s", res.code, res.errOut)
	}
}

type tarEntryRead struct {
	h    *tar.Header
	data []byte
}

// layerEntries reads img's single layer.
func layerEntries(t *testing.T, img v1.Image) []tarEntryRead {
	t.Helper()
	ls, err := img.Layers()
	if err != nil || len(ls) != 1 {
		t.Fatalf("%d layers (%v), want 1", len(ls), err)
	}
	rc, err := ls[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var out []tarEntryRead
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntryRead{h, b})
	}
}

// What the watcher image cannot run is refused before anything is pushed, each with its fix:
// a dynamically linked build, the probe-only build (its `watch` is an unknown command), another
// program, a missing platform; and flags that mix the two images.
func TestImagePushWatcherRefuses(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	host, caFile, _ := testRegistry(t)
	probeOnly, err := probebin.Binary("amd64") // the real probe-only build every pullpath embeds
	if err != nil {
		t.Fatal(err)
	}
	full := writeBins(t, map[string][]byte{"amd64": goBuild(t, "amd64", "cmd/pullpath", "")})
	twice := t.TempDir()
	for _, v := range []string{"v1", "v2"} {
		d := filepath.Join(twice, "pullpath_"+v+"_linux_amd64")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "pullpath"), []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		bins map[string][]byte // in --binary-dir, for linux/amd64
		args []string
		want []string
	}{
		{"dynamic", map[string][]byte{"amd64": dynamicELF(t, "amd64")}, nil, []string{"dynamically linked", "CGO_ENABLED=0"}},
		{"probe-only", map[string][]byte{"amd64": probeOnly}, nil, []string{"probe-only build", "no watch command", "scripts/build.sh linux/amd64"}},
		{"probe-only, a build of ours", map[string][]byte{"amd64": goBuild(t, "amd64", "cmd/pullpath", "probeonly")}, nil, []string{"probe-only build"}},
		{"not go", map[string][]byte{"amd64": minimalELF(t, "amd64")}, nil, []string{"not a pullpath build", "no Go build info"}},
		{"another program", map[string][]byte{"amd64": goBuild(t, "amd64", "cmd/other", "")}, nil, []string{"not a pullpath build", "github.com/pullpath/pullpath/cmd/other"}},
		{"wrong arch", map[string][]byte{"amd64": minimalELF(t, "arm64")}, nil, []string{"built for EM_AARCH64"}},
		{"missing platform", nil, []string{"--platform", "linux/amd64,linux/arm64", "--binary-dir", full}, []string{"no pullpath binary for linux/arm64", "pullpath_<version>_linux_arm64/pullpath"}},
		{"two builds", nil, []string{"--platform", "linux/amd64", "--binary-dir", twice}, []string{"2 builds for linux/amd64"}},
		{"bad reference", nil, []string{"--binary-dir", full}, []string{"image reference"}},
		{"probe dir", nil, []string{"--probe-binary-dir", full}, []string{"--probe-binary-dir", "give --binary-dir"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref := host + "/p:v1"
			if c.name == "bad reference" {
				ref = "UPPER/Case::x"
			}
			args := []string{"image", "push", "--watcher", ref, "--ca-file", caFile, "--no-system-cas"}
			if c.bins != nil {
				args = append(args, "--platform", "linux/amd64", "--binary-dir", writeBins(t, c.bins))
			}
			res := run(t, "", append(args, c.args...)...)
			if res.code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", res.code, res.errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(res.errOut, w) {
					t.Errorf("stderr %q, want %q", res.errOut, w)
				}
			}
		})
	}
	res := run(t, "", "image", "push", host+"/p:v1", "--binary-dir", full)
	if res.code != 2 || !strings.Contains(res.errOut, "--binary-dir: only with --watcher") {
		t.Errorf("--binary-dir without --watcher: exit %d, stderr %q", res.code, res.errOut)
	}
}

// Without --binary-dir the watcher's binary for this machine's platform is this program, when it
// is a static full build; a dynamic one is refused with the build that fixes it, and another
// platform asks for --binary-dir.
func TestWatcherBinaryFromThisProgram(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skip("the running program is a watcher binary only on linux/amd64 and linux/arm64")
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	dir := writeBins(t, map[string][]byte{"static": goBuild(t, runtime.GOARCH, "cmd/pullpath", ""), "dynamic": dynamicELF(t, runtime.GOARCH)})
	self := func(which string) func() (string, error) {
		return func() (string, error) { return filepath.Join(dir, "pullpath-linux-"+which), nil }
	}
	if b, src, err := watcherBinary("", runtime.GOARCH, self("static")); err != nil || len(b) == 0 || !strings.HasSuffix(src, "pullpath-linux-static") {
		t.Errorf("a static full build: %d bytes from %s, %v", len(b), src, err)
	}
	_, _, err := watcherBinary("", runtime.GOARCH, self("dynamic"))
	if !errors.Is(err, errDynamic) || !strings.Contains(err.Error(), "CGO_ENABLED=0 GOOS=linux GOARCH="+runtime.GOARCH+" go build ./cmd/pullpath") {
		t.Errorf("a dynamic build: %v, want errDynamic naming CGO_ENABLED=0 go build", err)
	}
	if _, _, err := watcherBinary("", other, self("static")); err == nil || !strings.Contains(err.Error(), "give --binary-dir with pullpath-linux-"+other) {
		t.Errorf("linux/%s without --binary-dir: %v", other, err)
	}
	probeOnly, err := probebin.Binary(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkWatcherBinary(probeOnly, runtime.GOARCH, "how"); !errors.Is(err, errProbeOnly) {
		t.Errorf("the embedded probe-only build: %v, want errProbeOnly", err)
	}
}
