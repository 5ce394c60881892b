package probe_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// node builds a host root for the lab's registry: containerd with config_path, the given hosts.toml,
// the lab CA at /etc/lab/ca.pem, an optional containerd version and unit drop-in.
func node(t *testing.T, e *demo.Env, hostsToml, version, dropIn string) (*runtimeconfig.Config, func(string) ([]byte, error)) {
	t.Helper()
	return nodeAt(t, e, e.Lab.RegistryAddr(), hostsToml, version, dropIn)
}

// nodeAt is node for the registry at addr (host:port), pulling addr/team/app:1.4.
func nodeAt(t *testing.T, e *demo.Env, addr, hostsToml, version, dropIn string) (*runtimeconfig.Config, func(string) ([]byte, error)) {
	t.Helper()
	ca, err := os.ReadFile(e.Lab.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.ReplaceAll(addr, ":", "_") + "_"
	fsys := fstest.MapFS{
		"etc/containerd/config.toml":                    {Data: []byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n")},
		"etc/containerd/certs.d/" + dir + "/hosts.toml": {Data: []byte(hostsToml)},
		"etc/lab/ca.pem":                                {Data: ca},
	}
	if version != "" {
		fsys["var/lib/dpkg/status"] = &fstest.MapFile{Data: []byte("Package: containerd\nStatus: install ok installed\nVersion: " + version + "\n")}
	}
	if dropIn != "" {
		fsys["etc/systemd/system/containerd.service.d/proxy.conf"] = &fstest.MapFile{Data: []byte(dropIn)}
	}
	cfg, err := runtimeconfig.Load(runtimeconfig.Options{Root: fsys, Name: "/host", Image: addr + "/team/app:1.4"})
	if err != nil {
		t.Fatal(err)
	}
	root := runtimeconfig.Root{FS: fsys, Name: "/host"}
	return cfg, root.ReadFile
}

func runtimeOpts(e *demo.Env, cfg *runtimeconfig.Config, read func(string) ([]byte, error)) probe.Options {
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	o.CAFiles = nil // trust comes from the runtime's configuration only
	o.Runtime, o.HostFile = cfg, read
	return o
}

func TestRuntimeMirrorDownFallsBack(t *testing.T) {
	e := lab(t)
	e.Lab.DNS.SetA("mirror."+e.Lab.Domain, mustAddr("127.0.0.1"))
	mirror := net.JoinHostPort("mirror."+e.Lab.Domain, registrytest.ClosedPort())
	cfg, read := node(t, e, `server = "https://`+e.Lab.RegistryAddr()+`"
ca = "/etc/lab/ca.pem"

[header]
  X-Node-Pool = "pool-a"

[host."https://`+mirror+`"]
  capabilities = ["pull", "resolve"]
  ca = "/etc/lab/ca.pem"
`, "1.7.24", "")
	rep, err := probe.Run(context.Background(), runtimeOpts(e, cfg, read))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK {
		t.Fatalf("class %s (%s), want ok: the upstream works", rep.Class, rep.Summary)
	}
	var warned bool
	for _, w := range rep.Warnings {
		if w.Host == mirror && w.Code == report.CodeTCPRefused && strings.Contains(w.Message, "falls back") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("the failing mirror should be a warning with its evidence: %+v", rep.Warnings)
	}
	roles := map[string]report.Role{}
	for _, ep := range rep.Endpoints {
		roles[ep.Host] = ep.Role
	}
	if roles[mirror] != report.RoleMirror {
		t.Errorf("mirror endpoint role %q", roles[mirror])
	}
	var ns bool
	for _, h := range rep.Hops {
		if h.Role == report.RoleMirror && strings.Contains(h.URL, "ns="+url.QueryEscape(e.Lab.RegistryAddr())) {
			ns = true
		}
	}
	if !ns {
		t.Error("mirror requests should carry containerd's ?ns=<registry>")
	}
	if got := e.Lab.SeenHeader("X-Node-Pool"); len(got) == 0 || got[0] != "pool-a" {
		t.Errorf("hosts.toml header not sent: %v", got)
	}
	rt := rep.Runtime
	if rt == nil || rt.Name != "containerd" || rt.Version != "1.7.24" || len(rt.Hosts) != 2 ||
		rt.Hosts[0].Role != report.RoleMirror || !strings.Contains(rt.Hosts[0].Result, "endpoint TCP_REFUSED at tcp") ||
		rt.Hosts[1].Result != "ok" || !strings.Contains(rt.Hosts[1].Source, "hosts.toml:1") {
		t.Errorf("runtime section = %+v", rt)
	}
	var text strings.Builder
	_ = report.WriteText(&text, rep, report.TextOptions{})
	if !strings.Contains(text.String(), "runtime   containerd (1.7.24) under /host, hosts in its order:") || !strings.Contains(text.String(), "2. https://"+e.Lab.RegistryAddr()+"/v2 (registry") {
		t.Errorf("text lacks the runtime's hosts:\n%s", text.String())
	}
}

// containerd's documented way to give a registry its CA (docs/cri/config.md:742-750): a [host] that
// repeats the server. Both entries are the registry: no ?ns= goes to them, and a refusal is route
// on the registry, not endpoint on a mirror.
func TestRuntimeSelfMirrorIsRegistry(t *testing.T) {
	e := lab(t)
	selfMirror := func(addr string) string {
		return "server = \"https://" + addr + "\"\n\n[host.\"https://" + addr + "\"]\n  ca = \"/etc/lab/ca.pem\"\n"
	}
	cfg, read := node(t, e, selfMirror(e.Lab.RegistryAddr()), "1.7.24", "")
	rep, err := probe.Run(context.Background(), runtimeOpts(e, cfg, read))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK {
		t.Fatalf("class %s (%s), want ok: the [host] has the CA", rep.Class, rep.Summary)
	}
	rt := rep.Runtime
	if rt == nil || len(rt.Hosts) != 2 || rt.Hosts[0].Role != report.RoleRegistry || rt.Hosts[1].Role != report.RoleRegistry || rt.Hosts[0].Result != "ok" {
		t.Errorf("runtime section = %+v, want the [host] and the server, both the registry", rt)
	}
	for _, h := range rep.Hops {
		if strings.Contains(h.URL, "ns=") || h.Role == report.RoleMirror {
			t.Errorf("containerd sends no ?ns= to the registry's own URL: %s (%s)", h.URL, h.Role)
		}
	}

	host, _, _ := strings.Cut(e.Lab.RegistryAddr(), ":")
	closed := host + ":" + registrytest.ClosedPort()
	cfg, read = nodeAt(t, e, closed, selfMirror(closed), "1.7.24", "")
	o := runtimeOpts(e, cfg, read)
	o.Image = closed + "/team/app:1.4"
	if rep, err = probe.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassRoute || rep.Failing == nil || rep.Failing.Role != report.RoleRegistry || rep.Failing.Host != closed {
		t.Errorf("the registry refusing: class %s failing %+v, want route on the registry %s", rep.Class, rep.Failing, closed)
	}
}

// The lab's hosts.toml trap: containerd 1.6 drops a file without [host], so its ca is ignored and the
// pull fails TLS; the runtime-faithful probe reproduces it, and passes with containerd 1.7.32 (the
// first 1.7 without getSortedHosts' "invalid `host` tree").
func TestRuntimeHostsTomlRejectedReproducesTLS(t *testing.T) {
	e := lab(t)
	file := "server = \"https://" + e.Lab.RegistryAddr() + "\"\nca = \"/etc/lab/ca.pem\"\n"
	cfg, read := node(t, e, file, "1.6.20~ds1-1+deb12u3", "")
	rep, err := probe.Run(context.Background(), runtimeOpts(e, cfg, read))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassTLS || rep.Code != report.CodeTLSUnknownAuthority || rep.Failing.Host != e.Lab.RegistryAddr() {
		t.Fatalf("containerd 1.6: class %s code %s, want tls TLS_UNKNOWN_AUTHORITY", rep.Class, rep.Code)
	}
	cfg, read = node(t, e, file, "1.7.32", "")
	if rep, _ = probe.Run(context.Background(), runtimeOpts(e, cfg, read)); rep.Class != report.ClassOK {
		t.Fatalf("containerd 1.7.32 reads the file: class %s (%s)", rep.Class, rep.Summary)
	}
}

func TestRuntimeProxy(t *testing.T) {
	e := lab(t)
	px, err := registrytest.StartConnectProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	hosts := "server = \"https://" + e.Lab.RegistryAddr() + "\"\nca = \"/etc/lab/ca.pem\"\n[host]\n"
	unit := "[Service]\nEnvironment=\"HTTPS_PROXY=http://" + px.Addr + "\"\n"

	cfg, read := node(t, e, hosts, "1.7.24", unit)
	rep, err := probe.Run(context.Background(), runtimeOpts(e, cfg, read))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK {
		t.Fatalf("via proxy: class %s (%s)", rep.Class, rep.Summary)
	}
	if got := strings.Join(px.Targets(), " "); !strings.Contains(got, e.Lab.RegistryAddr()) || !strings.Contains(got, e.Lab.BlobAddr()) {
		t.Errorf("the proxy should tunnel the registry and the blob host: %s", got)
	}
	var proxyEp bool
	for _, ep := range rep.Endpoints {
		if ep.Role == report.RoleProxy && ep.Host == px.Addr {
			proxyEp = true
		}
		if ep.Host == e.Lab.RegistryAddr() && ep.Steps[report.StepDNS] != report.Skip {
			t.Errorf("the node does not resolve a proxied host: dns %s", ep.Steps[report.StepDNS])
		}
	}
	if !proxyEp {
		t.Errorf("the proxy is its own endpoint: %+v", rep.Endpoints)
	}

	px.Refuse.Store(true)
	rep, _ = probe.Run(context.Background(), runtimeOpts(e, cfg, read))
	if rep.Class != report.ClassProxy || rep.Code != report.CodeProxyFailed || rep.Failing.Host != px.Addr || rep.Failing.Role != report.RoleProxy {
		t.Errorf("proxy refusing CONNECT: class %s code %s failing %+v", rep.Class, rep.Code, rep.Failing)
	}
	px.Refuse.Store(false)

	cfg, read = node(t, e, hosts, "1.7.24", "[Service]\nEnvironment=\"HTTPS_PROXY=http://127.0.0.1:"+registrytest.ClosedPort()+"\"\n")
	rep, _ = probe.Run(context.Background(), runtimeOpts(e, cfg, read))
	if rep.Class != report.ClassProxy || rep.Code != report.CodeTCPRefused || rep.Failing.Role != report.RoleProxy {
		t.Errorf("proxy down: class %s code %s failing %+v", rep.Class, rep.Code, rep.Failing)
	}

	cfg, read = node(t, e, hosts, "1.7.24", unit+"Environment=\"NO_PROXY=."+e.Lab.Domain+"\"\n")
	before := len(px.Targets())
	if rep, _ = probe.Run(context.Background(), runtimeOpts(e, cfg, read)); rep.Class != report.ClassOK || len(px.Targets()) != before {
		t.Errorf("NO_PROXY covers the lab: class %s, %d new tunnels", rep.Class, len(px.Targets())-before)
	}
}

// containerd sends registry.configs auth itself: with no credential given, the runtime-faithful
// probe authenticates with the node's configured one, as the pull would.
func TestRuntimeConfigAuth(t *testing.T) {
	e := lab(t)
	ca, _ := os.ReadFile(e.Lab.CAFile)
	dir := strings.ReplaceAll(e.Lab.RegistryAddr(), ":", "_") + "_"
	fsys := fstest.MapFS{
		"etc/containerd/config.toml": {Data: []byte(`version = 2
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"
[plugins."io.containerd.grpc.v1.cri".registry.configs."` + e.Lab.RegistryAddr() + `".auth]
  username = "` + demo.User + `"
  password = "` + demo.Password + `"
`)},
		"etc/containerd/certs.d/" + dir + "/hosts.toml": {Data: []byte("server = \"https://" + e.Lab.RegistryAddr() + "\"\nca = \"/etc/lab/ca.pem\"\n[host]\n")},
		"etc/lab/ca.pem": {Data: ca},
	}
	cfg, err := runtimeconfig.Load(runtimeconfig.Options{Root: fsys, Name: "/host", Image: e.Lab.Ref("team/app:1.4")})
	if err != nil {
		t.Fatal(err)
	}
	o := runtimeOpts(e, cfg, runtimeconfig.Root{FS: fsys}.ReadFile)
	o.Credential = creds.Credential{}
	rep, err := probe.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK {
		t.Fatalf("class %s (%s): the runtime's own credentials should be used", rep.Class, rep.Summary)
	}
}

// mTLS: the registry demands a client certificate. hosts.toml's client pair makes the pull work;
// without it the finding is tls / TLS_CLIENT_CERT_REJECTED, not an HTTP failure.
func TestRuntimeClientCertificate(t *testing.T) {
	e := lab(t)
	e.Lab.SetFaults(registrytest.Faults{RequireClientCert: true})
	cc, err := e.Lab.CA.Client("node-1")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := registrytest.PEM(cc)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := os.ReadFile(e.Lab.CAFile)
	dir := strings.ReplaceAll(e.Lab.RegistryAddr(), ":", "_") + "_"
	tree := func(withClient bool) (*runtimeconfig.Config, func(string) ([]byte, error)) {
		hosts := "server = \"https://" + e.Lab.RegistryAddr() + "\"\nca = \"/etc/lab/ca.pem\"\n"
		if withClient {
			hosts += "client = [\"client.pem\", \"client.key\"]\n"
		}
		fsys := fstest.MapFS{
			"etc/containerd/config.toml":                    {Data: []byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n")},
			"etc/containerd/certs.d/" + dir + "/hosts.toml": {Data: []byte(hosts + "[host]\n")},
			"etc/containerd/certs.d/" + dir + "/client.pem": {Data: certPEM},
			"etc/containerd/certs.d/" + dir + "/client.key": {Data: keyPEM},
			"etc/lab/ca.pem": {Data: ca},
		}
		cfg, err := runtimeconfig.Load(runtimeconfig.Options{Root: fsys, Name: "/host", Image: e.Lab.Ref("team/app:1.4")})
		if err != nil {
			t.Fatal(err)
		}
		return cfg, runtimeconfig.Root{FS: fsys}.ReadFile
	}
	cfg, read := tree(true)
	if len(cfg.Hosts[0].Client) != 1 {
		t.Fatalf("client pair not read: %+v", cfg.Hosts[0])
	}
	rep, err := probe.Run(context.Background(), runtimeOpts(e, cfg, read))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK {
		t.Fatalf("with the client pair: class %s (%s)", rep.Class, rep.Summary)
	}
	cfg, read = tree(false)
	rep, _ = probe.Run(context.Background(), runtimeOpts(e, cfg, read))
	if rep.Class != report.ClassTLS || rep.Code != report.CodeTLSClientCert || rep.Failing.Step != report.StepTLS {
		t.Fatalf("without: class %s code %s failing %+v (%s)", rep.Class, rep.Code, rep.Failing, rep.Summary)
	}
}

// Every host fails: the probe reports the host whose error the runtime reports, and the others are
// warnings. containerd 1.x keeps the first error that is not a 404; 2.x the first of the highest
// priority (status, then 404, then a connection error); see pickReported.
func TestRuntimeAllHostsFailReportsTheRuntimesError(t *testing.T) {
	e := lab(t)
	e.Lab.DNS.SetA("mirror."+e.Lab.Domain, mustAddr("127.0.0.1"))
	refused := net.JoinHostPort("mirror."+e.Lab.Domain, registrytest.ClosedPort())
	nx := "nx." + e.Lab.Domain + ":443"
	reg := e.Lab.RegistryAddr()
	for _, tc := range []struct {
		name, hosts, image, version string
		class                       report.Class
		host                        string
		warn                        string // the other host, a warning
	}{
		// a mirror whose CA the node does not trust, before an upstream not in DNS: tls on both
		{"untrusted mirror, NXDOMAIN upstream, 1.6", `server = "https://` + nx + `"
[host."https://` + reg + `"]
  capabilities = ["pull", "resolve"]
`, "team/app:1.4", "1.6.20~ds1-1+deb12u3", report.ClassTLS, reg, nx},
		{"untrusted mirror, NXDOMAIN upstream, 2.4", `server = "https://` + nx + `"
[host."https://` + reg + `"]
  capabilities = ["pull", "resolve"]
`, "team/app:1.4", "2.4.2", report.ClassTLS, reg, nx},
		// a mirror refusing connections, before an upstream without the tag: 1.x skips the 404,
		// 2.x ranks it above the connection error
		{"refused mirror, missing tag upstream, 1.6", `server = "https://` + reg + `"
ca = "/etc/lab/ca.pem"
[host."https://` + refused + `"]
  capabilities = ["pull", "resolve"]
`, "team/app:nope", "1.6.20~ds1-1+deb12u3", report.ClassEndpoint, refused, reg},
		{"refused mirror, missing tag upstream, 2.4", `server = "https://` + reg + `"
ca = "/etc/lab/ca.pem"
[host."https://` + refused + `"]
  capabilities = ["pull", "resolve"]
`, "team/app:nope", "2.4.2", report.ClassNotFound, reg, refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, read := node(t, e, tc.hosts, tc.version, "")
			o := runtimeOpts(e, cfg, read)
			o.Image = e.Lab.Ref(tc.image)
			rep, err := probe.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Class != tc.class || rep.Failing == nil || rep.Failing.Host != tc.host {
				t.Fatalf("class %s failing %+v (%s), want %s on %s", rep.Class, rep.Failing, rep.Summary, tc.class, tc.host)
			}
			var warned bool
			for _, w := range rep.Warnings {
				warned = warned || w.Host == tc.warn
			}
			if !warned {
				t.Errorf("the other host %s should be a warning: %+v", tc.warn, rep.Warnings)
			}
			var marked int
			for _, h := range rep.Runtime.Hosts {
				if strings.HasSuffix(h.Result, "(the error the runtime reports)") {
					marked++
				}
			}
			if marked != 1 {
				t.Errorf("one runtime host should be marked as the reported error: %+v", rep.Runtime.Hosts)
			}
		})
	}
}

// A host the runtime reaches through its proxy is a PROXY_WITHOUT_NO_PROXY warning when the node
// shows it is internal: it resolves, on the node, to a private or CGNAT address, or it is under
// the node's search domain; a public answer is no warning (issue 24 item 6). The proxy refuses
// every CONNECT: nothing is dialed but the proxy on loopback.
func TestRuntimeProxyInternalRegistry(t *testing.T) {
	e := lab(t)
	px, err := registrytest.StartConnectProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	px.Refuse.Store(true)
	const name = "harbor.example.net"
	unit := "[Service]\nEnvironment=\"HTTPS_PROXY=http://" + px.Addr + "\" \"NO_PROXY=10.233.0.0/18,svc,svc.cluster.local\"\n"
	for _, tc := range []struct {
		name, addr string
		search     []string
		want       string // in the warning; "" for none
	}{
		{"resolves to a private address", "10.20.30.40", nil, "resolves it to 10.20.30.40 (private)"},
		{"resolves to a CGNAT address", "100.64.1.2", nil, "resolves it to 100.64.1.2 (private)"},
		{"under the node's search domain", "203.0.113.7", []string{"example.net"}, "search domain example.net"},
		{"resolves to a public address", "203.0.113.7", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.Lab.DNS.SetA(name, mustAddr(tc.addr))
			cfg, read := nodeAt(t, e, name, "", "1.7.24", unit)
			o := runtimeOpts(e, cfg, read)
			o.Image, o.Resolver.Search = name+"/team/app:1.4", tc.search
			rep, err := probe.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Class != report.ClassProxy {
				t.Errorf("class %s (%s), want proxy: the proxy refuses the CONNECT", rep.Class, rep.Summary)
			}
			var got string
			for _, w := range rep.Warnings {
				if w.Code == report.CodeProxyWithoutNoProxy && w.Host == name+":443" {
					got = w.Message
				}
			}
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("PROXY_WITHOUT_NO_PROXY warning %q, want one saying %q", got, tc.want)
			}
		})
	}
}

// TestNodeTrustsThroughItsSystemBundle: a registry the node trusts only through its system CA
// bundle (no certs.d entry: ACR, ECR, GAR, Docker Hub) is ok in a node probe, whatever the probe's
// own filesystem holds; without the CA in the node's bundle it is TLS_UNKNOWN_AUTHORITY, and the
// evidence names the node's bundle it was checked against.
func TestNodeTrustsThroughItsSystemBundle(t *testing.T) {
	e := lab(t)
	ca, err := os.ReadFile(e.Lab.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	other, err := registrytest.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, bundle string
		data         []byte
		class        report.Class
		code         report.Code
	}{
		{"debian bundle", "etc/ssl/certs/ca-certificates.crt", append(append([]byte{}, other.PEM...), ca...), report.ClassOK, report.CodeOK},
		{"rhel bundle", "etc/pki/tls/certs/ca-bundle.crt", ca, report.ClassOK, report.CodeOK},
		{"the CA is not in the node's bundle", "etc/ssl/certs/ca-certificates.crt", other.PEM, report.ClassTLS, report.CodeTLSUnknownAuthority},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"etc/containerd/config.toml": {Data: []byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n")},
				tc.bundle:                    {Data: tc.data},
			}
			cfg, err := runtimeconfig.Load(runtimeconfig.Options{Root: fsys, Name: "/host", Image: e.Lab.Ref("team/app:1.4")})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := probe.Run(context.Background(), runtimeOpts(e, cfg, runtimeconfig.Root{FS: fsys, Name: "/host"}.ReadFile))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Class != tc.class || rep.Code != tc.code {
				t.Fatalf("class %s code %s (%s), want %s %s", rep.Class, rep.Code, rep.Summary, tc.class, tc.code)
			}
			src := "node system bundle /" + tc.bundle
			if !rep.Trust.Node || !strings.HasPrefix(rep.Trust.Source, src) {
				t.Errorf("trust = %+v, want the node's, from %s", rep.Trust, src)
			}
			if h := rep.Runtime.Hosts; len(h) == 0 || !strings.HasPrefix(h[0].Trust, src) {
				t.Errorf("runtime hosts = %+v, want the trust named per host", h)
			}
			if tc.class == report.ClassTLS && !slices.ContainsFunc(rep.Evidence, func(s string) bool { return strings.Contains(s, "trusted here: "+src) }) {
				t.Errorf("evidence %q does not name the node's bundle", rep.Evidence)
			}
		})
	}
}

// TestProbeWithoutHostRootSaysWhoseTrust: an operator's probe trusts its own machine, and says so.
func TestProbeWithoutHostRootSaysWhoseTrust(t *testing.T) {
	e := lab(t)
	rep, err := probe.Run(context.Background(), e.Options(e.Lab.Ref("team/app:1.4")))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK || rep.Trust.Node || !strings.HasPrefix(rep.Trust.Source, "this machine's system roots") || !strings.Contains(rep.Trust.Source, "--ca-file") {
		t.Errorf("class %s trust %+v", rep.Class, rep.Trust)
	}
}
