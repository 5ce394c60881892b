package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/pullpath/pullpath/test/internal/tierreport"
)

var skipReason string

func TestMain(m *testing.M) {
	if helperRole() {
		return
	}
	switch {
	case os.Getenv("PULLPATH_LAB") == "0":
		skipReason = "PULLPATH_LAB=0"
	case os.Geteuid() != 0:
		skipReason = "not root: run `sudo go test ./test/lab/` (or the README's test command as root) for the network-namespace lab"
	default:
		for _, tool := range []string{"containerd", "docker-registry", "dnsmasq", "htpasswd", "nft", "ip"} {
			if _, err := exec.LookPath(tool); err != nil {
				skipReason = tool + " is missing: .ci/run installs the lab's packages (containerd docker-registry dnsmasq apache2-utils nftables)"
			}
		}
		if _, err := crictlPath(); err != nil && skipReason == "" {
			skipReason = "crictl is missing: go install sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0"
		}
	}
	os.Exit(m.Run())
}

func crictlPath() (string, error) {
	if p, err := exec.LookPath("crictl"); err == nil {
		return p, nil
	}
	gobin := filepath.Join(os.Getenv("HOME"), "go", "bin", "crictl")
	if _, err := os.Stat(gobin); err == nil {
		return gobin, nil
	}
	return "", fmt.Errorf("crictl not found")
}

// labCase is one staged state of the pull path and what all three views must say.
type labCase struct {
	name     string
	image    string // %s is replaced by a fresh repository name
	creds    string // user:pass for crictl and the probe
	proxied  bool   // pull with the containerd that has the proxy in its environment
	slow     bool   // containerd waits for its 30s dial timeout
	before   func(e *env)
	after    func(e *env)
	wantPull bool   // containerd succeeds
	explain  string // class of containerd's error ("" when it succeeds)
	class    string // probe class in the node namespace
	role     string // probe failing role
	warn     string // a warning the probe must give (mirror fallback)
	runtime  string // a warning `pullpath runtime` must give
	podClass string // probe class from the pod namespace (the VPN sidecar case)
	noWarn   string // a warning `pullpath runtime` must not give
	split    bool   // pull with the containerd whose config_path lists two directories
	dflt     bool   // pull with the containerd whose config sets no config_path
	// dfltLocal: the same with use_local_image_pull = true (2.x; 1.x pulls locally anyway)
	dfltLocal bool
	legacy    bool   // pull with the containerd configured with registry.mirrors/configs
	says      string // text `pullpath runtime` must print (which config_path applies, and why)
	hosts     bool   // the probe reads the root's /etc/hosts (localhost)
	roles     string // the roles of the runtime's hosts in the probe's report, in order
	// v2 replaces the expectations above for containerd 2.x where it differs from 1.6
	v2 *labCase
}

// on is the case as expected of one containerd: the 2.x expectations where they differ.
func (c labCase) on(rt *ctrd) labCase {
	if !rt.v2 || c.v2 == nil {
		return c
	}
	w := *c.v2
	w.name, w.image, w.creds, w.proxied, w.slow, w.before, w.after, w.split, w.dflt, w.dfltLocal, w.legacy, w.hosts, w.roles = c.name, c.image, c.creds, c.proxied, c.slow, c.before, c.after, c.split, c.dflt, c.dfltLocal, c.legacy, c.hosts, c.roles
	return w
}

var cases = []labCase{
	{name: "healthy, blobs redirected to a blob host", image: "registry.lab.test/%s:v1", wantPull: true, class: "ok"},
	{name: "healthy, blobs from the registry", image: "direct.lab.test:4443/%s:v1", wantPull: true, class: "ok"},
	{name: "healthy with credentials", image: "registry.lab.test:5000/%s:v1", creds: labUser + ":" + labPass, wantPull: true, class: "ok"},
	{name: "registry name NXDOMAIN", image: "nxd.lab.test/%s:v1", explain: "dns", class: "dns", role: "registry"},
	{name: "resolver unreachable", image: "registry.lab.test/%s:v1", explain: "dns", class: "dns", role: "registry",
		// the resolver's host rejects DNS: ICMP port unreachable, as when nothing listens on :53
		before: func(e *env) {
			e.run("ip", "netns", "exec", e.nsReg, "nft", "add", "rule", "inet", "pplab", "dns", "ip", "daddr", regIP, "udp", "dport", "53", "reject")
		},
		after: func(e *env) { e.run("ip", "netns", "exec", e.nsReg, "nft", "flush", "chain", "inet", "pplab", "dns") }},
	{name: "no route to the registry", image: "noroute.lab.test/%s:v1", explain: "route", class: "route", role: "registry"},
	{name: "registry port refused", image: "registry.lab.test:5999/%s:v1", explain: "route", class: "route", role: "registry"},
	{name: "untrusted CA", image: "registry.lab.test:5002/%s:v1", explain: "tls", class: "tls", role: "registry"},
	{name: "wrong-name certificate", image: "registry.lab.test:5003/%s:v1", explain: "tls", class: "tls", role: "registry"},
	{name: "expired certificate", image: "registry.lab.test:5006/%s:v1", explain: "tls", class: "tls", role: "registry"},
	{name: "plain HTTP registry", image: "registry.lab.test:5004/%s:v1", explain: "tls", class: "tls", role: "registry"},
	{name: "no credentials (401)", image: "registry.lab.test:5000/%s:v1", explain: "auth", class: "auth", role: "registry"},
	{name: "wrong credentials (401)", image: "registry.lab.test:5000/%s:v1", creds: labUser + ":wrong", explain: "auth", class: "auth", role: "registry"},
	{name: "missing tag", image: "registry.lab.test/%s:nope", explain: "not_found", class: "not_found", role: "registry"},
	{name: "blob host NXDOMAIN", image: "registry.lab.test:5010/%s:v1", explain: "endpoint", class: "endpoint", role: "blob"},
	{name: "blob host unreachable", image: "registry.lab.test:5011/%s:v1", explain: "endpoint", class: "endpoint", role: "blob"},
	// containerd 2.x reads a file without [host] (core/remotes/docker/config/hosts.go at v2.4.2:
	// getSortedHosts only collects [host.*] tables, the root keys are the server)
	{name: "hosts.toml without [host]", image: "reject.lab.test/%s:v1", explain: "tls", class: "tls", role: "registry", runtime: "HOSTS_TOML_REJECTED",
		v2: &labCase{wantPull: true, class: "ok", noWarn: "HOSTS_TOML_REJECTED"}},
	// the mirror in certs2.d is the only way to hidden.lab.test: 1.6 splits config_path, 2.4's
	// transfer service reads "certs.d:certs2.d" as one directory and goes to the name, not in DNS
	{name: "mirror in the second config_path directory", image: "hidden.lab.test/%s:v1", split: true, wantPull: true, class: "ok", noWarn: "TRANSFER_CONFIG_PATH_LIST",
		v2: &labCase{explain: "dns", class: "dns", role: "registry", runtime: "TRANSFER_CONFIG_PATH_LIST"}},
	// the mirror in certs.d is the only way to dflt.lab.test, and no config_path is set: 1.6 has no
	// default and reads no hosts.toml; 2.4 defaults to "/etc/containerd/certs.d:/etc/docker/certs.d"
	// (plugins/cri/images), a list its transfer service reads as one directory, as in the split case
	{name: "mirror in certs.d, no config_path (2.2+'s default)", image: "dflt.lab.test/%s:v1", dflt: true, explain: "dns", class: "dns", role: "registry",
		runtime: "CONFIG_PATH_UNSET", says: "config_path not set",
		v2: &labCase{explain: "dns", class: "dns", role: "registry", runtime: "TRANSFER_CONFIG_PATH_LIST", noWarn: "CONFIG_PATH_UNSET",
			says: "containerd 2.4.2's default"}},
	// the control: 2.4's local pull splits the same default list and finds the mirror, so the
	// default is in force and only the transfer service misreads it
	{name: "the same, use_local_image_pull (2.x)", image: "dflt.lab.test/%s:v1", dfltLocal: true, explain: "dns", class: "dns", role: "registry",
		runtime: "CONFIG_PATH_UNSET", says: "config_path not set",
		v2: &labCase{wantPull: true, class: "ok", noWarn: "TRANSFER_CONFIG_PATH_LIST", says: "containerd 2.4.2's default"}},
	// the deprecated registry.mirrors: still read by 2.4.2 (its deprecation notice says removal in
	// 2.7), and they keep 2.2+'s default config_path off
	{name: "legacy registry.mirrors (no config_path)", image: "legacy.lab.test/%s:v1", legacy: true, wantPull: true, class: "ok",
		runtime: "LEGACY_REGISTRY_CONFIG", noWarn: "is not read by containerd", says: "registry.mirrors apply instead"},
	// the lab CA in registry.configs."registry.lab.test".tls: 1.6 trusts it; 2.x's registry.configs
	// hold auth only, so 2.4.2 fails TLS
	{name: "legacy registry.configs TLS (no config_path)", image: "registry.lab.test/%s:v1", legacy: true, wantPull: true, class: "ok", noWarn: "LEGACY_TLS_IGNORED",
		v2: &labCase{explain: "tls", class: "tls", role: "registry", runtime: "LEGACY_TLS_IGNORED"}},
	// a plain-HTTP registry on the node's loopback: 1.6.20 speaks HTTP to localhost, 2.x tries
	// HTTPS without verification and falls back to HTTP
	{name: "localhost, plain HTTP", image: "localhost:5005/%s:v1", hosts: true, wantPull: true, class: "ok"},
	// a TLS registry on the loopback whose certificate nobody trusts: 1.6.20 speaks plain HTTP to
	// it; 2.x skips verification for localhost
	// 1.6.20's error is a bare "400 Bad Request" (Go's TLS server answering plain HTTP): tls
	{name: "localhost, untrusted certificate", image: "localhost:5007/%s:v1", hosts: true, explain: "tls", class: "tls", role: "registry",
		v2: &labCase{wantPull: true, class: "ok"}},
	{name: "mirror down, upstream works", image: "mirrored.lab.test/%s:v1", wantPull: true, class: "ok", warn: "mirror.lab.test:443"},
	// every host fails, each its own way: the runtime names one host's error, and so must the probe.
	// A mirror with an untrusted certificate before an upstream not in DNS: both containerds keep
	// the first error (1.6.20 remotes/docker/resolver.go:286; 2.4.2 core/remotes/docker/resolver.go:338)
	{name: "all hosts fail: untrusted mirror, upstream NXDOMAIN", image: "allfail.lab.test/%s:v1", explain: "tls", class: "tls", role: "mirror", warn: "allfail.lab.test:443"},
	// the mirror refuses, the upstream lacks the tag: 1.6.20 skips a 404 and keeps the mirror's
	// error (resolver.go:295); 2.4.2 ranks a 404 above a connection error (resolver.go:352)
	{name: "all hosts fail: mirror refused, upstream tag missing", image: "mirrored.lab.test/%s:nope", explain: "endpoint", class: "endpoint", role: "mirror", warn: "mirrored.lab.test:443",
		v2: &labCase{explain: "not_found", class: "not_found", role: "registry", warn: "mirror.lab.test:443"}},
	{name: "HTTPS proxy without NO_PROXY for the registry", image: "registry.lab.test/%s:v1", proxied: true, explain: "proxy", class: "proxy", role: "proxy"},
	{name: "VPN sidecar: the pod has a route the node lacks", image: "vpn.lab.test/%s:v1", explain: "route", class: "route", role: "registry", podClass: "ok"},
	// a [host] that is the registry's own URL (containerd's documented CA pattern, kubespray's
	// output) is the registry: with no route, route on the registry, never endpoint on a mirror
	{name: "self-mirror hosts.toml (containerd's docs: the CA on the [host])", image: "self.lab.test/%s:v1", wantPull: true, class: "ok", roles: "registry registry"},
	{name: "self-mirror hosts.toml, no route to the registry", image: "selfnr.lab.test/%s:v1", explain: "route", class: "route", role: "registry", roles: "registry registry"},
	// the [host]'s 404 sends containerd on to the server, which has no ca: 1.6.20 keeps the first
	// error that is not a 404, the server's x509 one; 2.4.2 ranks the 404 above it
	{name: "self-mirror hosts.toml, missing tag (the server has no ca)", image: "self.lab.test/%s:nope", explain: "tls", class: "tls", role: "registry", roles: "registry registry",
		v2: &labCase{explain: "not_found", class: "not_found", role: "registry", roles: "registry registry"}},
	{name: "self-mirror [host] with the default port (?ns= sent), no route", image: "selfport.lab.test/%s:v1", explain: "route", class: "route", role: "registry", roles: "registry registry"},
	{name: "kubespray's hosts.toml for a private registry", image: "kspray.lab.test/%s:v1", wantPull: true, class: "ok", roles: "registry registry"},
	{name: "kubespray's docker.io hosts.toml, no route to Docker Hub", image: "docker.io/%s:v1", explain: "route", class: "route", role: "registry", roles: "registry registry",
		before: func(e *env) { e.dockerHub(true) }, after: func(e *env) { e.dockerHub(false) }},
	{name: "registry packets dropped", image: "dropped.lab.test/%s:v1", slow: true, explain: "route", class: "route", role: "registry"},
	{name: "blob host packets dropped", image: "registry.lab.test:5012/%s:v1", slow: true, explain: "endpoint", class: "endpoint", role: "blob"},
}

// result is one case; per holds each containerd's run.
type result struct {
	c   labCase
	per []*run
}

// run is one case on one containerd.
type run struct {
	c                   labCase
	rt                  *ctrd
	pullOK              bool
	bare                bool // the runtime's error was a bare deadline
	pullErr             string
	explain             string
	probe               probeResult
	pod                 probeResult
	runtimeOut          string
	pullTime, probeTime time.Duration
	problems            []string
}

type probeResult struct {
	Class   string `json:"class"`
	Code    string `json:"code"`
	Failing *struct {
		Host, Role, Step string
	} `json:"failing"`
	Warnings []struct{ Code, Host, Message string } `json:"warnings"`
	Download struct {
		Bytes      int64   `json:"bytes"`
		DurationMs float64 `json:"durationMs"`
	} `json:"download"`
	Runtime *struct {
		Hosts []struct{ URL, Role, Result string }
	} `json:"runtime"`
	CRI *struct {
		PresentBefore, Removed bool
		Result, Class, Note    string
		Agrees                 *bool
	} `json:"cri"`
	raw string
}

// warnsAbout says the probe gave a warning about host.
func (p probeResult) warnsAbout(host string) bool {
	for _, w := range p.Warnings {
		if w.Host == host {
			return true
		}
	}
	return false
}

func TestLab(t *testing.T) {
	if skipReason != "" {
		t.Skip("lab tier skipped: " + skipReason)
	}
	crictl, _ := crictlPath()
	bin := filepath.Join(t.TempDir(), "pullpath")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/pullpath").CombinedOutput(); err != nil {
		t.Fatalf("build pullpath: %v\n%s", err, out)
	}
	setup := time.Now()
	ctrd2 := os.Getenv("PULLPATH_CONTAINERD2")
	if ctrd2 == "" {
		t.Log("the containerd 2.x column is skipped: PULLPATH_CONTAINERD2 is unset (scripts/containerd2.sh builds it; scripts/test.sh sets it)")
	}
	e := newEnv(t, bin, crictl, ctrd2)
	t.Logf("lab up in %s (%s)", time.Since(setup).Round(time.Millisecond), e.dir)

	// PULLPATH_LAB_CASES (a regexp) runs only the containerd cases it matches, without the CRI-O,
	// docker and throughput sections: a focused run on a shared machine
	only, err := regexp.Compile(os.Getenv("PULLPATH_LAB_CASES"))
	if err != nil {
		t.Fatalf("PULLPATH_LAB_CASES: %v", err)
	}
	focused := os.Getenv("PULLPATH_LAB_CASES") != ""
	results := make([]*result, 0, len(cases)) // no reallocation: slow cases fill their slot later
	var wg sync.WaitGroup
	for i, c := range cases {
		if !only.MatchString(c.name) {
			continue
		}
		results = append(results, nil)
		slot := &results[len(results)-1]
		repo := fmt.Sprintf("lab/c%02d-%d", i, time.Now().UnixNano()%1e6)
		e.push(repo+":v1", 2, 256<<10)
		c.image = fmt.Sprintf(c.image, repo)
		if c.slow {
			wg.Add(1)
			go func() { defer wg.Done(); *slot = e.runCase(c) }()
			continue
		}
		*slot = e.runCase(c)
	}
	wg.Wait()
	report := e.table(results)
	var crio []*crioResult
	if focused {
		t.Logf("PULLPATH_LAB_CASES=%q: %d of %d containerd cases; the CRI-O, docker and throughput sections are skipped", only, len(results), len(cases))
	} else if _, err := exec.LookPath("skopeo"); err != nil {
		t.Log("the CRI-O (skopeo) section is skipped: skopeo is missing (scripts/test.sh installs it with the lab's packages)")
	} else {
		crio = e.skopeo(t)
		report += "\n" + crioTable(crio)
		for _, r := range crio {
			if !r.ok {
				t.Logf("skopeo, %s: %s", r.c.name, r.err)
			}
		}
	}
	var dk []*dockerResult
	switch bin := dockerdPath(); {
	case focused:
	case bin == "":
		t.Log("the docker section is skipped: no dockerd (apt-get download docker.io && dpkg-deb -x docker.io_*.deb ${PULLPATH_CACHE:-/var/cache/pullpath}/docker.io/root, or PULLPATH_DOCKERD)")
	default:
		dk = e.docker(bin)
		report += "\n" + dockerTable(dk)
		for _, r := range dk {
			if !r.ok {
				t.Logf("dockerd, %s: %s", r.c.name, r.err)
			}
		}
	}
	t.Log("\n" + report)
	if p := os.Getenv("PULLPATH_LAB_REPORT"); p != "" {
		_ = os.WriteFile(p, []byte(report), 0o644)
	}
	for _, r := range results {
		for _, x := range r.per {
			for _, p := range x.problems {
				t.Errorf("%s [%s]: %s", r.c.name, x.rt.label, p)
			}
		}
	}
	for _, r := range crio {
		for _, p := range r.problems {
			t.Errorf("CRI-O %s [skopeo]: %s", r.c.name, p)
		}
	}
	for _, r := range dk {
		for _, p := range r.problems {
			t.Errorf("docker %s [dockerd 20.10]: %s", r.c.name, p)
		}
	}
	if !focused {
		e.throughput(t)
	}
}

// runCase runs the case on every containerd at once: each pulls into its own content store.
func (e *env) runCase(c labCase) *result {
	r := &result{c: c, per: make([]*run, len(e.ctrds))}
	if c.before != nil {
		c.before(e)
	}
	if c.after != nil {
		defer c.after(e)
	}
	var wg sync.WaitGroup
	for i, rt := range e.ctrds {
		wg.Add(1)
		go func() { defer wg.Done(); r.per[i] = e.runOn(c.on(rt), rt) }()
	}
	wg.Wait()
	return r
}

// runOn pulls with one containerd, explains its error, and probes from the node against that
// containerd's root (and from the pod).
func (e *env) runOn(c labCase, rt *ctrd) *run {
	r := &run{c: c, rt: rt}
	sock, root := rt.sockRoot(c)
	args := []string{"--runtime-endpoint", "unix://" + sock, "--image-endpoint", "unix://" + sock, "--timeout", "60s", "pull", "--pull-timeout", "50s"}
	if c.creds != "" {
		args = append(args, "--creds", c.creds)
	}
	start := time.Now()
	out, err := exec.Command(e.crictl, append(args, c.image)...).CombinedOutput()
	r.pullTime = time.Since(start)
	r.pullOK = err == nil
	r.pullErr = strings.TrimSpace(string(out))
	if r.pullOK != c.wantPull {
		r.problems = append(r.problems, fmt.Sprintf("containerd pull ok=%t, want %t: %s", r.pullOK, c.wantPull, r.pullErr))
	}
	if !r.pullOK {
		if fs := e.explain(r.pullErr); len(fs) > 0 {
			r.explain = fs[0].Class
			for _, f := range fs[1:] {
				if f.Class != r.explain {
					r.problems = append(r.problems, fmt.Sprintf("explain gave %s and %s for the same pull", r.explain, f.Class))
				}
			}
		}
		// containerd 2.4.2 retries a timed-out request (core/remotes/docker/resolver.go
		// doWithTransportRetries); in some runs crictl's 50 s deadline then ends the pull and the
		// error names no host ("context deadline exceeded", or "stream terminated by RST_STREAM"),
		// which explain can only read as route: the case's class is then held by the probe
		r.bare = rt.v2 && c.slow && strings.Contains(r.pullErr, "code = DeadlineExceeded") && !hostNamed.MatchString(r.pullErr)
		if r.bare && r.explain == "route" {
			r.explain = "route (bare deadline)"
		} else if r.explain != c.explain {
			r.problems = append(r.problems, fmt.Sprintf("explain class %q, want %q for containerd's error: %s", r.explain, c.explain, r.pullErr))
		}
	}
	// every case also asks containerd over the CRI (probe --cri): its verdict must be containerd's own.
	// Not the slow cases on 2.x: with its retries the probe's own pull can take 5 × 30 s there.
	criArgs := []string{"--cri=" + sock}
	withCRI := !(rt.v2 && c.slow)
	if !withCRI {
		criArgs = nil
	}
	if withCRI {
		if r.pullOK {
			// crictl's pull left the image cached: --cri alone must not pull it (the cached-image lie)
			pr := e.probe(e.nsNode, root, c, criArgs)
			if x := pr.CRI; x == nil || x.Result != "skipped" || !x.PresentBefore || x.Removed || !strings.Contains(x.Note, "cached-image lie") {
				r.problems = append(r.problems, fmt.Sprintf("probe --cri on a cached image: %+v, want skipped with the cached-image note\n%s", x, clip(pr.raw)))
			}
			criArgs = append(criArgs, "--cri-fresh")
		}
	}
	start = time.Now()
	r.probe = e.probe(e.nsNode, root, c, criArgs)
	r.probeTime = time.Since(start)
	if withCRI {
		want, wantClass := "failed", r.explain
		if r.pullOK {
			want, wantClass = "ok", "ok"
		}
		if x := r.probe.CRI; x == nil || x.Result != want || x.Class != wantClass || x.Agrees == nil || !*x.Agrees || x.Removed != r.pullOK {
			r.problems = append(r.problems, fmt.Sprintf("probe --cri: %+v, want result %s class %s (containerd's own) agreeing with the probe\n%s", x, want, wantClass, clip(r.probe.raw)))
		}
	}
	if r.probe.Class != c.class {
		r.problems = append(r.problems, fmt.Sprintf("probe class %q (%s), want %q\n%s", r.probe.Class, r.probe.Code, c.class, clip(r.probe.raw)))
	}
	if c.role != "" && (r.probe.Failing == nil || r.probe.Failing.Role != c.role) {
		r.problems = append(r.problems, fmt.Sprintf("probe failing %+v, want role %s", r.probe.Failing, c.role))
	}
	if c.roles != "" {
		var got []string
		if r.probe.Runtime != nil {
			for _, h := range r.probe.Runtime.Hosts {
				got = append(got, h.Role)
			}
		}
		if strings.Join(got, " ") != c.roles {
			r.problems = append(r.problems, fmt.Sprintf("probe's runtime hosts have roles %q, want %q", strings.Join(got, " "), c.roles))
		}
	}
	if c.warn != "" && !r.probe.warnsAbout(c.warn) {
		r.problems = append(r.problems, fmt.Sprintf("probe should warn about %s: %+v", c.warn, r.probe.Warnings))
	}
	if c.runtime != "" || c.noWarn != "" || c.says != "" {
		ro, _ := exec.Command(e.pullpath, "runtime", "--host-root", root, c.image).CombinedOutput()
		r.runtimeOut = string(ro)
		// runtime's text wraps at 80 columns: a phrase may break across lines
		flat := strings.Join(strings.Fields(r.runtimeOut), " ")
		if c.runtime != "" && !strings.Contains(flat, c.runtime) {
			r.problems = append(r.problems, fmt.Sprintf("pullpath runtime should warn %s:\n%s", c.runtime, r.runtimeOut))
		}
		if c.noWarn != "" && strings.Contains(flat, c.noWarn) {
			r.problems = append(r.problems, fmt.Sprintf("pullpath runtime must not warn %s here:\n%s", c.noWarn, r.runtimeOut))
		}
		if c.says != "" && !strings.Contains(flat, c.says) {
			r.problems = append(r.problems, fmt.Sprintf("pullpath runtime should say %q:\n%s", c.says, r.runtimeOut))
		}
	}
	if c.podClass != "" && rt == e.ctrds[0] { // the pod's view does not depend on the runtime
		resolv := filepath.Join(e.dir, "pod-resolv.conf")
		writeFile(e.t, resolv, "nameserver "+vpnRegIP+"\n")
		r.pod = e.probe(e.nsPod, "", c, []string{"--resolv-conf", resolv, "--ca-file", filepath.Join(e.dir, "pki", "ca.pem")})
		if r.pod.Class != c.podClass {
			r.problems = append(r.problems, fmt.Sprintf("probe from the pod namespace: class %q, want %q\n%s", r.pod.Class, c.podClass, clip(r.pod.raw)))
		}
	}
	return r
}

// hostNamed finds a host in a runtime's error: a URL, a dial or a lookup.
var hostNamed = regexp.MustCompile(`https?://|dial tcp|lookup `)

func (e *env) probe(ns, root string, c labCase, extra []string) probeResult {
	args := []string{"netns", "exec", ns, e.pullpath, "probe", "-o", "json", "--platform", "linux/" + goarch(), "--connect-timeout", "2s", "--hosts-file", ""}
	if root != "" {
		args = append(args, "--host-root", root)
	}
	if root != "" && c.hosts {
		args = append(args, "--hosts-file", filepath.Join(root, "etc", "hosts"))
	}
	args = append(args, extra...)
	cmd := exec.Command("ip", args...)
	if c.creds != "" {
		u, p, _ := strings.Cut(c.creds, ":")
		cmd.Args = append(cmd.Args, "-u", u, "--password-stdin")
		cmd.Stdin = strings.NewReader(p + "\n")
	} else {
		cmd.Args = append(cmd.Args, "--anonymous")
	}
	cmd.Args = append(cmd.Args, c.image)
	out, _ := cmd.Output()
	var pr probeResult
	if err := json.Unmarshal(out, &pr); err != nil {
		pr.Class = "error: " + err.Error()
	}
	pr.raw = string(out)
	return pr
}

func (e *env) table(rs []*result) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	head := "CASE"
	for _, rt := range e.ctrds {
		head += "\t" + rt.label + "\tEXPLAIN\tPROBE --HOST-ROOT " + rt.key + "\tPROBE --CRI"
	}
	fmt.Fprintln(tw, head+"\tRESULT")
	for _, r := range rs {
		line := r.c.name
		verdict := "agree"
		for _, x := range r.per {
			pull := "ok"
			if !x.pullOK {
				pull = "fail"
			}
			probe := x.probe.Class
			if f := x.probe.Failing; f != nil {
				probe += " " + f.Host + " (" + f.Role + ")"
			}
			if x.c.podClass != "" && x.pod.Class != "" {
				probe += ", pod: " + x.pod.Class
			}
			ex := x.explain
			if ex == "" {
				ex = "-"
			}
			cri := "-"
			if c := x.probe.CRI; c != nil {
				cri = c.Result + " " + c.Class
				if c.Agrees != nil && *c.Agrees {
					cri += ", agrees"
				}
			}
			line += fmt.Sprintf("\t%s %s\t%s\t%s\t%s", pull, x.pullTime.Round(10*time.Millisecond), ex, probe, cri)
			if len(x.problems) > 0 {
				verdict = "MISMATCH " + x.rt.key
			}
		}
		fmt.Fprintln(tw, line+"\t"+verdict)
	}
	_ = tw.Flush()
	return b.String()
}

// throughput pulls a fresh ~200 MB image with containerd and with the probe, over the veth.
func (e *env) throughput(t *testing.T) {
	if os.Getenv("PULLPATH_LAB_BIG") == "0" {
		return
	}
	repo := fmt.Sprintf("lab/big-%d", time.Now().UnixNano()%1e6)
	e.push(repo+":v1", 4, 50<<20)
	img := "registry.lab.test/" + repo + ":v1"
	start := time.Now()
	out, err := exec.Command(e.crictl, "--runtime-endpoint", "unix://"+e.ctrds[0].sock, "--image-endpoint", "unix://"+e.ctrds[0].sock, "--timeout", "120s", "pull", "--pull-timeout", "120s", img).CombinedOutput()
	ctrd := time.Since(start)
	if err != nil {
		t.Fatalf("big pull: %v\n%s", err, out)
	}
	start = time.Now()
	pr := e.probe(e.nsNode, e.ctrds[0].root, labCase{image: img}, nil)
	pt := time.Since(start)
	if pr.Class != "ok" {
		t.Fatalf("big probe: %s\n%s", pr.Class, clip(pr.raw))
	}
	mb := float64(pr.Download.Bytes) / 1e6
	line := fmt.Sprintf("throughput over the veth, fresh %.0f MB image: containerd (crictl pull, incl. unpack) %.2fs = %.0f MB/s; pullpath probe %.2fs = %.0f MB/s (download %.2fs)",
		mb, ctrd.Seconds(), mb/ctrd.Seconds(), pt.Seconds(), mb/pt.Seconds(), pr.Download.DurationMs/1e3)
	t.Log(line)
	tierreport.Append("PULLPATH_LAB_REPORT", "", line)
}

// explain runs pullpath explain on a runtime's error text and returns its findings (none when it
// printed no JSON).
func (e *env) explain(text string) []struct{ Class, Code string } {
	ex := exec.Command(e.pullpath, "explain", "-o", "json")
	ex.Stdin = strings.NewReader(text)
	out, _ := ex.Output()
	var doc struct {
		Findings []struct{ Class, Code string }
	}
	_ = json.Unmarshal(out, &doc)
	return doc.Findings
}

func clip(s string) string {
	if len(s) > 1500 {
		return s[:1500] + "…"
	}
	return s
}
