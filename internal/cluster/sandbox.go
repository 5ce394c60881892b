package cluster

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// SandboxRepos are the repositories distributions take their nodes' sandbox (pause) image from:
// kubeadm, kind, GKE and CRI-O's defaults, AKS, EKS (AL2023 and Bottlerocket import it as
// localhost/kubernetes/pause; AL2 pulled it from the EKS account's ECR), k3s and RKE2, OpenShift's
// CRI-O default. Only their publishers can push there, so an image of these repositories that a
// node lists is the node's own. Any other name, "pause" in it or not, may be a tenant's: a pod can
// pull anything, and the kubelet lists the largest images first.
var SandboxRepos = []string{
	"registry.k8s.io/pause",
	"k8s.gcr.io/pause",
	"gke.gcr.io/pause",
	"mcr.microsoft.com/oss/kubernetes/pause",
	"mcr.microsoft.com/oss/v2/kubernetes/pause",
	"localhost/kubernetes/pause",
	"602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/pause",
	"602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/pause",
	"docker.io/rancher/mirrored-pause",
	"docker.io/rancher/pause",
	"quay.io/crio/pause",
}

// borrowable returns the names the probe may run on in node n without a pull: the node's sandbox
// images (a repository of SandboxRepos or of extra, exactly, never a substring of a name), each
// by digest where the node lists its digest, so that a tag moved since cannot swap it.
func borrowable(n *corev1.Node, extra []string) []string {
	var out []string
	for _, im := range n.Status.Images {
		byTag, byDigest := "", ""
		for _, name := range im.Names {
			repo, digest := splitImageName(name)
			if !isSandboxRepo(repo, extra) {
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
	known := append(append([]string{}, extra...), SandboxRepos[:4]...)
	return fmt.Sprintf("node %s lists no sandbox image of a known repository (%s, …) in status.images to run the probe on without a pull: name your nodes' sandbox image's repository with --sandbox-image (containerd's sandbox_image, CRI-O's pause_image), or run a probe image with --probe-image",
		n.Name, strings.Join(known, ", "))
}

func isSandboxRepo(repo string, extra []string) bool {
	for _, r := range SandboxRepos {
		if repo == r {
			return true
		}
	}
	for _, r := range extra {
		if repo == strings.TrimPrefix(r, "docker.io/library/") || repo == r {
			return true
		}
	}
	return false
}

// splitImageName splits a status.images name into its repository and digest ("" for a tag).
func splitImageName(name string) (repo, digest string) {
	repo, digest, _ = strings.Cut(name, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return repo, digest
}

// CheckSandboxRepos refuses a --sandbox-image that is not a repository (a tag, a digest, a bare
// word without a registry).
func CheckSandboxRepos(repos []string) error {
	for _, r := range repos {
		repo, digest := splitImageName(r)
		if r == "" || digest != "" || repo != r || !strings.Contains(r, "/") || strings.ContainsAny(r, " \t") {
			return fmt.Errorf("--sandbox-image %q: want a repository with its registry, as the node names it (registry.k8s.io/pause), without a tag or digest", r)
		}
	}
	return nil
}
