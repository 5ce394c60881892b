package nodeprobe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/report"
)

// Prober runs verify's probe pod on one node at a time, for a caller that lives long (watch):
// the owner, the loader and the pull secret copies are made once per image, and Close deletes
// them. Probes of one image on different nodes may run at once; one node is probed by one caller
// at a time.
type Prober struct {
	runs   map[string]*run // image → its run
	images []string        // in the order given
}

// NewProber prepares a run per image in o.Namespace with o's delivery, secret and timeouts.
// o.Image is ignored. Its objects carry cluster.LabelBy=cluster.ByWatch and no expiry: a watcher lives long, and
// the next one removes what a killed one left (RemoveWatchLeftovers).
func NewProber(ctx context.Context, cs *cluster.Client, o VerifyOptions, images []string) (*Prober, error) {
	if len(images) == 0 {
		return nil, errors.New("no image to probe")
	}
	p := &Prober{runs: map[string]*run{}, images: images}
	for _, img := range images {
		io := o
		io.Image = img
		io.RuntimePull = false
		r := newRun(ctx, cs, io)
		r.by = cluster.ByWatch
		r.expires = time.Time{} // lives as long as the watcher: never expired, removed by the next one
		if _, err := r.decideMode(ctx); err != nil {
			p.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		if err := r.readSources(ctx); err != nil {
			p.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		p.runs[img] = r
		if err := r.prepare(ctx); err != nil {
			p.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return p, nil
}

// Probe runs the probe of image on n and returns its result, as verify reports a pool.
func (p *Prober) Probe(ctx context.Context, n *corev1.Node, image string) report.PoolResult {
	r := p.runs[image]
	pool, _ := cluster.Pool(n)
	res := report.PoolResult{Pool: pool, Node: n.Name, NodeCreated: n.CreationTimestamp.UTC(), Choice: "every node (watch)"}
	if r == nil {
		res.Class, res.Error = report.ClassOther, "no run prepared for "+image
		return res
	}
	res.Delivery = r.delivery()
	r.verifyNode(ctx, n, &res)
	return res
}

// Close deletes every object the runs made, retrying while the API server is away, and returns
// what is left.
func (p *Prober) Close(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cluster.CleanupTimeout)
	defer cancel()
	var left []string
	for _, r := range p.runs {
		left = append(left, r.cleanup(ctx)...)
	}
	return left
}

// RemoveWatchLeftovers deletes what watchers made in namespace ns (a killed one's probe pods,
// owners, loaders, status), before a new watcher starts; logf says what it retries. No Secret is
// listed: a watcher's copies (watch --secret) are owned by its owner ConfigMap, and the garbage
// collector deletes them with it. What ctx's end leaves (an API server that never answered) is an
// error naming it.
func RemoveWatchLeftovers(ctx context.Context, cs *cluster.Client, ns string, logf func(string)) error {
	left, err := cluster.Cleanup(ctx, cs, cluster.CleanupOptions{Namespace: ns, Selector: cluster.LabelBy + "=" + cluster.ByWatch, NoSecrets: true, Logf: logf})
	if err == nil && len(left) > 0 {
		err = fmt.Errorf("what earlier watchers left in namespace %s could not be removed: %s", ns, strings.Join(left, ", "))
	}
	return err
}
