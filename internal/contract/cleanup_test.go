package contract

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/cli"
)

// cleanup -o json on an API server whose run namespace holds nothing of pullpath.
func TestCleanupDocument(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		kind := map[string]string{"pods": "PodList", "configmaps": "ConfigMapList", "secrets": "SecretList"}[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]
		fmt.Fprintf(w, `{"kind":%q,"apiVersion":"v1","metadata":{},"items":[]}`, kind)
	}))
	defer srv.Close()
	r := run(t, "", "cleanup", "--run", "3f9c04ab", "-o", "json", "--server", srv.URL)
	r.wantExit(t, cli.ExitOK)
	doc := validate(t, "Cleanup", r.out)
	if doc["namespace"] != "pullpath" || doc["run"] != "3f9c04ab" || len(doc["leftBehind"].([]any)) != 0 {
		t.Errorf("cleanup document %v", doc)
	}
}
