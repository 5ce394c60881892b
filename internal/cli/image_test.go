//go:build !probeonly

package cli

import (
	"archive/tar"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testRegistry is an in-process TLS registry and the PEM file of its certificate.
func testRegistry(t *testing.T) (host, caFile string, tr http.RoundTripper) {
	t.Helper()
	srv := httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return strings.TrimPrefix(srv.URL, "https://"), caFile, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
}

// minimalELF is an ELF header of a static linux executable for arch, no more: what the checks
// of a probe binary read.
func minimalELF(t *testing.T, arch string) []byte {
	t.Helper()
	machine := map[string]uint16{"amd64": 62, "arm64": 183}[arch]
	if machine == 0 {
		t.Fatalf("no ELF machine for %s", arch)
	}
	h := make([]byte, 64)
	copy(h, "\x7fELF\x02\x01\x01")
	binary.LittleEndian.PutUint16(h[16:], 2) // ET_EXEC
	binary.LittleEndian.PutUint16(h[18:], machine)
	binary.LittleEndian.PutUint32(h[20:], 1)
	binary.LittleEndian.PutUint16(h[52:], 64) // e_ehsize
	binary.LittleEndian.PutUint16(h[54:], 56) // e_phentsize
	binary.LittleEndian.PutUint16(h[58:], 64) // e_shentsize
	return h
}

func probeBins(t *testing.T, arches ...string) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	bins := map[string][]byte{}
	for _, a := range arches {
		b := append(minimalELF(t, a), "not really a probe for "+a+strings.Repeat("x", 4096)...)
		bins[a] = b
		if err := os.WriteFile(filepath.Join(dir, "pullpath-probe-linux-"+a), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, bins
}

func TestImagePushBuildsTheProbeIndex(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials of the user's
	host, caFile, tr := testRegistry(t)
	dir, bins := probeBins(t, "amd64", "arm64")
	res := run(t, "", "image", "push", host+"/tools/pullpath-probe:v1", "--probe-binary-dir", dir, "--ca-file", caFile, "--add-ca", caFile, "--no-system-cas")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.errOut)
	}
	printed := strings.TrimSpace(res.out)
	if !strings.HasPrefix(printed, host+"/tools/pullpath-probe@sha256:") {
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
	seen := map[string]bool{}
	for _, m := range im.Manifests {
		if m.Platform == nil || m.Platform.OS != "linux" {
			t.Fatalf("manifest %s: platform %+v", m.Digest, m.Platform)
		}
		arch := m.Platform.Architecture
		seen[arch] = true
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != arch || cf.OS != "linux" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/pullpath" {
			t.Errorf("%s: config %s/%s entrypoint %q", arch, cf.OS, cf.Architecture, cf.Config.Entrypoint)
		}
		if got := layerFile(t, img, "pullpath"); string(got) != string(bins[arch]) {
			t.Errorf("%s: /pullpath holds %d bytes, not the linux/%s binary (%d bytes)", arch, len(got), arch, len(bins[arch]))
		}
		ca, _ := os.ReadFile(caFile)
		if got := layerFile(t, img, "etc/ssl/certs/ca-certificates.crt"); string(got) != string(ca) {
			t.Errorf("%s: the CA bundle is %q, want exactly the --add-ca file", arch, got)
		}
	}
	if !seen["amd64"] || !seen["arm64"] {
		t.Errorf("platforms %v, want amd64 and arm64", seen)
	}
	// the same binaries give the same digest
	again := run(t, "", "image", "push", host+"/tools/pullpath-probe:v2", "--probe-binary-dir", dir, "--ca-file", caFile, "--add-ca", caFile, "--no-system-cas")
	if strings.TrimSpace(again.out) != printed {
		t.Errorf("second push printed %q, want %q (reproducible)", again.out, printed)
	}
}

// layerFile returns the content of path in img's single layer, and checks it is executable.
func layerFile(t *testing.T, img v1.Image, path string) []byte {
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
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("%s not in the layer", path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == path {
			if path == "pullpath" && h.Mode&0o111 == 0 {
				t.Errorf("%s mode %o: not executable", path, h.Mode)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

func TestImagePushRefusesBadInput(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	host, caFile, _ := testRegistry(t)
	dir, _ := probeBins(t, "amd64")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bad reference", []string{"UPPER/Case::x"}, "image reference"},
		{"not linux", []string{host + "/p:v1", "--platform", "windows/amd64"}, "want linux/<arch>"},
		{"twice", []string{host + "/p:v1", "--platform", "linux/amd64,linux/amd64"}, "given twice"},
		{"no binary", []string{host + "/p:v1", "--platform", "linux/arm64", "--probe-binary-dir", dir, "--ca-file", caFile}, "no pullpath binary for linux/arm64"},
		{"untrusted", []string{host + "/p:v1", "--platform", "linux/amd64", "--probe-binary-dir", dir}, "certificate"},
		{"bad add-ca", []string{host + "/p:v1", "--platform", "linux/amd64", "--probe-binary-dir", dir, "--ca-file", caFile, "--add-ca", filepath.Join(dir, "pullpath-probe-linux-amd64")}, "no PEM certificate"},
		{"no ca file", []string{host + "/p:v1", "--platform", "linux/amd64", "--probe-binary-dir", dir, "--ca-file", filepath.Join(dir, "none.pem")}, "--ca-file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := run(t, "", append([]string{"image", "push"}, c.args...)...)
			if res.code != 2 || !strings.Contains(res.errOut, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", res.code, res.errOut, c.want)
			}
		})
	}
}

func TestVerifyProbeImageFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--from-pod", "shop/web"}, "give --probe-image too"},
		{[]string{"--probe-image", "Not A Ref"}, "--probe-image"},
		{[]string{"--probe-image", "r.example/p:v1", "--probe-binary", "/x"}, "not both"},
	}
	for _, c := range cases {
		res := run(t, "", append([]string{"verify", "r.example/app:1"}, c.args...)...)
		if res.code != 2 || !strings.Contains(res.errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, res.code, res.errOut, c.want)
		}
	}
}
