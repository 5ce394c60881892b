package runtimeconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// testCAs makes n self-signed CA certificates in PEM.
func testCAs(t *testing.T, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 1)), Subject: pkix.Name{CommonName: "trust test CA " + string(rune('A'+i))},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	}
	return out
}

func link(target string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink}
}

// TestReadTrustDistributions: the bundle a Go runtime loads on each distribution's node, read
// under the host root, in Go's order; the probe's own files never count.
func TestReadTrustDistributions(t *testing.T) {
	ca := testCAs(t, 4)
	both := append(append([]byte{}, ca[0]...), ca[1]...)
	for _, tc := range []struct {
		name     string
		fs       fstest.MapFS
		file     string
		dirs     []string
		cas      int
		env      string
		problems int
	}{
		{"debian: the bundle and the directory's links, hash links skipped", fstest.MapFS{
			"etc/ssl/certs/ca-certificates.crt": {Data: both},
			"etc/ssl/certs/lab.pem":             link("/usr/share/ca-certificates/lab.crt"), // absolute: resolved inside the root
			"etc/ssl/certs/1a2b3c4d.0":          link("lab.pem"),                            // same-directory hash link
			"usr/share/ca-certificates/lab.crt": {Data: ca[2]},
		}, "/etc/ssl/certs/ca-certificates.crt", []string{"/etc/ssl/certs"}, 3, "", 0},
		{"rhel, amazon linux, azure linux", fstest.MapFS{
			"etc/pki/tls/certs/ca-bundle.crt": {Data: both},
		}, "/etc/pki/tls/certs/ca-bundle.crt", []string{"/etc/pki/tls/certs"}, 2, "", 0},
		{"rhel 7 extracted bundle", fstest.MapFS{
			"etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem": {Data: ca[3]},
		}, "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", nil, 1, "", 0},
		{"suse", fstest.MapFS{
			"etc/ssl/ca-bundle.pem":                 link("/var/lib/ca-certificates/ca-bundle.pem"),
			"var/lib/ca-certificates/ca-bundle.pem": {Data: both},
		}, "/etc/ssl/ca-bundle.pem", nil, 2, "", 0},
		{"alpine", fstest.MapFS{"etc/ssl/cert.pem": {Data: ca[1]}}, "/etc/ssl/cert.pem", nil, 1, "", 0},
		{"the first file that reads wins, as in Go", fstest.MapFS{
			"etc/ssl/certs/ca-certificates.crt": {Data: ca[0]},
			"etc/pki/tls/certs/ca-bundle.crt":   {Data: ca[1]},
		}, "/etc/ssl/certs/ca-certificates.crt", []string{"/etc/ssl/certs", "/etc/pki/tls/certs"}, 2, "", 0},
		{"SSL_CERT_FILE in the runtime's drop-in", fstest.MapFS{
			"etc/ssl/certs/ca-certificates.crt":                  {Data: ca[0]},
			"opt/corp/roots.pem":                                 {Data: ca[3]},
			"lib/systemd/system/containerd.service":              {Data: []byte("[Service]\nExecStart=/usr/bin/containerd\n")},
			"etc/systemd/system/containerd.service.d/roots.conf": {Data: []byte("[Service]\nEnvironment=SSL_CERT_FILE=/opt/corp/roots.pem SSL_CERT_DIR=/opt/corp/none\n")},
		}, "/opt/corp/roots.pem", nil, 1, "SSL_CERT_FILE=/opt/corp/roots.pem", 0},
		{"SSL_CERT_FILE from DefaultEnvironment", fstest.MapFS{
			"opt/corp/roots.pem":                    {Data: both},
			"lib/systemd/system/containerd.service": {Data: []byte("[Service]\nExecStart=/usr/bin/containerd\n")},
			"etc/systemd/system.conf":               {Data: []byte("[Manager]\nDefaultEnvironment=SSL_CERT_FILE=/opt/corp/roots.pem\n")},
		}, "/opt/corp/roots.pem", nil, 2, "DefaultEnvironment", 0},
		{"no bundle at all", fstest.MapFS{"etc/hostname": {Data: []byte("n")}}, "", nil, 0, "", 0},
		{"an unreadable bundle is a problem, the next file is read", fstest.MapFS{
			"etc/ssl/certs/ca-certificates.crt": {Mode: fs.ModeDir},
			"etc/pki/tls/certs/ca-bundle.crt":   {Data: ca[0]},
		}, "/etc/pki/tls/certs/ca-bundle.crt", []string{"/etc/ssl/certs", "/etc/pki/tls/certs"}, 1, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := Root{FS: tc.fs, Name: "/host"}
			_, env := ServiceUnit(root, "containerd")
			tr := ReadTrust(root, env)
			if tr.File != tc.file || !slices.Equal(tr.Dirs, tc.dirs) || tr.CAs != tc.cas || len(tr.Problems) != tc.problems {
				t.Errorf("ReadTrust = file %q dirs %q, %d CAs, problems %q; want %q %q, %d CAs, %d problems", tr.File, tr.Dirs, tr.CAs, tr.Problems, tc.file, tc.dirs, tc.cas, tc.problems)
			}
			if !strings.Contains(tr.Env, tc.env) || (tc.env == "") != (tr.Env == "") {
				t.Errorf("Env = %q, want it to name %q", tr.Env, tc.env)
			}
			if s := tr.String(); !strings.HasPrefix(s, "node system bundle ") || !strings.Contains(s, "CAs)") {
				t.Errorf("String = %q", s)
			}
		})
	}
}

// TestLoadReadsTheNodesTrust: runtime's report carries the trust, read through the runtime's unit.
func TestLoadReadsTheNodesTrust(t *testing.T) {
	ca := testCAs(t, 1)
	fsys := fstest.MapFS{
		"etc/containerd/config.toml":      {Data: []byte("version = 2\n")},
		"etc/pki/tls/certs/ca-bundle.crt": {Data: ca[0]},
	}
	cfg, err := Load(Options{Root: fsys, Name: "/host", Image: "myreg.azurecr.io/team/app:1"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Trust == nil || cfg.Trust.File != "/etc/pki/tls/certs/ca-bundle.crt" || cfg.Trust.CAs != 1 {
		t.Fatalf("Trust = %+v", cfg.Trust)
	}
	if got := cfg.Trust.Pool(); got == nil || got.Equal(x509.NewCertPool()) {
		t.Errorf("Pool holds nothing")
	}
	if b := BundleFile(Root{FS: fsys, Name: "/host"}); b != "/etc/pki/tls/certs/ca-bundle.crt" {
		t.Errorf("BundleFile = %q", b)
	}
}

// TestReadTrustIsBounded: a node directory with more files than any bundle stops the read.
func TestReadTrustIsBounded(t *testing.T) {
	fsys := fstest.MapFS{}
	for i := range maxTrustFiles + 10 {
		fsys[fmt.Sprintf("etc/ssl/certs/f%05d", i)] = &fstest.MapFile{Data: []byte("not a certificate\n")}
	}
	tr := ReadTrust(Root{FS: fsys, Name: "/host"}, nil)
	if len(tr.Problems) != 1 || !strings.Contains(tr.Problems[0], "the rest is not read") {
		t.Errorf("Problems = %q, want the bound said", tr.Problems)
	}
}

// BenchmarkReadTrust reads this machine's system bundle as a node probe reads a node's: the cost
// every node probe pays once (the bundle file, then /etc/ssl/certs' files).
func BenchmarkReadTrust(b *testing.B) {
	root := Root{FS: os.DirFS("/"), Name: "/"}
	if ReadTrust(root, nil).CAs == 0 {
		b.Skip("no CA bundle on this machine")
	}
	b.ReportAllocs()
	for b.Loop() {
		if t := ReadTrust(root, nil); t.CAs == 0 {
			b.Fatal("no CA read")
		}
	}
}
