package contract

import (
	"testing"

	"github.com/pullpath/pullpath/internal/cli"
)

// version -o json, as go build makes it and as scripts/build.sh stamps it (-ldflags -X).
func TestVersion(t *testing.T) {
	r := run(t, "", "version", "-o", "json")
	r.wantExit(t, cli.ExitOK)
	validate(t, "Version", r.out)

	v, c, d := cli.Version, cli.Commit, cli.BuildDate
	t.Cleanup(func() { cli.Version, cli.Commit, cli.BuildDate = v, c, d })
	cli.Version, cli.Commit, cli.BuildDate = "v0.3.0", "0e8f21f4a1b2c3d4e5f60718293a4b5c6d7e8f90", "2026-12-02T10:00:00Z"
	r = run(t, "", "version", "-o", "json")
	r.wantExit(t, cli.ExitOK)
	doc := validate(t, "Version", r.out)
	if doc["version"] != "v0.3.0" || doc["buildDate"] != "2026-12-02T10:00:00Z" {
		t.Errorf("version %v", doc)
	}
}
