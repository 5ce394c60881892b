package lab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/test/internal/netnsdial"
)

// Addresses inside the lab. Nothing outside the lab's namespaces is ever a target: the namespaces
// have no default route, no bridge to a real interface and no NAT.
const (
	nodeIP    = "10.77.0.1"
	regIP     = "10.77.0.2" // registries, dnsmasq
	blobIP    = "10.77.0.3" // blob host
	mirrorIP  = "10.77.0.4" // a mirror that is down: nothing listens
	proxyIP   = "10.77.0.5" // CONNECT proxy
	dropIP    = "10.77.0.6" // a registry whose packets are dropped
	dropBlob  = "10.77.0.8" // a blob host whose packets are dropped
	podIP     = "10.79.0.1" // the pod's "VPN" link
	vpnRegIP  = "10.79.0.2" // a registry only the pod can reach
	norouteIP = "10.80.0.2" // an address nobody routes to
	labUser   = "labuser"
	labPass   = "labpass-not-secret"
)

type env struct {
	t        *testing.T
	dir      string
	id       string
	nsNode   string
	nsReg    string
	nsPod    string
	ca       *registrytest.CA
	rogue    *registrytest.CA
	pullpath string
	crictl   string
	ctrds    []*ctrd // the real containerds every case is pulled with: Debian's 1.6, and 2.x when built
	crioRoot string  // a CRI-O host root skopeo pulls with (containers/image)
	procs    []*exec.Cmd
	dnsmasq  *exec.Cmd // the lab's resolver, for names a case adds (dockerHub)
	mu       sync.Mutex
}

// ctrd is one containerd version under test, as daemons in the node namespace: the node itself,
// the same node with a proxy in containerd's environment, the node with a ':'-separated
// config_path, the node with no config_path at all (2.2+'s default applies), for 2.x the same
// with use_local_image_pull, and the node with the legacy registry.mirrors instead of config_path.
// Each root is what pullpath reads with --host-root.
type ctrd struct {
	key, label             string // "1.6", "CONTAINERD 1.6"
	v2                     bool
	bin                    string // containerd's binary; "" for the one on PATH
	ctr                    string // 2.x: its ctr, to read what the daemon runs with
	sock, root             string
	proxSock, proxRoot     string
	splitSock, splitRoot   string
	dfltSock, dfltRoot     string
	localSock, localRoot   string // 2.x only
	legacySock, legacyRoot string
}

// sockRoot is the daemon and host root a case pulls with.
func (c *ctrd) sockRoot(lc labCase) (string, string) {
	switch {
	case lc.proxied:
		return c.proxSock, c.proxRoot
	case lc.split:
		return c.splitSock, c.splitRoot
	case lc.dfltLocal && c.v2:
		return c.localSock, c.localRoot
	case lc.dflt, lc.dfltLocal: // 1.x has no use_local_image_pull: its pull is always local
		return c.dfltSock, c.dfltRoot
	case lc.legacy:
		return c.legacySock, c.legacyRoot
	}
	return c.sock, c.root
}

func (e *env) run(name string, args ...string) string {
	e.t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (e *env) inNS(ns string, args ...string) []string {
	return append([]string{"netns", "exec", ns}, args...)
}

// start runs a long-lived process and records it so teardown kills it by PID.
func (e *env) start(logName string, env []string, name string, args ...string) *exec.Cmd {
	e.t.Helper()
	logf, err := os.Create(filepath.Join(e.dir, "logs", logName+".log"))
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start %s: %v", logName, err)
	}
	e.mu.Lock()
	e.procs = append(e.procs, cmd)
	e.mu.Unlock()
	return cmd
}

func (e *env) teardown() {
	for i := len(e.procs) - 1; i >= 0; i-- {
		p := e.procs[i]
		if p.Process != nil {
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL) // its process group: ip netns exec + the daemon
			_ = p.Process.Kill()
			_, _ = p.Process.Wait()
		}
	}
	for _, ns := range []string{e.nsNode, e.nsReg, e.nsPod} {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	if os.Getenv("PULLPATH_LAB_KEEP") == "" {
		_ = os.RemoveAll(e.dir)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writePair(t *testing.T, dir, base string, c tls.Certificate) (string, string) {
	t.Helper()
	certPath, keyPath := filepath.Join(dir, base+".pem"), filepath.Join(dir, base+".key")
	certPEM, keyPEM, err := registrytest.PEM(c)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, certPath, string(certPEM))
	writeFile(t, keyPath, string(keyPEM))
	return certPath, keyPath
}

// registry describes one distribution instance.
type registry struct {
	name, addr string
	names      []string // certificate names; none for plain HTTP
	ca         string   // "lab", "rogue", "expired"
	htpasswd   bool
	redirect   string // blob redirect base URL
	inNode     bool   // listens in the node namespace
}

var registries = []registry{
	{name: "main", addr: regIP + ":443", names: []string{"registry.lab.test", "reject.lab.test", "mirrored.lab.test", "self.lab.test", "kspray.lab.test"}, ca: "lab", redirect: "https://blobs.lab.test/"},
	{name: "direct", addr: regIP + ":4443", names: []string{"direct.lab.test"}, ca: "lab"},
	{name: "auth", addr: regIP + ":5000", names: []string{"registry.lab.test"}, ca: "lab", htpasswd: true, redirect: "https://blobs.lab.test/"},
	{name: "rogue", addr: regIP + ":5002", names: []string{"registry.lab.test"}, ca: "rogue"},
	{name: "wrongname", addr: regIP + ":5003", names: []string{"wrong.lab.test"}, ca: "lab"},
	{name: "plain", addr: regIP + ":5004"},
	{name: "expired", addr: regIP + ":5006", names: []string{"registry.lab.test"}, ca: "expired"},
	{name: "nxblobs", addr: regIP + ":5010", names: []string{"registry.lab.test"}, ca: "lab", redirect: "https://nxblobs.lab.test/"},
	{name: "deadblobs", addr: regIP + ":5011", names: []string{"registry.lab.test"}, ca: "lab", redirect: "https://deadblobs.lab.test:9443/"},
	{name: "dropblobs", addr: regIP + ":5012", names: []string{"registry.lab.test"}, ca: "lab", redirect: "https://dropblobs.lab.test/"},
	{name: "dropped", addr: dropIP + ":443", names: []string{"dropped.lab.test"}, ca: "lab"},
	{name: "vpn", addr: vpnRegIP + ":443", names: []string{"vpn.lab.test"}, ca: "lab"},
	// on the node's own loopback (localhost:PORT): containerd's localhost rule applies
	{name: "lhplain", addr: "127.0.0.1:5005", inNode: true},
	{name: "lhtls", addr: "127.0.0.1:5007", names: []string{"localhost"}, ca: "rogue", inNode: true},
}

// certsHosts are the registries containerd is configured to trust the lab CA for.
var certsHosts = []string{"registry.lab.test", "direct.lab.test:4443", "registry.lab.test:5000", "registry.lab.test:5002",
	"registry.lab.test:5003", "registry.lab.test:5004", "registry.lab.test:5006", "registry.lab.test:5010",
	"registry.lab.test:5011", "registry.lab.test:5012", "registry.lab.test:5999", "dropped.lab.test", "vpn.lab.test", "noroute.lab.test"}

func newEnv(t *testing.T, pullpath, crictl, ctrd2 string) *env {
	id := fmt.Sprintf("%04x", os.Getpid()&0xffff)
	dir, err := os.MkdirTemp("", "pplab-")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, id: id, nsNode: "pp" + id + "-node", nsReg: "pp" + id + "-reg", nsPod: "pp" + id + "-pod",
		pullpath: pullpath, crictl: crictl}
	t.Cleanup(e.teardown)
	for _, d := range []string{"logs", "pki", "registry/data", "dns"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.network()
	e.pki()
	e.services()
	rts := []*ctrd{{key: "1.6", label: "CONTAINERD 1.6"}}
	if ctrd2 != "" {
		rts = append(rts, &ctrd{key: "2.4", label: "CONTAINERD 2.4", v2: true, bin: filepath.Join(ctrd2, "usr", "bin", "containerd"), ctr: filepath.Join(ctrd2, "usr", "bin", "ctr")})
	}
	var wg sync.WaitGroup
	for _, rt := range rts {
		wg.Add(5)
		go func() { defer wg.Done(); rt.sock, rt.root = e.containerd(rt, "node", daemon{configPath: certsD}) }()
		go func() {
			defer wg.Done()
			rt.proxSock, rt.proxRoot = e.containerd(rt, "proxied", daemon{env: []string{"HTTPS_PROXY=http://" + proxyIP + ":3128"}, configPath: certsD})
		}()
		go func() {
			defer wg.Done()
			rt.splitSock, rt.splitRoot = e.containerd(rt, "split", daemon{configPath: certsD + ":/etc/containerd/certs2.d"})
		}()
		go func() { defer wg.Done(); rt.dfltSock, rt.dfltRoot = e.containerd(rt, "dflt", daemon{}) }()
		go func() {
			defer wg.Done()
			rt.legacySock, rt.legacyRoot = e.containerd(rt, "legacy", daemon{legacy: true})
		}()
		if rt.v2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rt.localSock, rt.localRoot = e.containerd(rt, "dfltlocal", daemon{local: true})
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	e.ctrds = rts
	for _, rt := range rts {
		e.checkVersion(rt)
		e.checkConfigPath(rt)
	}
	return e
}

// network builds node ⇄ reg ⇄ pod with veth pairs and no route out.
// removeStale deletes lab namespaces an interrupted earlier run left behind (t.Cleanup does not run
// when the test binary is killed; the lab's processes die with it through Pdeathsig).
func removeStale() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !staleNS.MatchString(f[0]) {
			continue
		}
		// another lab may be running beside this one: its namespaces hold its daemons
		if pids, err := exec.Command("ip", "netns", "pids", f[0]).Output(); err == nil && len(strings.TrimSpace(string(pids))) == 0 {
			_ = exec.Command("ip", "netns", "del", f[0]).Run()
		}
	}
}

var staleNS = regexp.MustCompile(`^pp[0-9a-f]{4}-(node|reg|pod)$`)

func (e *env) network() {
	removeStale()
	for _, ns := range []string{e.nsNode, e.nsReg, e.nsPod} {
		e.run("ip", "netns", "add", ns)
	}
	vn, vr, vp, vq := "pp"+e.id+"n", "pp"+e.id+"r", "pp"+e.id+"p", "pp"+e.id+"q"
	e.run("ip", "link", "add", "name", vn, "type", "veth", "peer", "name", vr)
	e.run("ip", "link", "set", vn, "netns", e.nsNode)
	e.run("ip", "link", "set", vr, "netns", e.nsReg)
	e.run("ip", "link", "add", "name", vp, "type", "veth", "peer", "name", vq)
	e.run("ip", "link", "set", vp, "netns", e.nsPod)
	e.run("ip", "link", "set", vq, "netns", e.nsReg)
	e.run("ip", "-n", e.nsNode, "addr", "add", nodeIP+"/24", "dev", vn)
	for _, a := range []string{regIP, blobIP, mirrorIP, proxyIP, dropIP, dropBlob} {
		e.run("ip", "-n", e.nsReg, "addr", "add", a+"/24", "dev", vr)
	}
	e.run("ip", "-n", e.nsPod, "addr", "add", podIP+"/24", "dev", vp)
	e.run("ip", "-n", e.nsReg, "addr", "add", vpnRegIP+"/24", "dev", vq)
	for _, x := range [][2]string{{e.nsNode, vn}, {e.nsReg, vr}, {e.nsReg, vq}, {e.nsPod, vp}} {
		e.run("ip", "-n", x[0], "link", "set", x[1], "up")
		e.run("ip", "-n", x[0], "link", "set", "lo", "up")
	}
	// packets to the "dropped" addresses vanish: timeouts, not refusals
	e.run("ip", "netns", "exec", e.nsReg, "nft", "add", "table", "inet", "pplab")
	e.run("ip", "netns", "exec", e.nsReg, "nft", "add", "chain", "inet", "pplab", "in", "{ type filter hook input priority 0 ; policy accept ; }")
	for _, a := range []string{dropIP, dropBlob} {
		e.run("ip", "netns", "exec", e.nsReg, "nft", "add", "rule", "inet", "pplab", "in", "ip", "daddr", a, "tcp", "dport", "443", "drop")
	}
	e.run("ip", "netns", "exec", e.nsReg, "nft", "add", "chain", "inet", "pplab", "dns", "{ type filter hook input priority -1 ; policy accept ; }")
	// back-to-back refusals must not flip to timeouts (ICMP rate limiting; it is per netns)
	e.run("ip", "netns", "exec", e.nsReg, "sysctl", "-qw", "net.ipv4.icmp_ratelimit=0")
	if out := e.run("ip", "-n", e.nsNode, "route"); strings.Contains(out, "default") {
		e.t.Fatalf("the node namespace must have no default route:\n%s", out)
	}
}

func (e *env) pki() {
	var err error
	if e.ca, err = registrytest.NewCA("pullpath lab CA"); err != nil {
		e.t.Fatal(err)
	}
	if e.rogue, err = registrytest.NewCA("pullpath rogue CA"); err != nil {
		e.t.Fatal(err)
	}
	writeFile(e.t, filepath.Join(e.dir, "pki", "ca.pem"), string(e.ca.PEM))
}

func (e *env) leaf(ca string, names []string) tls.Certificate {
	now := time.Now()
	nb, na := now.Add(-time.Hour), now.Add(24*time.Hour)
	signer := e.ca
	switch ca {
	case "rogue":
		signer = e.rogue
	case "expired":
		nb, na = now.Add(-48*time.Hour), now.Add(-24*time.Hour)
	}
	c, err := signer.Leaf(names, nb, na)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) services() {
	hosts := fmt.Sprintf(`%s registry.lab.test direct.lab.test reject.lab.test mirrored.lab.test self.lab.test kspray.lab.test
%s blobs.lab.test deadblobs.lab.test
%s mirror.lab.test
%s dropped.lab.test
%s dropblobs.lab.test
%s noroute.lab.test selfnr.lab.test selfport.lab.test
%s vpn.lab.test
`, regIP, blobIP, mirrorIP, dropIP, dropBlob, norouteIP, vpnRegIP)
	writeFile(e.t, filepath.Join(e.dir, "dns", "hosts"), hosts)
	e.dnsmasq = e.start("dnsmasq", nil, "ip", e.inNS(e.nsReg, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
		"--no-poll", "--local=/lab.test/", "--addn-hosts="+filepath.Join(e.dir, "dns", "hosts"), "--listen-address="+regIP+","+vpnRegIP,
		"--bind-interfaces", "--user=root", "--pid-file=", "--log-queries", "--log-facility=-")...)

	htpasswd := filepath.Join(e.dir, "registry", "htpasswd")
	out, err := exec.Command("htpasswd", "-Bbn", labUser, labPass).Output()
	if err != nil {
		e.t.Fatalf("htpasswd: %v", err)
	}
	writeFile(e.t, htpasswd, string(out))
	for _, r := range registries {
		cfg := fmt.Sprintf("version: 0.1\nlog: {level: info, formatter: text}\nstorage:\n  filesystem: {rootdirectory: %s}\n  delete: {enabled: true}\nhttp:\n  addr: %s\n  secret: lab-not-secret\n",
			filepath.Join(e.dir, "registry", "data"), r.addr)
		if len(r.names) > 0 {
			cert, key := writePair(e.t, filepath.Join(e.dir, "pki"), "reg-"+r.name, e.leaf(r.ca, r.names))
			cfg += fmt.Sprintf("  tls: {certificate: %s, key: %s}\n", cert, key)
		}
		if r.htpasswd {
			cfg += fmt.Sprintf("auth:\n  htpasswd: {realm: lab-realm, path: %s}\n", htpasswd)
		}
		if r.redirect != "" {
			cfg += fmt.Sprintf("middleware:\n  storage:\n    - name: redirect\n      options: {baseurl: %q}\n", r.redirect)
		}
		path := filepath.Join(e.dir, "registry", r.name+".yml")
		writeFile(e.t, path, cfg)
		ns := e.nsReg
		if r.inNode {
			ns = e.nsNode
		}
		e.start("registry-"+r.name, nil, "ip", e.inNS(ns, "docker-registry", "serve", path)...)
	}
	// the blob host and the proxy are this test binary in a helper role
	blobCert, blobKey := writePair(e.t, filepath.Join(e.dir, "pki"), "blobs", e.leaf("lab", []string{"blobs.lab.test", "deadblobs.lab.test", "dropblobs.lab.test"}))
	self, _ := os.Executable()
	e.start("blobs", []string{"PULLPATH_LAB_ROLE=blobs", "PULLPATH_LAB_ADDR=" + blobIP + ":443", "PULLPATH_LAB_CERT=" + blobCert,
		"PULLPATH_LAB_KEY=" + blobKey, "PULLPATH_LAB_DIR=" + filepath.Join(e.dir, "registry", "data")}, "ip", e.inNS(e.nsReg, self)...)
	e.start("proxy", []string{"PULLPATH_LAB_ROLE=proxy", "PULLPATH_LAB_ADDR=" + proxyIP + ":3128"}, "ip", e.inNS(e.nsReg, self)...)

	for _, a := range []string{regIP + ":443", regIP + ":4443", regIP + ":5000", regIP + ":5004", blobIP + ":443", proxyIP + ":3128", vpnRegIP + ":443"} {
		e.waitTCP(e.nsReg, a)
	}
	e.waitTCP(e.nsReg, regIP+":53")
	e.waitTCP(e.nsNode, "127.0.0.1:5005")
	e.waitTCP(e.nsNode, "127.0.0.1:5007")
}

// waitTCP polls until addr accepts connections from inside ns.
func (e *env) waitTCP(ns, addr string) {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		c, err := netnsdial.In(ns)(context.Background(), "tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("%s did not start listening in %s; see the logs in %s", addr, ns, filepath.Join(e.dir, "logs"))
}

const certsD = "/etc/containerd/certs.d"

// daemon is what sets one containerd of a version apart from the node's.
type daemon struct {
	env        []string // in containerd's environment (and its unit's drop-in)
	configPath string   // the CRI's config_path; none when ""
	local      bool     // 2.x: use_local_image_pull = true
	legacy     bool     // registry.mirrors and configs instead of config_path
}

// legacyRegistry is the CRI's deprecated registry tables under table: legacy.lab.test (not in DNS)
// through a plain-HTTP mirror, and the lab CA for registry.lab.test in registry.configs.
func legacyRegistry(table string) string {
	return fmt.Sprintf("[%[1]s.registry.mirrors.\"legacy.lab.test\"]\n  endpoint = [\"http://registry.lab.test:5004\"]\n"+
		"[%[1]s.registry.configs.\"registry.lab.test\".tls]\n  ca_file = \"/etc/containerd/ca.pem\"\n", table)
}

// containerd writes a node root (the files this containerd runs with, as pullpath reads them) and
// starts containerd in the node namespace with those files bound over /etc in its private mounts.
// Both versions get the same registry settings: config_path (none when "") with the same hosts.toml
// files and the same CA; 2.x gets a version 3 file with its own plugin tables.
func (e *env) containerd(rt *ctrd, name string, d daemon) (sock, root string) {
	extraEnv, configPath := d.env, d.configPath
	base := filepath.Join(e.dir, "c"+strings.ReplaceAll(rt.key, ".", "")+"-"+name)
	root = filepath.Join(base, "root")
	sock = filepath.Join(base, "ctr.sock")
	etc := filepath.Join(root, "etc", "containerd")
	cfg := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
[plugins."io.containerd.grpc.v1.cri"]
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, filepath.Join(base, "ctr", "root"), filepath.Join(base, "ctr", "state"), sock, filepath.Join(base, "opt"),
		filepath.Join(base, "cni", "bin"), filepath.Join(base, "cni", "net.d"))
	if configPath != "" {
		cfg += fmt.Sprintf("  [plugins.\"io.containerd.grpc.v1.cri\".registry]\n    config_path = %q\n", configPath)
	}
	if d.legacy {
		cfg += legacyRegistry(`plugins."io.containerd.grpc.v1.cri"`)
	}
	if rt.v2 {
		// nri would create /var/run/nri; the snapshotters that need kernel support are off
		cfg = fmt.Sprintf(`version = 3
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.erofs", "io.containerd.differ.v1.erofs", "io.containerd.nri.v1.nri"]
[grpc]
  address = %q
[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dir = %q
  conf_dir = %q
`, filepath.Join(base, "ctr", "root"), filepath.Join(base, "ctr", "state"), sock,
			filepath.Join(base, "cni", "bin"), filepath.Join(base, "cni", "net.d"))
		if d.legacy {
			cfg += legacyRegistry(`plugins."io.containerd.cri.v1.images"`)
		}
		if d.local {
			cfg += "[plugins.\"io.containerd.cri.v1.images\"]\n  use_local_image_pull = true\n"
		}
		if configPath != "" {
			cfg += fmt.Sprintf("[plugins.\"io.containerd.cri.v1.images\".registry]\n  config_path = %q\n", configPath)
		}
	}
	writeFile(e.t, filepath.Join(etc, "config.toml"), cfg)
	writeFile(e.t, filepath.Join(etc, "ca.pem"), string(e.ca.PEM))
	for _, h := range certsHosts {
		writeFile(e.t, filepath.Join(etc, "certs.d", h, "hosts.toml"), fmt.Sprintf("server = \"https://%s\"\nca = \"/etc/containerd/ca.pem\"\n\n[host]\n", h))
	}
	// containerd#10027's trap: top-level keys only, which containerd 1.6 rejects
	writeFile(e.t, filepath.Join(etc, "certs.d", "reject.lab.test", "hosts.toml"), "server = \"https://reject.lab.test\"\nca = \"/etc/containerd/ca.pem\"\n")
	// a mirror that is down, before a working upstream
	writeFile(e.t, filepath.Join(etc, "certs.d", "mirrored.lab.test", "hosts.toml"),
		"server = \"https://mirrored.lab.test\"\nca = \"/etc/containerd/ca.pem\"\n\n[host.\"https://mirror.lab.test\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"/etc/containerd/ca.pem\"\n")
	// every host fails: a mirror whose certificate the lab CA did not sign, before an upstream not in DNS
	writeFile(e.t, filepath.Join(etc, "certs.d", "allfail.lab.test", "hosts.toml"),
		"server = \"https://allfail.lab.test\"\nca = \"/etc/containerd/ca.pem\"\n\n[host.\"https://registry.lab.test:5002\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"/etc/containerd/ca.pem\"\n")
	// the second config_path directory: the only way to hidden.lab.test (not in DNS) is its mirror
	writeFile(e.t, filepath.Join(etc, "certs2.d", "hidden.lab.test", "hosts.toml"),
		"server = \"https://hidden.lab.test\"\n\n[host.\"https://registry.lab.test\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"/etc/containerd/ca.pem\"\n")
	// in certs.d, read by the daemon with no config_path only through 2.2+'s default: the only
	// way to dflt.lab.test (not in DNS) is its mirror
	writeFile(e.t, filepath.Join(etc, "certs.d", "dflt.lab.test", "hosts.toml"),
		"server = \"https://dflt.lab.test\"\n\n[host.\"https://registry.lab.test\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"/etc/containerd/ca.pem\"\n")
	// containerd's documented way to give a registry its CA (docs/cri/config.md:742-750): a [host]
	// that repeats the server, the ca on it; the server has none. self: reachable; selfnr: no
	// route; selfport: the [host] names the default port, so containerd sends it ?ns= as well
	for _, h := range [][2]string{{"self.lab.test", "self.lab.test"}, {"selfnr.lab.test", "selfnr.lab.test"}, {"selfport.lab.test", "selfport.lab.test:443"}} {
		writeFile(e.t, filepath.Join(etc, "certs.d", h[0], "hosts.toml"),
			fmt.Sprintf("server = \"https://%s\"\n\n[host.\"https://%s\"]\n  ca = \"/etc/containerd/ca.pem\"\n", h[0], h[1]))
	}
	// kubespray's hosts.toml.j2 (@46dbdd39) for {prefix: kspray.lab.test, mirrors: [{host: https://kspray.lab.test,
	// capabilities: [pull, resolve], ca: [/etc/containerd/ca.pem]}]}, and for the role's default docker.io entry
	writeFile(e.t, filepath.Join(etc, "certs.d", "kspray.lab.test", "hosts.toml"), kubesprayHostsToml("https://kspray.lab.test", "https://kspray.lab.test", "/etc/containerd/ca.pem"))
	writeFile(e.t, filepath.Join(etc, "certs.d", "docker.io", "hosts.toml"), kubesprayHostsToml("https://docker.io", "https://registry-1.docker.io", ""))
	writeFile(e.t, filepath.Join(root, "etc", "resolv.conf"), "nameserver "+regIP+"\n")
	writeFile(e.t, filepath.Join(root, "etc", "hosts"), "127.0.0.1 localhost\n")
	bin := "containerd"
	if rt.bin != "" {
		// the version pullpath detects is the binary's own, as on a node without a package
		bin = rt.bin
		dst := filepath.Join(root, "usr", "bin", "containerd")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.Link(bin, dst); err != nil {
			e.run("cp", bin, dst)
		}
	} else if st, err := os.ReadFile("/var/lib/dpkg/status"); err == nil { // the installed containerd's real version
		writeFile(e.t, filepath.Join(root, "var", "lib", "dpkg", "status"), string(st))
	}
	if len(extraEnv) > 0 {
		unit := "[Service]\n"
		for _, kv := range extraEnv {
			unit += fmt.Sprintf("Environment=%q\n", kv)
		}
		writeFile(e.t, filepath.Join(root, "etc", "systemd", "system", "containerd.service.d", "http-proxy.conf"), unit)
	}
	script := fmt.Sprintf("mount --bind %s /etc/containerd && mount --bind %s /etc/resolv.conf && exec %s --config /etc/containerd/config.toml",
		etc, filepath.Join(root, "etc", "resolv.conf"), bin)
	logName := "containerd-" + rt.key + "-" + name
	e.start(logName, extraEnv, "ip", e.inNS(e.nsNode, "sh", "-c", script)...)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := exec.Command(e.crictl, "--runtime-endpoint", "unix://"+sock, "--image-endpoint", "unix://"+sock, "--timeout", "2s", "images").Run(); err == nil {
			return sock, root
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Errorf("containerd %s %s did not come up; see %s", rt.key, name, filepath.Join(e.dir, "logs", logName+".log"))
	return "", ""
}

// kubesprayHostsToml is kubespray's roles/container-engine/containerd/templates/hosts.toml.j2 for one
// prefix with one mirror (capabilities [pull, resolve], skip_verify and override_path at their
// defaults), as Ansible renders it (trim_blocks).
func kubesprayHostsToml(server, host, ca string) string {
	s := fmt.Sprintf("server = %q\n[host.%q]\n  capabilities = [\"pull\",\"resolve\"]\n  skip_verify = false\n  override_path = false\n", server, host)
	if ca != "" {
		s += fmt.Sprintf("  ca = [%q]\n", ca)
	}
	return s
}

// dockerHub puts Docker Hub's two names in the lab's DNS on the address nobody routes to, or takes
// them out again: only the case that needs them has them, the docker section's upstream is not in
// DNS. dnsmasq re-reads its hosts files on SIGHUP; wait until the node's resolver answers so.
func (e *env) dockerHub(on bool) {
	e.t.Helper()
	file := filepath.Join(e.dir, "dns", "hosts")
	b, err := os.ReadFile(file)
	if err != nil {
		e.t.Fatal(err)
	}
	const line = norouteIP + " docker.io registry-1.docker.io\n"
	body := strings.ReplaceAll(string(b), line, "")
	if on {
		body += line
	}
	writeFile(e.t, file, body)
	if err := e.dnsmasq.Process.Signal(syscall.SIGHUP); err != nil {
		e.t.Fatal(err)
	}
	dial := netnsdial.In(e.nsNode)
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx, "udp", regIP+":53") }}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		addrs, _ := r.LookupHost(context.Background(), "registry-1.docker.io")
		if (len(addrs) > 0) == on {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("dnsmasq did not reload %s (docker.io on: %t)", file, on)
		}
	}
}

// checkVersion asserts that pullpath reads each root as the containerd that runs with it: the
// version rules depend on it (1.6's from the dpkg database, 2.4's from the binary under usr/bin).
func (e *env) checkVersion(rt *ctrd) {
	e.t.Helper()
	for _, root := range []string{rt.root, rt.proxRoot, rt.splitRoot, rt.dfltRoot, rt.localRoot, rt.legacyRoot} {
		if root == "" {
			continue
		}
		out, _ := exec.Command(e.pullpath, "runtime", "-o", "json", "--host-root", root, "registry.lab.test/lab/x:v1").Output()
		var doc struct{ Runtime, Version, VersionSource string }
		if err := json.Unmarshal(out, &doc); err != nil || doc.Runtime != "containerd" || !strings.HasPrefix(doc.Version, rt.key+".") {
			e.t.Fatalf("pullpath runtime reads %s as %s %q (from %s), want containerd %s.x: %v\n%s", root, doc.Runtime, doc.Version, doc.VersionSource, rt.key, err, out)
		}
	}
}

// checkConfigPath asserts that pullpath names the config_path each 2.x daemon really runs with: the
// CRI image plugin exports it (RegistryConfigPath, set after 2.2+'s default is applied).
func (e *env) checkConfigPath(rt *ctrd) {
	e.t.Helper()
	if rt.ctr == "" {
		return
	}
	for _, d := range [][2]string{{rt.sock, rt.root}, {rt.splitSock, rt.splitRoot}, {rt.dfltSock, rt.dfltRoot}, {rt.localSock, rt.localRoot}, {rt.legacySock, rt.legacyRoot}} {
		out, err := exec.Command(rt.ctr, "--address", d[0], "plugins", "ls", "--detailed", "id==images").CombinedOutput()
		if err != nil {
			e.t.Fatalf("ctr plugins ls: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`(?m)^\s*RegistryConfigPath\s+(\S*)\s*$`).FindStringSubmatch(string(out))
		if m == nil {
			e.t.Fatalf("containerd %s on %s exports no RegistryConfigPath:\n%s", rt.key, d[0], out)
		}
		pp, _ := exec.Command(e.pullpath, "runtime", "-o", "json", "--host-root", d[1], "registry.lab.test/lab/x:v1").Output()
		var doc struct{ ConfigPath struct{ Path, Source string } }
		if err := json.Unmarshal(pp, &doc); err != nil || doc.ConfigPath.Path != m[1] {
			e.t.Errorf("containerd %s runs with config_path %q; pullpath runtime reads %s as %q (%s): %v", rt.key, m[1], d[1], doc.ConfigPath.Path, doc.ConfigPath.Source, err)
		}
		e.t.Logf("containerd %s %s: config_path %q, as pullpath says (%s)", rt.key, filepath.Base(filepath.Dir(d[1])), m[1], doc.ConfigPath.Source)
	}
}

// push writes a fresh image (random layers: never in containerd's content store) to the shared
// registry storage through the direct registry, dialing from inside the registry namespace.
func (e *env) push(repo string, layers, layerBytes int64) string {
	e.t.Helper()
	img, err := random.Image(layerBytes, layers)
	if err != nil {
		e.t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		e.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(e.ca.Cert)
	dial := netnsdial.In(e.nsReg)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dial(ctx, network, regIP+":4443")
	}}
	ref, err := name.ParseReference("direct.lab.test:4443/" + repo)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithTransport(tr)); err != nil {
		e.t.Fatalf("push %s: %v", repo, err)
	}
	d, err := img.Digest()
	if err != nil {
		e.t.Fatal(err)
	}
	return d.String()
}
