package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/loader"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

// Labels every object of a run carries; `pullpath cleanup` deletes by them.
const (
	LabelManaged = "app.kubernetes.io/managed-by" // = "pullpath"
	LabelRun     = "pullpath.dev/run"
	LabelRole    = "pullpath.dev/role" // owner, binary, loader, secret, probe, canary
	LabelPool    = "pullpath.dev/pool-hash"
)

// VerifyOptions describe one verification run.
type VerifyOptions struct {
	Image     string
	Pools     []string // only these pools; empty: every pool
	AllNodes  bool     // probe every eligible node, not one per pool
	Fresh     bool     // insist on a node without the image in its cache
	Namespace string   // where the run's objects live; must allow hostNetwork and hostPath (Pod Security "privileged")
	// SecretNamespace/Secret name a dockerconfigjson Secret to pull with (copied into Namespace for
	// the run); FromPod takes the secret the pod's kubelet would use.
	SecretNamespace, Secret string
	FromPod                 string // namespace/name
	IncludeUnready          bool   // also NotReady and cordoned nodes
	RuntimePull             bool   // a canary pod with the image beside each probe: the kubelet's real pull
	Binary                  func(goarch string) ([]byte, error)
	// ProbeImage, when set, is the probe image (pullpath image push) the probe pods run, pulled
	// by the node (IfNotPresent), instead of the binary in ConfigMaps on an image already there.
	ProbeImage string
	// ProbeFromPod (namespace/name) also runs ProbeImage in that pod's network namespace, as an
	// ephemeral container, to set beside the node's verdict.
	ProbeFromPod string
	ProbeArgs    []string      // extra probe flags (timeouts)
	Timeout      time.Duration // per probe pod, from create to result
	Concurrency  int
	MaxImages    int
	Progress     func(string)
}

// run is one verification in flight.
type run struct {
	cs     *Client
	o      VerifyOptions
	id     string
	owner  *corev1.ConfigMap
	secret string // the copied pull secret in o.Namespace, "" for none
	mu     sync.Mutex
	bins   map[string]*delivery // goarch → the ConfigMaps holding the probe binary
	notes  []string
	madeNS bool
}

// delivery is the probe binary for one architecture, as ConfigMaps, and the loader beside it.
type delivery struct {
	parts  []string // ConfigMap names, in order
	loader string
	size   int
	err    error
}

// Verify runs the probe on a node of every pool (or every node) through probe pods that need no
// pull, and returns the verdict per pool. Everything it creates is deleted before it returns, on
// every path (ctx cancelled included); what could not be deleted is listed in LeftBehind.
func Verify(ctx context.Context, cs *Client, o VerifyOptions) (v *report.Verification, err error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 10
	}
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.MaxImages <= 0 {
		o.MaxImages = DefaultMaxImages
	}
	start := time.Now()
	r := &run{cs: cs, o: o, id: newID(), bins: map[string]*delivery{}}
	v = &report.Verification{APIVersion: report.APIVersion, Kind: "Verification", Image: o.Image, Run: r.id, Namespace: o.Namespace,
		Pools: []report.PoolResult{}, LeftBehind: []string{}, Started: start.UTC()}
	if err := r.checkRights(ctx); err != nil {
		return nil, err
	}
	targets, err := r.choose(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		// cleanup on every path, with its own time: ctx may be cancelled already
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		v.LeftBehind = r.cleanup(cctx)
		v.Notes = append(v.Notes, r.notes...)
		v.Duration = report.Duration(time.Since(start))
	}()
	if err := r.prepare(ctx); err != nil {
		return v, err
	}
	results := make([]report.PoolResult, len(targets))
	var fromPod chan *report.PodProbe
	if o.ProbeFromPod != "" {
		fromPod = make(chan *report.PodProbe, 1)
		go func() { fromPod <- r.probeFromPod(ctx) }()
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, o.Concurrency)
	for i, t := range targets {
		results[i] = t.result
		if t.node == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[i].Class, results[i].Error = report.ClassOther, "cut before the probe started: "+context.Cause(ctx).Error()
				return
			}
			defer func() { <-sem }()
			r.verifyNode(ctx, t.node, &results[i])
			r.progress(fmt.Sprintf("pool %s: %s on %s", results[i].Pool, results[i].Class, results[i].Node))
		}()
	}
	wg.Wait()
	v.Pools = results
	if fromPod != nil {
		v.FromPod = <-fromPod
		compareFromPod(v.FromPod, results)
	}
	v.Class = report.ClassOK
	for _, p := range results {
		if p.Class != report.ClassOK {
			v.Class = p.Class
			break
		}
	}
	return v, nil
}

func newID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (r *run) progress(s string) {
	if r.o.Progress != nil {
		r.o.Progress(s)
	}
}

func (r *run) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

func (r *run) labels(role string) map[string]string {
	return map[string]string{LabelManaged: "pullpath", LabelRun: r.id, LabelRole: role}
}

func (r *run) meta(name, role string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: r.o.Namespace, Labels: r.labels(role)}
	if r.owner != nil {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: r.owner.Name, UID: r.owner.UID}}
	}
	return m
}

// delivery names how the probe reaches the nodes.
func (r *run) delivery() string {
	if r.o.ProbeImage != "" {
		return "image"
	}
	return "configmap"
}

// need is one permission the run requires.
type need struct {
	verb, resource, sub, ns string
	why                     string
}

// checkRights asks the API server, before anything is created, whether the identity may do what
// the run needs, and names every missing permission at once.
func (r *run) checkRights(ctx context.Context) error {
	ns := r.o.Namespace
	needs := []need{
		{"list", "nodes", "", "", "to choose a node per pool"},
		{"list", "pods", "", "", "to see which nodes run the image"},
		{"create", "pods", "", ns, "the probe pods"},
		{"delete", "pods", "", ns, "cleanup"},
		{"get", "pods", "log", ns, "the probes' full reports"},
		{"create", "configmaps", "", ns, "the probe binary and the loader"},
		{"delete", "configmaps", "", ns, "cleanup"},
		{"list", "events", "", ns, "explain a probe pod that cannot start"},
	}
	if r.o.Secret != "" || r.o.FromPod != "" {
		src := r.o.SecretNamespace
		if r.o.FromPod != "" {
			src, _, _ = strings.Cut(r.o.FromPod, "/")
			needs = append(needs, need{"get", "pods", "", src, "--pod: read the pod's pull secrets"})
		}
		needs = append(needs, need{"get", "secrets", "", src, "read the pull secret"},
			need{"create", "secrets", "", ns, "the run's copy of the pull secret"},
			need{"delete", "secrets", "", ns, "cleanup"})
	}
	if r.o.ProbeFromPod != "" {
		pns, _, _ := strings.Cut(r.o.ProbeFromPod, "/")
		needs = append(needs, need{"get", "pods", "", pns, "--from-pod: read the pod"},
			need{"update", "pods", "ephemeralcontainers", pns, "--from-pod: the probe as an ephemeral container"},
			need{"get", "pods", "log", pns, "--from-pod: the probe's report"})
	}
	var missing []string
	for _, n := range needs {
		ssar := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
			Namespace: n.ns, Verb: n.verb, Resource: n.resource, Subresource: n.sub}}}
		res, err := r.cs.Authz.SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
		if err != nil {
			return apiError(err, "create", "selfsubjectaccessreviews", "", "")
		}
		if !res.Status.Allowed {
			what := n.resource
			if n.sub != "" {
				what += "/" + n.sub
			}
			scope := "cluster-wide"
			if n.ns != "" {
				scope = "in namespace " + n.ns
			}
			missing = append(missing, fmt.Sprintf("%s %s %s (%s)", n.verb, what, scope, n.why))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the identity lacks %d permission(s) verify needs — nothing was created:\n  %s\n(deploy/rbac.yaml grants exactly these)", len(missing), strings.Join(missing, "\n  "))
	}
	return nil
}

// target is one node to probe, with its pool's result so far.
type target struct {
	node   *corev1.Node
	result report.PoolResult
}

// choose picks, per pool, the newest eligible node without the image in its cache; with
// AllNodes, every eligible node.
func (r *run) choose(ctx context.Context) ([]target, error) {
	c := &census{cs: r.cs, o: Options{MaxImages: r.o.MaxImages}, image: r.o.Image, notes: &r.notes}
	if err := c.read(ctx, r.o.Namespace); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, p := range r.o.Pools {
		want[p] = true
	}
	byPool := map[string][]*corev1.Node{}
	for i := range c.nodes {
		n := &c.nodes[i]
		p, _ := Pool(n)
		if len(want) > 0 && !want[p] {
			continue
		}
		byPool[p] = append(byPool[p], n)
	}
	for p := range want {
		if _, ok := byPool[p]; !ok {
			var pools []string
			for i := range c.nodes {
				pp, _ := Pool(&c.nodes[i])
				pools = appendNew(pools, pp)
			}
			sort.Strings(pools)
			return nil, fmt.Errorf("no node in pool %q (pools: %s)", p, strings.Join(pools, ", "))
		}
	}
	var out []target
	for _, p := range sortedKeys(keysOf(byPool)) {
		nodes := byPool[p]
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].CreationTimestamp.After(nodes[j].CreationTimestamp.Time) })
		var eligible []*corev1.Node
		var skipped []string
		for _, n := range nodes {
			switch {
			case n.Labels["kubernetes.io/os"] != "" && n.Labels["kubernetes.io/os"] != "linux":
				skipped = append(skipped, n.Name+" (not linux)")
			case !r.o.IncludeUnready && !nodeReady(n):
				skipped = append(skipped, n.Name+" (NotReady)")
			case !r.o.IncludeUnready && n.Spec.Unschedulable:
				skipped = append(skipped, n.Name+" (cordoned)")
			default:
				eligible = append(eligible, n)
			}
		}
		presence := func(n *corev1.Node) *bool {
			if c.inNodeList(imageNames(n)) {
				return boolp(true)
			}
			if len(n.Status.Images) >= r.o.MaxImages {
				return nil
			}
			return boolp(false)
		}
		res := func(n *corev1.Node, why string) report.PoolResult {
			return report.PoolResult{Pool: p, Node: n.Name, NodeCreated: n.CreationTimestamp.UTC(), Choice: why, ImagePresentBefore: presence(n), Delivery: r.delivery()}
		}
		if len(eligible) == 0 {
			out = append(out, target{result: report.PoolResult{Pool: p, Class: report.ClassOther, Delivery: r.delivery(),
				Error: "no eligible node: " + strings.Join(skipped, ", ") + " (--include-unready probes NotReady and cordoned nodes)"}})
			continue
		}
		if r.o.AllNodes {
			for _, n := range eligible {
				out = append(out, target{node: n, result: res(n, "every node (--all-nodes)")})
			}
			continue
		}
		var fresh, unknown, cached []*corev1.Node
		for _, n := range eligible {
			switch pr := presence(n); {
			case pr == nil:
				unknown = append(unknown, n)
			case *pr:
				cached = append(cached, n)
			default:
				fresh = append(fresh, n)
			}
		}
		switch {
		case len(fresh) > 0:
			out = append(out, target{node: fresh[0], result: res(fresh[0], "the newest Ready node without the image in its cache")})
		case r.o.Fresh:
			out = append(out, target{result: report.PoolResult{Pool: p, Class: report.ClassOther, Delivery: r.delivery(),
				Error: fmt.Sprintf("--fresh: every eligible node of pool %s has the image cached or a full image list (%s); get a fresh node: %s", p, report.JoinCut(names(eligible), 5), freshNodeHint(p, eligible[0]))}})
		case len(unknown) > 0:
			out = append(out, target{node: unknown[0], result: res(unknown[0], "the newest Ready node; its image list is full, so the cache may hold the image (the probe never uses it; a --runtime-pull could)")})
		default:
			out = append(out, target{node: cached[0], result: res(cached[0], "the newest Ready node; every node of the pool has the image cached (the probe never uses the cache; use --fresh to insist on a fresh node)")})
		}
	}
	return out, nil
}

func keysOf[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func names(ns []*corev1.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

// freshNodeHint says how to get a node without the image, with the platform's own command.
func freshNodeHint(pool string, n *corev1.Node) string {
	count := "<current+1>"
	switch id := n.Spec.ProviderID; {
	case strings.HasPrefix(id, "azure://"):
		return fmt.Sprintf("az aks nodepool scale --resource-group <rg> --cluster-name <cluster> --name %s --node-count %s", pool, count)
	case n.Labels["karpenter.sh/nodepool"] != "":
		return fmt.Sprintf("kubectl delete node %s (Karpenter launches a fresh one for pending pods)", n.Name)
	case strings.HasPrefix(id, "aws://"):
		return fmt.Sprintf("eksctl scale nodegroup --cluster <cluster> --name %s --nodes %s", pool, count)
	case strings.HasPrefix(id, "gce://"):
		return fmt.Sprintf("gcloud container clusters resize <cluster> --node-pool %s --num-nodes %s", pool, count)
	}
	return fmt.Sprintf("scale pool %s up by one node, or drain and replace %s (kubectl drain %s --ignore-daemonsets)", pool, n.Name, n.Name)
}

// prepare makes the run's owner object, its namespace when missing, and the pull secret copy.
func (r *run) prepare(ctx context.Context) error {
	ns := r.o.Namespace
	existing, err := r.cs.Core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil && existing.DeletionTimestamp != nil {
		// an earlier run's namespace is still being deleted: wait for it to go
		_ = poll(ctx, time.Minute, func() bool {
			_, err := r.cs.Core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		_, err = r.cs.Core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{LabelManaged: "pullpath",
			"pod-security.kubernetes.io/enforce": "privileged", "pod-security.kubernetes.io/warn": "privileged"}}}
		if _, err := r.cs.Core.Namespaces().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("namespace %s does not exist and cannot be created (%v): apply deploy/rbac.yaml, or give --namespace", ns, shortErr(apiError(err, "create", "namespaces", "", ns)))
		}
		r.madeNS = true
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pullpath-run-" + r.id, Namespace: ns, Labels: r.labels("owner")},
		Data: map[string]string{"image": r.o.Image, "started": time.Now().UTC().Format(time.RFC3339)}}
	o, err := r.cs.Core.ConfigMaps(ns).Create(ctx, owner, metav1.CreateOptions{})
	if err != nil {
		return apiError(err, "create", "configmaps", ns, owner.Name)
	}
	r.owner = o
	return r.copySecret(ctx)
}

// copySecret copies the pull secret the run uses into the run's namespace: a pod can only mount,
// and the kubelet only use, a secret of its own namespace.
func (r *run) copySecret(ctx context.Context) error {
	ns, name := r.o.SecretNamespace, r.o.Secret
	if r.o.FromPod != "" {
		pns, pname, _ := strings.Cut(r.o.FromPod, "/")
		p, err := r.cs.Core.Pods(pns).Get(ctx, pname, metav1.GetOptions{})
		if err != nil {
			return apiError(err, "get", "pods", pns, pname)
		}
		var notes []string
		pc := credentials(ctx, r.cs, p, r.o.Image, nil, &notes)
		for _, s := range pc.PullSecrets {
			if s.From == "pod" && s.CoversRegistry != nil && *s.CoversRegistry {
				ns, name = pns, s.Name
				break
			}
		}
		if name == "" {
			r.note("--pod %s: %s; the probe pulls with the node's own configuration", r.o.FromPod, pc.Summary)
			return nil
		}
	}
	if name == "" {
		return nil
	}
	s, err := r.cs.Core.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return apiError(err, "get", "secrets", ns, name)
	}
	if s.Type != corev1.SecretTypeDockerConfigJson {
		return fmt.Errorf("secret %s/%s has type %s: the kubelet only pulls with kubernetes.io/dockerconfigjson secrets", ns, name, s.Type)
	}
	cp := &corev1.Secret{ObjectMeta: r.meta("pullpath-"+r.id+"-pull", "secret"), Type: s.Type,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: s.Data[corev1.DockerConfigJsonKey]}}
	if _, err := r.cs.Core.Secrets(r.o.Namespace).Create(ctx, cp, metav1.CreateOptions{}); err != nil {
		return apiError(err, "create", "secrets", r.o.Namespace, cp.Name)
	}
	r.secret = cp.Name
	r.note("pulling with secret %s/%s (copied for the run as %s/%s)", ns, name, r.o.Namespace, cp.Name)
	return nil
}

// deliver puts the probe binary for goarch into ConfigMaps, once per architecture.
func (r *run) deliver(ctx context.Context, goarch string) *delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.bins[goarch]; ok {
		return d
	}
	d := &delivery{}
	r.bins[goarch] = d
	bin, err := r.o.Binary(goarch)
	if err != nil {
		d.err = err
		return d
	}
	ld, err := loader.Binary(goarch)
	if err != nil {
		d.err = err
		return d
	}
	d.size = len(bin)
	lcm := &corev1.ConfigMap{ObjectMeta: r.meta(fmt.Sprintf("pullpath-%s-loader-%s", r.id, goarch), "loader"), BinaryData: map[string][]byte{loader.File: ld}}
	if _, err := r.cs.Core.ConfigMaps(r.o.Namespace).Create(ctx, lcm, metav1.CreateOptions{}); err != nil {
		d.err = apiError(err, "create", "configmaps", r.o.Namespace, lcm.Name)
		return d
	}
	d.loader = lcm.Name
	for i, p := range loader.Split(bin, loader.PartSize) {
		cm := &corev1.ConfigMap{ObjectMeta: r.meta(fmt.Sprintf("pullpath-%s-bin-%s-%03d", r.id, goarch, i), "binary"), BinaryData: map[string][]byte{p.Name: p.Data}}
		if _, err := r.cs.Core.ConfigMaps(r.o.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			d.err = apiError(err, "create", "configmaps", r.o.Namespace, cm.Name)
			return d
		}
		d.parts = append(d.parts, cm.Name)
	}
	return d
}

// hostImages are the images a node has, the sandbox (pause) image first: a static binary runs on
// any image with a Linux root filesystem, and the sandbox image is pinned on every node.
func hostImages(n *corev1.Node) []string {
	var pause, other []string
	for _, im := range n.Status.Images {
		name := ""
		for _, nm := range im.Names {
			if !strings.Contains(nm, "@sha256:") {
				name = nm
				break
			}
		}
		if name == "" && len(im.Names) > 0 {
			name = im.Names[0]
		}
		if name == "" {
			continue
		}
		if strings.Contains(name, "/pause:") || strings.Contains(name, "/pause@") {
			pause = append(pause, name)
		} else {
			other = append(other, name)
		}
	}
	return append(pause, other...)
}

// verifyNode runs the probe pod (and the canary) on one node and fills its result.
func (r *run) verifyNode(ctx context.Context, n *corev1.Node, res *report.PoolResult) {
	res.Class = report.ClassOther
	if r.o.ProbeImage != "" {
		r.verifyWith(ctx, n, res, func() { r.probePod(ctx, n, nil, r.o.ProbeImage, res) })
		return
	}
	arch := n.Status.NodeInfo.Architecture
	if arch == "" {
		arch = n.Labels["kubernetes.io/arch"]
	}
	d := r.deliver(ctx, arch)
	if d.err != nil {
		res.Error = "cannot deliver the probe to " + n.Name + " (linux/" + arch + "): " + d.err.Error()
		return
	}
	images := hostImages(n)
	if len(images) == 0 {
		res.Error = fmt.Sprintf("node %s lists no image in status.images to run the probe on without a pull", n.Name)
		return
	}
	r.verifyWith(ctx, n, res, func() {
		for i, img := range images {
			if i >= 3 {
				break
			}
			gone := r.probePod(ctx, n, d, img, res)
			if !gone {
				break
			}
			r.note("node %s: image %s is listed but gone (ErrImageNeverPull); trying the next", n.Name, img)
		}
	})
}

// verifyWith runs probe on n, with the canary beside it when asked.
func (r *run) verifyWith(ctx context.Context, n *corev1.Node, res *report.PoolResult, probe func()) {
	var canary chan *report.RuntimePull
	if r.o.RuntimePull {
		canary = make(chan *report.RuntimePull, 1)
		go func() { canary <- r.runtimePull(ctx, n, res.ImagePresentBefore) }()
	}
	probe()
	if canary != nil {
		res.RuntimePull = <-canary
		res.RuntimePull.Agrees = agrees(res)
	} else {
		res.RuntimePull = &report.RuntimePull{Result: "skipped", Note: "--runtime-pull not given"}
	}
}

// agrees compares the kubelet's real pull with the probe.
func agrees(res *report.PoolResult) *bool {
	rp := res.RuntimePull
	if rp == nil || rp.Result == "skipped" || res.Probe == nil {
		return nil
	}
	okProbe := res.Probe.Class == report.ClassOK
	if rp.Result == "ok" {
		if rp.Cached && !okProbe {
			return nil // a cached pull proves nothing about the network
		}
		return boolp(okProbe)
	}
	return boolp(!okProbe && rp.Class == res.Probe.Class)
}

func (r *run) probeArgs(n *corev1.Node) []string {
	args := []string{"probe", r.o.Image, "--host-root", "/host", "-o", "json", "--summary-file", "/dev/termination-log", "--node", n.Name}
	if r.secret != "" {
		args = append(args, "--pull-secret", "/pp/secret/"+corev1.DockerConfigJsonKey)
	}
	return append(args, r.o.ProbeArgs...)
}

// probePod runs one probe pod on n with image img; it reports whether the image turned out to be
// gone (the caller then tries the next).
func (r *run) probePod(ctx context.Context, n *corev1.Node, d *delivery, img string, res *report.PoolResult) (imageGone bool) {
	name := fmt.Sprintf("pullpath-%s-probe-%s", r.id, shortName(n.Name))
	pod := r.probeSpec(name, n, d, img)
	if _, err := r.cs.Core.Pods(r.o.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		res.Error = "cannot create the probe pod: " + apiError(err, "create", "pods", r.o.Namespace, name).Error()
		return false
	}
	defer r.deletePod(name)
	p, err := r.waitPod(ctx, name, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || waitingOn(p, "ErrImageNeverPull", "CreateContainerError", "CreateContainerConfigError", "RunContainerError",
			"ErrImagePull", "ImagePullBackOff", "InvalidImageName")
	})
	if err != nil {
		res.Error = fmt.Sprintf("the probe pod on %s did not finish: %v", n.Name, err)
		res.Findings = r.podFindings(ctx, name)
		return false
	}
	if waitingOn(p, "ErrImageNeverPull") {
		return true
	}
	if w := waitingState(p); w != nil {
		res.Error = fmt.Sprintf("the probe pod on %s could not start: %s: %s", n.Name, w.Reason, w.Message)
		res.Findings = r.podFindings(ctx, name)
		return false
	}
	term := terminated(p)
	rep := r.fullReport(ctx, name)
	if rep == nil && term != nil && term.Message != "" {
		var s report.ProbeSummary
		if json.Unmarshal([]byte(term.Message), &s) == nil && s.Class != "" {
			// the compact verdict stands on its own: it is not passed off as a full report
			res.Summary, res.Class = &s, s.Class
			res.Error = "the probe's full report (its log) could not be read: the verdict is its termination message"
			return false
		}
	}
	if rep == nil {
		msg := ""
		if term != nil {
			msg = fmt.Sprintf("exit %d %s: %s", term.ExitCode, term.Reason, strings.TrimSpace(term.Message))
		}
		res.Error = fmt.Sprintf("the probe on %s left no report (%s)", n.Name, msg)
		res.Findings = r.podFindings(ctx, name)
		return false
	}
	res.Probe, res.Class = rep, rep.Class
	return false
}

func shortName(s string) string {
	if len(s) > 30 {
		return s[len(s)-30:]
	}
	return strings.Trim(s, "-.")
}

// probeSpec is the probe pod on n: with d, the binary from ConfigMaps run by the loader on img
// (already on the node); with d nil, the probe image img itself.
func (r *run) probeSpec(name string, n *corev1.Node, d *delivery, img string) *corev1.Pod {
	deadline := int64(r.o.Timeout.Seconds()) + 30
	f, t := false, true
	zero := int64(0)
	ro := int32(0o444)
	vols := []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	mounts := []corev1.VolumeMount{{Name: "host", MountPath: "/host", ReadOnly: true}}
	command := append([]string{"/pullpath"}, r.probeArgs(n)...)
	pull := corev1.PullIfNotPresent
	if d != nil {
		vols, mounts = r.loaderVolumes(d, vols, mounts)
		command = loader.Command("/pp/parts", "/pp/run/pullpath", d.size, r.probeArgs(n)...)
		pull = corev1.PullNever
	}
	if r.secret != "" {
		vols = append(vols, corev1.Volume{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: r.secret, DefaultMode: &ro}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "secret", MountPath: "/pp/secret", ReadOnly: true})
	}
	m := r.meta(name, "probe")
	m.Labels["pullpath.dev/node"] = shortName(n.Name)
	return &corev1.Pod{
		ObjectMeta: m,
		Spec: corev1.PodSpec{
			NodeName: n.Name, HostNetwork: true, DNSPolicy: corev1.DNSDefault, RestartPolicy: corev1.RestartPolicyNever,
			ActiveDeadlineSeconds: &deadline, TerminationGracePeriodSeconds: &zero,
			Tolerations:                  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			AutomountServiceAccountToken: &f, EnableServiceLinks: &f,
			// root only to read the node's files as their owner (0600 client keys in certs.d); no capability
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &zero, RunAsGroup: &zero, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "probe", Image: img, ImagePullPolicy: pull,
				Command:                  command,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				SecurityContext: &corev1.SecurityContext{Privileged: &f, AllowPrivilegeEscalation: &f, ReadOnlyRootFilesystem: &t,
					RunAsNonRoot: &f, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
				},
				VolumeMounts: mounts,
			}},
			Volumes: vols,
		},
	}
}

// loaderVolumes adds the ConfigMap parts, the loader beside them, and the emptyDir the loader
// joins the binary in.
func (r *run) loaderVolumes(d *delivery, vols []corev1.Volume, mounts []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
	var sources []corev1.VolumeProjection
	for i, cm := range d.parts {
		key := fmt.Sprintf("part-%03d", i)
		sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Items: []corev1.KeyToPath{{Key: key, Path: key}}}})
	}
	ro, exec := int32(0o444), int32(0o555)
	// the loader sits beside the parts, executable
	sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: d.loader}, Items: []corev1.KeyToPath{{Key: loader.File, Path: loader.File, Mode: &exec}}}})
	mem := resource.MustParse(strconv.Itoa(d.size*2/1024/1024+64) + "Mi")
	vols = append([]corev1.Volume{
		{Name: "parts", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources, DefaultMode: &ro}}},
		{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &mem}}},
	}, vols...)
	mounts = append([]corev1.VolumeMount{
		{Name: "parts", MountPath: "/pp/parts", ReadOnly: true},
		{Name: "run", MountPath: "/pp/run"},
	}, mounts...)
	return vols, mounts
}

// runtimePull is the kubelet's real pull: a canary pod with the image itself (pull policy Always,
// the same credentials), whose command is a path that does not exist, so that nothing of the image
// ever runs. Its events say how the pull went.
func (r *run) runtimePull(ctx context.Context, n *corev1.Node, presentBefore *bool) *report.RuntimePull {
	start := time.Now()
	name := fmt.Sprintf("pullpath-%s-canary-%s", r.id, shortName(n.Name))
	f := false
	zero, deadline := int64(0), int64(r.o.Timeout.Seconds())+30
	m := r.meta(name, "canary")
	pod := &corev1.Pod{ObjectMeta: m, Spec: corev1.PodSpec{
		NodeName: n.Name, RestartPolicy: corev1.RestartPolicyNever, ActiveDeadlineSeconds: &deadline, TerminationGracePeriodSeconds: &zero,
		HostNetwork: true, DNSPolicy: corev1.DNSDefault, AutomountServiceAccountToken: &f, EnableServiceLinks: &f,
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		Containers: []corev1.Container{{Name: "canary", Image: r.o.Image, ImagePullPolicy: corev1.PullAlways,
			Command:         []string{"/pullpath-canary-never-runs"},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &f, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			Resources:       corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")}}}},
	}}
	if r.secret != "" {
		pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: r.secret}}
	}
	rp := &report.RuntimePull{Result: "failed", Cached: presentBefore != nil && *presentBefore}
	if _, err := r.cs.Core.Pods(r.o.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		rp.Result, rp.Note = "skipped", "cannot create the canary pod: "+apiError(err, "create", "pods", r.o.Namespace, name).Error()
		return rp
	}
	defer r.deletePod(name)
	var pulled bool
	var failed *corev1.Event
	err := poll(ctx, r.o.Timeout, func() bool {
		evs, err := r.cs.Core.Events(r.o.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false
		}
		for i := range evs.Items {
			e := &evs.Items[i]
			if e.InvolvedObject.Name != name {
				continue
			}
			switch {
			case e.Reason == "Pulled":
				pulled = true
			case e.Type == corev1.EventTypeWarning && (e.Reason == "Failed" || e.Reason == "ErrImagePull") && strings.Contains(e.Message, "ull"):
				if failed == nil || strings.HasPrefix(e.Message, "Failed to pull") {
					failed = e
				}
			}
		}
		return pulled || (failed != nil && strings.HasPrefix(failed.Message, "Failed to pull"))
	})
	rp.Took = report.Duration(time.Since(start))
	switch {
	case pulled:
		rp.Result = "ok"
		if rp.Cached {
			rp.Note = "the node had the image cached before: the runtime's pull re-checked the manifest but not the layers, which proves nothing about the blob path"
		}
	case failed != nil:
		fs := explain(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.o.Namespace}}, []corev1.Event{*failed})
		rp.Message = failed.Message
		if len(fs) > 0 {
			rp.Class, rp.Code, rp.Host, rp.Role = fs[0].Class, fs[0].Code, fs[0].Host, fs[0].Role
		}
	case err != nil:
		rp.Result, rp.Note = "skipped", "no pull result before the timeout: "+err.Error()
	}
	return rp
}

func poll(ctx context.Context, timeout time.Duration, done func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		if done() {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

func (r *run) waitPod(ctx context.Context, name string, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var last *corev1.Pod
	err := poll(ctx, r.o.Timeout, func() bool {
		p, err := r.cs.Core.Pods(r.o.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = p
		return cond(p)
	})
	if err != nil {
		phase := "not found"
		if last != nil {
			phase = string(last.Status.Phase)
		}
		return last, fmt.Errorf("%w (pod phase %s)", err, phase)
	}
	return last, nil
}

func waitingState(p *corev1.Pod) *corev1.ContainerStateWaiting {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Waiting != nil && s.State.Waiting.Reason != "ContainerCreating" && s.State.Waiting.Reason != "PodInitializing" {
			return s.State.Waiting
		}
	}
	return nil
}

func waitingOn(p *corev1.Pod, reasons ...string) bool {
	w := waitingState(p)
	if w == nil {
		return false
	}
	for _, r := range reasons {
		if w.Reason == r {
			return true
		}
	}
	return false
}

func terminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			return s.State.Terminated
		}
	}
	return nil
}

// fullReport reads the probe's JSON report from its log.
func (r *run) fullReport(ctx context.Context, name string) *report.Probe {
	raw, err := r.cs.Core.Pods(r.o.Namespace).GetLogs(name, &corev1.PodLogOptions{Container: "probe", LimitBytes: int64p(32 << 20)}).DoRaw(ctx)
	if err != nil {
		return nil
	}
	var p report.Probe
	if json.Unmarshal(raw, &p) != nil || p.Kind != "ProbeReport" {
		return nil
	}
	return &p
}

func int64p(v int64) *int64 { return &v }

// podFindings explains why a probe pod could not run, from its own events.
func (r *run) podFindings(ctx context.Context, name string) []report.Finding {
	evs, err := r.cs.Core.Events(r.o.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return nil
	}
	var own []corev1.Event
	var lines []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == name {
			own = append(own, e)
			if e.Type == corev1.EventTypeWarning {
				lines = append(lines, e.Reason+": "+e.Message)
			}
		}
	}
	fs := explain(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.o.Namespace}}, own)
	if len(fs) == 0 && len(lines) > 0 {
		fs = []report.Finding{{Class: report.ClassOther, Code: report.CodeUnknown, Message: strings.Join(lines, "; "), Reason: "the probe pod's own events", Decided: false, DecidedBecause: "not a pull failure: the pod could not start", Count: 1}}
	}
	return fs
}

func (r *run) deletePod(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	zero := int64(0)
	_ = r.cs.Core.Pods(r.o.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}

// cleanup deletes every object of the run, then lists what is left.
func (r *run) cleanup(ctx context.Context) []string {
	return Cleanup(ctx, r.cs, r.o.Namespace, r.id, r.madeNS)
}

// Cleanup deletes every object pullpath made in ns (of one run, or of all runs when run is ""),
// waits until they are gone, and returns what is left (kind/namespace/name). With dropNS the
// namespace itself goes too.
func Cleanup(ctx context.Context, cs *Client, ns, run string, dropNS bool) []string {
	sel := LabelManaged + "=pullpath"
	if run != "" {
		sel += "," + LabelRun + "=" + run
	}
	lo := metav1.ListOptions{LabelSelector: sel}
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	if pl, err := cs.Core.Pods(ns).List(ctx, lo); err == nil {
		for _, p := range pl.Items {
			_ = cs.Core.Pods(ns).Delete(ctx, p.Name, del)
		}
	}
	if l, err := cs.Core.ConfigMaps(ns).List(ctx, lo); err == nil {
		for _, c := range l.Items {
			_ = cs.Core.ConfigMaps(ns).Delete(ctx, c.Name, del)
		}
	}
	if l, err := cs.Core.Secrets(ns).List(ctx, lo); err == nil {
		for _, s := range l.Items {
			_ = cs.Core.Secrets(ns).Delete(ctx, s.Name, del)
		}
	}
	var left []string
	_ = poll(ctx, 20*time.Second, func() bool {
		left = left[:0]
		if pl, err := cs.Core.Pods(ns).List(ctx, lo); err == nil {
			for _, p := range pl.Items {
				left = append(left, "pod/"+ns+"/"+p.Name)
			}
		} else {
			left = append(left, "pods/"+ns+" (cannot list: "+shortErr(err)+")")
		}
		if l, err := cs.Core.ConfigMaps(ns).List(ctx, lo); err == nil {
			for _, c := range l.Items {
				left = append(left, "configmap/"+ns+"/"+c.Name)
			}
		}
		if l, err := cs.Core.Secrets(ns).List(ctx, lo); err == nil {
			for _, s := range l.Items {
				left = append(left, "secret/"+ns+"/"+s.Name)
			}
		}
		return len(left) == 0
	})
	if dropNS && len(left) == 0 {
		if err := cs.Core.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			left = append(left, "namespace/"+ns)
		}
	}
	if left == nil {
		left = []string{}
	}
	return left
}

// ImageRegistry is the registry part of an image reference, for messages.
func ImageRegistry(image string) string {
	if r, err := registry.ParseReference(image); err == nil {
		return r.Registry
	}
	return ""
}
