package nodeprobe

import (
	"context"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/report"
)

// choose picks, per pool, the newest eligible node without the image in its cache; with
// AllNodes, every eligible node (cluster.Choose).
func (r *run) choose(ctx context.Context) ([]cluster.Target, error) {
	return cluster.Choose(ctx, r.cs, cluster.ChooseOptions{Image: r.o.Image, Namespace: r.o.Namespace, Pools: r.o.Pools, AllNodes: r.o.AllNodes,
		Fresh: r.o.Fresh, IncludeUnready: r.o.IncludeUnready, MaxImages: r.o.MaxImages, Delivery: r.delivery()}, &r.notes)
}

// ChooseNodes is verify's choice of nodes without the run (nothing is created): per pool, the node
// a probe would go to and why, from one paged list of the nodes and one of the pods, with no request
// per node or per pool. Notes say what could not be read.
func ChooseNodes(ctx context.Context, cs *cluster.Client, o VerifyOptions) ([]report.PoolResult, []string, error) {
	r := newRun(ctx, cs, o)
	ts, err := r.choose(ctx)
	if err != nil {
		return nil, r.notes, err
	}
	out := make([]report.PoolResult, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Result)
	}
	return out, r.notes, nil
}
