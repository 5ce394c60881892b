package runtimeconfig

import (
	"bufio"
	"bytes"
	"debug/buildinfo"
	"io"
	"io/fs"
	"regexp"
	"strings"
)

// runtimePackages are the package names each runtime ships under: Debian/Ubuntu, Docker's
// repositories, Azure Linux/Mariner (moby-*, containerd2), RHEL/Fedora/AL2023.
var runtimePackages = map[Runtime][]string{
	Containerd: {"containerd", "containerd.io", "moby-containerd", "containerd2"},
	CRIO:       {"cri-o", "crio"},
	Docker:     {"docker-ce", "docker.io", "moby-engine", "docker"},
}

// runtimeBinaries are where the runtime's binary lives; k3s and rke2 ship their own containerd.
var runtimeBinaries = map[Runtime][]string{
	Containerd: {"/usr/bin/containerd", "/usr/local/bin/containerd", "/var/lib/rancher/rke2/bin/containerd", "/var/lib/rancher/k3s/data/current/bin/containerd",
		"/var/lib/k0s/bin/containerd", "/snap/microk8s/current/bin/containerd"},
	CRIO:   {"/usr/bin/crio", "/usr/local/bin/crio"},
	Docker: {"/usr/bin/dockerd", "/usr/local/bin/dockerd"},
}

// rpmDatabases are the RPM databases: sqlite (RHEL 9, AL2023, Azure Linux 3, Fedora), the
// BerkeleyDB Packages file (RHEL 7/8, Amazon Linux 2, CBL-Mariner) and the new location.
var rpmDatabases = []string{"/var/lib/rpm/rpmdb.sqlite", "/usr/lib/sysimage/rpm/rpmdb.sqlite", "/var/lib/rpm/Packages", "/usr/lib/sysimage/rpm/Packages.db"}

// version finds the runtime's version from what every node has, first answer wins: the dpkg
// database, the RPM database, distribution markers, then the binary itself. It returns "" and
// "" when none answers.
func (l *loader) version(rt Runtime) (version, source string) {
	if v := l.dpkgVersion(runtimePackages[rt]...); v != "" {
		return v, "dpkg"
	}
	for _, db := range rpmDatabases {
		if v := l.rpmVersion(db, runtimePackages[rt]...); v != "" {
			return v, "rpm database " + db
		}
	}
	if rt == Containerd {
		// EKS AMIs (amazon-eks-ami nodeadm: internal/containerd/version.go) record `containerd --version`
		const eks = "/etc/eks/containerd-version.txt"
		if b, err := l.root.ReadFile(eks); err == nil {
			if v := reSemver.FindString(string(b)); v != "" {
				return v, eks
			}
		}
	}
	bins := runtimeBinaries[rt]
	if rt == Containerd {
		if k3s, _ := l.root.Glob("/var/lib/rancher/k3s/data/*/bin/containerd"); len(k3s) > 0 {
			bins = append(bins, k3s...)
		}
	}
	for _, b := range bins {
		if v := l.binaryVersion(b, binaryVersionPattern[rt]); v != "" {
			return v, b
		}
	}
	return "", ""
}

var reSemver = regexp.MustCompile(`[0-9]+\.[0-9]+\.[0-9]+`)

// rpmVersion finds "name\0version\0release\0" in an RPM database without rpm: each installed
// package is stored as its header blob, whose NAME, VERSION and RELEASE tags (1000-1002) are
// adjacent strings in the blob's data store, in the sqlite file and the BerkeleyDB file alike. A
// header split across database pages is missed; the other sources then answer.
func (l *loader) rpmVersion(db string, names ...string) string {
	best := ""
	_ = l.scan(db, 512<<20, func(chunk []byte) bool {
		for _, n := range names {
			pat := []byte("\x00" + n + "\x00")
			for i := bytes.Index(chunk, pat); i >= 0; {
				rest := chunk[i+len(pat):]
				if m := reRPMVerRel.FindSubmatch(rest); m != nil {
					best = string(m[1]) + "-" + string(m[2])
					return false
				}
				j := bytes.Index(chunk[i+1:], pat)
				if j < 0 {
					break
				}
				i += 1 + j
			}
		}
		return true
	})
	if best != "" {
		l.read(db)
	}
	return best
}

var reRPMVerRel = regexp.MustCompile(`^([0-9][0-9A-Za-z._+~^]{0,40})\x00([0-9A-Za-z._+~^]{1,60})\x00`)

// binaryVersion reads the version a Go binary carries: its build info (module version, or the
// -X …/version.Version= of its -ldflags), else the version string the linker placed among its
// strings, found as a whole printable run such as "1.6.20~ds1" or "2.0.5" (Debian strips its
// binaries and builds with -trimpath, so neither symbols nor ldflags are recorded).
func (l *loader) binaryVersion(p string, whole *regexp.Regexp) string {
	rp, err := l.root.resolve(p)
	if err != nil {
		return ""
	}
	f, err := l.root.FS.Open(rp)
	if err != nil {
		return ""
	}
	defer f.Close()
	if ra, ok := f.(io.ReaderAt); ok {
		if bi, err := buildinfo.Read(ra); err == nil {
			for _, s := range bi.Settings {
				if s.Key == "-ldflags" {
					if m := reLdflagsVersion.FindStringSubmatch(s.Value); m != nil {
						l.read(p)
						return strings.TrimPrefix(m[1], "v")
					}
				}
			}
			if v := bi.Main.Version; v != "" && v != "(devel)" && strings.Contains(bi.Main.Path, "containerd") {
				l.read(p)
				return strings.TrimPrefix(v, "v")
			}
		}
	}
	var found []string
	// the same open file: ReadAt above left its offset at the start
	_ = scanFile(f, 1<<30, func(chunk []byte) bool {
		for _, run := range printableRuns(chunk) {
			if whole.Match(run) {
				found = append(found, string(run))
			}
		}
		return len(found) < 8
	})
	if len(found) == 0 {
		return ""
	}
	l.read(p)
	// the shortest is the version; longer ones are its package revision ("1.6.20~ds1-1+deb12u3")
	v := found[0]
	for _, f := range found {
		if len(f) < len(v) {
			v = f
		}
	}
	return strings.TrimPrefix(v, "v")
}

var reLdflagsVersion = regexp.MustCompile(`containerd(?:/v2)?/version\.Version=([^ '"]+)`)

// binaryVersionPattern is what each runtime's version looks like as a whole string in its binary,
// narrow enough to pass over the other versions a multi-call binary carries (k3s's "v1.31.4+k3s1").
var binaryVersionPattern = map[Runtime]*regexp.Regexp{
	Containerd: regexp.MustCompile(`^v?(?:1\.[0-7]|2\.[0-9])\.[0-9]{1,3}(?:[~+-][0-9A-Za-z.~+-]{1,40})?$`),
	CRIO:       regexp.MustCompile(`^v?1\.[0-9]{2}\.[0-9]{1,3}(?:[~+-][0-9A-Za-z.~+-]{1,40})?$`),
	Docker:     regexp.MustCompile(`^v?[0-9]{2}\.[0-9]{1,2}\.[0-9]{1,3}(?:[~+-][0-9A-Za-z.~+-]{1,40})?$`),
}

// printableRuns splits b into runs of at least 5 printable ASCII bytes, as strings(1) does.
func printableRuns(b []byte) [][]byte {
	var out [][]byte
	start := -1
	for i, c := range b {
		if c >= 0x20 && c < 0x7f {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= 5 {
			out = append(out, b[start:i])
		}
		start = -1
	}
	return out
}

// scan streams a host file in overlapping chunks (so a match is not cut at a boundary), at most
// limit bytes, until fn returns false.
func (l *loader) scan(p string, limit int64, fn func([]byte) bool) error {
	rp, err := l.root.resolve(p)
	if err != nil {
		return err
	}
	f, err := l.root.FS.Open(rp)
	if err != nil {
		return err
	}
	defer f.Close()
	return scanFile(f, limit, fn)
}

// scanFile is scan over a file already open (read from its current offset).
func scanFile(f fs.File, limit int64, fn func([]byte) bool) error {
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fs.ErrInvalid
	}
	const overlap = 256
	r := bufio.NewReaderSize(io.LimitReader(f, limit), 1<<20)
	buf := make([]byte, 0, 1<<20+overlap)
	chunk := make([]byte, 1<<20)
	for {
		n, err := io.ReadFull(r, chunk)
		buf = append(buf, chunk[:n]...)
		if n > 0 && !fn(buf) {
			return nil
		}
		if err != nil {
			return nil
		}
		keep := min(overlap, len(buf))
		buf = append(buf[:0], buf[len(buf)-keep:]...)
	}
}
