package fleet

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/test/internal/kubeapi"
	"github.com/pullpath/pullpath/test/internal/tierreport"
)

// seed makes the fleets reproducible: the same seed, the same nodes, pods, causes and truth.
const seed = 21

// Users of the tier: pullpath reads as "pullpath" (every right), "limited" has list rights in some
// namespaces only, "kubectl" is the benchmark's comparison; all three are measured in the audit log.
var users = []kubeapi.User{
	{Name: "pullpath", Groups: []string{kubeapi.MeasuredGroup, "system:masters"}},
	{Name: "limited", Groups: []string{kubeapi.MeasuredGroup}},
	{Name: "kubectl", Groups: []string{kubeapi.MeasuredGroup, "system:masters"}},
}

var skipReason string

// shared is the test run's fleet (the small preset), brought up on first use.
var shared struct {
	once sync.Once
	f    *tier
	err  error
}

type tier struct {
	srv    *kubeapi.Server
	fleet  *Fleet
	loaded *Loaded
	dir    string
	up     time.Duration
}

func TestMain(m *testing.M) {
	if os.Getenv("PULLPATH_FLEET_ROLE") == "measure" {
		os.Exit(measureRole())
	}
	skipReason = prerequisites()
	code := m.Run()
	if shared.f != nil {
		if err := shared.f.close(); err != nil {
			fmt.Fprintln(os.Stderr, "fleet tier: teardown:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func prerequisites() string {
	if os.Getenv("PULLPATH_FLEET") == "0" {
		return "PULLPATH_FLEET=0"
	}
	if _, err := kubeapi.Bins(); err != nil {
		return err.Error()
	}
	if _, err := KwokDir(); err != nil {
		return err.Error()
	}
	return ""
}

// smallFleet is the run's fleet of the small preset.
func smallFleet(t *testing.T) *tier {
	t.Helper()
	if skipReason != "" {
		t.Skip("fleet tier skipped: " + skipReason)
	}
	shared.once.Do(func() { shared.f, shared.err = startTier(Small) })
	if shared.err != nil {
		t.Fatalf("fleet bring-up: %v", shared.err)
	}
	return shared.f
}

// startTier brings up etcd, kube-apiserver and kwok, and loads the preset's fleet.
func startTier(p Preset) (tr *tier, err error) {
	begin := time.Now()
	bins, err := kubeapi.Bins()
	if err != nil {
		return nil, err
	}
	kw, err := KwokDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pullpath-fleet-")
	if err != nil {
		return nil, err
	}
	tr = &tier{dir: dir}
	defer func() {
		if err != nil {
			_ = tr.close()
			tr = nil
		}
	}()
	if tr.srv, err = kubeapi.Start(bins, dir, users, "--max-requests-inflight=800", "--max-mutating-requests-inflight=400"); err != nil {
		return tr, err
	}
	if err := StartKwok(tr.srv, kw); err != nil {
		return tr, err
	}
	admin, err := kubernetes.NewForConfig(tr.srv.Config("admin"))
	if err != nil {
		return tr, err
	}
	tr.fleet = Generate(p, seed)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if tr.loaded, err = Load(ctx, admin, tr.fleet, 16); err != nil {
		return tr, fmt.Errorf("load: %w (kwok: %s)", err, tr.srv.LogTail("kwok"))
	}
	if err := grantLimited(ctx, admin, tr.fleet); err != nil {
		return tr, err
	}
	tr.up = time.Since(begin)
	return tr, nil
}

// lockedNamespace is the namespace whose pods and events the user "limited" may not list.
func lockedNamespace(f *Fleet) string { return f.Namespaces[len(f.Namespaces)-1] }

// grantLimited gives "limited" what pod --all reads in every namespace but the last, and the
// namespaces and nodes lists: a namespace without list rights.
func grantLimited(ctx context.Context, cs kubernetes.Interface, f *Fleet) error {
	rb := cs.RbacV1()
	_, err := rb.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fleet-lister"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "events"}, Verbs: []string{"list"}}}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	_, err = rb.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fleet-cluster"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces", "nodes"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	subj := []rbacv1.Subject{{Kind: "User", Name: "limited", APIGroup: rbacv1.GroupName}}
	if _, err := rb.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleet-cluster"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fleet-cluster"}, Subjects: subj}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, ns := range f.Namespaces {
		if ns == lockedNamespace(f) {
			continue
		}
		if _, err := rb.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleet-lister"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fleet-lister"}, Subjects: subj}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

func (tr *tier) close() error {
	var err error
	if tr.srv != nil {
		err = tr.srv.Close()
	}
	if os.Getenv("PULLPATH_FLEET_KEEP") == "" {
		if rerr := os.RemoveAll(tr.dir); rerr != nil && err == nil {
			err = rerr
		}
	} else {
		fmt.Fprintln(os.Stderr, "fleet tier: kept", tr.dir)
	}
	return err
}

// client is an in-process pullpath client for user.
func (tr *tier) client(t testing.TB, user string) *cluster.Client {
	t.Helper()
	cs, err := cluster.NewClient(tr.srv.Config(user))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// figure appends a line to $PULLPATH_FLEET_REPORT (scripts/test.sh prints it) and to the test log.
func figure(t testing.TB, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	tierreport.Append("PULLPATH_FLEET_REPORT", line)
}
