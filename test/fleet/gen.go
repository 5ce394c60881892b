package fleet

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Preset sizes a fleet.
type Preset struct {
	Name          string
	Nodes, Pools  int
	Pods, Failing int
	Images        int // distinct images; every node lists MaxImages of them (fewer on ShortLists)
	FailingImages int // images that fail to pull, each for one cause
	Namespaces    int
	NoisyEvents   int // events of one failing pod, each message unique (a request ID)
}

// Small is the test run's preset; Full is the benchmark's (issue 21).
var (
	Small = Preset{Name: "small", Nodes: 60, Pools: 12, Pods: 600, Failing: 60, Images: 80, FailingImages: 24, Namespaces: 6, NoisyEvents: 300}
	Full  = Preset{Name: "full", Nodes: 1000, Pools: 50, Pods: 30000, Failing: 2000, Images: 500, FailingImages: 120, Namespaces: 40, NoisyEvents: 10000}
)

// MaxImages is the kubelet's default nodeStatusMaxImages: every node lists this many images,
// largest first, except the one in shortEvery that lists fewer (a fresh node).
const (
	MaxImages  = 50
	shortEvery = 10
	// FailLabel marks the pods whose pull fails: kwok's pod-ready stage leaves them Pending.
	FailLabel = "pullfail"
)

// provider labels: AKS, EKS, GKE, Karpenter, and none (the node's labels tell its pool).
var providers = []string{"kubernetes.azure.com/agentpool", "eks.amazonaws.com/nodegroup", "cloud.google.com/gke-nodepool", "karpenter.sh/nodepool", ""}

// Cause is one reason a pull fails: the kubelet's message for an image, and the class pullpath
// must read from it. The inner errors are those of internal/events/testdata's corpus (the source
// named), in containerd's and the kubelet's wrapping.
type Cause struct {
	Name, Class, Source string
	Message             func(image, host, repo, tag string) string
}

func wrap(inner string) func(image, host, repo, tag string) string {
	return func(image, host, repo, tag string) string {
		r := strings.NewReplacer("IMG", image, "HOST", host, "REPO", repo, "TAG", tag)
		return r.Replace(`Failed to pull image "IMG": ` + inner)
	}
}

// Causes are the twelve causes of the fleet's failing images.
var Causes = []Cause{
	{"dns", "dns", "k3s-io/k3s#4858", wrap(`rpc error: code = Unknown desc = failed to pull and unpack image "IMG": failed to resolve reference "IMG": failed to do request: Head "https://HOST/v2/REPO/manifests/TAG": dial tcp: lookup HOST: no such host`)},
	{"dns-timeout", "dns", "siderolabs/talos#7236", wrap(`rpc error: code = Unknown desc = failed to pull and unpack image "IMG": failed to resolve reference "IMG": failed to do request: Head "https://HOST/v2/REPO/manifests/TAG": dial tcp: lookup HOST on 192.168.2.28:53: read udp 192.168.2.134:47182->192.168.2.28:53: i/o timeout`)},
	{"route", "route", "cert-manager/cert-manager#5623", wrap(`rpc error: code = Unknown desc = failed to pull and unpack image "IMG": failed to resolve reference "IMG": failed to do request: Head "https://HOST/v2/REPO/manifests/TAG": dial tcp 44.206.77.171:443: i/o timeout`)},
	{"tls-ca", "tls", "rancher/rke2#5658", wrap(`rpc error: code = Unknown desc = failed to pull and unpack image "IMG": failed to resolve reference "IMG": failed to do request: Head "https://HOST/v2/REPO/manifests/TAG": tls: failed to verify certificate: x509: certificate signed by unknown authority`)},
	{"tls-plain", "tls", "siderolabs/talos#13423", wrap(`rpc error: code = Unknown desc = failed to pull and unpack image "IMG": failed to resolve reference "IMG": failed to do request: Head "https://HOST/v2/REPO/manifests/TAG": http: server gave HTTP response to HTTPS client`)},
	{"auth", "auth", "kubernetes/kubernetes#102750", wrap(`rpc error: code = Unknown desc = failed to pull and unpack image "IMG": failed to resolve reference "IMG": unexpected status code [manifests TAG]: 401 Unauthorized`)},
	{"forbidden", "forbidden", "hetznercloud/csi-driver#592", wrap(`rpc error: code = Unknown desc = failed to pull and unpack image "IMG": failed to resolve reference "IMG": unexpected status from HEAD request to https://HOST/v2/REPO/manifests/TAG: 403 Forbidden`)},
	{"not-found", "not_found", "aws-samples/eks-alb-istio-with-tls#7", wrap(`rpc error: code = NotFound desc = failed to pull and unpack image "IMG": failed to resolve reference "IMG": IMG: not found`)},
	{"platform", "platform", "Azure/AKS#4055", wrap(`rpc error: code = NotFound desc = failed to pull and unpack image "IMG": no match for platform in manifest: not found`)},
	{"rate-limit", "rate_limit", "kubernetes-sigs/kubespray#10916", wrap(`rpc error: code = Unknown desc = failed to pull and unpack image "IMG": failed to resolve reference "IMG": unexpected status from HEAD request to https://HOST/v2/REPO/manifests/TAG: 429 Too Many Requests - Server message: toomanyrequests: You have reached your pull rate limit. You may increase the limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit`)},
	{"proxy", "proxy", "kubernetes-sigs/kind#4140", wrap(`rpc error: code = Unknown desc = failed to pull and unpack image "IMG": failed to resolve reference "IMG": failed to do request: Head "https://HOST/v2/REPO/manifests/TAG": proxyconnect tcp: dial tcp 127.0.0.1:12334: connect: connection refused`)},
	{"blob-host", "endpoint", "markshust/docker-magento#1386", wrap(`rpc error: code = Unknown desc = failed to pull and unpack image "IMG": failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://blobs.HOST/registry-v2/docker/registry/v2/blobs/sha256/0e/0e6f7f882f9b60c3878f60da0631f2163aa663bece2c2e8f08ae6d3485c7c669/data": dial tcp: lookup blobs.HOST: no such host`)},
}

// Node is a generated node: its object (status.images set) and its pool as pullpath must read it.
type Node struct {
	Obj  *corev1.Node
	Pool string
}

// Pod is a generated pod; Failing ones carry their cause and events.
type Pod struct {
	Obj    *corev1.Pod
	Image  string
	Cause  *Cause // nil: the pod runs
	Events []*corev1.Event
}

// Fleet is a generated cluster and its truth.
type Fleet struct {
	Preset     Preset
	Seed       uint64
	Namespaces []string
	Nodes      []Node
	Pods       []Pod
	Images     []string          // repo:tag, the first FailingImages of them fail
	CauseOf    map[string]*Cause // failing image → its cause
	Noisy      *Pod              // the failing pod with NoisyEvents events
	Secrets    []*corev1.Secret
	lists      map[string]map[string]bool // node → images it lists
}

// Group is one line of the truth: an image failing for one cause, on these pods and pools.
type Group struct {
	Image, Class string
	Pods, Pools  []string
}

// Generate builds the fleet of preset p from seed: the same seed gives the same fleet.
func Generate(p Preset, seed uint64) *Fleet {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	f := &Fleet{Preset: p, Seed: seed, CauseOf: map[string]*Cause{}, lists: map[string]map[string]bool{}}
	for i := range p.Namespaces {
		f.Namespaces = append(f.Namespaces, fmt.Sprintf("team-%02d", i))
	}
	sizes := map[string]int64{}
	for i := range p.Images {
		im := fmt.Sprintf("registry-%d.fleet.test/team-%02d/app-%03d:v%d", i%7, i%p.Namespaces, i, 1+i%5)
		f.Images = append(f.Images, im)
		sizes[im] = int64(20+rng.IntN(900)) << 20
	}
	for i := range p.FailingImages {
		c := &Causes[i%len(Causes)]
		f.CauseOf[f.Images[i]] = c
	}
	// nodes: pools round-robin over the providers; every node lists MaxImages images, largest first
	for i := range p.Nodes {
		pool := i % p.Pools
		prov := providers[pool%len(providers)]
		name := fmt.Sprintf("node-%04d", i)
		labels := map[string]string{"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
			"node.kubernetes.io/instance-type": fmt.Sprintf("Standard_D%dds_v5", 2<<(pool%4)), "type": "kwok",
			"topology.kubernetes.io/zone": fmt.Sprintf("fleet-%d", (pool/5)%3+1)}
		poolName := fmt.Sprintf("pool%02d", pool)
		if prov != "" {
			labels[prov] = poolName
		} else {
			// no pool label: pullpath reads the pool from the distinguishing labels
			// (instance type and zone differ between such pools: 50 pools stay 50)
			poolName = labels["node.kubernetes.io/instance-type"] + ",amd64,linux," + labels["topology.kubernetes.io/zone"]
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0"}}}
		count := MaxImages
		if i%shortEvery == shortEvery-1 {
			count = 5 + rng.IntN(MaxImages-10) // a fresh node: its list is not full
		}
		chosen := map[string]bool{}
		// images that do not fail are cached on most nodes; failing ones rarely (the cached-image lie)
		for len(chosen) < count-1 { // and the sandbox image, below
			im := f.Images[rng.IntN(len(f.Images))]
			if f.CauseOf[im] != nil && rng.IntN(4) != 0 {
				continue
			}
			chosen[im] = true
		}
		f.lists[name] = chosen
		var ims []corev1.ContainerImage
		for im := range chosen {
			repo, _, _ := strings.Cut(im, ":")
			ims = append(ims, corev1.ContainerImage{Names: []string{repo + "@sha256:" + fmt.Sprintf("%064x", hash(im)), im}, SizeBytes: sizes[im]})
		}
		sort.Slice(ims, func(a, b int) bool {
			if ims[a].SizeBytes != ims[b].SizeBytes {
				return ims[a].SizeBytes > ims[b].SizeBytes
			}
			return ims[a].Names[1] < ims[b].Names[1]
		})
		// every node has its sandbox image, the smallest: the one verify and watch borrow
		n.Status.Images = append(ims, corev1.ContainerImage{Names: []string{"registry.k8s.io/pause@sha256:" + fmt.Sprintf("%064x", hash("pause")), "registry.k8s.io/pause:3.10"}, SizeBytes: 320 << 10})
		n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("250")}
		n.Status.Allocatable = n.Status.Capacity
		f.Nodes = append(f.Nodes, Node{Obj: n, Pool: poolName})
	}
	for _, ns := range f.Namespaces {
		f.Secrets = append(f.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry-0.fleet.test":{"auth":"ZmxlZXQ6bm90LXNlY3JldA=="}}}`)}})
	}
	// pods: the failing ones first (each on a node whose list does not hold its image), then the rest
	zero := int64(0)
	for i := range p.Pods {
		ns := f.Namespaces[i%len(f.Namespaces)]
		var im string
		var cause *Cause
		var node string
		if i < p.Failing {
			im = f.Images[i%p.FailingImages]
			cause = f.CauseOf[im]
			for {
				node = f.Nodes[rng.IntN(len(f.Nodes))].Obj.Name
				if !f.lists[node][im] {
					break
				}
			}
		} else {
			im = f.Images[p.FailingImages+rng.IntN(len(f.Images)-p.FailingImages)]
			node = f.Nodes[rng.IntN(len(f.Nodes))].Obj.Name
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%05d", i), Labels: map[string]string{"app": fmt.Sprintf("app-%03d", i%97)}},
			Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &zero,
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers:  []corev1.Container{{Name: "app", Image: im}}}}
		if i%3 == 0 {
			pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		}
		gp := Pod{Obj: pod, Image: im, Cause: cause}
		if cause != nil {
			pod.Labels[FailLabel] = "true"
			gp.Events = failEvents(pod, im, cause, i)
		}
		f.Pods = append(f.Pods, gp)
	}
	if p.Failing > 0 && p.NoisyEvents > 0 {
		f.Noisy = &f.Pods[0]
		for k := range p.NoisyEvents {
			e := failEvents(f.Noisy.Obj, f.Noisy.Image, f.Noisy.Cause, k)[0]
			e.Name = fmt.Sprintf("%s.noisy%05d", f.Noisy.Obj.Name, k)
			e.Message += fmt.Sprintf(" (request %d)", k)
			f.Noisy.Events = append(f.Noisy.Events, e)
		}
	}
	return f
}

// failEvents are the kubelet's events of a failed pull: Failed with the cause, Failed
// ErrImagePull, Normal BackOff.
func failEvents(p *corev1.Pod, im string, c *Cause, i int) []*corev1.Event {
	repoHost, tag, _ := strings.Cut(im, ":")
	host, repo, _ := strings.Cut(repoHost, "/")
	at := metav1.Now()
	mk := func(suffix, reason, typ, msg string, count int32) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: fmt.Sprintf("%s.%s%d", p.Name, suffix, i)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, APIVersion: "v1", FieldPath: "spec.containers{app}"},
			Reason:         reason, Type: typ, Message: msg, Count: count, FirstTimestamp: at, LastTimestamp: at,
			Source: corev1.EventSource{Component: "kubelet", Host: p.Spec.NodeName}}
	}
	return []*corev1.Event{
		mk("cause", "Failed", "Warning", c.Message(im, host, repo, tag), 4),
		mk("err", "Failed", "Warning", "Error: ErrImagePull", 4),
		mk("backoff", "BackOff", "Normal", fmt.Sprintf("Back-off pulling image %q", im), 12),
	}
}

// FailStatus is the status the kubelet gives a pod whose pull fails: Pending, its container waiting.
func FailStatus(gp *Pod, backoff bool) corev1.PodStatus {
	reason, msg := "ErrImagePull", gp.Events[0].Message
	if backoff {
		reason, msg = "ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %s", gp.Image, strings.TrimPrefix(gp.Events[0].Message, fmt.Sprintf("Failed to pull image %q: ", gp.Image)))
	}
	return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: gp.Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}}
}

// Truth is the expected grouping: one group per failing image (its one cause), its pods and pools.
func (f *Fleet) Truth() []Group {
	pools := map[string]string{}
	for _, n := range f.Nodes {
		pools[n.Obj.Name] = n.Pool
	}
	by := map[string]*Group{}
	var order []string
	for i := range f.Pods {
		p := &f.Pods[i]
		if p.Cause == nil {
			continue
		}
		g := by[p.Image]
		if g == nil {
			g = &Group{Image: p.Image, Class: p.Cause.Class}
			by[p.Image] = g
			order = append(order, p.Image)
		}
		g.Pods = append(g.Pods, p.Obj.Namespace+"/"+p.Obj.Name)
		if !contains(g.Pools, pools[p.Obj.Spec.NodeName]) {
			g.Pools = append(g.Pools, pools[p.Obj.Spec.NodeName])
		}
	}
	var out []Group
	for _, im := range order {
		g := by[im]
		sort.Strings(g.Pods)
		sort.Strings(g.Pools)
		out = append(out, *g)
	}
	return out
}

// Split is the truth of the cached-image split for image: nodes that list it, nodes whose full
// list does not (unknown: it may hide it), nodes whose short list does not (absent).
func (f *Fleet) Split(image string) (present, unknown, absent []string) {
	for _, n := range f.Nodes {
		switch name := n.Obj.Name; {
		case f.lists[name][image]:
			present = append(present, name)
		case len(n.Obj.Status.Images) >= MaxImages:
			unknown = append(unknown, name)
		default:
			absent = append(absent, name)
		}
	}
	return
}

// PoolOf is the pool pullpath must read for node.
func (f *Fleet) PoolOf(node string) string {
	for _, n := range f.Nodes {
		if n.Obj.Name == node {
			return n.Pool
		}
	}
	return ""
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func hash(s string) uint64 {
	var h uint64 = 1469598103934665603
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
