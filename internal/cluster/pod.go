package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/pullpath/pullpath/internal/events"
	"github.com/pullpath/pullpath/internal/report"
)

// DefaultMaxImages is the kubelet's default nodeStatusMaxImages: a node whose status.images is
// this long may hold more images than it lists.
const DefaultMaxImages = 50

// Options tune a diagnosis.
type Options struct {
	// MaxImages is the image-list cap assumed for nodes whose kubelet configuration cannot be
	// read; default DefaultMaxImages.
	MaxImages int
	// KubeletConfig reads each undecided node's nodeStatusMaxImages from the kubelet's /configz
	// through the API server (needs get on nodes/proxy); without it, MaxImages is assumed.
	KubeletConfig bool
}

func (o *Options) defaults() {
	if o.MaxImages == 0 {
		o.MaxImages = DefaultMaxImages
	}
}

// pullWaitReasons are the waiting reasons of a container whose image could not be had.
var pullWaitReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true,
	"InvalidImageName": true, "RegistryUnavailable": true, "ImageInspectError": true, "PullImageError": true}

// DiagnosePod reads the pod ns/name and everything around it. An error means the diagnosis could
// not run (no such pod, no rights: the error names the RBAC verb that was missing).
func DiagnosePod(ctx context.Context, cs *Client, ns, name string, o Options) (*report.PodDiagnosis, error) {
	o.defaults()
	pod, err := cs.Core.Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, NotFound(ctx, cs, "pod", ns, name)
		}
		return nil, APIError(err, "get", "pods", ns, name)
	}
	d := &report.PodDiagnosis{APIVersion: report.APIVersion, Kind: "PodDiagnosis", Pod: podRef(pod),
		Findings: []report.Finding{}, Nodes: []report.NodeImage{}, RunningElsewhere: []report.RunningPod{}, Timeline: []report.TimelineEntry{}}
	evs, err := podEvents(ctx, cs, pod, &d.Notes)
	if err != nil {
		return nil, err
	}
	d.Findings = Explain(pod, evs)
	image := failingImage(pod, d.Findings)
	if image == "" {
		d.Class = report.ClassOK
		return d, nil
	}
	d.Class = report.ClassOther
	if len(d.Findings) > 0 {
		d.Class = d.Findings[0].Class
	}
	c := &census{cs: cs, o: o, image: image, notes: &d.Notes}
	if err := c.read(ctx, ns); err != nil {
		return nil, err
	}
	c.fill(ctx, d, pod)
	d.Credentials = credentials(ctx, cs, pod, image, c.nodeOf(pod.Spec.NodeName), &d.Notes)
	d.Timeline, d.TimelineOmitted = c.timeline(ctx, pod, evs)
	d.Next = c.next(d, pod)
	return d, nil
}

func podRef(p *corev1.Pod) report.PodRef {
	r := report.PodRef{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase), Containers: []report.ContainerRef{}}
	if ow := metav1.GetControllerOf(p); ow != nil {
		r.Owner = ow.Kind + "/" + ow.Name
	}
	images := map[string]string{}
	for _, c := range p.Spec.InitContainers {
		images["init/"+c.Name] = c.Image
	}
	for _, c := range p.Spec.Containers {
		images[c.Name] = c.Image
	}
	add := func(sts []corev1.ContainerStatus, init bool) {
		for _, s := range sts {
			key := s.Name
			if init {
				key = "init/" + s.Name
			}
			c := report.ContainerRef{Name: s.Name, Init: init, Image: images[key], ImageID: s.ImageID, State: "unknown"}
			switch {
			case s.State.Waiting != nil:
				c.State, c.Reason, c.Message = "waiting", s.State.Waiting.Reason, s.State.Waiting.Message
			case s.State.Running != nil:
				c.State = "running"
			case s.State.Terminated != nil:
				c.State, c.Reason = "terminated", s.State.Terminated.Reason
			}
			delete(images, key)
			r.Containers = append(r.Containers, c)
		}
	}
	add(p.Status.InitContainerStatuses, true)
	add(p.Status.ContainerStatuses, false)
	// containers without a status yet (pending pod)
	for _, c := range p.Spec.InitContainers {
		if _, ok := images["init/"+c.Name]; ok {
			r.Containers = append(r.Containers, report.ContainerRef{Name: c.Name, Init: true, Image: c.Image, State: "unknown"})
		}
	}
	for _, c := range p.Spec.Containers {
		if _, ok := images[c.Name]; ok {
			r.Containers = append(r.Containers, report.ContainerRef{Name: c.Name, Image: c.Image, State: "unknown"})
		}
	}
	return r
}

// podEvents returns the pod's events and those of its controller (a ReplicaSet or Job can carry
// the failure of a pod it could not create), each folded into a bounded set (a pod with 10,000
// events is a few entries with their counts), oldest first.
func podEvents(ctx context.Context, cs *Client, p *corev1.Pod, notes *[]string) ([]corev1.Event, error) {
	s, l, err := objectEvents(ctx, cs, p.Namespace, p.UID)
	if err != nil {
		return nil, APIError(err, "list", "events", p.Namespace, "")
	}
	sets := []*eventSet{s}
	if l.cut != "" {
		*notes = append(*notes, "the list of the pod's events: "+l.cut)
	}
	if ow := metav1.GetControllerOf(p); ow != nil {
		if os, _, err := objectEvents(ctx, cs, p.Namespace, ow.UID); err == nil {
			sets = append(sets, os)
		}
	}
	var out []corev1.Event
	for _, s := range sets {
		out = append(out, s.evs...)
		if s.dropped > 0 {
			*notes = append(*notes, fmt.Sprintf("%d more distinct events (%d in all) were folded away: the %d newest distinct messages are kept", s.dropped, s.dropCnt, maxEventsPerObject))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return eventTime(&out[i]).Before(eventTime(&out[j])) })
	return out, nil
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func lastTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	}
	return eventTime(e)
}

// Explain hands the pod and its events to explain's own reader, so that pod and explain say the
// same thing about the same failure.
func Explain(p *corev1.Pod, evs []corev1.Event) []report.Finding {
	items := []any{podObject(p)}
	for i := range evs {
		e := evs[i]
		e.Kind, e.APIVersion = "Event", "v1"
		items = append(items, e)
	}
	b, err := json.Marshal(map[string]any{"kind": "List", "apiVersion": "v1", "items": items})
	if err != nil {
		return []report.Finding{}
	}
	msgs, _, err := events.Parse(bytes.NewReader(b))
	if err != nil {
		return []report.Finding{}
	}
	f := events.Explain(msgs)
	if f == nil {
		f = []report.Finding{}
	}
	return f
}

func podObject(p *corev1.Pod) *corev1.Pod {
	c := p.DeepCopy()
	c.Kind, c.APIVersion = "Pod", "v1"
	c.ManagedFields = nil
	return c
}

// failingImage is the image of the first container waiting for a pull, or the image a finding names.
func failingImage(p *corev1.Pod, fs []report.Finding) string {
	for _, c := range podRef(p).Containers {
		if c.State == "waiting" && pullWaitReasons[c.Reason] {
			return c.Image
		}
	}
	for _, f := range fs {
		if f.Image != "" {
			return f.Image
		}
	}
	return ""
}

// NotFound is the error for an object (kind "pod", "secret") the API server did not find. A get on
// a namespaced object says NotFound for its namespace too, so the namespace is asked about
// (bounded: this is an error path), and when it cannot be read the question is left to the reader.
func NotFound(ctx context.Context, cs *Client, kind, ns, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := cs.Core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil:
		return fmt.Errorf("%s %s not found in namespace %s", kind, name, ns)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("namespace %s does not exist (kubectl get namespaces lists them)", ns)
	}
	return fmt.Errorf("%s %s not found in namespace %s (does the namespace exist? kubectl get namespaces lists them; it was not read: %s)", kind, name, ns, ShortErr(APIError(err, "get", "namespaces", "", ns)))
}

// APIError turns an API error into one that says what was asked and, for a refusal, which RBAC
// verb on which resource the identity lacks.
func APIError(err error, verb, resource, ns, name string) error {
	what := resource
	if name != "" {
		what += " " + name
	}
	where := "at cluster scope"
	if ns != "" {
		where = "in namespace " + ns
	}
	switch {
	case apierrors.IsForbidden(err):
		return &RBACError{Verb: verb, Resource: resource, Namespace: ns, Err: err}
	case apierrors.IsNotFound(err) && name != "":
		return fmt.Errorf("%s not found %s", what, where)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the cluster refused the credentials of the kubeconfig (401) when asked to %s %s: log in again", verb, what)
	}
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return fmt.Errorf("%s %s %s: %v", verb, what, where, err)
	}
	if unreachable(err) {
		return fmt.Errorf("cannot reach the cluster to %s %s: %w", verb, what, err)
	}
	// client-go refused the request before sending it (an invalid name: its error says which), or
	// could not read the answer: the cluster was reached, or never asked
	return fmt.Errorf("cannot %s %s %s: %w", verb, what, where, err)
}

// unreachable reports whether err is the connection's: a dial, TLS or transport failure (client-go
// wraps them in *url.Error, a net.Error), or a connection cut while the answer was read.
func unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// MaxRawRead bounds what a raw read takes from the API: a probe's log (its report) or a kubelet's
// endpoint come from a node, and a node may be tampered with. A probe's report is tens of KB.
const MaxRawRead = 4 << 20

// RawRead does a raw request (a pod's log, a kubelet's endpoint through nodes/proxy) and returns
// its body, refused when longer than MaxRawRead: the bytes read are bounded here, whatever the
// server does with LimitBytes. The Status the API server sent with a refusal becomes the error,
// so a refusal is named as every other one is.
func RawRead(ctx context.Context, req *rest.Request, verb, resource, ns, name string) ([]byte, error) {
	rc, err := req.Stream(ctx)
	if err != nil {
		return nil, APIError(err, verb, resource, ns, name)
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, MaxRawRead+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s %s: %w", verb, resource, name, err)
	}
	if len(raw) > MaxRawRead {
		return nil, fmt.Errorf("%s %s %s: longer than %d bytes, not read", verb, resource, name, MaxRawRead)
	}
	return raw, nil
}

// RBACError is a request the API server refused for lack of rights.
type RBACError struct {
	Verb, Resource, Namespace string
	Err                       error
}

func (e *RBACError) Error() string {
	scope := "at cluster scope"
	if e.Namespace != "" {
		scope = "in namespace " + e.Namespace
	}
	if m := e.admission(); m != "" {
		return fmt.Sprintf("the API server refused to %s %s %s: %s", e.Verb, e.Resource, scope, m)
	}
	return fmt.Sprintf("not allowed to %s %s %s: the identity needs RBAC verb %q on %q %s (see deploy/rbac.yaml)", e.Verb, e.Resource, scope, e.Verb, e.Resource, scope)
}

// Short is the refusal in the words every note and problem uses: "no RBAC get on pods/log", or
// the server's own message when admission, not RBAC, refused.
func (e *RBACError) Short() string {
	if m := e.admission(); m != "" {
		return m
	}
	return "no RBAC " + e.Verb + " on " + e.Resource
}

// admission is the server's message when something other than RBAC refused (an admission plugin,
// a terminating namespace), "" for an RBAC refusal. A raw read (DoRaw) whose Status body was not
// decoded carries only client-go's "unknown (get pods NAME)": the server said nothing else, and a
// 403 without a reason is RBAC's.
func (e *RBACError) admission() string {
	var se apierrors.APIStatus
	if !errors.As(e.Err, &se) || apierrors.IsUnexpectedServerError(e.Err) {
		return ""
	}
	if m := se.Status().Message; m != "" && !strings.Contains(m, "cannot "+e.Verb+" resource") {
		return m
	}
	return ""
}

func (e *RBACError) Unwrap() error { return e.Err }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
