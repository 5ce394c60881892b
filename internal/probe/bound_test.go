package probe_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/internal/report"
)

// runWithin runs the probe and fails the test when it has not returned within d: a hang is the
// failure these tests exist for, so they never wait on it forever.
func runWithin(t *testing.T, d time.Duration, ctx context.Context, o probe.Options) *report.Probe {
	t.Helper()
	type res struct {
		rep *report.Probe
		err error
	}
	ch := make(chan res, 1)
	go func() { r, err := probe.Run(ctx, o); ch <- res{r, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("probe.Run: %v", r.err)
		}
		return r.rep
	case <-time.After(d):
		t.Fatalf("probe.Run did not return within %s", d)
	}
	return nil
}

// The standard proxy drop-in sets HTTP_PROXY and HTTPS_PROXY to the same named proxy: the proxy's
// own http:// URL must never be sent to the proxy (this hung forever).
func TestProxyWithBothVariablesDoesNotHang(t *testing.T) {
	e := lab(t)
	px, err := registrytest.StartConnectProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	_, port, _ := net.SplitHostPort(px.Addr)
	proxyName := "proxy." + e.Lab.Domain
	e.Lab.DNS.SetA(proxyName, mustAddr("127.0.0.1"))
	hosts := "server = \"https://" + e.Lab.RegistryAddr() + "\"\nca = \"/etc/lab/ca.pem\"\n[host]\n"
	unit := fmt.Sprintf("[Service]\nEnvironment=\"HTTP_PROXY=http://%s:%s\"\nEnvironment=\"HTTPS_PROXY=http://%[1]s:%[2]s\"\n", proxyName, port)
	cfg, read := node(t, e, hosts, "1.7.24", unit)
	rep := runWithin(t, 20*time.Second, context.Background(), runtimeOpts(e, cfg, read))
	if rep.Class != report.ClassOK {
		t.Fatalf("class %s %s: %s", rep.Class, rep.Code, rep.Summary)
	}
	var proxyEp *report.Endpoint
	for i, ep := range rep.Endpoints {
		if ep.Role == report.RoleProxy {
			proxyEp = &rep.Endpoints[i]
		}
	}
	if proxyEp == nil || proxyEp.Host != proxyName+":"+port || proxyEp.Steps[report.StepDNS] != report.Pass {
		t.Errorf("the proxy is its own endpoint, resolved by the node: %+v", proxyEp)
	}
	if got := strings.Join(px.Targets(), " "); !strings.Contains(got, e.Lab.RegistryAddr()) {
		t.Errorf("the registry goes through the proxy: tunnels %q", got)
	}
}

// A proxy that is the registry itself leads the walk back to where it started: a finding, not a wait.
func TestProxyCycleIsAFinding(t *testing.T) {
	e := lab(t)
	hosts := "server = \"https://" + e.Lab.RegistryAddr() + "\"\nca = \"/etc/lab/ca.pem\"\n[host]\n"
	unit := "[Service]\nEnvironment=\"HTTPS_PROXY=http://" + e.Lab.RegistryAddr() + "\"\n"
	cfg, read := node(t, e, hosts, "1.7.24", unit)
	rep := runWithin(t, 20*time.Second, context.Background(), runtimeOpts(e, cfg, read))
	if rep.Class != report.ClassProxy || rep.Code != report.CodeProxyLoop || rep.Failing == nil || rep.Failing.Host != e.Lab.RegistryAddr() {
		t.Fatalf("class %s code %s failing %+v: %s", rep.Class, rep.Code, rep.Failing, rep.Summary)
	}
	if !strings.Contains(rep.Summary, e.Lab.RegistryAddr()+" → "+e.Lab.RegistryAddr()) {
		t.Errorf("the summary shows the loop: %s", rep.Summary)
	}
}

// --timeout bounds the whole run even when every per-step budget is longer: the report is partial,
// says which step was cut, and is not a diagnosis.
func TestTimeoutIsAHardBound(t *testing.T) {
	e := lab(t)
	e.Lab.SetFaults(registrytest.Faults{Stall: true})
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	o.HeaderTimeout, o.StallTimeout, o.Timeout = time.Minute, time.Minute, 700*time.Millisecond
	start := time.Now()
	rep := runWithin(t, 5*time.Second, context.Background(), o)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s with --timeout 700ms", d)
	}
	i := rep.Interrupted
	if i == nil || i.Reason != "timeout" || i.Step != report.StepHTTP || i.Host != e.Lab.RegistryAddr() {
		t.Fatalf("interrupted %+v (class %s: %s)", i, rep.Class, rep.Summary)
	}
	if rep.Class != report.ClassOther || rep.Code != report.CodeTimeout || rep.Failing == nil || rep.Failing.Step != report.StepHTTP {
		t.Errorf("class %s code %s failing %+v", rep.Class, rep.Code, rep.Failing)
	}
	// what was established before the cut is kept
	var reg *report.Endpoint
	for k := range rep.Endpoints {
		if rep.Endpoints[k].Host == e.Lab.RegistryAddr() {
			reg = &rep.Endpoints[k]
		}
	}
	if reg == nil || reg.Steps[report.StepDNS] != report.Pass || reg.Steps[report.StepTLS] != report.Pass {
		t.Errorf("the steps that held before the cut are reported: %+v", reg)
	}
	if reg != nil && reg.Steps[report.StepHTTP] == report.Fail {
		t.Error("a cut step is not a failed step")
	}
}

// Cancelling the caller's context (a signal) ends the run at once with a partial report.
func TestCancelEndsTheRunAtOnce(t *testing.T) {
	e := lab(t)
	e.Lab.SetFaults(registrytest.Faults{Stall: true})
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	o.HeaderTimeout, o.Timeout = time.Minute, time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	rep := runWithin(t, 5*time.Second, ctx, o)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s after a cancel at 300ms", d)
	}
	if i := rep.Interrupted; i == nil || i.Reason != "canceled" || rep.Code != report.CodeCanceled {
		t.Fatalf("interrupted %+v code %s", rep.Interrupted, rep.Code)
	}
}

// Random proxy, mirror and redirect graphs: every walk ends within its deadline with a report that
// names a class of the taxonomy and, unless ok, where it failed. Seeds are fixed so a failure
// reproduces.
func TestRandomGraphsEndUnderDeadline(t *testing.T) {
	e := lab(t)
	px, err := registrytest.StartConnectProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	_, pport, _ := net.SplitHostPort(px.Addr)
	d := e.Lab.Domain
	for _, n := range []string{"proxy", "mirror", "other"} {
		e.Lab.DNS.SetA(n+"."+d, mustAddr("127.0.0.1"))
	}
	closed := registrytest.ClosedPort()
	// nodes of the graph: every URL a proxy or mirror setting may name
	urls := []string{
		"http://proxy." + d + ":" + pport, // a real proxy
		"http://" + e.Lab.RegistryAddr(),  // the registry as a proxy: a loop
		"http://" + e.Lab.BlobAddr(),      // the blob host as a proxy
		"http://mirror." + d + ":" + closed,
		"http://127.0.0.1:" + pport,
		"http://nxdomain." + d + ":3128",
	}
	mirrors := []string{
		"https://" + e.Lab.RegistryAddr(),
		"https://mirror." + d + ":" + closed,
		"https://" + e.Lab.BlobAddr(),
		"http://other." + d + ":" + pport,
		"https://nxdomain." + d,
	}
	noProxy := []string{"", "." + d, e.Lab.RegistryHost, "proxy." + d, "*"}
	faults := []registrytest.Faults{{}, {RedirectLoop: true}, {BlobHost: "proxy." + d + ":" + pport}, {BlobHost: e.Lab.RegistryAddr()}, {Realm: "https://" + e.Lab.RegistryAddr() + "/token"}}
	for seed := uint64(1); seed <= 24; seed++ {
		r := rand.New(rand.NewPCG(seed, 42))
		var unit strings.Builder
		unit.WriteString("[Service]\n")
		for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY"} {
			if r.IntN(3) > 0 {
				fmt.Fprintf(&unit, "Environment=\"%s=%s\"\n", v, urls[r.IntN(len(urls))])
			}
		}
		if np := noProxy[r.IntN(len(noProxy))]; np != "" {
			fmt.Fprintf(&unit, "Environment=\"NO_PROXY=%s\"\n", np)
		}
		var hosts strings.Builder
		fmt.Fprintf(&hosts, "server = \"https://%s\"\nca = \"/etc/lab/ca.pem\"\n", e.Lab.RegistryAddr())
		for k := r.IntN(3); k > 0; k-- {
			fmt.Fprintf(&hosts, "[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"/etc/lab/ca.pem\"\n", mirrors[r.IntN(len(mirrors))])
		}
		hosts.WriteString("[host]\n")
		f := faults[r.IntN(len(faults))]
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			e.Lab.SetFaults(f)
			defer e.Lab.SetFaults(registrytest.Faults{})
			cfg, read := node(t, e, hosts.String(), "1.7.24", unit.String())
			o := runtimeOpts(e, cfg, read)
			o.ConnectTimeout, o.TLSTimeout, o.HeaderTimeout, o.StallTimeout, o.Timeout = time.Second, time.Second, 2*time.Second, time.Second, 8*time.Second
			rep := runWithin(t, 12*time.Second, context.Background(), o)
			if !rep.Class.Valid() || (rep.Class != report.ClassOK) != (rep.Failing != nil) {
				t.Errorf("class %q failing %+v\nunit:\n%s\nhosts.toml:\n%s", rep.Class, rep.Failing, unit.String(), hosts.String())
			}
			if rep.Interrupted != nil {
				t.Errorf("a graph walk may not need the overall timeout: %+v\nunit:\n%s\nhosts.toml:\n%s", rep.Interrupted, unit.String(), hosts.String())
			}
		})
	}
}
