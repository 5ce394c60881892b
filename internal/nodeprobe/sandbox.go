package nodeprobe

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/pullpath/pullpath/internal/cluster"
)

// borrowable returns the names the probe may run on in node n without a pull: the node's sandbox
// images (a repository of cluster.SandboxRepos or of extra, exactly, never a substring of a name), each
// by digest where the node lists its digest, so that a tag moved since cannot swap it.
func borrowable(n *corev1.Node, extra []string) []string {
	var out []string
	for _, im := range n.Status.Images {
		byTag, byDigest := "", ""
		for _, name := range im.Names {
			repo, digest := cluster.SplitImageName(name)
			if !cluster.IsSandboxRepo(repo, extra) {
				continue
			}
			if digest != "" && byDigest == "" {
				byDigest = name
			} else if digest == "" && byTag == "" {
				byTag = name
			}
		}
		switch {
		case byDigest != "":
			out = append(out, byDigest)
		case byTag != "":
			out = append(out, byTag)
		}
	}
	return out
}

// noSandbox says why node n offers nothing to borrow.
func noSandbox(n *corev1.Node, extra []string) string {
	known := append(append([]string{}, extra...), cluster.SandboxRepos[:4]...)
	return fmt.Sprintf("node %s lists no sandbox image of a known repository (%s, …) in status.images to run the probe on without a pull: name your nodes' sandbox image's repository with --sandbox-image (containerd's sandbox_image, CRI-O's pause_image), or run a probe image with --probe-image",
		n.Name, strings.Join(known, ", "))
}

// CheckSandboxRepos refuses a --sandbox-image that is not a repository (a tag, a digest, a bare
// word without a registry).
func CheckSandboxRepos(repos []string) error {
	for _, r := range repos {
		repo, digest := cluster.SplitImageName(r)
		if r == "" || digest != "" || repo != r || !strings.Contains(r, "/") || strings.ContainsAny(r, " \t") {
			return fmt.Errorf("--sandbox-image %q: want a repository with its registry, as the node names it (registry.k8s.io/pause), without a tag or digest", r)
		}
	}
	return nil
}
