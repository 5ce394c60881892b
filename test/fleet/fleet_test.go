package fleet

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/events"
	"github.com/pullpath/pullpath/internal/nodeprobe"
	"github.com/pullpath/pullpath/internal/report"
)

// The generator's messages are read by explain as the corpus labelled them: the truth is the
// taxonomy's, not pullpath's own output.
func TestCausesClassify(t *testing.T) {
	for _, c := range Causes {
		im := "registry-3.fleet.test/team-01/app-007:v2"
		msg := c.Message(im, "registry-3.fleet.test", "team-01/app-007", "v2")
		f := events.Classify(msg)
		if string(f.Class) != c.Class {
			t.Errorf("%s (%s): class %s, want %s\n%s", c.Name, c.Source, f.Class, c.Class, msg)
		}
	}
}

// The same seed gives the same fleet.
func TestGeneratorReproducible(t *testing.T) {
	a, b := Generate(Small, seed), Generate(Small, seed)
	if fmt.Sprint(a.Truth()) != fmt.Sprint(b.Truth()) || a.Nodes[7].Obj.Status.Images[0].Names[1] != b.Nodes[7].Obj.Status.Images[0].Names[1] {
		t.Fatal("two fleets of one seed differ")
	}
	if c := Generate(Small, seed+1); fmt.Sprint(c.Truth()) == fmt.Sprint(a.Truth()) {
		t.Fatal("another seed gives the same fleet")
	}
	var noPool, providers int
	seen := map[string]bool{}
	for _, n := range a.Nodes {
		if strings.Contains(n.Pool, ",") {
			noPool++
		}
		for _, l := range []string{"kubernetes.azure.com/agentpool", "eks.amazonaws.com/nodegroup", "cloud.google.com/gke-nodepool", "karpenter.sh/nodepool"} {
			if n.Obj.Labels[l] != "" && !seen[l] {
				seen[l] = true
				providers++
			}
		}
	}
	if noPool == 0 || providers != 4 {
		t.Errorf("%d nodes without a pool label, %d providers' labels", noPool, providers)
	}
}

// pod --all -A on the fleet: the groups by image and cause are the generator's truth, the pools
// read right (nodes without a pool label included), in a constant number of requests.
func TestPodAllMatchesTruth(t *testing.T) {
	tr := smallFleet(t)
	figure(t, "fleet tier (small preset: %d nodes in %d pools, %d pods, %d failing): up and loaded in %s (%d objects created in %s, kwok settled in %s)",
		len(tr.fleet.Nodes), tr.fleet.Preset.Pools, len(tr.fleet.Pods), tr.fleet.Preset.Failing, tr.up.Round(100*time.Millisecond),
		tr.loaded.Objects, tr.loaded.Create.Round(100*time.Millisecond), tr.loaded.Settled.Round(100*time.Millisecond))
	off := tr.srv.AuditOffset()
	start := time.Now()
	l, err := cluster.DiagnoseAll(context.Background(), tr.client(t, "pullpath"), "")
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	reqs, err := tr.srv.Requests(off, "pullpath")
	if err != nil {
		t.Fatal(err)
	}
	figure(t, "  pod --all -A in-process: %s, %d requests (%s), %d groups, partial %v", wall.Round(time.Millisecond), total(reqs), byVerb(reqs), len(l.Groups), l.Partial)
	if l.Partial {
		t.Errorf("partial with every right: %q", l.Notes)
	}
	compareGroups(t, tr.fleet, l)
	if n := total(reqs); n > 15 || reqs["get pods"] > 0 {
		t.Errorf("%d requests (%s): want at most 15, and no get per pod", n, byVerb(reqs))
	}
}

// compareGroups checks pullpath's groups against the truth: same images, classes, pods and pools.
func compareGroups(t *testing.T, f *Fleet, l *report.PullFailures) {
	t.Helper()
	got := map[string]report.PullFailureGroup{}
	for _, g := range l.Groups {
		if _, dup := got[g.Image]; dup {
			t.Errorf("image %s in two groups (one cause each in the truth): %s and %s", g.Image, got[g.Image].Class, g.Class)
		}
		got[g.Image] = g
	}
	truth := f.Truth()
	if len(l.Groups) != len(truth) {
		t.Errorf("%d groups, the truth has %d", len(l.Groups), len(truth))
	}
	for _, w := range truth {
		g, ok := got[w.Image]
		if !ok {
			t.Errorf("no group for %s (%s, %d pods)", w.Image, w.Class, len(w.Pods))
			continue
		}
		pods, pools := slices.Clone(g.Pods), slices.Clone(g.Pools)
		sort.Strings(pods)
		sort.Strings(pools)
		if string(g.Class) != w.Class || !slices.Equal(pods, w.Pods) || !slices.Equal(pools, w.Pools) {
			t.Errorf("%s: class %s, %d pods, pools %v; truth: %s, %d pods, pools %v", w.Image, g.Class, len(pods), pools, w.Class, len(w.Pods), w.Pools)
		}
	}
}

// pod NAME on a failing pod: the cached-image split is the truth's, and a node whose list is full
// is unknown, never absent. The noisy pod's thousands of events cost a few requests.
func TestPodCachedImageSplit(t *testing.T) {
	tr := smallFleet(t)
	for _, gp := range []*Pod{tr.fleet.Noisy, &tr.fleet.Pods[tr.fleet.Preset.Failing-1]} {
		off := tr.srv.AuditOffset()
		start := time.Now()
		d, err := cluster.DiagnosePod(context.Background(), tr.client(t, "pullpath"), gp.Obj.Namespace, gp.Obj.Name, cluster.Options{})
		if err != nil {
			t.Fatal(err)
		}
		wall := time.Since(start)
		reqs, _ := tr.srv.Requests(off, "pullpath")
		figure(t, "  pod %s/%s (%d events): %s, %d requests (%s), class %s", gp.Obj.Namespace, gp.Obj.Name, len(gp.Events), wall.Round(time.Millisecond), total(reqs), byVerb(reqs), d.Class)
		if string(d.Class) != gp.Cause.Class {
			t.Errorf("%s: class %s, want %s", gp.Obj.Name, d.Class, gp.Cause.Class)
		}
		present, unknown, absent := tr.fleet.Split(gp.Image)
		ci := d.CachedImage
		if ci == nil {
			t.Fatal("no cached-image split")
		}
		for _, c := range []struct {
			what      string
			got, want []string
		}{{"present", ci.PresentOn, present}, {"unknown", ci.UnknownOn, unknown}, {"absent", ci.AbsentOn, absent}} {
			got := slices.Clone(c.got)
			sort.Strings(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: %s on %d nodes, the truth %d", gp.Image, c.what, len(got), len(c.want))
			}
		}
		for _, n := range ci.AbsentOn {
			for _, fn := range tr.fleet.Nodes {
				if fn.Obj.Name == n && len(fn.Obj.Status.Images) >= MaxImages {
					t.Errorf("node %s lists %d images (the cap) and is said absent", n, len(fn.Obj.Status.Images))
				}
			}
		}
		if reqs["get pods"] > 1 || reqs["list events"] > 8 {
			t.Errorf("requests %s", byVerb(reqs))
		}
	}
}

// verify's choice of nodes across the pools: one node per pool, one without the image where a
// pool has one, from lists only: no request per node or pool.
func TestVerifyChoice(t *testing.T) {
	tr := smallFleet(t)
	im := tr.fleet.Images[0]
	off := tr.srv.AuditOffset()
	start := time.Now()
	res, notes, err := nodeprobe.ChooseNodes(context.Background(), tr.client(t, "pullpath"), nodeprobe.VerifyOptions{Image: im, Namespace: "pullpath"})
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	reqs, _ := tr.srv.Requests(off, "pullpath")
	figure(t, "  verify's choice of nodes over %d pools: %s, %d requests (%s)", len(res), wall.Round(time.Millisecond), total(reqs), byVerb(reqs))
	pools := map[string]bool{}
	for _, n := range tr.fleet.Nodes {
		pools[n.Pool] = true
	}
	if len(res) != len(pools) {
		t.Errorf("%d pools chosen, the fleet has %d (%q)", len(res), len(pools), notes)
	}
	present, unknown, absent := tr.fleet.Split(im)
	for _, r := range res {
		if r.Node == "" || tr.fleet.PoolOf(r.Node) != r.Pool {
			t.Errorf("pool %s: node %q (%s)", r.Pool, r.Node, r.Error)
			continue
		}
		hasAbsent := false
		for _, n := range absent {
			hasAbsent = hasAbsent || tr.fleet.PoolOf(n) == r.Pool
		}
		if hasAbsent && !slices.Contains(absent, r.Node) {
			t.Errorf("pool %s has a node without the image, and %s was chosen", r.Pool, r.Node)
		}
		if slices.Contains(unknown, r.Node) && r.ImagePresentBefore != nil || slices.Contains(present, r.Node) && (r.ImagePresentBefore == nil || !*r.ImagePresentBefore) {
			t.Errorf("pool %s: node %s imagePresentBefore %v", r.Pool, r.Node, r.ImagePresentBefore)
		}
	}
	if n := total(reqs); n > 4 || reqs["get nodes"] > 0 {
		t.Errorf("%d requests (%s): want lists only", n, byVerb(reqs))
	}
}

// A namespace without list rights: pod --all -A reads the others one by one and names it, at once;
// -n of that namespace is a clear refusal.
func TestPodAllNamespaceWithoutRights(t *testing.T) {
	tr := smallFleet(t)
	locked := lockedNamespace(tr.fleet)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	off := tr.srv.AuditOffset()
	l, err := cluster.DiagnoseAll(ctx, tr.client(t, "limited"), "")
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := tr.srv.Requests(off, "limited")
	figure(t, "  pod --all -A without list rights in %s: %d requests (%s), partial %v", locked, total(reqs), byVerb(reqs), l.Partial)
	if !l.Partial || !strings.Contains(strings.Join(l.Notes, "\n"), locked) {
		t.Errorf("partial %v, notes %q: want %s named", l.Partial, l.Notes, locked)
	}
	for _, g := range l.Groups {
		for _, p := range g.Pods {
			if strings.HasPrefix(p, locked+"/") {
				t.Errorf("a pod of %s was read: %s", locked, p)
			}
		}
	}
	if _, err := cluster.DiagnoseAll(ctx, tr.client(t, "limited"), locked); err == nil || !strings.Contains(err.Error(), "list") {
		t.Errorf("-n %s: %v", locked, err)
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// byVerb is "list pods 6, list events 1" in a stable order.
func byVerb(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// The full preset has the 50 pools as pullpath reads them, unlabelled ones included.
func TestFullPresetPools(t *testing.T) {
	f := Generate(Full, seed)
	pools := map[string]bool{}
	for _, n := range f.Nodes {
		pools[n.Pool] = true
	}
	if len(pools) != Full.Pools {
		t.Errorf("%d pools, want %d", len(pools), Full.Pools)
	}
}
