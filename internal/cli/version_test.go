package cli

import (
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/pullpath/pullpath", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	v := buildVersion("dev", "", bi, true)
	if v.Version != "dev" || v.Commit != "0123456789abcdef0123456789abcdef01234567-dirty" || v.BuildDate != "2026-12-01T10:00:00Z" || v.GoVersion != "go1.26.8" || v.Kind != "Version" {
		t.Errorf("buildVersion = %+v", v)
	}
	if s := v.String(); s != "pullpath dev (commit 0123456789ab-dirty, built 2026-12-01T10:00:00Z, go1.26.8, "+v.Platform+")" {
		t.Errorf("String() = %q", s)
	}
	// go install …@v0.3.0: the module version; the ldflags win over it
	bi.Main.Version = "v0.3.0"
	if v := buildVersion("dev", "", bi, true); v.Version != "v0.3.0" {
		t.Errorf("module version: %+v", v)
	}
	if v := buildVersion("v0.4.0", "2026-12-02T00:00:00Z", bi, true); v.Version != "v0.4.0" || v.BuildDate != "2026-12-02T00:00:00Z" {
		t.Errorf("ldflags: %+v", v)
	}
	if v := buildVersion("dev", "", nil, false); v.Version != "dev" || v.Commit != "" || v.Platform == "" {
		t.Errorf("no build info: %+v", v)
	}
}

func TestVersionJSON(t *testing.T) {
	r := run(t, "", "version", "-o", "json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || r.code != 0 {
		t.Fatalf("version -o json: %v %+v", err, r)
	}
	for _, k := range []string{"apiVersion", "kind", "version", "goVersion", "platform"} {
		if doc[k] == nil || doc[k] == "" {
			t.Errorf("%s missing: %s", k, r.out)
		}
	}
	if doc["kind"] != "Version" || doc["apiVersion"] != "pullpath/v1alpha1" {
		t.Errorf("kind/apiVersion: %s", r.out)
	}
	if r := run(t, "", "--version"); !strings.HasPrefix(r.out, "pullpath ") || strings.Contains(r.out, "version pullpath") {
		t.Errorf("--version: %q", r.out)
	}
	if r := run(t, "", "version", "-o", "yaml"); r.code != ExitUsage {
		t.Errorf("version -o yaml: %+v", r)
	}
}
