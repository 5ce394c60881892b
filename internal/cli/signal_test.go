package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/registrytest"
)

// TestMain lets a test run this binary as the pullpath command itself (PULLPATH_CLI_ARGS, JSON-encoded
// list), so signals and exit statuses are tested on a real process.
func TestMain(m *testing.M) {
	if a, ok := os.LookupEnv("PULLPATH_CLI_ARGS"); ok {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			panic(err)
		}
		os.Exit(Main(args))
	}
	code := m.Run()
	if env != nil {
		env.Close() // the shared lab's servers and its temp dir (CA files)
	}
	os.Exit(code)
}

// A probe stuck on a registry that never answers ends at once on SIGINT or SIGTERM, prints what it
// established and where it was cut, and exits 128+signal.
func TestSignalEndsProbeWithPartialReport(t *testing.T) {
	e := lab(t)
	e.Lab.SetFaults(registrytest.Faults{Stall: true})
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "SIGINT", 130}, {syscall.SIGTERM, "SIGTERM", 143}} {
		t.Run(tc.name, func(t *testing.T) {
			args := labArgs(e, "--anonymous", "--header-timeout", "1m", "--timeout", "1m", "-o", "json", e.Lab.Ref("team/app:1.4"))
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			enc, _ := json.Marshal(args)
			cmd.Env = append(os.Environ(), "PULLPATH_CLI_ARGS="+string(enc))
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// wait until the walk is waiting on the stalled registry
			before := e.Lab.Count("registry")
			for deadline := time.Now().Add(10 * time.Second); e.Lab.Count("registry") == before; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					t.Fatalf("the probe never reached the registry\n%s", errOut.String())
				}
			}
			sent := time.Now()
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("still running 5s after %s", tc.name)
			}
			if d := time.Since(sent); d > 2*time.Second {
				t.Errorf("took %s to end after %s", d, tc.name)
			}
			if got := cmd.ProcessState.ExitCode(); got != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", got, tc.code, out.String(), errOut.String())
			}
			var doc struct {
				Class       string `json:"class"`
				Code        string `json:"code"`
				WhereToLook string `json:"whereToLook"`
				Interrupted *struct {
					Reason, Signal, Step, Host, Role string
				} `json:"interrupted"`
				Endpoints []struct {
					Host  string            `json:"host"`
					Steps map[string]string `json:"steps"`
				} `json:"endpoints"`
			}
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatalf("partial report is not JSON: %v\n%s", err, out.String())
			}
			i := doc.Interrupted
			if i == nil || i.Reason != "canceled" || i.Signal != tc.name || i.Step != "http" || i.Host != e.Lab.RegistryAddr() || doc.Code != "CANCELED" {
				t.Errorf("interrupted %+v code %s", i, doc.Code)
			}
			// a Ctrl-C is not a reason to raise --timeout
			if strings.Contains(doc.WhereToLook, "--timeout") || !strings.Contains(doc.WhereToLook, "interrupted") {
				t.Errorf("whereToLook after %s: %q", tc.name, doc.WhereToLook)
			}
			if len(doc.Endpoints) == 0 || doc.Endpoints[0].Steps["tls"] != "pass" {
				t.Errorf("what held before the cut is reported: %+v", doc.Endpoints)
			}
		})
	}
}

// --timeout gives a partial report and its own exit status, 3.
func TestTimeoutExitStatus(t *testing.T) {
	e := lab(t)
	e.Lab.SetFaults(registrytest.Faults{Stall: true})
	r := run(t, "", labArgs(e, "--anonymous", "--header-timeout", "1m", "--timeout", "500ms", e.Lab.Ref("team/app:1.4"))...)
	if r.code != ExitTimeout {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, ExitTimeout, r.out, r.errOut)
	}
	// the stalled request is cut in http, or, on a loaded machine, while its connection is dialled
	cut := regexp.MustCompile(`^INTERRUPTED  timeout · cut during (?:tcp|http) on ` + regexp.QuoteMeta(e.Lab.RegistryAddr()) + `\s+\(registry\)`)
	if !cut.MatchString(r.out) {
		t.Errorf("text report:\n%s", r.out)
	}
}
