package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/registry"
)

// Labels every object of a run carries; `pullpath cleanup` deletes by them.
const (
	LabelManaged = "app.kubernetes.io/managed-by" // = "pullpath"
	LabelRun     = "pullpath.dev/run"
	LabelRole    = "pullpath.dev/role" // owner, binary, loader, secret, probe, canary
	LabelPool    = "pullpath.dev/pool-hash"
	LabelBy      = "pullpath.dev/by" // = ByWatch on a watcher's objects
	ByWatch      = "watch"
)

// CleanupTimeout bounds verify's own cleanup: long enough to outlast an API server restart.
const CleanupTimeout = 2 * time.Minute

// cleanupPass bounds one pass of Cleanup's requests.
const cleanupPass = 10 * time.Second

// LabelExpires is on every object of a run: the Unix time after which the run is surely over
// (its deadline and cleanup's). `pullpath cleanup --expired` deletes only such objects, so it can
// run on a schedule without touching a run in flight.
const LabelExpires = "pullpath.dev/expires"

// WatchStatusConfigMap is the watcher's status (in its run namespace). Its AnnotationHeartbeat
// annotation says when the watcher last wrote it: at least every WatchHeartbeat.
const WatchStatusConfigMap = "pullpath-watch-status"

const (
	// AnnotationHeartbeat annotates the watcher's status ConfigMap with the Unix time of its last write.
	AnnotationHeartbeat = "pullpath.dev/heartbeat"
	// WatchHeartbeat is how often a running watcher writes its status at least.
	WatchHeartbeat = time.Minute
	// watchAlive is how long after a heartbeat a watcher counts as running: three missed
	// heartbeats, and clock skew between the watcher's machine and cleanup's.
	watchAlive = 5 * WatchHeartbeat
	// NotByWatch selects the objects no watcher made (a label selector).
	NotByWatch = LabelBy + "!=" + ByWatch
)

// LiveWatch reports whether a watcher is running in namespace ns: its status ConfigMap's
// heartbeat is recent. It needs only cleanup's own list on ConfigMaps; since is the heartbeat.
func LiveWatch(ctx context.Context, cs *Client, ns string) (live bool, since time.Time, err error) {
	cms, err := cs.Core.ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=pullpath," + LabelBy + "=" + ByWatch})
	if err != nil {
		return false, time.Time{}, err
	}
	for _, c := range cms.Items {
		if c.Name != WatchStatusConfigMap {
			continue
		}
		t, err := strconv.ParseInt(c.Annotations[AnnotationHeartbeat], 10, 64)
		if err != nil {
			continue
		}
		hb := time.Unix(t, 0)
		if d := time.Since(hb); d < watchAlive && d > -watchAlive {
			return true, hb, nil
		}
	}
	return false, time.Time{}, nil
}

// CleanupOptions choose what Cleanup deletes.
type CleanupOptions struct {
	Namespace     string
	Run           string   // one run's objects; "" every run's
	Expired       bool     // only objects whose LabelExpires is past
	Selector      string   // more label requirements (key=value,…)
	DropNamespace bool     // delete the namespace too, and wait until it is gone
	NoSecrets     bool     // no Secret is listed (a watcher may not): only Secrets, by name
	Secrets       []string // with NoSecrets, the caller's own copies, deleted by name
	// Logf, when set, says what a retry retries (once per distinct error): a long-lived caller
	// must not wait on an API server in silence
	Logf func(string)
}

// Cleanup deletes what pullpath made in a namespace and waits until it is gone. A failure that
// passes (the API server restarting, a timeout, a 5xx) is retried with backoff until ctx ends; a
// refusal that will not pass (401, 403, a 404 for the resource itself) stops it at once and is
// returned. left lists what remains (kind/namespace/name), an object that a finalizer holds
// with " (terminating: finalizer …)"; that is not an error.
func Cleanup(ctx context.Context, cs *Client, o CleanupOptions) (left []string, err error) {
	sel := LabelManaged + "=pullpath"
	if o.Run != "" {
		sel += "," + LabelRun + "=" + o.Run
	}
	if o.Selector != "" {
		sel += "," + o.Selector
	}
	lo := metav1.ListOptions{LabelSelector: sel}
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	ns := o.Namespace
	now := time.Now()
	due := func(labels map[string]string) bool {
		if !o.Expired {
			return true
		}
		t, err := strconv.ParseInt(labels[LabelExpires], 10, 64)
		return err == nil && now.Unix() > t
	}
	// one pass: delete what is found, and say what was there (nothing: done). Each pass has its
	// own bound: an API server that is stopped accepts connections and never answers.
	pass := func() ([]string, error) {
		ctx, cancel := context.WithTimeout(ctx, cleanupPass)
		defer cancel()
		sw := &sweeper{ns: ns, list: lo, del: del, due: due}
		err := sweep(ctx, sw, cs.Core.Pods(ns), "pods", "pod",
			func(l *corev1.PodList) []metav1.ObjectMeta {
				return metas(l.Items, func(p corev1.Pod) metav1.ObjectMeta { return p.ObjectMeta })
			})
		if err != nil {
			return nil, err
		}
		err = sweep(ctx, sw, cs.Core.ConfigMaps(ns), "configmaps", "configmap",
			func(l *corev1.ConfigMapList) []metav1.ObjectMeta {
				return metas(l.Items, func(c corev1.ConfigMap) metav1.ObjectMeta { return c.ObjectMeta })
			})
		found := sw.found
		if err != nil {
			return found, err
		}
		if o.NoSecrets {
			// a watcher lists no secret: its own copies (watch --secret) go by name
			for _, name := range o.Secrets {
				switch err := cs.Core.Secrets(ns).Delete(ctx, name, del); {
				case err == nil:
					found = append(found, "secret/"+ns+"/"+name)
				case !apierrors.IsNotFound(err):
					return nil, refusal(err, "delete", "secrets", ns)
				}
			}
			return found, nil
		}
		err = sweep(ctx, sw, cs.Core.Secrets(ns), "secrets", "secret",
			func(l *corev1.SecretList) []metav1.ObjectMeta {
				return metas(l.Items, func(s corev1.Secret) metav1.ObjectMeta { return s.ObjectMeta })
			})
		if err != nil {
			return nil, err
		}
		return sw.found, nil
	}
	backoff := 250 * time.Millisecond
	said := ""
	for {
		found, err := pass()
		if err != nil && Transient(err) && o.Logf != nil && ShortErr(err) != said {
			said = ShortErr(err)
			o.Logf(fmt.Sprintf("cleanup of namespace %s: %s; retrying until it answers", ns, said))
		}
		switch {
		case err != nil && !Transient(err) && refused(err) && ctx.Err() == nil:
			// the server refused, and will again. A failure on this side (client-go's rate limiter
			// refuses, in words of its own, a wait that would outlast ctx's deadline) is retried
			// until ctx ends like a transient one: what is left is then the answer, so the exit
			// code does not depend on the bound
			return left, err
		case err == nil && len(found) == 0:
			left = nil
			if o.DropNamespace {
				if err := dropNamespace(ctx, cs, ns); err != nil {
					return []string{"namespace/" + ns}, err
				}
			}
			return []string{}, nil
		case err == nil:
			left = found
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return withUnknown(left, ns, err), nil
			}
			sort.Strings(left)
			return left, nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 4*time.Second)
	}
}

// sweeper is one cleanup pass in one namespace: what it lists and deletes, and what it found.
type sweeper struct {
	ns    string
	list  metav1.ListOptions
	del   metav1.DeleteOptions
	due   func(labels map[string]string) bool
	found []string // kind/namespace/name, a terminating one with its finalizers
}

// objects is what sweep needs of a typed client (kube.Resource: pods, ConfigMaps, Secrets).
type objects[L any] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// sweep lists one kind (resource, as RBAC names it; kind, as left names it), then deletes what is
// due. An object already terminating (a finalizer holds it) is listed as found and not deleted
// again: a second delete changes nothing and costs a request each pass.
func sweep[L any](ctx context.Context, s *sweeper, c objects[L], resource, kind string, items func(L) []metav1.ObjectMeta) error {
	l, err := c.List(ctx, s.list)
	if err != nil {
		return refusal(err, "list", resource, s.ns)
	}
	for _, m := range items(l) {
		if !s.due(m.Labels) {
			continue
		}
		name := kind + "/" + s.ns + "/" + m.Name
		if m.DeletionTimestamp != nil {
			s.found = append(s.found, name+terminating(m.Finalizers))
			continue
		}
		s.found = append(s.found, name)
		if err := c.Delete(ctx, m.Name, s.del); err != nil && !apierrors.IsNotFound(err) {
			return refusal(err, "delete", resource, s.ns)
		}
	}
	return nil
}

// metas is the metadata of each item.
func metas[T any](items []T, meta func(T) metav1.ObjectMeta) []metav1.ObjectMeta {
	out := make([]metav1.ObjectMeta, len(items))
	for i, it := range items {
		out[i] = meta(it)
	}
	return out
}

// terminating is what a left object that is being deleted carries: the finalizers that hold it.
func terminating(finalizers []string) string {
	if len(finalizers) == 0 {
		return " (terminating)"
	}
	return " (terminating: finalizer " + strings.Join(finalizers, ", ") + ")"
}

// refusal names the request a refusal answered (RBACError: which verb on which resource), so
// the caller does not guess it; other errors are returned as they are.
func refusal(err error, verb, resource, ns string) error {
	if apierrors.IsForbidden(err) {
		return &RBACError{Verb: verb, Resource: resource, Namespace: ns, Err: err}
	}
	return err
}

// refused reports whether err is the API server's answer (a Status), not a failure on this side.
func refused(err error) bool {
	var se apierrors.APIStatus
	return errors.As(err, &se)
}

// withUnknown adds, when nothing could be listed, that the namespace's objects are unknown.
func withUnknown(left []string, ns string, err error) []string {
	if len(left) > 0 {
		return left
	}
	return []string{"pods, configmaps and secrets of namespace " + ns + " (cannot list: " + ShortErr(err) + ")"}
}

// dropNamespace deletes a namespace verify made and waits until it is gone (its finalizers run
// after its objects are deleted), retrying what passes.
func dropNamespace(ctx context.Context, cs *Client, ns string) error {
	backoff := 250 * time.Millisecond
	deleted := false
	for {
		var err error
		pctx, cancel := context.WithTimeout(ctx, cleanupPass)
		if !deleted {
			err = cs.Core.Namespaces().Delete(pctx, ns, metav1.DeleteOptions{})
			deleted = err == nil || apierrors.IsNotFound(err)
		}
		if deleted {
			_, err = cs.Core.Namespaces().Get(pctx, ns, metav1.GetOptions{})
		}
		cancel()
		if deleted && apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil && !Transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("namespace %s is still terminating", ns)
			}
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 4*time.Second)
	}
}

// Transient reports whether an API failure may pass by itself: the server restarting or
// overloaded, a timeout, a connection refused or reset. 401, 403 and 404 do not pass.
func Transient(err error) bool {
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		code := se.Status().Code
		return code >= 500 || code == 429
	}
	return unreachable(err) || errors.Is(err, context.DeadlineExceeded)
}

// ImageRegistry is the registry part of an image reference, for messages.
func ImageRegistry(image string) string {
	if r, err := registry.ParseReference(image); err == nil {
		return r.Registry
	}
	return ""
}
