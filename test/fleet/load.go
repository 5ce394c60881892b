// Package fleet is the fleet tier: a real etcd and kube-apiserver with KWOK nodes and pods at the
// scale of a platform team's cluster (1,000 nodes, 50 pools, 30,000 pods in the benchmark; a small
// preset in the test run), loaded by a seeded generator whose truth the tests compare pullpath's
// answers with.
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/pullpath/pullpath/test/internal/kubeapi"
)

// KwokVersion is the kwok scripts/fleetbins.sh builds.
const KwokVersion = "v0.8.0"

// KwokDir is the directory holding kwok and its stage files: $PULLPATH_KWOK, else the newest cache
// entry scripts/fleetbins.sh made.
func KwokDir() (string, error) {
	ok := func(d string) bool {
		st, err := os.Stat(filepath.Join(d, "kwok"))
		_, serr := os.Stat(filepath.Join(d, "stage", "pod", "fast", "pod-ready.yaml"))
		return err == nil && st.Mode()&0o111 != 0 && serr == nil
	}
	if d := os.Getenv("PULLPATH_KWOK"); d != "" {
		if !ok(d) {
			return "", fmt.Errorf("PULLPATH_KWOK=%s lacks kwok or its stage files", d)
		}
		return d, nil
	}
	if d := kubeapi.Newest("kwok-"+KwokVersion+"-*", ok); d != "" {
		return d, nil
	}
	return "", errors.New("no kwok: run scripts/fleetbins.sh (about 1.5 min cold) and set PULLPATH_KWOK to the directory it prints")
}

// StartKwok runs kwok on every node of the cluster with the module's own stages: nodes Ready with
// heartbeats, pods Running, except the pods labelled FailLabel, which stay as the generator sets
// them. kwok listens on nothing (no --server-address).
func StartKwok(s *kubeapi.Server, dir string) error {
	var docs []string
	for _, f := range []string{"node/fast/node-initialize.yaml", "node/heartbeat/node-heartbeat.yaml", "pod/fast/pod-ready.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, "stage", f))
		if err != nil {
			return err
		}
		doc := string(b)
		if strings.HasSuffix(f, "pod-ready.yaml") {
			const anchor = "    matchExpressions:\n"
			if !strings.Contains(doc, anchor) {
				return fmt.Errorf("kwok's pod-ready stage changed: no %q", anchor)
			}
			doc = strings.Replace(doc, anchor, anchor+"    - key: '.metadata.labels."+FailLabel+"'\n      operator: 'DoesNotExist'\n", 1)
		}
		docs = append(docs, doc)
	}
	stages := filepath.Join(s.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, []byte(strings.Join(docs, "\n---\n")), 0o644); err != nil {
		return err
	}
	kc, err := s.Kubeconfig("admin")
	if err != nil {
		return err
	}
	_, err = s.Run("kwok", nil, filepath.Join(dir, "kwok"), "--kubeconfig="+kc, "--manage-all-nodes=true", "--config="+stages,
		"--node-ip=127.0.0.2", "--cidr=10.128.0.0/12", "--node-lease-duration-seconds=40", "-v=WARN")
	return err
}

// Loaded says what loading took.
type Loaded struct {
	Objects int64
	Create  time.Duration // every object created
	Settled time.Duration // then until every node is Ready and every running pod Running
	Stuck   int           // pods kwok left Pending (see settle)
	UIDs    map[string]types.UID
	uidMu   sync.Mutex
}

// Load creates the fleet with workers parallel requests: namespaces, pull secrets, nodes and their
// image lists, pods, the failing pods' status and events; then waits for kwok to settle it.
func Load(ctx context.Context, cs kubernetes.Interface, f *Fleet, workers int) (*Loaded, error) {
	start := time.Now()
	l := &Loaded{UIDs: map[string]types.UID{}}
	core := cs.CoreV1()
	var firstErr error
	var mu sync.Mutex
	var objects atomic.Int64
	defer func() { l.Objects = objects.Load() }()
	each := func(n int, do func(i int) error) {
		var wg sync.WaitGroup
		next := atomic.Int64{}
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= n || ctx.Err() != nil {
						return
					}
					if err := do(i); err != nil && !apierrors.IsAlreadyExists(err) {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						return
					}
					objects.Add(1)
				}
			}()
		}
		wg.Wait()
	}
	each(len(f.Namespaces), func(i int) error {
		_, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.Namespaces[i]}}, metav1.CreateOptions{})
		return err
	})
	each(len(f.Secrets), func(i int) error {
		_, err := core.Secrets(f.Secrets[i].Namespace).Create(ctx, f.Secrets[i], metav1.CreateOptions{})
		return err
	})
	each(len(f.Nodes), func(i int) error {
		n := f.Nodes[i].Obj
		if _, err := core.Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return err
		}
		// the image list is status: a merge patch, which kwok's own status patches leave alone
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"images": n.Status.Images, "capacity": n.Status.Capacity, "allocatable": n.Status.Allocatable}})
		_, err := core.Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
	if firstErr != nil {
		return nil, firstErr
	}
	each(len(f.Pods), func(i int) error {
		gp := &f.Pods[i]
		p, err := core.Pods(gp.Obj.Namespace).Create(ctx, gp.Obj, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		l.uidMu.Lock()
		l.UIDs[p.Namespace+"/"+p.Name] = p.UID
		l.uidMu.Unlock()
		if gp.Cause == nil {
			return nil
		}
		patch, _ := json.Marshal(map[string]any{"status": FailStatus(gp, i%2 == 1)})
		if _, err := core.Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return err
		}
		return nil
	})
	if firstErr != nil {
		return nil, firstErr
	}
	var evs []*corev1.Event
	for i := range f.Pods {
		for _, e := range f.Pods[i].Events {
			e.InvolvedObject.UID = l.UIDs[e.Namespace+"/"+e.InvolvedObject.Name]
			evs = append(evs, e)
		}
	}
	each(len(evs), func(i int) error {
		_, err := core.Events(evs[i].Namespace).Create(ctx, evs[i], metav1.CreateOptions{})
		return err
	})
	if firstErr != nil {
		return nil, firstErr
	}
	l.Create = time.Since(start)
	if err := settle(ctx, cs, f, l); err != nil {
		return l, err
	}
	l.Settled = time.Since(start) - l.Create
	return l, nil
}

// settle waits until kwok has made every node Ready and every pod that does not fail Running, or
// until the Running pods stop growing for 30 s: under load kwok v0.8.0 gives up on some pods
// ("status.podIPs: may specify no more than one IP for each IP family" on its retry), which then
// stay Pending without a container status: not failing, so the truth holds; Stuck counts them.
func settle(ctx context.Context, cs kubernetes.Interface, f *Fleet, l *Loaded) error {
	want := len(f.Pods) - f.Preset.Failing
	deadline := time.Now().Add(15 * time.Minute)
	last, since := -1, time.Now()
	for {
		ready, running := 0, 0
		nl, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err == nil {
			for i := range nl.Items {
				for _, c := range nl.Items[i].Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
		}
		pl, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0", FieldSelector: "status.phase=Running"})
		if err == nil {
			running = len(pl.Items)
		}
		if running != last {
			last, since = running, time.Now()
		}
		l.Stuck = want - running
		switch {
		case ready == len(f.Nodes) && running >= want:
			l.Stuck = 0
			return nil
		case ready == len(f.Nodes) && running > 0 && time.Since(since) > 30*time.Second:
			return nil
		case time.Now().After(deadline) || ctx.Err() != nil:
			return fmt.Errorf("kwok did not settle the fleet: %d of %d nodes Ready, %d of %d pods Running", ready, len(f.Nodes), running, want)
		}
		// a list of every pod is itself load: poll a 30,000-pod fleet every few seconds
		time.Sleep(time.Duration(1+len(f.Pods)/5000) * time.Second)
	}
}
