//go:build !probeonly

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
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

	// nothing to read is no diagnosis: exit 2 with the reason, even with -q (a script reads 0 as healthy)
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"explain"}, "the input is empty"},
		{" \n\t\n", []string{"explain", "-q"}, "the input is empty"},
		{"", []string{"explain", "-"}, "the input is empty"},
		{"", []string{"explain", "-o", "json", ""}, "the FILE argument is empty"},
	} {
		oneLineUsage(t, run(t, c.stdin, c.args...), c.args, c.want)
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

// A kubectl describe pasted through a chat tool loses its column alignment (runs of spaces
// collapsed, or turned into tabs); it reads like the aligned one, and so does its Events block
// alone, with or without the header, and the event rows alone.
func TestExplainCollapsedDescribe(t *testing.T) {
	b, err := os.ReadFile("../events/testdata/inputs/describe.txt")
	if err != nil {
		t.Fatal(err)
	}
	aligned := string(b)
	events := aligned[strings.Index(aligned, "Events:"):]
	rows := events[strings.Index(events, "  Normal"):]
	collapse := func(s string) string { return regexp.MustCompile(` +`).ReplaceAllString(s, " ") }
	tabs := func(s string) string { return regexp.MustCompile(`  +`).ReplaceAllString(s, "\t") }
	want := run(t, aligned, "explain")
	if want.code != ExitBroken || !strings.Contains(want.out, "AUTH_403 · seen 4×") {
		t.Fatalf("aligned describe: exit %d\n%s", want.code, want.out)
	}
	first := func(s string) string { return strings.SplitN(s, "\n", 2)[0] }
	for name, in := range map[string]string{"collapsed": collapse(aligned), "tabs": tabs(aligned), "events": events,
		"events collapsed": collapse(events), "events tabs": tabs(events), "rows": rows, "rows collapsed": collapse(rows), "rows tabs": tabs(rows)} {
		r := run(t, in, "explain")
		if r.code != ExitBroken || first(r.out) != first(want.out) {
			t.Errorf("%s: exit %d, %q; want exit 1, %q", name, r.code, first(r.out), first(want.out))
		}
	}
}

// explain with no argument on a terminal does not wait for input it will never get: exit 2, saying
// how to give it, - to paste included.
func TestExplainOnATerminalSaysDash(t *testing.T) {
	tty, keys := openTTY(t)
	typed := time.AfterFunc(3*time.Second, func() { keys.Write([]byte("\n")) })
	defer typed.Stop()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), Streams{In: tty, Out: &out, ErrOut: &errOut}, []string{"explain"})
	oneLineUsage(t, result{code: Code(err, &errOut), out: out.String(), errOut: errOut.String()}, []string{"explain"}, "or - to paste")
}

// startExplain runs explain as its own process (TestMain's PULLPATH_CLI_ARGS) with stdin in.
func startExplain(t *testing.T, in *os.File, args ...string) (*exec.Cmd, *bytes.Buffer, chan error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	enc, _ := json.Marshal(append([]string{"explain"}, args...))
	cmd.Env = append(os.Environ(), "PULLPATH_CLI_ARGS="+string(enc))
	var errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, io.Discard, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd, &errOut, done
}

// endsOn sends sig once explain has had time to start, and wants it to end at once with 128+sig.
func endsOn(t *testing.T, cmd *exec.Cmd, errOut *bytes.Buffer, done chan error, sig syscall.Signal, code int) {
	t.Helper()
	time.Sleep(700 * time.Millisecond) // the process installs its handler first thing; a paste or a big file takes longer
	select {
	case <-done:
		t.Fatalf("explain ended before %v: exit %d\n%s", sig, cmd.ProcessState.ExitCode(), errOut)
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("still running 5s after %v", sig)
	}
	if got := cmd.ProcessState.ExitCode(); got != code || !strings.Contains(errOut.String(), "interrupted by") {
		t.Errorf("exit %d, want %d; stderr %q", got, code, errOut)
	}
}

// Ctrl-C while explain reads a paste from a terminal ends it (130); SIGINT or SIGTERM while it
// reads a large file ends it at once with 130 or 143, not with a finished report and exit 1.
func TestExplainEndsOnSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs explain as a process")
	}
	t.Run("paste", func(t *testing.T) {
		tty, keys := openTTY(t)
		keys.Write([]byte("Failed to pull image \"r.example/a:1\": dial tcp 10.0.0.1:443: i/o timeout\n"))
		cmd, errOut, done := startExplain(t, tty, "-")
		endsOn(t, cmd, errOut, done, syscall.SIGINT, 130)
	})
	// a large file: many distinct failures, each a classification
	var big strings.Builder
	for i := 0; big.Len() < 24<<20; i++ {
		fmt.Fprintf(&big, "Failed to pull image \"r%d.example/team/app:%d\": rpc error: code = Unknown desc = failed to pull and unpack image \"r%d.example/team/app:%d\": failed to resolve reference: failed to do request: Head \"https://r%d.example/v2/team/app/manifests/%d\": dial tcp 10.%d.%d.%d:443: i/o timeout\n\n", i, i, i, i, i, i, i>>16&255, i>>8&255, i&255)
	}
	path := filepath.Join(t.TempDir(), "big.log")
	if err := os.WriteFile(path, []byte(big.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			cmd, errOut, done := startExplain(t, nil, "-o", "json", path)
			endsOn(t, cmd, errOut, done, c.sig, c.code)
		})
	}
}

// panicReader stands for a bug in the reading: explain says so in one line and exits 2, never a
// Go stack.
type panicReader struct{}

func (panicReader) Read([]byte) (int, error) { panic("boom in the reader") }

func TestExplainInternalErrorIsOneLine(t *testing.T) {
	o := &explainOptions{}
	_, _, _, err := o.read(panicReader{})
	if err == nil || !strings.Contains(err.Error(), "internal error while reading the input") || !strings.Contains(err.Error(), "boom in the reader") || strings.Contains(err.Error(), "goroutine") {
		t.Fatalf("err = %v", err)
	}
}
