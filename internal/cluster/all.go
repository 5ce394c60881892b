package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/pullpath/pullpath/internal/report"
)

// maxCandidates bounds the pods named by a pull-failure event that were not among the Pending
// pods (a Running pod whose container restarts into a failed pull, or a pod since deleted).
const maxCandidates = 20_000

// Selectors of pod --all's lists. A pod that waits for its first pull is Pending; one whose
// container restarts into a failed pull is Running, and the kubelet's Failed event names it.
const (
	pendingPods  = "status.phase=Pending"
	runningPods  = "status.phase=Running"
	pullWarnings = "involvedObject.kind=Pod,type=Warning,reason=Failed"
)

// allRun is one pod --all: the pods waiting for an image, their folded events, and what could not
// be read.
type allRun struct {
	cs      *Client
	out     *report.PullFailures
	scopes  []string                  // "" (every namespace) or the namespaces read one by one
	failing map[types.UID]*corev1.Pod // slim pods waiting for an image
	order   []types.UID
	events  map[types.UID]*eventSet
	named   map[types.UID]bool // pods a pull-failure event names that were not Pending
	pending map[types.UID]bool // every Pending pod read
}

// DiagnoseAll finds every pod of ns ("" for all namespaces) with a container waiting for an image,
// explains each from its own events, and groups them by image and cause. Its requests do not grow
// with the failing pods: the Pending pods (a field selector), the pods' Failed warnings (field
// selectors), the Running pods only when such a warning names a pod that is not Pending, and the
// nodes' metadata for their pools, each list paged (listPage). Only the failing pods and a bounded
// set of events per pod are kept. What could not be read (a namespace without list rights, a
// continue token that expired, a list cut at maxListed) makes the answer partial, with a note.
//
// With o's CredentialVerification it also runs the KEP-2535 pre-flight (credentialVerification).
func DiagnoseAll(ctx context.Context, cs *Client, ns string, o ...AllOptions) (*report.PullFailures, error) {
	a := &allRun{cs: cs, failing: map[types.UID]*corev1.Pod{}, events: map[types.UID]*eventSet{}, named: map[types.UID]bool{},
		pending: map[types.UID]bool{}, out: &report.PullFailures{APIVersion: report.APIVersion, Kind: "PullFailureList", Namespace: ns, Class: report.ClassOK,
			Groups: []report.PullFailureGroup{}, Notes: []string{}}}
	if err := a.readPods(ctx, ns, pendingPods); err != nil {
		return nil, err
	}
	a.readEvents(ctx)
	if len(a.named) > 0 {
		for _, scope := range a.scopes {
			a.listPods(ctx, scope, runningPods, "Running pods")
		}
	}
	a.group(ctx)
	if len(o) > 0 && o[0].CredentialVerification != "" {
		a.credentialVerification(ctx, o[0])
	}
	return a.out, nil
}

// readPods lists the pods of sel in ns. At cluster scope, a refusal makes it read the namespaces
// one by one (list on namespaces), and a namespace whose pods cannot be listed is named in a note;
// when the namespaces cannot be listed either, the refusal is the error.
func (a *allRun) readPods(ctx context.Context, ns, sel string) error {
	err := a.listPods(ctx, ns, sel, "Pending pods")
	if err == nil {
		a.scopes = []string{ns}
		return nil
	}
	if ns != "" || !isForbidden(err) {
		return err
	}
	var names []string
	_, lerr := paged(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (metav1.ListMeta, int, error) {
		l, err := a.cs.Core.Namespaces().List(ctx, o)
		if err != nil {
			return metav1.ListMeta{}, 0, err
		}
		for i := range l.Items {
			names = append(names, l.Items[i].Name)
		}
		return l.ListMeta, len(l.Items), nil
	})
	if lerr != nil {
		return fmt.Errorf("%w; nor could the namespaces be listed to read them one by one (%s)", err, ShortErr(APIError(lerr, "list", "namespaces", "", "")))
	}
	a.note("pods of all namespaces could not be listed (%s): the %d namespaces were read one by one", ShortErr(err), len(names))
	var refused []string
	why := ""
	for _, n := range names {
		if err := a.listPods(ctx, n, sel, "Pending pods"); err != nil {
			refused = append(refused, n)
			why = ShortErr(err)
			a.out.Partial = true
			continue
		}
		a.scopes = append(a.scopes, n)
	}
	if len(refused) > 0 {
		a.note("not read: the pods of %s %s (%s): pull failures there are not counted", plural(len(refused), "namespace", "namespaces"), report.JoinCut(refused, 10), why)
	}
	return nil
}

// listPods reads the pods of sel in ns and keeps those waiting for an image (the Running ones only
// when an event named them). The first page's error is returned.
func (a *allRun) listPods(ctx context.Context, ns, sel, what string) error {
	running := sel == runningPods
	l, err := paged(ctx, metav1.ListOptions{FieldSelector: sel}, func(ctx context.Context, o metav1.ListOptions) (metav1.ListMeta, int, error) {
		pl, err := a.cs.lists().Pods(ns).List(ctx, o)
		if err != nil {
			return metav1.ListMeta{}, 0, err
		}
		for i := range pl.Items {
			p := &pl.Items[i]
			if !running {
				a.pending[p.UID] = true
			}
			if _, seen := a.failing[p.UID]; seen || (running && !a.named[p.UID]) || waitingImage(p) == "" {
				continue
			}
			a.failing[p.UID] = slimPod(p)
			a.order = append(a.order, p.UID)
		}
		return pl.ListMeta, len(pl.Items), nil
	})
	if err != nil {
		return APIError(err, "list", "pods", ns, "")
	}
	a.out.PodsSeen += l.read
	a.cut(l, what, ns)
	return nil
}

// readEvents lists the pods' Failed warnings in every scope read and folds those of the failing
// pods; a pull failure about a pod that is not Pending names a candidate for the Running list.
func (a *allRun) readEvents(ctx context.Context) {
	for _, ns := range a.scopes {
		l, err := paged(ctx, metav1.ListOptions{FieldSelector: pullWarnings}, func(ctx context.Context, o metav1.ListOptions) (metav1.ListMeta, int, error) {
			el, err := a.cs.lists().Events(ns).List(ctx, o)
			if err != nil {
				return metav1.ListMeta{}, 0, err
			}
			for i := range el.Items {
				a.event(&el.Items[i])
			}
			return el.ListMeta, len(el.Items), nil
		})
		if err != nil {
			a.out.Partial = true
			a.note("the pods' events %s could not be read (%s): the pods there are grouped by their waiting message only", where(ns), ShortErr(APIError(err, "list", "events", ns, "")))
			continue
		}
		a.cut(l, "events", ns)
	}
}

func (a *allRun) event(e *corev1.Event) {
	// as asked: a server (or a proxy in front of it) that ignores the selector must not mix in
	// other objects' events
	if e.InvolvedObject.Kind != "Pod" || e.Type != corev1.EventTypeWarning {
		return
	}
	uid := e.InvolvedObject.UID
	if _, ok := a.failing[uid]; !ok && !a.named[uid] {
		if a.pending[uid] || !pullMessage(e.Message) || len(a.named) >= maxCandidates {
			return
		}
		a.named[uid] = true
	}
	s := a.events[uid]
	if s == nil {
		s = &eventSet{}
		a.events[uid] = s
	}
	s.add(e)
}

// pullMessage says whether a kubelet Failed message is about an image pull.
func pullMessage(m string) bool {
	return strings.Contains(m, "pull") || strings.Contains(m, "Pull") || strings.Contains(m, "image")
}

// group explains each failing pod from its events and groups the pods by image and cause.
func (a *allRun) group(ctx context.Context) {
	pools := a.pools(ctx)
	index := map[string]int{}
	// pods failing the same way say the same words: explain each wording once
	memo := map[string][]report.Finding{}
	for _, uid := range a.order {
		p := a.failing[uid]
		var evs []corev1.Event
		if s := a.events[uid]; s != nil {
			evs = s.sorted()
		}
		w := wording(p, evs)
		fs, ok := memo[w]
		if !ok {
			fs = Explain(p, evs)
			memo[w] = fs
		}
		g := report.PullFailureGroup{Image: waitingImage(p), Class: report.ClassOther, Code: report.CodeUnknown, Reason: "no event explains it yet"}
		if len(fs) > 0 {
			f := fs[0]
			g.Class, g.Code, g.Host, g.Role, g.Reason = f.Class, f.Code, f.Host, f.Role, f.Reason
		}
		key := g.Image + "|" + string(g.Class) + "|" + string(g.Code) + "|" + g.Host
		k, ok := index[key]
		if !ok {
			g.Command = "pullpath pod " + p.Name + " -n " + p.Namespace
			g.Pods, g.Nodes, g.Pools = []string{}, []string{}, []string{}
			k = len(a.out.Groups)
			index[key] = k
			a.out.Groups = append(a.out.Groups, g)
		}
		gr := &a.out.Groups[k]
		gr.Pods = append(gr.Pods, p.Namespace+"/"+p.Name)
		if n := p.Spec.NodeName; n != "" {
			gr.Nodes = appendNew(gr.Nodes, n)
			if pool, ok := pools[n]; ok {
				gr.Pools = appendNew(gr.Pools, pool)
			}
		}
	}
	sort.SliceStable(a.out.Groups, func(i, j int) bool { return len(a.out.Groups[i].Pods) > len(a.out.Groups[j].Pods) })
	if len(a.out.Groups) > 0 {
		a.out.Class = a.out.Groups[0].Class
	}
}

// wording is what explain reads of a pod and its events: the containers' images and states and
// the events' reasons and messages, in order (names and times aside, the answer depends on these
// only).
func wording(p *corev1.Pod, evs []corev1.Event) string {
	var b strings.Builder
	for _, c := range podRef(p).Containers {
		fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s\x00%s\x01", c.Name, c.Image, c.State, c.Reason, c.Message)
	}
	for i := range evs {
		fmt.Fprintf(&b, "%s\x00%s\x00%s\x01", evs[i].Type, evs[i].Reason, evs[i].Message)
	}
	return b.String()
}

// pools reads the pool of every node from the nodes' metadata only (labels and annotations: a
// node's image list is most of its size), when a failing pod is on a node.
func (a *allRun) pools(ctx context.Context) map[string]string {
	pools := map[string]string{}
	placed := false
	for _, p := range a.failing {
		placed = placed || p.Spec.NodeName != ""
	}
	if !placed {
		return pools
	}
	l, err := nodeMetadata(ctx, a.cs, func(n *corev1.Node) { pools[n.Name], _ = Pool(n) })
	if err != nil {
		a.note("the nodes could not be listed (%s): the groups name no pools", ShortErr(APIError(err, "list", "nodes", "", "")))
		return pools
	}
	a.cut(l, "nodes", "")
	return pools
}

// nodeMetadata lists every node's metadata, paged, as PartialObjectMetadata where the client talks
// to an API server (the fake clientset of the tests has no REST client: it lists nodes).
func nodeMetadata(ctx context.Context, cs *Client, each func(*corev1.Node)) (listed, error) {
	rc, _ := cs.Core.RESTClient().(*rest.RESTClient)
	return paged(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (metav1.ListMeta, int, error) {
		if rc == nil {
			nl, err := cs.Core.Nodes().List(ctx, o)
			if err != nil {
				return metav1.ListMeta{}, 0, err
			}
			for i := range nl.Items {
				each(&nl.Items[i])
			}
			return nl.ListMeta, len(nl.Items), nil
		}
		var ml metav1.PartialObjectMetadataList
		err := rc.Get().Resource("nodes").VersionedParams(&o, metav1.ParameterCodec).
			SetHeader("Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json").
			Do(ctx).Into(&ml)
		if err != nil {
			return metav1.ListMeta{}, 0, err
		}
		for i := range ml.Items {
			each(&corev1.Node{ObjectMeta: ml.Items[i].ObjectMeta})
		}
		return ml.ListMeta, len(ml.Items), nil
	})
}

// cut notes a list that stopped before its end.
func (a *allRun) cut(l listed, what, ns string) {
	if l.cut == "" {
		return
	}
	a.out.Partial = true
	a.note("the list of %s %s: %s; the answer is partial", what, where(ns), l.cut)
}

func (a *allRun) note(format string, args ...any) {
	a.out.Notes = append(a.out.Notes, fmt.Sprintf(format, args...))
}

func where(ns string) string {
	if ns == "" {
		return "in all namespaces"
	}
	return "in namespace " + ns
}

// waitingImage is the image of the pod's first container waiting for a pull, or "".
func waitingImage(p *corev1.Pod) string {
	for _, c := range podRef(p).Containers {
		if c.State == "waiting" && pullWaitReasons[c.Reason] {
			return c.Image
		}
	}
	return ""
}

// slimPod is what of a pod explain and the grouping read: no managed fields, annotations, volumes
// or environment.
func slimPod(p *corev1.Pod) *corev1.Pod {
	s := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, OwnerReferences: p.OwnerReferences,
		CreationTimestamp: p.CreationTimestamp},
		Spec: corev1.PodSpec{NodeName: p.Spec.NodeName, ImagePullSecrets: p.Spec.ImagePullSecrets, ServiceAccountName: p.Spec.ServiceAccountName},
		Status: corev1.PodStatus{Phase: p.Status.Phase, Reason: p.Status.Reason, Message: p.Status.Message,
			ContainerStatuses: p.Status.ContainerStatuses, InitContainerStatuses: p.Status.InitContainerStatuses}}
	for _, c := range p.Spec.InitContainers {
		s.Spec.InitContainers = append(s.Spec.InitContainers, corev1.Container{Name: c.Name, Image: c.Image, ImagePullPolicy: c.ImagePullPolicy})
	}
	for _, c := range p.Spec.Containers {
		s.Spec.Containers = append(s.Spec.Containers, corev1.Container{Name: c.Name, Image: c.Image, ImagePullPolicy: c.ImagePullPolicy})
	}
	return s
}

func isForbidden(err error) bool {
	var re *RBACError
	return errors.As(err, &re)
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
