package runtimeconfig

import (
	"fmt"
	"path"
	"slices"
	"strconv"
)

// ImageStore is the image store dockerd runs with, which decides who pulls: with graph drivers its
// own distribution puller (moby distribution/pull.go), with the containerd image store containerd's
// resolver, vendored in dockerd (daemon/containerd/resolver.go). Docker only.
type ImageStore struct {
	Store string `json:"store"` // StoreGraphdriver, StoreContainerd, or "" when the node does not tell
	Why   string `json:"why"`   // the fact that decides, with where it was read
}

// Image stores.
const (
	StoreGraphdriver = "graphdriver"
	StoreContainerd  = "containerd"
)

// DockerMajor is the docker major version a version string names ("20.10.24+dfsg1", "28.5.2-1~debian.12").
func DockerMajor(version string) (major int, ok bool) {
	m := reMajor.FindStringSubmatch(version)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// priorDrivers are the graph drivers whose non-empty directory under the data root makes docker 29
// keep graph drivers (daemon/graphdriver/driver.go:236-255 HasPriorDriver, vfs ignored; the linux
// priority list driver_linux.go:4 at docker-v29.1.0).
var priorDrivers = []string{"overlay2", "fuse-overlayfs", "btrfs", "zfs"}

// dockerImageStore reads which image store dockerd runs with, as moby decides it:
//   - before 24.0 there is none but graph drivers;
//   - 24.0–28.x: the containerd store only with features.containerd-snapshotter true
//     (daemon/daemon.go:161 UsesSnapshotter at v24.0.0, :843 at v28.5.2);
//   - 29.0+: containerd by default, unless userns-remap turns it off (daemon/command/daemon_linux.go:36),
//     the feature is false, the data root holds a graph driver's data, or storage-driver names a
//     graph driver (daemon/image_store_choice.go:94 determineImageStoreChoice at docker-v29.1.0).
//
// Flags in the unit and DOCKER_DRIVER are not read; an unknown version tells nothing.
func (l *loader) dockerImageStore(dj *daemonJSON, b []byte) *ImageStore {
	const f = dockerDaemonJSON
	v := l.cfg.Version
	major, ok := DockerMajor(v)
	on, set := dj.Features["containerd-snapshotter"]
	feature := fmt.Sprintf("features.containerd-snapshotter is %t (%s)", on, jsonEntry(f, b, "containerd-snapshotter"))
	graph := func(why string) *ImageStore { return &ImageStore{Store: StoreGraphdriver, Why: why} }
	ctrd := func(why string) *ImageStore { return &ImageStore{Store: StoreContainerd, Why: why} }
	switch {
	case !ok:
		return &ImageStore{Why: "docker's version is unknown: the containerd image store came with 24.0 and is the default from 29.0"}
	case major < 24:
		return graph("docker " + v + " predates the containerd image store (24.0)")
	case major >= 29 && dj.UsernsRemap != "":
		return graph("userns-remap is set, which turns docker 29's containerd image store off (" + jsonEntry(f, b, "userns-remap") + ")")
	case set && on:
		return ctrd(feature)
	case set:
		return graph(feature)
	case major < 29:
		return graph("docker " + v + " uses the containerd image store only with features.containerd-snapshotter")
	case dj.Features["containerd-migration"]:
		return &ImageStore{Why: "features.containerd-migration is on: docker " + v + " may have moved to the containerd image store or not"}
	}
	root := dj.DataRoot
	if root == "" {
		root = dj.Graph
	}
	if root == "" {
		root = "/var/lib/docker"
	}
	if !l.root.IsDir(root) {
		return &ImageStore{Why: "docker " + v + "'s data root " + root + " is not there (another --data-root?): whether it kept graph drivers is unknown"}
	}
	for _, d := range priorDrivers {
		p := path.Join(root, d)
		if !l.root.IsDir(p) {
			continue
		}
		if es, err := l.root.ReadDir(p); err != nil || len(es) > 0 { // unreadable counts as used, as moby's isEmptyDir
			return graph(p + " holds graph driver data, so docker " + v + " keeps graph drivers")
		}
	}
	if dj.StorageDriver != "" && dj.StorageDriver != "vfs" && !slices.Contains(priorDrivers, dj.StorageDriver) {
		return ctrd("storage-driver " + dj.StorageDriver + " is a snapshotter (" + jsonEntry(f, b, dj.StorageDriver) + ")")
	}
	if dj.StorageDriver != "" {
		return graph("storage-driver " + dj.StorageDriver + " is a graph driver (" + jsonEntry(f, b, dj.StorageDriver) + ")")
	}
	return ctrd("docker " + v + "'s default, with no graph driver data in " + root)
}
