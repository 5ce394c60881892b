package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/pullpath/pullpath/internal/report"
)

// Target is one node to probe, with its pool's result so far; a pool without an eligible node
// has no Node, and its Result says why.
type Target struct {
	Node   *corev1.Node
	Result report.PoolResult
}

// ChooseOptions are what verify's choice of nodes reads: the image, the pools, whether every
// eligible node or a fresh one, and the delivery the pools start with (report.PoolResult.Delivery).
type ChooseOptions struct {
	Image          string
	Namespace      string
	Pools          []string
	AllNodes       bool
	Fresh          bool
	IncludeUnready bool
	MaxImages      int
	Delivery       string
}

// Choose picks, per pool, the newest eligible node without the image in its cache; with
// AllNodes, every eligible node. What could not be read is added to notes.
func Choose(ctx context.Context, cs *Client, o ChooseOptions, notes *[]string) ([]Target, error) {
	c := &census{cs: cs, o: Options{MaxImages: o.MaxImages}, image: o.Image, notes: notes}
	if err := c.read(ctx, o.Namespace); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, p := range o.Pools {
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
	var out []Target
	for _, p := range sortedKeys(keysOf(byPool)) {
		nodes := byPool[p]
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].CreationTimestamp.After(nodes[j].CreationTimestamp.Time) })
		var eligible []*corev1.Node
		var skipped []string
		for _, n := range nodes {
			if why := Ineligible(n, o.IncludeUnready); why != "" {
				skipped = append(skipped, n.Name+" ("+skipWords[why]+")")
				continue
			}
			eligible = append(eligible, n)
		}
		presence := func(n *corev1.Node) *bool {
			if c.inNodeList(imageNames(n)) {
				return boolp(true)
			}
			if len(n.Status.Images) >= o.MaxImages {
				return nil
			}
			return boolp(false)
		}
		res := func(n *corev1.Node, why string) report.PoolResult {
			return report.PoolResult{Pool: p, Node: n.Name, NodeCreated: n.CreationTimestamp.UTC(), Choice: why, ImagePresentBefore: presence(n), Delivery: o.Delivery}
		}
		if len(eligible) == 0 {
			out = append(out, Target{Result: report.PoolResult{Pool: p, Class: report.ClassOther, Delivery: o.Delivery,
				Error: "no eligible node: " + strings.Join(skipped, ", ") + " (--include-unready probes NotReady and cordoned nodes)"}})
			continue
		}
		if o.AllNodes {
			for _, n := range eligible {
				out = append(out, Target{Node: n, Result: res(n, "every node (--all-nodes)")})
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
			out = append(out, Target{Node: fresh[0], Result: res(fresh[0], "the newest Ready node without the image in its cache")})
		case o.Fresh:
			out = append(out, Target{Result: report.PoolResult{Pool: p, Class: report.ClassOther, Delivery: o.Delivery,
				Error: fmt.Sprintf("--fresh: every eligible node of pool %s has the image cached or a full image list (%s); get a fresh node: %s", p, report.JoinCut(names(eligible), 5), freshNodeHint(p, eligible[0]))}})
		case len(unknown) > 0:
			out = append(out, Target{Node: unknown[0], Result: res(unknown[0], "the newest Ready node; its image list is full, so the cache may hold the image (the probe never uses it; a --runtime-pull could)")})
		default:
			out = append(out, Target{Node: cached[0], Result: res(cached[0], "the newest Ready node; every node of the pool has the image cached (the probe never uses the cache; use --fresh to insist on a fresh node)")})
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

// skipWords say Ineligible's reasons in verify's messages.
var skipWords = map[string]string{SkipNotLinux: "not linux", SkipVirtual: "a virtual node", SkipNotReady: "NotReady", SkipCordoned: "cordoned"}
