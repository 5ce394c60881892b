package cluster

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/registry"
)

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
