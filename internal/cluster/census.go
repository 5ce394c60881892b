package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/kube"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

// census is what the cluster holds about one image: every node with its image list, and every
// pod that runs it or fails to pull it.
type census struct {
	cs    *Client
	o     Options
	image string
	ref   imageRef
	notes *[]string

	nodes   []corev1.Node
	pods    []corev1.Pod
	digests map[string]bool // repo digests of the image, from the imageID of pods that run it
	caps    map[string]int  // node → nodeStatusMaxImages, when read from the kubelet
}

// imageRef is an image reference reduced to what node image lists and imageIDs name.
type imageRef struct{ repo, tag, digest string }

func parseImage(s string) (imageRef, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "docker-pullable://"), "docker://")
	r, err := registry.ParseReference(s)
	if err != nil {
		return imageRef{}, false
	}
	return imageRef{repo: r.Registry + "/" + r.Repository, tag: r.Tag, digest: r.Digest}, true
}

// read lists the nodes and the pods of the image's repository, paged: a page at a time in memory,
// and of the pods only those that name the repository (slim), so that 30,000 pods cost six
// requests and little memory. Without cluster-wide pod rights, the namespace's pods are read.
func (c *census) read(ctx context.Context, ns string) error {
	c.ref, _ = parseImage(c.image)
	l, err := paged(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (metav1.ListMeta, int, error) {
		nl, err := c.cs.lists().Nodes().List(ctx, o)
		if err != nil {
			return metav1.ListMeta{}, 0, err
		}
		for i := range nl.Items {
			nl.Items[i].ManagedFields = nil
		}
		c.nodes = append(c.nodes, nl.Items...)
		return nl.ListMeta, len(nl.Items), nil
	})
	if err != nil {
		return APIError(err, "list", "nodes", "", "")
	}
	if l.cut != "" {
		*c.notes = append(*c.notes, "the list of nodes: "+l.cut)
	}
	if err := c.readPods(ctx, ""); err != nil {
		// without cluster-wide rights, the pod's namespace still tells a lot
		*c.notes = append(*c.notes, fmt.Sprintf("pods of other namespaces not read (%v): pods running or failing on the image elsewhere are not counted", ShortErr(err)))
		if err := c.readPods(ctx, ns); err != nil {
			return err
		}
	}
	c.digests = map[string]bool{}
	if c.ref.digest != "" {
		c.digests[c.ref.digest] = true
	}
	for i := range c.pods {
		for _, s := range runningStatuses(&c.pods[i]) {
			if c.sameImage(specImage(&c.pods[i], s.Name)) {
				if id, ok := parseImage(s.ImageID); ok && id.repo == c.ref.repo && id.digest != "" {
					c.digests[id.digest] = true
				}
			}
		}
	}
	return nil
}

// readPods keeps the pods of ns that name the image's repository in a container.
func (c *census) readPods(ctx context.Context, ns string) error {
	c.pods = nil
	l, err := paged(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (metav1.ListMeta, int, error) {
		pl, err := c.cs.lists().Pods(ns).List(ctx, o)
		if err != nil {
			return metav1.ListMeta{}, 0, err
		}
		for i := range pl.Items {
			if c.namesRepo(&pl.Items[i]) {
				c.pods = append(c.pods, *slimPod(&pl.Items[i]))
			}
		}
		return pl.ListMeta, len(pl.Items), nil
	})
	if err != nil {
		return APIError(err, "list", "pods", ns, "")
	}
	if l.cut != "" {
		*c.notes = append(*c.notes, "the list of pods "+where(ns)+": "+l.cut+"; pods running or failing on the image past that point are not counted")
	}
	return nil
}

// mayName is a cheap test before a reference is parsed: a reference to the census's repository
// holds the repository's last path component (a node lists 50 images, a fleet 30,000 pods).
func (c *census) mayName(s string) bool {
	last := c.ref.repo[strings.LastIndexByte(c.ref.repo, '/')+1:]
	return strings.Contains(s, last)
}

// namesRepo says whether a container of p runs an image of the census's repository.
func (c *census) namesRepo(p *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, ct := range cs {
			if !c.mayName(ct.Image) {
				continue
			}
			if r, ok := parseImage(ct.Image); ok && r.repo == c.ref.repo {
				return true
			}
		}
	}
	return false
}

// ShortErr is err in a few words for a note or a report: an RBAC refusal as the missing right, the
// rest cut at 120 characters.
func ShortErr(err error) string {
	var e *RBACError
	if errors.As(err, &e) {
		return e.Short()
	}
	var silent *kube.SilentError
	if errors.As(err, &silent) {
		return silent.Error() // what matters, not the request's URL before it
	}
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// sameImage reports whether a pod spec's image names the image (same repository, and the same tag
// or digest).
func (c *census) sameImage(s string) bool {
	r, ok := parseImage(s)
	if !ok || r.repo != c.ref.repo {
		return false
	}
	if c.ref.digest != "" || r.digest != "" {
		return r.digest == c.ref.digest || c.digests[r.digest]
	}
	return r.tag == c.ref.tag
}

// inNodeList reports whether one of a node image's names is the image, by tag or by digest.
func (c *census) inNodeList(names []string) bool {
	for _, n := range names {
		if !c.mayName(n) {
			continue
		}
		r, ok := parseImage(n)
		if !ok || r.repo != c.ref.repo {
			continue
		}
		if (r.digest != "" && c.digests[r.digest]) || (r.digest == "" && c.ref.digest == "" && r.tag == c.ref.tag) {
			return true
		}
	}
	return false
}

func specImage(p *corev1.Pod, container string) string {
	for _, c := range p.Spec.InitContainers {
		if c.Name == container {
			return c.Image
		}
	}
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return c.Image
		}
	}
	return ""
}

func allStatuses(p *corev1.Pod) []corev1.ContainerStatus {
	return append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
}

// runningStatuses are the statuses of containers whose image was had: running, or terminated
// after running.
func runningStatuses(p *corev1.Pod) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, s := range allStatuses(p) {
		if s.ImageID != "" && (s.State.Running != nil || s.State.Terminated != nil) {
			out = append(out, s)
		}
	}
	return out
}

func (c *census) failing(p *corev1.Pod) bool {
	for _, s := range allStatuses(p) {
		if s.State.Waiting != nil && pullWaitReasons[s.State.Waiting.Reason] && c.sameImage(specImage(p, s.Name)) {
			return true
		}
	}
	return false
}

func (c *census) running(p *corev1.Pod) (string, bool) {
	for _, s := range runningStatuses(p) {
		if c.sameImage(specImage(p, s.Name)) {
			return s.ImageID, true
		}
	}
	return "", false
}

func (c *census) nodeOf(name string) *corev1.Node {
	for i := range c.nodes {
		if c.nodes[i].Name == name {
			return &c.nodes[i]
		}
	}
	return nil
}

// readCaps asks the kubelets of the undecided nodes for their nodeStatusMaxImages.
func (c *census) readCaps(ctx context.Context, names []string) {
	c.caps = map[string]int{}
	if !c.o.KubeletConfig || len(names) == 0 {
		return
	}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(8) // kubelets asked at once
	var refused error
	for _, n := range names {
		g.Go(func() error {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			raw, err := RawRead(cctx, c.cs.Core.RESTClient().Get().Resource("nodes").Name(n).SubResource("proxy").Suffix("configz"), "get", "nodes/proxy", "", n)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused = err
				return nil
			}
			var cz struct {
				KubeletConfig struct {
					NodeStatusMaxImages *int `json:"nodeStatusMaxImages"`
				} `json:"kubeletconfig"`
			}
			if json.Unmarshal(raw, &cz) == nil && cz.KubeletConfig.NodeStatusMaxImages != nil {
				c.caps[n] = *cz.KubeletConfig.NodeStatusMaxImages
			}
			return nil
		})
	}
	_ = g.Wait() // a refusal is kept in refused
	if refused != nil {
		*c.notes = append(*c.notes, fmt.Sprintf("the kubelet configuration (/configz through nodes/proxy) of some nodes could not be read (%s): their image lists are taken as capped at %d", ShortErr(refused), c.o.MaxImages))
	}
}

// fill computes the nodes, the cached-image split and the pods running the image elsewhere.
func (c *census) fill(ctx context.Context, d *report.PodDiagnosis, pod *corev1.Pod) {
	failingOn := map[string][]string{}
	runningOn := map[string][]string{}
	for i := range c.pods {
		p := &c.pods[i]
		key := p.Namespace + "/" + p.Name
		if c.failing(p) {
			failingOn[p.Spec.NodeName] = append(failingOn[p.Spec.NodeName], key)
		}
		if id, ok := c.running(p); ok {
			runningOn[p.Spec.NodeName] = append(runningOn[p.Spec.NodeName], key)
			d.RunningElsewhere = append(d.RunningElsewhere, report.RunningPod{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, ImageID: id})
		}
	}
	// which nodes are undecided without their kubelet's cap: not listed, list shorter than the default cap
	var ask []string
	for i := range c.nodes {
		n := &c.nodes[i]
		if !c.inNodeList(imageNames(n)) && len(n.Status.Images) < c.o.MaxImages {
			ask = append(ask, n.Name)
		}
	}
	c.readCaps(ctx, ask)

	ci := &report.CachedImage{Image: c.image, PresentOn: []string{}, AbsentOn: []string{}, UnknownOn: []string{}}
	for dg := range c.digests {
		ci.Digest = dg // one repo digest is the rule; several mean a moving tag
		if len(c.digests) > 1 {
			*c.notes = append(*c.notes, fmt.Sprintf("the tag %s resolved to %d different digests on this cluster's nodes: it moved", c.image, len(c.digests)))
		}
		break
	}
	concerned := map[string]bool{}
	var all []report.NodeImage
	for i := range c.nodes {
		n := &c.nodes[i]
		pool, from := Pool(n)
		ni := report.NodeImage{Name: n.Name, Pool: pool, PoolLabel: from, Created: n.CreationTimestamp.UTC(), Ready: NodeReady(n),
			Schedulable: !n.Spec.Unschedulable, ImageVersion: imageVersion(n), OSImage: n.Status.NodeInfo.OSImage,
			Kernel: n.Status.NodeInfo.KernelVersion, Runtime: n.Status.NodeInfo.ContainerRuntimeVersion,
			Kubelet: n.Status.NodeInfo.KubeletVersion, Arch: n.Status.NodeInfo.Architecture,
			ImagesListed: len(n.Status.Images), ImagesCap: c.o.MaxImages,
			FailingPods: orEmpty(failingOn[n.Name]), RunningPods: orEmpty(runningOn[n.Name])}
		if v, ok := c.caps[n.Name]; ok {
			ni.ImagesCap = v
		}
		present := c.inNodeList(imageNames(n))
		switch {
		case present:
			ni.ImagePresent = boolp(true)
			ci.PresentOn = append(ci.PresentOn, n.Name)
		case ni.ImagesCap >= 0 && ni.ImagesListed >= ni.ImagesCap:
			ci.UnknownOn = append(ci.UnknownOn, n.Name) // a full list may hide it
		default:
			ni.ImagePresent = boolp(false)
			ci.AbsentOn = append(ci.AbsentOn, n.Name)
		}
		if present || len(ni.FailingPods) > 0 || len(ni.RunningPods) > 0 || n.Name == pod.Spec.NodeName {
			concerned[pool] = true
		}
		all = append(all, ni)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Created.After(all[j].Created) })
	for _, ni := range all {
		if concerned[ni.Pool] || len(c.nodes) <= 50 {
			d.Nodes = append(d.Nodes, ni)
		} else {
			d.NodesOmitted++
		}
	}
	ci.Summary = c.split(all, ci)
	ci.Settle = c.settle(all, ci.UnknownOn)
	d.CachedImage = ci
}

// settle says how to learn what a full image list hides: a fresh probe on that pool, which is what
// the pull needs anyway, or the runtime itself on the node ("" when no node is unknown).
func (c *census) settle(nodes []report.NodeImage, unknown []string) string {
	if len(unknown) == 0 {
		return ""
	}
	pools := map[string]bool{}
	for _, n := range nodes {
		if slices.Contains(unknown, n.Name) {
			pools[n.Pool] = true
		}
	}
	cmd := []string{"pullpath", "verify", c.image}
	for _, p := range sortedKeys(pools) {
		cmd = append(cmd, "--pool", shellQuote(p))
	}
	return fmt.Sprintf("whether the image is on %s is unknown (image list full): settle it with %s (a fresh probe on a node of that pool), or pullpath probe %s --cri on the node (its runtime answers)",
		report.JoinCut(unknown, 5), strings.Join(cmd, " "), c.image)
}

// split says the cached-image lie in one sentence: where the image is cached, where it is not,
// the ages on each side, and where the failing pods are.
func (c *census) split(nodes []report.NodeImage, ci *report.CachedImage) string {
	byName := map[string]report.NodeImage{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	span := func(names []string) (oldest, newest time.Time) {
		for _, n := range names {
			t := byName[n].Created
			if oldest.IsZero() || t.Before(oldest) {
				oldest = t
			}
			if t.After(newest) {
				newest = t
			}
		}
		return
	}
	var parts []string
	_, presentNewest := span(ci.PresentOn)
	absentOldest, _ := span(ci.AbsentOn)
	if len(ci.PresentOn) > 0 {
		parts = append(parts, fmt.Sprintf("present on %s created up to %s (%s)", plural(len(ci.PresentOn), "node", "nodes"), stamp(presentNewest), poolsOf(byName, ci.PresentOn)))
	} else {
		parts = append(parts, "present on no node")
	}
	if len(ci.AbsentOn) > 0 {
		parts = append(parts, fmt.Sprintf("absent on %s created from %s (%s)", plural(len(ci.AbsentOn), "node", "nodes"), stamp(absentOldest), poolsOf(byName, ci.AbsentOn)))
	}
	if len(ci.UnknownOn) > 0 {
		parts = append(parts, fmt.Sprintf("unknown on %s whose image list is full (%s)", plural(len(ci.UnknownOn), "node", "nodes"), report.JoinCut(ci.UnknownOn, 5)))
	}
	s := strings.Join(parts, "; ")
	failing, onAbsent, onPresent := 0, 0, 0
	for _, n := range nodes {
		failing += len(n.FailingPods)
		if n.ImagePresent != nil && !*n.ImagePresent {
			onAbsent += len(n.FailingPods)
		}
		if n.ImagePresent != nil && *n.ImagePresent {
			onPresent += len(n.FailingPods)
		}
	}
	switch {
	case failing > 0 && onAbsent == failing && len(ci.AbsentOn) > 0:
		s += fmt.Sprintf("; every failing pod (%d) is on a node without the image", failing)
	case failing > 0:
		s += fmt.Sprintf("; %d of %d failing pods are on nodes without the image", onAbsent, failing)
	}
	if onPresent > 0 {
		s += fmt.Sprintf(" (%d on nodes that list it: a pull policy of Always, or a different digest)", onPresent)
	}
	if len(ci.PresentOn) > 0 && len(ci.AbsentOn) > 0 && presentNewest.Before(absentOldest) {
		s += ". The nodes that have it are all older than those that do not: they run it from their cache, and a fresh pull on a new node fails — the cached-image lie"
	}
	return s
}

func poolsOf(byName map[string]report.NodeImage, names []string) string {
	pools := map[string][]string{}
	var order []string
	for _, n := range names {
		p := byName[n].Pool
		if _, ok := pools[p]; !ok {
			order = append(order, p)
		}
		pools[p] = append(pools[p], n)
	}
	sort.Strings(order)
	var parts []string
	for _, p := range order {
		parts = append(parts, "pool "+p+": "+report.JoinCut(pools[p], 4))
	}
	return strings.Join(parts, "; ")
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

func imageNames(n *corev1.Node) []string {
	var out []string
	for _, im := range n.Status.Images {
		out = append(out, im.Names...)
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func boolp(b bool) *bool { return &b }
