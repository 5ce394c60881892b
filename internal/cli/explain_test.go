package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestExplainCLI(t *testing.T) {
	msg := `Failed to pull image "myreg.azurecr.io/team/app:1.4": failed to pull and unpack image "myreg.azurecr.io/team/app:1.4": failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://myreg.eastus.data.azurecr.io/docker/registry/v2/blobs/sha256/ab/abc/data?sig=SIGNATURE-SECRET&se=2030": dial tcp 20.1.2.3:443: i/o timeout`
	r := run(t, msg, "explain", "-o", "json")
	if r.code != ExitBroken {
		t.Fatalf("exit %d, want 1: %s", r.code, r.errOut)
	}
	var doc struct {
		Findings []struct {
			Class, Owner, Host, Role, Message, Code string
			Count                                   int
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.out)
	}
	if len(doc.Findings) != 1 {
		t.Fatalf("%d findings", len(doc.Findings))
	}
	f := doc.Findings[0]
	if f.Class != "endpoint" || f.Role != "blob" || f.Host != "myreg.eastus.data.azurecr.io:443" || f.Owner != "network" || f.Count != 1 {
		t.Errorf("finding = %+v", f)
	}
	if strings.Contains(r.out, "SIGNATURE-SECRET") {
		t.Error("the signed URL's signature leaked into the output")
	}

	if r := run(t, "", "explain"); r.code != 0 || !strings.Contains(r.out, "no image pull failure") {
		t.Errorf("empty input: exit %d out %q", r.code, r.out)
	}
	if r := run(t, "", "explain", "/nonexistent/file"); r.code != ExitUsage || !strings.Contains(r.errOut, "/nonexistent/file") {
		t.Errorf("missing file: exit %d err %q", r.code, r.errOut)
	}
	if r := run(t, `{"kind": "Event", "message": `, "explain"); r.code != ExitUsage {
		t.Errorf("broken JSON: exit %d, want 2", r.code)
	}
	if r := run(t, "\x1f\x8b\x08\x00\x00\x00binary", "explain"); r.code != ExitUsage || !strings.Contains(r.errOut, "input is not text") {
		t.Errorf("binary input: exit %d err %q", r.code, r.errOut)
	}
	if r := run(t, "x", "explain", "-o", "xml"); r.code != ExitUsage {
		t.Errorf("bad -o: exit %d", r.code)
	}
	r = run(t, "the cat sat on the mat\n", "explain")
	if r.code != ExitBroken || !strings.Contains(r.out, "class other") || !strings.Contains(r.out, "the cat sat on the mat") {
		t.Errorf("unknown text: exit %d out %q", r.code, r.out)
	}
}

// kubectl get events -A -o json of a busy cluster: crash loops, probes, mounts, scheduling and OOM
// are not pull failures, so a healthy cluster exits 0; a mixed one reports only its pull failures.
func TestExplainClusterEvents(t *testing.T) {
	r := run(t, "", "explain", "../events/testdata/inputs/cluster-healthy-events.json")
	if r.code != 0 || !strings.Contains(r.out, "no image pull failure found") {
		t.Errorf("healthy cluster: exit %d, out %.300q, err %q", r.code, r.out, r.errOut)
	}
	r = run(t, "", "explain", "-o", "json", "../events/testdata/inputs/cluster-mixed-events.json")
	if r.code != ExitBroken {
		t.Fatalf("mixed cluster: exit %d, want 1: %s", r.code, r.errOut)
	}
	var doc struct {
		Findings []struct{ Class, Code string } `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range doc.Findings {
		got = append(got, f.Class+"/"+f.Code)
	}
	want := "route/TCP_REFUSED auth/AUTH_401 dns/DNS_NXDOMAIN other/INVALID_REFERENCE other/IMAGE_NEVER_PULL"
	if strings.Join(got, " ") != want {
		t.Errorf("mixed cluster findings = %v, want %s", got, want)
	}
}
