package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
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
	// text that reports no failure is not one: exit 0, and stderr says what was expected
	r = run(t, "the cat sat on the mat\n", "explain")
	if r.code != 0 || !strings.Contains(r.out, "no image pull failure") || !strings.Contains(r.errOut, "the text reports no failure") {
		t.Errorf("text without a failure: exit %d out %q err %q", r.code, r.out, r.errOut)
	}
	// an error pullpath has no rule for is still read, and says so
	r = run(t, "the registry exploded with an error\n", "explain")
	if r.code != ExitBroken || !strings.Contains(r.out, "class other") || !strings.Contains(r.out, "the registry exploded") {
		t.Errorf("unknown error: exit %d out %q", r.code, r.out)
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

// Every finding says whether the text decides it; text output says "undecided" plainly, and what
// it cuts (a long message, a long list of sources) says how much was left out.
func TestExplainDecidedAndCuts(t *testing.T) {
	in := `Failed to pull image "nginx": rpc error: code = 4 desc = context deadline exceeded

Failed to pull image "r.example/a:1": failed to resolve reference "r.example/a:1": failed to do request: Head "https://r.example/v2/a/manifests/1": x509: certificate signed by unknown authority
`
	r := run(t, in, "explain", "-o", "json")
	var doc struct {
		APIVersion, Kind string
		Findings         []map[string]any `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || doc.Kind != "ExplainReport" || doc.APIVersion == "" || len(doc.Findings) != 2 {
		t.Fatalf("doc = %+v (%v)\n%s", doc, err, r.out)
	}
	for i, want := range []bool{false, true} {
		f := doc.Findings[i]
		if f["decided"] != want || f["decidedBecause"] == "" || f["decidedBecause"] == nil {
			t.Errorf("finding %d: decided %v (%v), want %v", i, f["decided"], f["decidedBecause"], want)
		}
	}
	r = run(t, in, "explain")
	if strings.Count(r.out, "undecided") < 1 || !strings.Contains(strings.SplitN(r.out, "\n", 2)[0], "undecided") {
		t.Errorf("text must say undecided on the finding's first line:\n%s", r.out)
	}

	long := `Failed to pull image "r.example/a:1": failed to do request: Head "https://r.example/v2/a/manifests/1": x509: certificate signed by unknown authority ` + strings.Repeat("x", 1000)
	var events []string
	for i := range 14 {
		events = append(events, fmt.Sprintf(`{"kind":"Event","type":"Warning","reason":"Failed","involvedObject":{"kind":"Pod","name":"p-%d","fieldPath":"spec.containers{a}"},"message":%q}`, i, long))
	}
	r = run(t, `{"kind":"List","items":[`+strings.Join(events, ",")+`]}`, "explain")
	flat := strings.Join(strings.Fields(r.out), " ") // the text output wraps at 80 columns
	if !regexp.MustCompile(`… \(\d+ more bytes; -o json has the whole message\)`).MatchString(flat) || !strings.Contains(flat, "; and 4 more") {
		t.Errorf("cut message and sources must say how much was left out:\n%s", r.out)
	}
}
