package cli

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/report"
)

// TestNodeProbeNeverUsesTheProbesDockerConfig: a node probe presents what the kubelet would, ending
// in anonymous. The docker config and credential helpers of the probe's own environment (on a
// borrowed image: a tenant's) are never read or run; an operator's probe without a host root still
// uses them, which shows the trap is armed.
func TestNodeProbeNeverUsesTheProbesDockerConfig(t *testing.T) {
	e := lab(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "helper-ran")
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	helper := "#!/bin/sh\necho ran >>" + marker + "\necho '{\"ServerURL\":\"x\",\"Username\":\"" + demo.User + "\",\"Secret\":\"" + demo.Password + "\"}'\n"
	if err := os.WriteFile(filepath.Join(bin, "docker-credential-evil"), []byte(helper), 0o755); err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(demo.User + ":" + demo.Password))
	cfg, _ := json.Marshal(map[string]any{"credsStore": "evil", "auths": map[string]any{"other.example": map[string]string{"auth": auth}}})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte("version = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := run(t, "", labArgs(e, "--host-root", root, "-o", "json", e.Lab.Ref("team/app:1.4"))...)
	var rep report.Probe
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("exit %d, no JSON report: %v\n%s", r.code, err, r.errOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the probe's own credential helper ran in a node probe")
	}
	if r.code != 1 || rep.Class != report.ClassAuth || !strings.HasPrefix(rep.CredentialSource, "anonymous (the kubelet has no credential") {
		t.Errorf("node probe: exit %d class %s credential %q, want 1, auth, anonymous as the kubelet", r.code, rep.Class, rep.CredentialSource)
	}

	// the same probe as an operator's, without a host root: the operator's keychain is theirs to use
	r = run(t, "", labArgs(e, "--host-root", "none", "-o", "json", e.Lab.Ref("team/app:1.4"))...)
	if _, err := os.Stat(marker); err != nil || r.code != 0 {
		t.Errorf("operator's probe: exit %d, helper ran: %v; want 0 with the helper's credential", r.code, err == nil)
	}
}
