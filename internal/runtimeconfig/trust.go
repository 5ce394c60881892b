package runtimeconfig

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// The node's runtimes (containerd, CRI-O, dockerd) are Go programs: their system roots are what
// Go's crypto/x509 loads on Linux (root_linux.go and root_unix.go, Go 1.26): the first of these
// files that reads, then every file of these directories, same-directory symlinks skipped.
// SSL_CERT_FILE replaces the file list and SSL_CERT_DIR (':'-separated) the directories.
var (
	goCertFiles = []string{
		"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo
		"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6, Amazon Linux, Azure Linux
		"/etc/ssl/ca-bundle.pem",                            // openSUSE, SLES
		"/etc/pki/tls/cacert.pem",                           // OpenELEC
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7+
		"/etc/ssl/cert.pem",                                 // Alpine
	}
	goCertDirs = []string{"/etc/ssl/certs", "/etc/pki/tls/certs"}
)

// Bounds on what a node's bundle may cost: a directory of a hostile or broken node must not make
// the probe read without end.
const (
	maxTrustFiles = 2048
	maxTrustBytes = 32 << 20
)

// Trust is the system trust the runtime's TLS library loads on the node, read under the host root:
// the runtime trusts these CAs for every registry, besides a host's own ca files.
type Trust struct {
	File string   // the bundle file read, as a host path; "" when none reads
	Dirs []string // the directories whose files were read
	CAs  int      // distinct CA certificates
	// Env names SSL_CERT_FILE / SSL_CERT_DIR from the runtime's service environment, with origins
	Env      string
	Problems []string // files that exist but could not be read

	pool *x509.CertPool
}

// Pool returns a copy of the CAs, for a TLS configuration to add a host's ca files to.
func (t *Trust) Pool() *x509.CertPool {
	if t == nil || t.pool == nil {
		return x509.NewCertPool()
	}
	return t.pool.Clone()
}

// String says where the trust comes from, in one line: "node system bundle
// /etc/ssl/certs/ca-certificates.crt + /etc/ssl/certs (146 CAs)".
func (t *Trust) String() string {
	if t == nil {
		return "none"
	}
	var from []string
	if t.File != "" {
		from = append(from, t.File)
	}
	from = append(from, t.Dirs...)
	where := "no bundle found"
	if len(from) > 0 {
		where = strings.Join(from, " + ")
	}
	s := fmt.Sprintf("node system bundle %s (%d CAs)", where, t.CAs)
	if t.Env != "" {
		s += ", " + t.Env
	}
	return s
}

// ReadTrust reads the system trust a Go runtime loads under root, with env the runtime service's
// environment (SSL_CERT_FILE, SSL_CERT_DIR); nil env is the default paths.
func ReadTrust(root Root, env map[string]Setting) *Trust {
	t := &Trust{pool: x509.NewCertPool()}
	seen := map[[32]byte]bool{}
	budget := maxTrustBytes
	files, dirs := goCertFiles, goCertDirs
	var envs []string
	if s, ok := env["SSL_CERT_FILE"]; ok && s.Value != "" {
		files = []string{s.Value}
		envs = append(envs, "SSL_CERT_FILE="+s.Value+" ("+s.Origin+")")
	}
	if s, ok := env["SSL_CERT_DIR"]; ok && s.Value != "" {
		dirs = strings.Split(s.Value, ":")
		envs = append(envs, "SSL_CERT_DIR="+s.Value+" ("+s.Origin+")")
	}
	t.Env = strings.Join(envs, ", ")
	for _, f := range files {
		b, err := root.ReadFile(f)
		if err == nil {
			t.File = f
			budget -= len(b)
			t.add(b, seen)
			break
		}
		if root.Exists(f) {
			t.Problems = append(t.Problems, fmt.Sprintf("%s: %v", f, err))
		}
	}
	read := 0
	for _, d := range dirs {
		if !path.IsAbs(d) {
			continue // Go would read it relative to the runtime's working directory: not a node path
		}
		entries, err := root.ReadDir(d)
		if err != nil || len(entries) == 0 {
			continue
		}
		t.Dirs = append(t.Dirs, d)
		for _, e := range entries {
			if read >= maxTrustFiles || budget <= 0 {
				t.Problems = append(t.Problems, fmt.Sprintf("%s: more than %d files or %d MiB of certificates: the rest is not read", d, maxTrustFiles, maxTrustBytes>>20))
				return t
			}
			p := path.Join(d, e.Name())
			if e.Type()&fs.ModeSymlink != 0 && root.sameDirLink(p) {
				continue
			}
			b, err := root.ReadFile(p)
			if err != nil {
				continue // a directory, a dangling link: Go skips them too
			}
			read++
			budget -= len(b)
			t.add(b, seen)
		}
	}
	return t
}

// add adds every certificate of a PEM bundle once, as CertPool.AppendCertsFromPEM does.
func (t *Trust) add(b []byte, seen map[[32]byte]bool) {
	for len(b) > 0 {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return
		}
		if block.Type != "CERTIFICATE" || len(block.Headers) != 0 {
			continue
		}
		// the bundle and the directory hold the same certificates: each is parsed once
		sum := sha256.Sum256(block.Bytes)
		if seen[sum] {
			continue
		}
		seen[sum] = true
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			continue
		}
		t.CAs++
		t.pool.AddCert(c)
	}
}

// sameDirLink is Go's isSameDirSymlink: a symlink whose target has no slash (the hash links
// c_rehash makes beside the certificates) is not read twice.
func (r Root) sameDirLink(p string) bool {
	dir, err := r.resolve(path.Dir(p))
	if err != nil {
		return false
	}
	target, err := fs.ReadLink(r.FS, path.Join(dir, path.Base(p)))
	return err == nil && !strings.Contains(target, "/")
}

// BundleFile is the bundle file a Go program reads first on the node under root (Go's list), ""
// when none reads: what a credential provider run from the host root is pointed at.
func BundleFile(root Root) string {
	for _, f := range goCertFiles {
		if root.Exists(f) && !root.IsDir(f) {
			return f
		}
	}
	return ""
}
