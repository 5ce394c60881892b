package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/agent"
	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/report"
)

// The agent probes as probe does (a real registry over TLS, the lab's DNS), keeps the newest
// result of each image, and serves them; a signal ends it with 0.
func TestAgentProbesAndServesItsNode(t *testing.T) {
	e := lab(t)
	cfg := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte(demo.User + ":" + demo.Password))
	host := strings.SplitN(e.Lab.Ref("x"), "/", 2)[0]
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, host, auth), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	good, missing := e.Lab.Ref("team/app:1.4"), e.Lab.Ref("team/app:missing")
	args := append(labArgs(e, "--image", good, "--image", missing, "--pull-secret", cfg, "--listen", addr, "--node", "node-a", "--interval", "1m"), []string{}...)
	args[0] = "agent"
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		err := Run(ctx, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
		done <- Code(err, &errOut)
	}()
	c := agent.NewClient(10 * time.Second)
	var res *agent.Results
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if res, err = c.Results(context.Background(), "http://"+addr, "node-a", 0); err == nil && len(res.Results) == 2 {
			break
		}
	}
	if res == nil || len(res.Results) != 2 {
		cancel()
		t.Fatalf("no two results: %+v %v\n%s", res, err, errOut.String())
	}
	byImage := map[string]agent.Result{}
	for _, r := range res.Results {
		byImage[r.Image] = r
	}
	if r := byImage[good]; r.Report == nil || r.Report.Class != "ok" || !r.Full || !r.Report.Download.Verified || r.Report.Node != "node-a" {
		t.Errorf("good image: %+v", r)
	}
	if r := byImage[missing]; r.Report == nil || r.Report.Class != "not_found" || r.Report.Failing == nil || r.Report.Failing.Step != report.StepManifest {
		t.Errorf("missing tag: %+v", r)
	}
	if strings.Contains(errOut.String(), demo.Password) || strings.Contains(errOut.String(), auth) {
		t.Errorf("the agent's log holds the password:\n%s", errOut.String())
	}
	// asked within the minute: the newest result, no new probe
	asked, err := c.Ask(context.Background(), "http://"+addr, "node-a", missing, time.Time{})
	if err != nil || len(asked.Results) != 1 || asked.Results[0].Seq != byImage[missing].Seq {
		t.Errorf("ask within a minute: %+v %v", asked, err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after the signal, want 0\n%s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not stop")
	}
}

func TestAgentUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent"}, "--image"},
		{[]string{"agent", "--image", "r.test/a:1", "--interval", "1s"}, "at least 10s"},
		{[]string{"agent", "--image", "r.test/a:1", "--pull-secret", "-"}, "stdin is read once"},
		{[]string{"agent", "--image", "Not/A:Valid:Ref"}, "Not/A:Valid:Ref"},
		{[]string{"agent", "--image", "r.test/a:1", "--listen", "nowhere"}, "--listen"},
		{[]string{"agent", "--image", "r.test/a:1", "--full-every", "0"}, "--full-every"},
		{[]string{"agent", "r.test/a:1"}, "unknown command"},
	} {
		r := run(t, "", tc.args...)
		if r.code != 2 || !strings.Contains(r.errOut, tc.want) {
			t.Errorf("%v: exit %d, want 2 saying %q\n%s", tc.args, r.code, tc.want, r.errOut)
		}
	}
}
