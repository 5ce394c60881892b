package nodeprobe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/report"
)

// Delivery modes (report.PoolResult.Delivery).
const (
	ModeAttach    = "attach"
	ModeConfigMap = "configmap"
	ModeImage     = "image"
)

// VerifyOptions describe one verification run.
type VerifyOptions struct {
	Image     string
	Pools     []string // only these pools; empty: every pool
	AllNodes  bool     // probe every eligible node, not one per pool
	Fresh     bool     // insist on a node without the image in its cache
	Namespace string   // where the run's objects live; must allow hostNetwork and hostPath (Pod Security "privileged")
	// SecretNamespace/Secret name a pull secret to pull with; FromPod (namespace/name) takes every
	// pull secret of that pod that covers the image, as its kubelet tries them. Each is copied into
	// Namespace for the run and handed to the probe as ProbeFromPod's are.
	SecretNamespace, Secret string
	FromPod                 string // namespace/name
	// FromServiceAccount (namespace/name) takes that account's imagePullSecrets that cover the
	// image, as the kubelet tries them for a pod of it (watch --service-account)
	FromServiceAccount string
	IncludeUnready     bool // also NotReady and cordoned nodes
	RuntimePull        bool // a canary pod with the image beside each probe: the kubelet's real pull
	// Binary gives the static linux probe for goarch and where it came from.
	Binary func(goarch string) (bin []byte, source string, err error)
	// Delivery is how the binary reaches the nodes: "attach" streams it into the probe pod's memory
	// through the attach API (nothing stored but the few-KB loader), "configmap" stores it in
	// ConfigMaps the kubelet mounts, "auto" (or "") attaches when the identity may and falls back to
	// ConfigMaps when it may not, or when a node's stream fails.
	Delivery string
	// ProbeImage, when set, is the probe image (pullpath image push) the probe pods run, pulled
	// by the node (IfNotPresent), instead of the binary in ConfigMaps on an image already there.
	ProbeImage string
	// ProbeFromPod (namespace/name) also runs ProbeImage in that pod's network namespace, as an
	// ephemeral container, to set beside the node's verdict.
	ProbeFromPod string
	HostMount    string // what of the node the probe pods mount under /host: HostMountRoot ("") or HostMountNarrow
	// SandboxImages are more repositories a node's sandbox image comes from, beside cluster.SandboxRepos:
	// the probe runs on no other image without a pull
	SandboxImages []string
	ProbeArgs     []string      // extra probe flags (timeouts)
	Timeout       time.Duration // per probe pod, from create to result
	Concurrency   int
	MaxImages     int
	Progress      func(string)
}

// run is one verification in flight.
type run struct {
	cs    *cluster.Client
	o     VerifyOptions
	id    string
	owner *corev1.ConfigMap
	// secrets are the copies of the pull secrets the node probes present, in o.Namespace, in
	// order; secretEnv hands them to the probe; pullSecrets say what became of each source.
	secrets     []string
	secretEnv   []corev1.EnvVar
	pullSecrets []report.PodPullSecret
	mu          sync.Mutex
	dmu         sync.Mutex           // deliver's: held while it writes the binary's ConfigMaps
	bins        map[string]*delivery // goarch+"/"+mode → how the probe binary reaches such a node
	loaders     map[string]string    // goarch → the loader's ConfigMap
	loaderUIDs  map[string]types.UID // goarch → the UID of the loader ConfigMap the run made
	mode        string               // the delivery the pools start with: attach, configmap or image
	stored      report.Stored        // what the run wrote to the API
	expires     time.Time            // after this the run is surely over (cluster.LabelExpires); zero: a watcher's
	by          string               // cluster.LabelBy: who made the run's objects, when not verify
	notes       []string
	madeNS      bool
	// srcPod and srcSecret are what --pod and --secret name, read before anything is created
	srcPod    *corev1.Pod
	srcSecret *corev1.Secret
}

// delivery is the probe binary for one architecture and mode: the loader's ConfigMap, and the
// binary either kept here to be streamed (attach) or stored as ConfigMap parts.
type delivery struct {
	mode   string
	loader string
	parts  []string // ConfigMap names, in order (configmap)
	bin    []byte   // the binary (attach)
	size   int
	sha256 string // hex: the loader runs nothing else
	source string
	err    error
}

// Verify runs the probe on a node of every pool (or every node) through probe pods that need no
// pull, and returns the verdict per pool. Everything it creates is deleted before it returns, on
// every path (ctx cancelled included); what could not be deleted is listed in LeftBehind.
func Verify(ctx context.Context, cs *cluster.Client, o VerifyOptions) (v *report.Verification, err error) {
	start := time.Now()
	r := newRun(ctx, cs, o)
	o = r.o
	v = &report.Verification{APIVersion: report.APIVersion, Kind: "Verification", Image: o.Image, Run: r.id, Namespace: o.Namespace,
		Pools: []report.PoolResult{}, LeftBehind: []string{}, Started: start.UTC()}
	if err := r.checkRights(ctx); err != nil {
		return nil, err
	}
	if err := r.readSources(ctx); err != nil {
		return nil, err
	}
	targets, err := r.choose(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		// cleanup on every path, with its own time and retries: ctx may be cancelled already, and
		// the API server may be restarting
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cluster.CleanupTimeout)
		defer cancel()
		v.LeftBehind = r.cleanup(cctx)
		v.Stored = r.stored
		v.Notes = append(v.Notes, r.notes...)
		v.PullSecrets = r.pullSecrets
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
	var g errgroup.Group
	g.SetLimit(o.Concurrency) // Go waits for a free slot
	for i, t := range targets {
		results[i] = t.Result
		if t.Node == nil {
			continue
		}
		g.Go(func() error {
			if ctx.Err() != nil { // cut while it waited for a slot
				results[i].Class, results[i].Error = report.ClassOther, "cut before the probe started: "+context.Cause(ctx).Error()
				return nil
			}
			r.verifyNode(ctx, t.Node, &results[i])
			r.progress(fmt.Sprintf("pool %s: %s on %s", results[i].Pool, results[i].Class, results[i].Node))
			return nil
		})
	}
	_ = g.Wait() // results carry each pool's outcome
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

// newRun is a run with o's defaults filled in and its expiry after ctx's deadline.
func newRun(ctx context.Context, cs *cluster.Client, o VerifyOptions) *run {
	if o.Concurrency <= 0 {
		o.Concurrency = 10
	}
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.MaxImages <= 0 {
		o.MaxImages = cluster.DefaultMaxImages
	}
	r := &run{cs: cs, o: o, id: newID(), bins: map[string]*delivery{}, loaders: map[string]string{}, loaderUIDs: map[string]types.UID{}, expires: time.Now().Add(24 * time.Hour)}
	if d, ok := ctx.Deadline(); ok {
		r.expires = d.Add(cluster.CleanupTimeout + time.Minute)
	}
	return r
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
	n := fmt.Sprintf(format, args...)
	if slices.Contains(r.notes, n) {
		return // the same refusal met by several pools' reads
	}
	r.notes = append(r.notes, n)
}

func (r *run) labels(role string) map[string]string {
	l := map[string]string{cluster.LabelManaged: "pullpath", cluster.LabelRun: r.id, cluster.LabelRole: role}
	if !r.expires.IsZero() {
		l[cluster.LabelExpires] = strconv.FormatInt(r.expires.Unix(), 10)
	}
	if r.by != "" {
		l[cluster.LabelBy] = r.by
	}
	return l
}

func (r *run) meta(name, role string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: r.o.Namespace, Labels: r.labels(role)}
	if r.owner != nil {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: r.owner.Name, UID: r.owner.UID}}
	}
	return m
}

// delivery names how the probe reaches the nodes, as checkRights settled it.
func (r *run) delivery() string {
	return r.mode
}

// store counts an object the run wrote to the API.
func (r *run) store(data map[string][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stored.Objects++
	for k, v := range data {
		r.stored.Bytes += len(k) + len(v)
	}
}

// cleanup deletes every object of the run, then lists what is left.
func (r *run) cleanup(ctx context.Context) []string {
	// a watcher lists no secret and holds no right to: its copies (watch --secret) go by name
	o := cluster.CleanupOptions{Namespace: r.o.Namespace, Run: r.id, DropNamespace: r.madeNS}
	if r.by == cluster.ByWatch {
		o.NoSecrets, o.Secrets = true, r.secrets
	}
	left, err := cluster.Cleanup(ctx, r.cs, o)
	if err != nil && len(left) == 0 {
		left = []string{"objects of run " + r.id + " in namespace " + r.o.Namespace + " (" + cluster.ShortErr(err) + ")"}
	}
	return left
}
