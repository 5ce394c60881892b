package runtimeconfig

import (
	"encoding/binary"
	"os"
	"regexp"
	"strconv"
	"testing"
	"testing/fstest"
)

// rpmHeader builds an RPM header blob as rpmdb stores it (index count, data length, 16-byte index
// entries, then the data store), with the string tags given in order.
func rpmHeader(tags map[int32]string, order []int32) []byte {
	var data []byte
	var index []byte
	for _, tag := range order {
		e := make([]byte, 16)
		binary.BigEndian.PutUint32(e[0:], uint32(tag))
		binary.BigEndian.PutUint32(e[4:], 6) // RPM_STRING_TYPE
		binary.BigEndian.PutUint32(e[8:], uint32(len(data)))
		binary.BigEndian.PutUint32(e[12:], 1)
		index = append(index, e...)
		data = append(data, tags[tag]...)
		data = append(data, 0)
	}
	h := make([]byte, 8)
	binary.BigEndian.PutUint32(h[0:], uint32(len(order)))
	binary.BigEndian.PutUint32(h[4:], uint32(len(data)))
	return append(append(h, index...), data...)
}

func TestRuntimeVersionSources(t *testing.T) {
	pkg := func(name, ver, rel string) []byte {
		return rpmHeader(map[int32]string{269: "3f4b0d1c0a", 1000: name, 1001: ver, 1002: rel, 1004: "a summary"}, []int32{269, 1000, 1001, 1002, 1004})
	}
	// an sqlite page: a page header, other packages' blobs, padding
	page := append([]byte("SQLite format 3\x00\x10\x00\x01\x01"), make([]byte, 600)...)
	page = append(page, pkg("containerd-shim", "9.9.9", "1")...)
	page = append(page, pkg("moby-containerd", "1.7.27", "1.azl3")...)
	page = append(page, make([]byte, 300)...)
	azl := append(append([]byte{}, page...), pkg("containerd2", "2.0.0", "15.azl3")...)

	// k3s's multi-call binary carries its own version next to containerd's
	k3sBytes := []byte("\x7fELF\x02\x00\x01v1.31.4+k3s1\x00\x02\x00v2.0.2-k3s2\x00\x03\x00v1.10.0\x00")
	binaryBytes := append([]byte("\x7fELF\x02\x01\x01\x00junk\x00\x01go1.19.8\x00"), []byte("\x00\x00/var/run/netns1.6.20+unknown19073486328125\x00\x001.6.20~ds1\x00\x1c\x001.6.20~ds1-1+deb12u3\x00\x00v1.2.3-in-a-longer-string\x00")...)
	for _, tc := range []struct {
		name, want, source string
		rt                 Runtime
		fsys               fstest.MapFS
	}{
		{"dpkg", "1.6.20~ds1-1+deb12u3", "dpkg", Containerd, fstest.MapFS{"var/lib/dpkg/status": dpkg("containerd", "1.6.20~ds1-1+deb12u3")}},
		{"rpm sqlite, Azure Linux moby-containerd", "1.7.27-1.azl3", "rpm database /var/lib/rpm/rpmdb.sqlite", Containerd, fstest.MapFS{"var/lib/rpm/rpmdb.sqlite": &fstest.MapFile{Data: page}}},
		{"rpm BerkeleyDB Packages", "1.7.27-1.azl3", "rpm database /var/lib/rpm/Packages", Containerd, fstest.MapFS{"var/lib/rpm/Packages": &fstest.MapFile{Data: page}}},
		{"rpm cri-o", "1.30.4-1.rhaos4.17.el9", "rpm database /usr/lib/sysimage/rpm/rpmdb.sqlite", CRIO, fstest.MapFS{"usr/lib/sysimage/rpm/rpmdb.sqlite": &fstest.MapFile{Data: pkg("cri-o", "1.30.4", "1.rhaos4.17.el9")}}},
		{"rpm: the first runtime package found", "1.7.27-1.azl3", "rpm database /var/lib/rpm/rpmdb.sqlite", Containerd, fstest.MapFS{"var/lib/rpm/rpmdb.sqlite": &fstest.MapFile{Data: azl}}},
		{"EKS marker", "2.0.5", "/etc/eks/containerd-version.txt", Containerd, fstest.MapFS{"etc/eks/containerd-version.txt": file("containerd github.com/containerd/containerd/v2 2.0.5 fb4c30d4ede3531652d86197bf3fc9515e5276d9\n")}},
		{"the binary's strings (Debian: stripped, -trimpath)", "1.6.20~ds1", "/usr/bin/containerd", Containerd, fstest.MapFS{"usr/bin/containerd": &fstest.MapFile{Data: binaryBytes}}},
		{"k3s's binary: containerd's version, not k3s's", "2.0.2-k3s2", "/var/lib/rancher/k3s/data/current/bin/containerd", Containerd, fstest.MapFS{"var/lib/rancher/k3s/data/current/bin/containerd": &fstest.MapFile{Data: k3sBytes}}},
		{"nothing answers", "", "", Containerd, fstest.MapFS{"var/lib/rpm/rpmdb.sqlite": &fstest.MapFile{Data: pkg("kernel", "6.6.1", "1")}, "usr/bin/containerd": file("#!/bin/sh\n")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fsys["etc/resolv.conf"] = file("nameserver 10.0.0.2\n")
			c := load(t, tc.fsys, "nginx", tc.rt)
			if c.Version != tc.want || c.VersionSource != tc.source {
				t.Errorf("version %q from %q, want %q from %q", c.Version, c.VersionSource, tc.want, tc.source)
			}
		})
	}
}

// The machine's own containerd, when it has one: a check of the binary reader on a real build.
func TestBinaryVersionOnThisMachine(t *testing.T) {
	if _, err := os.Stat("/usr/bin/containerd"); err != nil {
		t.Skip("no /usr/bin/containerd here")
	}
	l := &loader{root: Root{FS: os.DirFS("/"), Name: "/"}, cfg: &Config{}}
	v := l.binaryVersion("/usr/bin/containerd", binaryVersionPattern[Containerd])
	if reSemver.FindString(v) == "" {
		t.Errorf("binaryVersion(/usr/bin/containerd) = %q, want a version", v)
	}
	t.Logf("/usr/bin/containerd: %s", v)
}

// ContainerdMajor replaced two readers: the probe's (`^v?(\d+)\.`, unknown is 2) and the loader's
// (`^(\d+)\.(\d+)`, "1" is 1, else 2, unknown falls back to the config files). Both keep their
// answer for every form either accepted; the table says where they disagreed.
func TestContainerdMajorKeepsBothReadings(t *testing.T) {
	oldProbe := func(v string) int {
		if m := regexp.MustCompile(`^v?(\d+)\.`).FindStringSubmatch(v); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
		return 2
	}
	oldLoader := func(v string) (int, bool) {
		if m := reDebVersion.FindStringSubmatch(v); m != nil {
			if m[1] == "1" {
				return 1, true
			}
			return 2, true
		}
		return 0, false
	}
	for _, tc := range []struct {
		v      string
		major  int
		ok     bool
		differ string // why the old loader's answer differs, "" when it does not
	}{
		{"1.6.20~ds1-1+deb12u3", 1, true, ""}, // dpkg
		{"1.7.27-1.azl3", 1, true, ""},        // rpm
		{"2.0.0-15.azl3", 2, true, ""},
		{"2.0.5", 2, true, ""},      // EKS marker
		{"1.6.20~ds1", 1, true, ""}, // Debian binary's strings
		{"2.0.2-k3s2", 2, true, ""}, // k3s
		{"2.4.2", 2, true, ""},      // build info, "v" stripped
		{"1.7", 1, true, ""},        // no patch
		{"2.1", 2, true, ""},
		{"10.0.1", 2, true, ""}, // a future major reads as 2.x
		{"3.0.0", 2, true, ""},
		{"0.9.1", 2, true, ""}, // both: not 1, so 2.x's rule
		{"", 0, false, ""},     // nothing said it
		{"unknown", 0, false, ""},
		{"1", 0, false, ""}, // no dot
		{"v1", 0, false, ""},
		{"1:1.6.20", 0, false, ""}, // a dpkg epoch: neither read it
		{"v1.6.20", 1, true, "the loader read no version and asked the config files; version() strips the v, so it never saw one"},
		{"v2.4.2", 2, true, "as v1.6.20"},
		{"1.", 1, true, "the loader wanted a minor; no source writes this"},
		{"01.6", 1, true, "the loader compared the text \"01\" with \"1\"; the probe read the number"},
	} {
		n, ok := ContainerdMajor(tc.v)
		if n != tc.major || ok != tc.ok {
			t.Errorf("ContainerdMajor(%q) = %d, %v, want %d, %v", tc.v, n, ok, tc.major, tc.ok)
		}
		// the probe's rule: containerd 1.x's only for a 1.x version
		if (n == 1) != (oldProbe(tc.v) == 1) {
			t.Errorf("%q: 1.x rule %v, the probe's old reading %d", tc.v, n == 1, oldProbe(tc.v))
		}
		on, ook := oldLoader(tc.v)
		if same := on == n && ook == ok; same != (tc.differ == "") {
			t.Errorf("%q: %d, %v; the loader's old reading %d, %v (listed as differing: %q)", tc.v, n, ok, on, ook, tc.differ)
		}
	}
}
