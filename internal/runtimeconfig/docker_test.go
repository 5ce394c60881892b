package runtimeconfig

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// Which image store dockerd runs with, as moby decides it (dockerImageStore): the probe picks the
// reported host's error by it.
func TestDockerImageStore(t *testing.T) {
	dir := &fstest.MapFile{Mode: fs.ModeDir | 0o700}
	deb := dpkg("docker.io", "20.10.24+dfsg1-1+deb12u1")
	ce := func(v string) *fstest.MapFile { return dpkg("docker-ce", "5:"+v+"-1~debian.12~bookworm") }
	snap := func(on string) *fstest.MapFile {
		return file("{\n  \"registry-mirrors\": [\"https://mirror.corp\"],\n  \"features\": {\"containerd-snapshotter\": " + on + "}\n}\n")
	}
	for _, tc := range []struct {
		name  string
		fsys  fstest.MapFS
		store string
		why   string // a part of Why
	}{
		// Debian's docker.io ignores the feature: 24.0 brought it (daemon/daemon.go:161 at v24.0.0)
		{"20.10 with the feature on", fstest.MapFS{"var/lib/dpkg/status": deb, "etc/docker/daemon.json": snap("true")}, StoreGraphdriver, "predates"},
		{"28.5 with the feature on", fstest.MapFS{"var/lib/dpkg/status": ce("28.5.2"), "etc/docker/daemon.json": snap("true")}, StoreContainerd, "/etc/docker/daemon.json:3"},
		{"28.5 with the feature off", fstest.MapFS{"var/lib/dpkg/status": ce("28.5.2"), "etc/docker/daemon.json": snap("false")}, StoreGraphdriver, "is false"},
		{"28.5 without it", fstest.MapFS{"var/lib/dpkg/status": ce("28.5.2"), "etc/docker/daemon.json": file("{}")}, StoreGraphdriver, "only with"},
		{"24.0 with the feature on", fstest.MapFS{"var/lib/dpkg/status": ce("24.0.9"), "etc/docker/daemon.json": snap("true")}, StoreContainerd, "is true"},
		// 29: containerd unless something keeps graph drivers (daemon/image_store_choice.go:94 at docker-v29.1.0)
		{"29 fresh", fstest.MapFS{"var/lib/dpkg/status": ce("29.1.0"), "var/lib/docker/containers": dir}, StoreContainerd, "default"},
		{"29 upgraded: overlay2 holds layers", fstest.MapFS{"var/lib/dpkg/status": ce("29.1.0"), "var/lib/docker/overlay2/l": dir}, StoreGraphdriver, "/var/lib/docker/overlay2 holds"},
		{"29 with an empty overlay2", fstest.MapFS{"var/lib/dpkg/status": ce("29.1.0"), "var/lib/docker/overlay2": dir}, StoreContainerd, "default"},
		{"29 data-root elsewhere", fstest.MapFS{"var/lib/dpkg/status": ce("29.1.0"), "etc/docker/daemon.json": file(`{"data-root": "/data/docker"}`),
			"var/lib/docker/containers": dir, "data/docker/btrfs/subvolumes": dir}, StoreGraphdriver, "/data/docker/btrfs"},
		{"29 with the feature off", fstest.MapFS{"var/lib/dpkg/status": ce("29.1.0"), "etc/docker/daemon.json": snap("false"), "var/lib/docker": dir}, StoreGraphdriver, "is false"},
		{"29 with the feature on over old layers", fstest.MapFS{"var/lib/dpkg/status": ce("29.1.0"), "etc/docker/daemon.json": snap("true"), "var/lib/docker/overlay2/l": dir}, StoreContainerd, "is true"},
		{"29 with userns-remap", fstest.MapFS{"var/lib/dpkg/status": ce("29.1.0"), "etc/docker/daemon.json": file(`{"userns-remap": "default"}`), "var/lib/docker": dir}, StoreGraphdriver, "userns-remap"},
		{"29 storage-driver overlay2", fstest.MapFS{"var/lib/dpkg/status": ce("29.1.0"), "etc/docker/daemon.json": file(`{"storage-driver": "overlay2"}`), "var/lib/docker": dir}, StoreGraphdriver, "graph driver"},
		{"29 storage-driver a snapshotter", fstest.MapFS{"var/lib/dpkg/status": ce("29.1.0"), "etc/docker/daemon.json": file(`{"storage-driver": "overlayfs"}`), "var/lib/docker": dir}, StoreContainerd, "snapshotter"},
		// what the node does not tell
		{"29 with no data root", fstest.MapFS{"var/lib/dpkg/status": ce("29.1.0"), "etc/docker/daemon.json": file("{}")}, "", "not there"},
		{"29 migrating", fstest.MapFS{"var/lib/dpkg/status": ce("29.1.0"), "etc/docker/daemon.json": file(`{"features": {"containerd-migration": true}}`), "var/lib/docker": dir}, "", "containerd-migration"},
		{"no version", fstest.MapFS{"etc/docker/daemon.json": snap("true")}, "", "version is unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.fsys, "team/app:1", Docker)
			if c.ImageStore == nil || c.ImageStore.Store != tc.store || !strings.Contains(c.ImageStore.Why, tc.why) {
				t.Fatalf("image store %+v (version %q), want %q with %q", c.ImageStore, c.Version, tc.store, tc.why)
			}
		})
	}
	if c := load(t, fstest.MapFS{"etc/containerd/config.toml": file("version = 2\n")}, "team/app:1", Containerd); c.ImageStore != nil {
		t.Errorf("containerd has no docker image store: %+v", c.ImageStore)
	}
}

func TestDockerMajor(t *testing.T) {
	for _, tc := range []struct {
		v  string
		n  int
		ok bool
	}{
		{"20.10.24+dfsg1-1+deb12u1", 20, true}, // Debian's docker.io
		{"28.5.2-1~debian.12~bookworm", 28, true},
		{"29.1.0", 29, true},
		{"v27.5.1", 27, true},
		{"", 0, false},
	} {
		if n, ok := DockerMajor(tc.v); n != tc.n || ok != tc.ok {
			t.Errorf("DockerMajor(%q) = %d, %t; want %d, %t", tc.v, n, ok, tc.n, tc.ok)
		}
	}
}
