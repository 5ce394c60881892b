package cluster

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/pullpath/pullpath/internal/report"
)

// DiagnoseAll finds every pod of ns ("" for all namespaces) with a container waiting for an image,
// explains each from its own events, and groups them by image and cause.
func DiagnoseAll(ctx context.Context, cs *Client, ns string) (*report.PullFailures, error) {
	pl, err := cs.Core.Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, apiError(err, "list", "pods", ns, "")
	}
	el, err := cs.Core.Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{"type": corev1.EventTypeWarning}.AsSelector().String()})
	if err != nil {
		return nil, apiError(err, "list", "events", ns, "")
	}
	byUID := map[string][]corev1.Event{}
	for _, e := range el.Items {
		byUID[string(e.InvolvedObject.UID)] = append(byUID[string(e.InvolvedObject.UID)], e)
	}
	nodes := map[string]string{} // node → pool
	if nl, err := cs.Core.Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for i := range nl.Items {
			nodes[nl.Items[i].Name], _ = Pool(&nl.Items[i])
		}
	}
	out := &report.PullFailures{APIVersion: report.APIVersion, Kind: "PullFailureList", Namespace: ns, Class: report.ClassOK,
		Groups: []report.PullFailureGroup{}, PodsSeen: len(pl.Items)}
	index := map[string]int{}
	for i := range pl.Items {
		p := &pl.Items[i]
		image := ""
		for _, c := range podRef(p).Containers {
			if c.State == "waiting" && pullWaitReasons[c.Reason] {
				image = c.Image
				break
			}
		}
		if image == "" {
			continue
		}
		evs := byUID[string(p.UID)]
		sort.SliceStable(evs, func(i, j int) bool { return eventTime(&evs[i]).Before(eventTime(&evs[j])) })
		fs := explain(p, evs)
		g := report.PullFailureGroup{Image: image, Class: report.ClassOther, Code: report.CodeUnknown, Reason: "no event explains it yet"}
		if len(fs) > 0 {
			f := fs[0]
			g.Class, g.Code, g.Host, g.Role, g.Reason = f.Class, f.Code, f.Host, f.Role, f.Reason
		}
		key := g.Image + "|" + string(g.Class) + "|" + string(g.Code) + "|" + g.Host
		k, ok := index[key]
		if !ok {
			g.Command = "pullpath pod " + p.Name + " -n " + p.Namespace
			g.Pods, g.Nodes, g.Pools = []string{}, []string{}, []string{}
			k = len(out.Groups)
			index[key] = k
			out.Groups = append(out.Groups, g)
		}
		gr := &out.Groups[k]
		gr.Pods = append(gr.Pods, p.Namespace+"/"+p.Name)
		if n := p.Spec.NodeName; n != "" {
			gr.Nodes = appendNew(gr.Nodes, n)
			if pool, ok := nodes[n]; ok {
				gr.Pools = appendNew(gr.Pools, pool)
			}
		}
	}
	sort.SliceStable(out.Groups, func(i, j int) bool { return len(out.Groups[i].Pods) > len(out.Groups[j].Pods) })
	if len(out.Groups) > 0 {
		out.Class = out.Groups[0].Class
	}
	return out, nil
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
