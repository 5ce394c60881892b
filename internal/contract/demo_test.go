package contract

import (
	"testing"

	"github.com/pullpath/pullpath/internal/cli"
)

// demo -o json on one scenario and on two (a healthy one, whose failing is null): a DemoReport.
func TestDemoDocument(t *testing.T) {
	r := run(t, "", "demo", "-o", "json", "--only", "PORT CLOSED")
	r.wantExit(t, cli.ExitOK)
	doc := validate(t, "DemoReport", r.out)
	sc := doc["scenarios"].([]any)
	if doc["match"] != true || len(sc) != 1 {
		t.Fatalf("demo document %v", doc)
	}
	s := sc[0].(map[string]any)
	if s["name"] != "registry port closed" || s["match"] != true || s["class"] != "route" || s["code"] != "TCP_REFUSED" || s["failing"] == nil {
		t.Errorf("scenario %v", s)
	}
	r = run(t, "", "demo", "-o", "json", "--only", "healthy")
	r.wantExit(t, cli.ExitOK)
	doc = validate(t, "DemoReport", r.out)
	for _, s := range doc["scenarios"].([]any) {
		if s := s.(map[string]any); s["class"] != "ok" || s["failing"] != nil {
			t.Errorf("healthy scenario %v", s)
		}
	}
	if r := run(t, "", "demo", "-o", "json", "--full"); r.code != cli.ExitUsage || len(r.out) != 0 {
		t.Errorf("--full with -o json: exit %d", r.code)
	}
}
