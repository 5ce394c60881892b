package cluster

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// A refusal by admission, not RBAC, keeps the server's words.
func TestAdmissionRefusalKeepsTheServerMessage(t *testing.T) {
	m := `pods "pp-1" is forbidden: unable to create new content in namespace pullpath because it is being terminated`
	se := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "pp-1", nil)
	se.ErrStatus.Message = m
	err := APIError(se, "create", "pods", "pullpath", "pp-1")
	if ShortErr(err) != m || !strings.Contains(err.Error(), m) {
		t.Errorf("admission: %v (short %q)", err, ShortErr(err))
	}
}

// A request client-go refuses before sending it (an invalid name, as `pod shop/web-1` once passed)
// says what is invalid; only a connection that fails says the cluster cannot be reached.
func TestAPIErrorTellsInvalidFromUnreachable(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	cs, err := NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, raw := cs.Core.Pods("default").Get(context.Background(), "shop/web-1", metav1.GetOptions{})
	err = APIError(raw, "get", "pods", "default", "shop/web-1")
	if asked.Load() != 0 || strings.Contains(err.Error(), "reach") ||
		!strings.HasPrefix(err.Error(), `cannot get pods shop/web-1 in namespace default: invalid resource name "shop/web-1"`) {
		t.Errorf("invalid name (%d requests): %v", asked.Load(), err)
	}

	// a loopback port nobody listens on any more
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cs, err = NewClient(&rest.Config{Host: "http://" + addr, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, raw = cs.Core.Pods("default").Get(context.Background(), "web-1", metav1.GetOptions{})
	err = APIError(raw, "get", "pods", "default", "web-1")
	if !strings.HasPrefix(err.Error(), "cannot reach the cluster to get pods web-1: ") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("refused connection: %v", err)
	}
}
