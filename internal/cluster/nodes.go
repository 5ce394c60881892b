package cluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// poolLabels are the labels platforms put the node pool in, most specific first.
var poolLabels = []string{
	"kubernetes.azure.com/agentpool",   // AKS
	"agentpool",                        // older AKS
	"eks.amazonaws.com/nodegroup",      // EKS managed node groups
	"alpha.eksctl.io/nodegroup-name",   // eksctl self-managed
	"karpenter.sh/nodepool",            // Karpenter v1
	"karpenter.sh/provisioner-name",    // Karpenter before v1
	"cloud.google.com/gke-nodepool",    // GKE
	"node.kubernetes.io/instancegroup", // kops
	"doks.digitalocean.com/node-pool",  // DOKS
	"node.cluster.x-k8s.io/pool",       // cluster-api label propagation, by convention
}

// poolAnnotations name the owner of a node's machine where no label does: OpenShift's machine
// API and cluster-api annotate the node with its Machine; the MachineSet is its owner.
var poolAnnotations = []string{
	"cluster.x-k8s.io/owner-name",  // cluster-api: the MachineSet that owns the Machine
	"machine.openshift.io/machine", // OpenShift: namespace/machine-name; the MachineSet is the name minus its suffix
}

// imageVersionLabels carry the node image version where the platform labels it.
var imageVersionLabels = []string{
	"kubernetes.azure.com/node-image-version", // AKS
	"eks.amazonaws.com/nodegroup-image",       // EKS (the AMI)
	"cloud.google.com/gke-os-distribution",    // GKE (distribution only)
	"karpenter.k8s.aws/instance-ami-id",
}

// distinguishing are the labels that tell nodes apart when no pool label exists.
var distinguishing = []string{"node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os", "topology.kubernetes.io/zone"}

// Pool returns the node's pool and the label (or label set) it was read from.
func Pool(n *corev1.Node) (pool, from string) {
	for _, l := range poolLabels {
		if v := n.Labels[l]; v != "" {
			return v, l
		}
	}
	if v := n.Annotations["cluster.x-k8s.io/owner-name"]; v != "" {
		return v, "cluster.x-k8s.io/owner-name (annotation)"
	}
	if v := n.Annotations["machine.openshift.io/machine"]; v != "" {
		_, m, _ := strings.Cut(v, "/")
		// a machine is named <machineset>-<5 chars>
		if i := strings.LastIndexByte(m, '-'); i > 0 {
			m = m[:i]
		}
		return m, "machine.openshift.io/machine (annotation)"
	}
	var roles []string
	for k := range n.Labels {
		if r, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok && r != "" {
			roles = append(roles, r)
		}
	}
	sort.Strings(roles)
	parts := []string{}
	if len(roles) > 0 {
		parts = append(parts, "role="+strings.Join(roles, "+"))
	}
	var used []string
	for _, l := range distinguishing {
		if v := n.Labels[l]; v != "" {
			parts = append(parts, v)
			used = append(used, l)
		}
	}
	if len(parts) == 0 {
		return "(no pool label)", "none"
	}
	return strings.Join(parts, ","), "labels " + strings.Join(append([]string{"node-role.kubernetes.io/*"}, used...), ", ")
}

func imageVersion(n *corev1.Node) string {
	for _, l := range imageVersionLabels {
		if v := n.Labels[l]; v != "" {
			return v
		}
	}
	return ""
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Why a node gets no probe (Ineligible), a closed set: metric labels and status words.
const (
	SkipNotLinux = "not_linux" // Windows: no Linux root filesystem to run the probe on
	SkipVirtual  = "virtual"   // virtual-kubelet, EKS Fargate: no node-level runtime to probe
	SkipNotReady = "not_ready"
	SkipCordoned = "cordoned" // unschedulable: draining, or held out by its owner
)

// Ineligible says why verify and watch probe no pod on n ("" when they do): not Linux, a virtual
// node, NotReady, or cordoned; includeUnready lets NotReady and cordoned nodes through.
func Ineligible(n *corev1.Node, includeUnready bool) string {
	switch {
	case n.Labels["kubernetes.io/os"] != "" && n.Labels["kubernetes.io/os"] != "linux",
		n.Status.NodeInfo.OperatingSystem != "" && n.Status.NodeInfo.OperatingSystem != "linux":
		return SkipNotLinux
	case virtualNode(n):
		return SkipVirtual
	case !includeUnready && !NodeReady(n):
		return SkipNotReady
	case !includeUnready && n.Spec.Unschedulable:
		return SkipCordoned
	}
	return ""
}

// virtualNode: virtual-kubelet's label and taint (ACI virtual nodes and every other provider) and
// EKS Fargate's compute type. Pods there run in a VM or a cloud service, not on a node runtime.
func virtualNode(n *corev1.Node) bool {
	if n.Labels["type"] == "virtual-kubelet" || n.Labels["eks.amazonaws.com/compute-type"] == "fargate" {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Key == "virtual-kubelet.io/provider" {
			return true
		}
	}
	return false
}

// PathCondition is watch's node condition (watch.ConditionType), which SlimNode keeps beside Ready.
const PathCondition = "ImagePullPathBroken"

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

// IsSandboxRepo says whether repo is a sandbox image's: one of SandboxRepos or of extra (a
// docker.io/library/ repository also by its short name).
func IsSandboxRepo(repo string, extra []string) bool {
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

// SplitImageName splits a status.images name into its repository and digest ("" for a tag).
func SplitImageName(name string) (repo, digest string) {
	repo, digest, _ = strings.Cut(name, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return repo, digest
}

// SlimNode is the part of n that eligibility, Pool and the probe pods read: the labels, the two
// pool annotations, cordon and taints, the Ready and ImagePullPathBroken conditions, the OS and
// architecture, the IP addresses, and of
// status.images only the sandbox images a probe may borrow (SandboxRepos and extra). A watcher
// keeps this per node: the whole object, managedFields and an image list of up to 50 entries,
// is most of a node's 10–40 KiB.
func SlimNode(n *corev1.Node, extra []string) *corev1.Node {
	s := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, CreationTimestamp: n.CreationTimestamp,
			DeletionTimestamp: n.DeletionTimestamp, Labels: n.Labels},
		Spec:   corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OperatingSystem: n.Status.NodeInfo.OperatingSystem, Architecture: n.Status.NodeInfo.Architecture}},
	}
	// the node's IPs: a resident agent (host network) answers on one of them, and nowhere else
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
			s.Status.Addresses = append(s.Status.Addresses, a)
		}
	}
	// Ready, and the watcher's own condition (its last verdict, read on a restart)
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady || c.Type == PathCondition {
			s.Status.Conditions = append(s.Status.Conditions, c)
		}
	}
	for _, a := range poolAnnotations {
		if v, ok := n.Annotations[a]; ok {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[a] = v
		}
	}
	for _, im := range n.Status.Images {
		for _, name := range im.Names {
			if repo, _ := SplitImageName(name); IsSandboxRepo(repo, extra) {
				s.Status.Images = append(s.Status.Images, im)
				break
			}
		}
	}
	return s
}
