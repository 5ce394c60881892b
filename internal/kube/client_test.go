package kube

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Each method makes the request client-go's typed client makes (verb, path, query, body type),
// and decodes the server's answer into the kind.
func TestRequests(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/pods"):
			_ = json.NewEncoder(w).Encode(corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
				Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}})
		case strings.Contains(r.URL.Path, "/log"):
			_, _ = w.Write([]byte("the log"))
		case strings.Contains(r.URL.Path, "selfsubjectaccessreviews"):
			_ = json.NewEncoder(w).Encode(authzv1.SelfSubjectAccessReview{TypeMeta: metav1.TypeMeta{Kind: "SelfSubjectAccessReview", APIVersion: "authorization.k8s.io/v1"},
				Status: authzv1.SubjectAccessReviewStatus{Allowed: true}})
		case strings.Contains(r.URL.Path, "/leases/"):
			_ = json.NewEncoder(w).Encode(coordinationv1.Lease{TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
				ObjectMeta: metav1.ObjectMeta{Name: "l", ResourceVersion: "7"}})
		case strings.Contains(r.URL.Path, "/nodes/"):
			_ = json.NewEncoder(w).Encode(corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
		default:
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
		}
	}))
	defer srv.Close()
	rc := &rest.Config{Host: srv.URL}
	core, err := NewCore(rc)
	if err != nil {
		t.Fatal(err)
	}
	authz, _ := NewAuthorization(rc)
	leases, _ := NewLeases(rc)
	ctx := context.Background()

	pods, err := core.Pods("shop").List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Pending", Limit: 500})
	if err != nil || len(pods.Items) != 2 || pods.Items[1].Name != "b" {
		t.Fatalf("pods: %v %+v", err, pods)
	}
	n, err := core.Nodes().PatchStatus(ctx, "n1", []byte(`{"status":{}}`))
	if err != nil || n.Name != "n1" {
		t.Fatalf("patch: %v %+v", err, n)
	}
	if _, err := core.Nodes().Get(ctx, "n1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := core.ConfigMaps("run").Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := core.Pods("shop").GetLogs("web", &corev1.PodLogOptions{Container: "probe"}).DoRaw(ctx)
	if err != nil || string(b) != "the log" {
		t.Fatalf("log: %v %q", err, b)
	}
	r, err := authz.SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
	if err != nil || !r.Status.Allowed {
		t.Fatalf("review: %v %+v", err, r)
	}
	l, err := leases.Leases("run").Update(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}}, metav1.UpdateOptions{})
	if err != nil || l.ResourceVersion != "7" {
		t.Fatalf("lease: %v %+v", err, l)
	}
	want := []string{
		"GET /api/v1/namespaces/shop/pods?fieldSelector=status.phase%3DPending&limit=500 ",
		"PATCH /api/v1/nodes/n1/status application/strategic-merge-patch+json",
		"GET /api/v1/nodes/n1 ",
		"DELETE /api/v1/namespaces/run/configmaps/cm application/vnd.kubernetes.protobuf",
		"GET /api/v1/namespaces/shop/pods/web/log?container=probe ",
		"POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews application/vnd.kubernetes.protobuf",
		"PUT /apis/coordination.k8s.io/v1/namespaces/run/leases/l application/vnd.kubernetes.protobuf",
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}
