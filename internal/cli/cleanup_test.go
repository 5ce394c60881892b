//go:build !probeonly

package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/pullpath/pullpath/internal/watch"
)

// objectsAPI is a loopback API server holding labelled pods, ConfigMaps and Secrets per
// namespace: lists (label selectors on the managed-by and run labels) and deletes, as cleanup uses them.
type objectsAPI struct {
	mu          sync.Mutex
	objects     map[string]map[string]string // "ns/kind/name" → labels
	annotations map[string]map[string]string // "ns/kind/name" → annotations
	deleted     []string
	stuck       map[string]bool // "ns/kind/name" held by a finalizer: a delete leaves it, terminating
	terminating map[string]bool
	forbid      string // "VERB KIND" answered 403, as RBAC does: "delete configmaps"
}

func (a *objectsAPI) serve(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		p := strings.Split(strings.Trim(r.URL.Path, "/"), "/") // api v1 namespaces NS KIND [NAME]
		if len(p) < 5 || p[2] != "namespaces" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		ns, kind := p[3], p[4]
		verb := map[string]string{http.MethodDelete: "delete", http.MethodGet: "list"}[r.Method]
		if a.forbid == verb+" "+kind {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,`+
				`"message":"%s is forbidden: User \"dev\" cannot %s resource \"%s\" in API group \"\" in the namespace \"%s\""}`, kind, verb, kind, ns)
			return
		}
		if r.Method == http.MethodDelete && len(p) == 6 {
			key := ns + "/" + kind + "/" + p[5]
			if a.stuck[key] {
				if a.terminating == nil {
					a.terminating = map[string]bool{}
				}
				a.terminating[key] = true
			} else {
				delete(a.objects, key)
			}
			a.deleted = append(a.deleted, key)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
			return
		}
		sel, not := map[string]string{}, map[string]string{}
		for _, kv := range strings.Split(r.URL.Query().Get("labelSelector"), ",") {
			if k, v, ok := strings.Cut(kv, "!="); ok {
				not[k] = v
			} else if k, v, ok := strings.Cut(kv, "="); ok {
				sel[k] = v
			}
		}
		var items []map[string]any
	next:
		for key, labels := range a.objects {
			if !strings.HasPrefix(key, ns+"/"+kind+"/") {
				continue
			}
			for k, v := range sel {
				if labels[k] != v {
					continue next
				}
			}
			for k, v := range not {
				if labels[k] == v {
					continue next
				}
			}
			meta := map[string]any{"name": strings.TrimPrefix(key, ns+"/"+kind+"/"), "namespace": ns, "labels": labels,
				"annotations": a.annotations[key]}
			if a.terminating[key] {
				meta["deletionTimestamp"], meta["finalizers"] = time.Now().UTC().Format(time.RFC3339), []string{"example.com/hold"}
			}
			items = append(items, map[string]any{"metadata": meta})
		}
		listKind := map[string]string{"pods": "PodList", "configmaps": "ConfigMapList", "secrets": "SecretList"}[kind]
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": listKind, "apiVersion": "v1", "metadata": map[string]any{}, "items": items})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func managed(run string, expires time.Time) map[string]string {
	return map[string]string{"app.kubernetes.io/managed-by": "pullpath", "pullpath.dev/run": run, "pullpath.dev/expires": strconv.FormatInt(expires.Unix(), 10)}
}

// cleanup -n NS cleans NS (it used to clean "pullpath" whatever -n said); --expired leaves a run
// in flight alone; -o json is the Cleanup document.
func TestCleanupNamespaceAndExpired(t *testing.T) {
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	a := &objectsAPI{objects: map[string]map[string]string{
		"ops/pods/pullpath-aa-probe-n1":       managed("aa", past),
		"ops/configmaps/pullpath-run-aa":      managed("aa", past),
		"ops/secrets/pullpath-bb-pull-1":      managed("bb", future),
		"ops/configmaps/someone-elses":        {"app": "web"},
		"pullpath/configmaps/pullpath-run-cc": managed("cc", past),
	}}
	server := a.serve(t)
	r := run(t, "", "cleanup", "-n", "ops", "--expired", "-o", "json", "--server", server)
	if r.code != ExitOK {
		t.Fatalf("exit %d, stderr %s", r.code, r.errOut)
	}
	var doc struct {
		Kind, Namespace string
		LeftBehind      []string
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || doc.Kind != "Cleanup" || doc.Namespace != "ops" || len(doc.LeftBehind) != 0 {
		t.Errorf("stdout %s (%v)", r.out, err)
	}
	for _, k := range []string{"ops/pods/pullpath-aa-probe-n1", "ops/configmaps/pullpath-run-aa"} {
		if _, ok := a.objects[k]; ok {
			t.Errorf("%s (expired) is still there", k)
		}
	}
	for _, k := range []string{"ops/secrets/pullpath-bb-pull-1", "ops/configmaps/someone-elses", "pullpath/configmaps/pullpath-run-cc"} {
		if _, ok := a.objects[k]; !ok {
			t.Errorf("%s was deleted: a run in flight, another's object, or another namespace", k)
		}
	}
	r = run(t, "", "cleanup", "-n", "ops", "--server", server)
	if r.code != ExitOK || r.out != "nothing of pullpath is left in namespace ops\n" || a.objects["ops/secrets/pullpath-bb-pull-1"] != nil {
		t.Errorf("without --expired: exit %d, stdout %q, objects %v", r.code, r.out, a.objects)
	}
	args := []string{"cleanup", "-n", "ops", "--run-namespace", "pullpath", "--server", server}
	oneLineUsage(t, run(t, "", args...), args, "-n ops and --run-namespace pullpath name two namespaces")
}

// An API that answers an error is "could not run", exit 2 at once with the reason: not a wait
// and "left behind … Unauthorized", which reads as privileged pods left on the cluster.
func TestCleanupRefusedAtOnce(t *testing.T) {
	for _, tc := range []struct {
		code int
		want string
	}{
		{401, "refused the kubeconfig's credentials (401 Unauthorized)"},
		{403, "may not list pods in namespace pullpath"},
		{404, "answered 404 Not Found to a list of pods in namespace pullpath"},
		{502, "answered 502 Bad Gateway to a list of pods in namespace pullpath"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tc.code)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nope","code":%d}`, tc.code)
		}))
		start := time.Now()
		args := []string{"cleanup", "--server", srv.URL, "--token", "walk-secret-token-4711"}
		r := run(t, "", args...)
		srv.Close()
		oneLineUsage(t, r, args, tc.want)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%d: took %s; want an answer at once", tc.code, d)
		}
		if strings.Contains(r.errOut, "walk-secret-token-4711") || strings.Contains(r.errOut, "left behind") {
			t.Errorf("%d: stderr %q", tc.code, r.errOut)
		}
	}
}

// cleanup spares a running watcher's objects (its loader and owners are in use: deleting them
// failed every later probe) and says so; --include-watch deletes them; a watcher whose heartbeat
// stopped is not running, and its leftovers go by default.
func TestCleanupSparesARunningWatcher(t *testing.T) {
	byWatch := map[string]string{"app.kubernetes.io/managed-by": "pullpath", "pullpath.dev/run": "ww", "pullpath.dev/by": "watch"}
	watchKeys := []string{"pullpath/pods/pullpath-ww-probe-n1", "pullpath/configmaps/pullpath-run-ww", "pullpath/configmaps/pullpath-ww-loader-amd64", "pullpath/configmaps/pullpath-watch-status"}
	objects := func(hb time.Time) *objectsAPI {
		a := &objectsAPI{objects: map[string]map[string]string{"pullpath/configmaps/pullpath-run-aa": managed("aa", time.Now().Add(time.Hour))},
			annotations: map[string]map[string]string{"pullpath/configmaps/pullpath-watch-status": {"pullpath.dev/heartbeat": strconv.FormatInt(hb.Unix(), 10)}}}
		for _, k := range watchKeys {
			a.objects[k] = byWatch
		}
		return a
	}
	a := objects(time.Now().Add(-20 * time.Second))
	server := a.serve(t)
	r := run(t, "", "cleanup", "--server", server)
	if r.code != ExitOK || !strings.Contains(r.errOut, "a watcher runs in namespace pullpath") || !strings.Contains(r.errOut, "--include-watch deletes them") {
		t.Errorf("exit %d, stderr %q", r.code, r.errOut)
	}
	if a.objects["pullpath/configmaps/pullpath-run-aa"] != nil {
		t.Error("the verify run's owner was spared")
	}
	for _, k := range watchKeys {
		if a.objects[k] == nil {
			t.Errorf("%s of a running watcher was deleted", k)
		}
	}
	r = run(t, "", "cleanup", "--include-watch", "--server", server)
	if r.code != ExitOK || len(a.objects) != 0 || strings.Contains(r.errOut, "spared") {
		t.Errorf("--include-watch: exit %d, stderr %q, left %v", r.code, r.errOut, a.objects)
	}
	a = objects(time.Now().Add(-time.Hour))
	r = run(t, "", "cleanup", "--server", a.serve(t))
	if r.code != ExitOK || len(a.objects) != 0 || strings.Contains(r.errOut, "spared") {
		t.Errorf("a watcher silent for an hour: exit %d, stderr %q, left %v", r.code, r.errOut, a.objects)
	}
}

// The watch manifests' CronJob runs a cleanup command line this binary accepts in verify's run
// namespace, as the janitor's ServiceAccount that deploy/rbac.yaml binds to the janitor's Role
// there: it deletes a killed run's expired pull-secret copy and leaves a run in flight and a
// watcher's objects alone.
func TestJanitorCronJobRunsCleanupExpired(t *testing.T) {
	o := watch.DefaultManifestOptions()
	o.Images, o.WatcherImage, o.JanitorNamespace = []string{"registry.example/app:1"}, "registry.example/tools/pullpath:v1", "ops"
	var cron *batchv1.CronJob
	var binding *rbacv1.RoleBinding
	rbac, err := os.ReadFile(filepath.Join("..", "..", "deploy", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := append(strings.Split(watch.Manifests(o), "\n---\n"), strings.Split(string(rbac), "\n---\n")...)
	for _, doc := range docs {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		switch head.Kind {
		case "CronJob":
			cron = &batchv1.CronJob{}
			if err := yaml.UnmarshalStrict([]byte(doc), cron); err != nil {
				t.Fatal(err)
			}
		case "RoleBinding":
			var b rbacv1.RoleBinding
			if err := yaml.UnmarshalStrict([]byte(doc), &b); err != nil {
				t.Fatal(err)
			}
			if b.RoleRef.Name == "pullpath-janitor" {
				binding = &b
			}
		}
	}
	if cron == nil || binding == nil {
		t.Fatalf("manifests: CronJob %v, janitor RoleBinding (deploy/rbac.yaml) %v", cron != nil, binding != nil)
	}
	pod := cron.Spec.JobTemplate.Spec.Template.Spec
	if cron.Namespace != o.Namespace || cron.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || len(pod.Containers) != 1 || pod.Containers[0].Image != "registry.example/tools/pullpath:v1" {
		t.Errorf("CronJob %s/%s, concurrency %s, containers %+v", cron.Namespace, cron.Name, cron.Spec.ConcurrencyPolicy, pod.Containers)
	}
	if len(binding.Subjects) != 1 || binding.Subjects[0].Name != pod.ServiceAccountName || binding.Subjects[0].Namespace != cron.Namespace || binding.Namespace != "pullpath" {
		t.Errorf("deploy/rbac.yaml binds the janitor's Role to %+v in %s; the CronJob runs as %s/%s", binding.Subjects, binding.Namespace, cron.Namespace, pod.ServiceAccountName)
	}
	cmd := pod.Containers[0].Command
	if len(cmd) < 2 || cmd[0] != "/pullpath" || cmd[1] != "cleanup" || !slices.Contains(cmd, "--expired") || !slices.Contains(cmd, "--run-namespace=ops") {
		t.Fatalf("the CronJob runs %q, want /pullpath cleanup --expired --run-namespace=ops", cmd)
	}
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	a := &objectsAPI{objects: map[string]map[string]string{
		"ops/secrets/pullpath-aa-pull-1":   managed("aa", past),
		"ops/configmaps/pullpath-run-aa":   managed("aa", past),
		"ops/secrets/pullpath-bb-pull-1":   managed("bb", future),
		"ops/configmaps/pullpath-ww-owner": {"app.kubernetes.io/managed-by": "pullpath", "pullpath.dev/run": "ww", "pullpath.dev/by": "watch"},
	}}
	r := run(t, "", append(slices.Clone(cmd[1:]), "--server", a.serve(t))...)
	if r.code != ExitOK {
		t.Fatalf("%q: exit %d, stderr %s", cmd, r.code, r.errOut)
	}
	for k, want := range map[string]bool{"ops/secrets/pullpath-aa-pull-1": false, "ops/configmaps/pullpath-run-aa": false,
		"ops/secrets/pullpath-bb-pull-1": true, "ops/configmaps/pullpath-ww-owner": true} {
		if _, ok := a.objects[k]; ok != want {
			t.Errorf("%s: still there %v, want %v", k, ok, want)
		}
	}
}

// Objects a finalizer holds are "left behind", exit 1, listed as terminating, whatever --timeout
// is: with a short one, client-go's rate limiter used to refuse the last wait in words of its own
// and cleanup exited 2, "cannot reach the cluster".
func TestCleanupFinalizersExitOne(t *testing.T) {
	for _, timeout := range []string{"1s", "3s"} {
		a := &objectsAPI{objects: map[string]map[string]string{}, stuck: map[string]bool{}}
		for i := range 12 {
			k := fmt.Sprintf("pullpath/pods/pullpath-aa-probe-n%d", i)
			a.objects[k], a.stuck[k] = managed("aa", time.Now()), true
		}
		r := run(t, "", "cleanup", "--timeout", timeout, "--server", a.serve(t))
		// at 5 requests a second, 1s is too short to list them all: what is left is then unknown, still 1
		listed := timeout == "1s" || strings.Count(r.out, "(terminating: finalizer example.com/hold)") == 12
		if r.code != ExitBroken || !strings.HasPrefix(r.out, "left behind: ") || !listed {
			t.Errorf("--timeout %s: exit %d, stdout %q, stderr %q; want 1 and 12 terminating pods", timeout, r.code, r.out, r.errOut)
		}
	}
}

// A refused delete is named as the delete it is, not as the list cleanup asks first.
func TestCleanupNamesRefusedDelete(t *testing.T) {
	a := &objectsAPI{objects: map[string]map[string]string{"pullpath/configmaps/pullpath-run-aa": managed("aa", time.Now())}, forbid: "delete configmaps"}
	args := []string{"cleanup", "--server", a.serve(t)}
	oneLineUsage(t, run(t, "", args...), args, `not allowed to delete configmaps in namespace pullpath: the identity needs RBAC verb "delete" on "configmaps"`)
}
