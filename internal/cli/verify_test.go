//go:build !probeonly

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/report"
)

// A pool whose probe pod could not pull its own image (--probe-image) is not verified and never ok;
// its failed pull is its class. JSON, the text's matrix and verdict, the JUnit type and the exit
// code say the same class; a pool without any cause (ConfigMap delivery pulls nothing) says other
// in all of them, and a JUnit error.
func TestVerifyPoolWithoutProbeAgrees(t *testing.T) {
	pull := report.Finding{Class: report.ClassRoute, Code: report.CodeTCPRefused, Host: "probe.registry.example:443", Role: report.RoleRegistry,
		Message: "failed to pull and unpack image: dial tcp 10.0.0.9:443: connect: connection refused", Reason: "the registry refused the connection"}
	v := &report.Verification{APIVersion: report.APIVersion, Kind: "Verification", Image: "registry.corp.example/app:1", Class: report.ClassRoute,
		Run: "r1", Namespace: "pullpath", LeftBehind: []string{}, Pools: []report.PoolResult{
			{Pool: "poola", Node: "a-1", Delivery: "image", Class: report.ClassRoute, Error: "the probe pod on a-1 could not start: ErrImagePull: …",
				Findings: []report.Finding{pull}},
			{Pool: "poolb", Node: "b-1", Delivery: "configmap", Class: report.ClassOther, Error: "the probe pod on b-1 could not start: CreateContainerError: …",
				Findings: []report.Finding{{Class: report.ClassOther, Code: report.CodeUnknown, Message: "Failed: mount failed", Reason: "the probe pod's own events"}}},
		}}
	var js bytes.Buffer
	if err := report.WriteJSON(&js, v); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Class string `json:"class"`
		Pools []struct {
			Class string `json:"class"`
		} `json:"pools"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || doc.Class != "route" || doc.Pools[0].Class != "route" || doc.Pools[1].Class != "other" {
		t.Errorf("JSON: %v %+v", err, doc)
	}
	var b bytes.Buffer
	if err := report.WriteVerifyText(&b, v); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, re := range []string{
		`(?m)^BROKEN  registry\.corp\.example/app:1: 2 of 2 pools fail \(first: class route\)$`,
		`(?m)^poola +a-1( +·){7} +route +probe\.registry\.example:443 \(registry\)$`,
		`(?m)^poolb +b-1( +·){7} +other +-$`,
		`(?m)^  NOT VERIFIED  class route · probe\.registry\.example:443 \(registry\) · TCP_REFUSED · the probe pod could not pull its own image: registry\.corp\.example/app:1 was not probed on this node$`,
		`(?m)^  NO PROBE  the probe pod on b-1 could not start: CreateContainerError: …$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("text lacks %s:\n%s", re, text)
		}
	}
	ju, _ := readJUnit(t, v)
	cs := ju.Suites[0].Cases
	if cs[0].Failure == nil || cs[0].Failure.Type != "route" || cs[1].Failure != nil || cs[1].Error == nil || cs[1].Error.Type != "no-probe" {
		t.Errorf("JUnit: %+v / %+v", cs[0], cs[1])
	}
	var ee *ExitError
	if err := verifyExit(v); !errors.As(err, &ee) || ee.Code != ExitBroken {
		t.Errorf("exit: %v, want %d", err, ExitBroken)
	}
	if f := v.Pools[1].PodCause(); f != nil {
		t.Errorf("a probe pod delivered in ConfigMaps pulled nothing, yet has a cause: %+v", f)
	}
}

// readJUnit writes v's JUnit file and reads it back: the document and its bytes.
func readJUnit(t *testing.T, v *report.Verification) (junitDoc, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "verify.xml")
	if err := writeJUnit(path, v); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return doc, b
}

// junitDoc reads back what report.WriteJUnit wrote.
type junitDoc struct {
	Suites []struct {
		Cases []struct {
			Failure *struct {
				Type string `xml:"type,attr"`
			} `xml:"failure"`
			Error *struct {
				Type string `xml:"type,attr"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// A verify ended by a signal says so while it cleans up and in its report (issue 34: it said
// "BROKEN 2 of 2 pools fail" over pools it never finished, and nothing while it deleted).
func TestVerifyInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	var errOut bytes.Buffer
	stop := noticeInterrupt(ctx, &errOut, "pullpath")
	cancel(&SignalError{Signal: syscall.SIGINT})
	time.Sleep(50 * time.Millisecond)
	stop()
	if got := errOut.String(); !strings.HasPrefix(got, "verify: interrupted by SIGINT: stopping the probes, then deleting") || !strings.Contains(got, "namespace pullpath") {
		t.Errorf("stderr %q", got)
	}
	errOut.Reset()
	noticeInterrupt(context.Background(), &errOut, "pullpath")()
	if errOut.Len() != 0 {
		t.Errorf("a run that ended by itself said %q", errOut.String())
	}
	v := &report.Verification{APIVersion: report.APIVersion, Kind: "Verification", Image: "registry.corp.example/app:1", Class: report.ClassOther,
		Run: "r1", Namespace: "pullpath", LeftBehind: []string{}, Interrupted: "SIGINT", Pools: []report.PoolResult{
			{Pool: "poola", Node: "a-1", Class: report.ClassOK, Probe: &report.Probe{Class: report.ClassOK, Summary: "pulled"}},
			{Pool: "poolb", Node: "b-1", Class: report.ClassOther, Probe: &report.Probe{Class: report.ClassOther, Code: report.CodeCanceled, Summary: "cut",
				Interrupted: &report.Interruption{Reason: "canceled", Signal: "SIGINT"}}},
		}}
	var b bytes.Buffer
	if err := report.WriteVerifyText(&b, v); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(b.String(), "\n"); first != "INTERRUPTED  registry.corp.example/app:1: verify ended by SIGINT after 1 of 2 pools finished; the others are not verified" {
		t.Errorf("first line %q", first)
	}
	if strings.Contains(b.String(), "BROKEN  registry") {
		t.Errorf("an interrupted run gives a verdict:\n%s", b.String())
	}
}
