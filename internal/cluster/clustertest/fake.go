package clustertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Forbidden is an API error that RBAC refused: a get on pods for user dev.
type Forbidden struct{}

func (Forbidden) Error() string { return "forbidden" }

// Status is the Status body a kube-apiserver sends with the refusal.
func (Forbidden) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: `pods "web-new" is forbidden: User "dev" cannot get resource "pods"`}
}

var _ apierrors.APIStatus = Forbidden{}

// RefusingServer is an API server that refuses path with a 403 and status, the Status body a
// kube-apiserver sends, and finds nothing else; it returns the server's URL.
func RefusingServer(t *testing.T, path, status string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(status))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// RemainingIn lists the pods, ConfigMaps and Secrets of namespace pullpath.
func RemainingIn(fc *fake.Clientset) []string {
	var out []string
	ctx := context.Background()
	pods, _ := fc.CoreV1().Pods("pullpath").List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		out = append(out, "pod/"+p.Name)
	}
	cms, _ := fc.CoreV1().ConfigMaps("pullpath").List(ctx, metav1.ListOptions{})
	for _, c := range cms.Items {
		out = append(out, "configmap/"+c.Name)
	}
	secs, _ := fc.CoreV1().Secrets("pullpath").List(ctx, metav1.ListOptions{})
	for _, s := range secs.Items {
		out = append(out, "secret/"+s.Name)
	}
	slices.Sort(out)
	return out
}
