package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// Debian's docker.io 20.10.24 pulls with dockerd's own distribution puller (graph drivers). Its
// dockerd is taken from the package without installing it (nothing starts, nothing is written
// outside the cache): apt-get download docker.io && dpkg-deb -x docker.io_*.deb
// ${PULLPATH_CACHE:-/var/cache/pullpath}/docker.io/root, or PULLPATH_DOCKERD names a dockerd.
//
// Each case runs one dockerd in the node namespace (no default route) with --bridge=none and no
// iptables, ip forwarding or masquerading; in its private mounts /run and /sys/fs/cgroup are
// tmpfs (it would create /run/docker/plugins; it refuses to start without the devices cgroup,
// which `ip netns exec`'s fresh /sys lacks), the case's root's /etc/docker (daemon.json, certs.d)
// and resolv.conf are bound over the machine's, and every path it writes is in the lab folder. Its
// containerd is the lab's 1.6 node daemon (--containerd), so it starts none of its own.

// dockerCase is one pull of a Docker Hub image through daemon.json registry-mirrors: the upstream,
// registry-1.docker.io, is not in the lab's DNS.
type dockerCase struct {
	name   string
	mirror string // registry-mirrors entry
	wantOK bool
	class  string // explain of dockerd's error, and the probe's class
	host   string // the probe's failing host
	warn   string // a host the probe must warn about (the mirror that failed first)
	next   bool   // dockerd's log must show it fell back from the mirror
}

var dockerCases = []dockerCase{
	{name: "mirror healthy", mirror: "https://registry.lab.test", wantOK: true, class: "ok"},
	// containerd 1.x would report the mirror's refusal (the first error that is not a 404), 2.x too
	// (both errors rank the same); dockerd reports the last endpoint's (distribution/pull.go:159
	// at v20.10.24)
	{name: "all fail: mirror refused, upstream not in DNS", mirror: "https://mirror.lab.test", class: "dns", host: "registry-1.docker.io:443", warn: "mirror.lab.test:443", next: true},
	// the mirror serves the manifest, its blobs redirect to a port nobody listens on: the config's
	// error (after its retries, ~4 s) falls back (ImageConfigPullError on a mirror, errors.go:160 at
	// v20.10.24); containerd would keep the mirror's blob error
	{name: "all fail: mirror resolved, its blobs refused, upstream not in DNS", mirror: "https://registry.lab.test:5011", class: "dns", host: "registry-1.docker.io:443", warn: "deadblobs.lab.test:9443", next: true},
}

func dockerdPath() string {
	if p := os.Getenv("PULLPATH_DOCKERD"); p != "" {
		return p
	}
	cache := os.Getenv("PULLPATH_CACHE")
	if cache == "" {
		cache = "/var/cache/pullpath"
	}
	p := filepath.Join(cache, "docker.io", "root", "usr", "sbin", "dockerd")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

type dockerResult struct {
	c        dockerCase
	ok       bool
	err      string
	explain  string
	probe    probeResult
	took     time.Duration
	problems []string
}

// docker runs every docker case, each with its own dockerd.
func (e *env) docker(bin string) []*dockerResult {
	var out []*dockerResult
	for i, c := range dockerCases {
		repo := fmt.Sprintf("lab/dk%02d-%d", i, time.Now().UnixNano()%1e6)
		e.push(repo+":v1", 2, 256<<10)
		out = append(out, e.dockerCase(bin, i, c, repo+":v1"))
	}
	return out
}

// dockerRoot writes a docker node root: daemon.json with the mirror, certs.d with the lab CA for
// it, the dpkg entry of the docker.io the dockerd comes from.
func (e *env) dockerRoot(base string, c dockerCase, dir string) string {
	root := filepath.Join(base, "root")
	dj := map[string]any{"registry-mirrors": []string{c.mirror}, "deprecated-key-path": filepath.Join(dir, "key.json")}
	b, _ := json.MarshalIndent(dj, "", "  ")
	writeFile(e.t, filepath.Join(root, "etc", "docker", "daemon.json"), string(b)+"\n")
	u, _ := url.Parse(c.mirror)
	writeFile(e.t, filepath.Join(root, "etc", "docker", "certs.d", u.Host, "ca.crt"), string(e.ca.PEM))
	writeFile(e.t, filepath.Join(root, "etc", "resolv.conf"), "nameserver "+regIP+"\n")
	writeFile(e.t, filepath.Join(root, "etc", "hosts"), "127.0.0.1 localhost\n")
	writeFile(e.t, filepath.Join(root, "var", "lib", "dpkg", "status"), "Package: docker.io\nStatus: install ok installed\nVersion: "+dockerdVersion+"\n\n")
	return root
}

// dockerdVersion is the package the lab's dockerd is taken from; checkDockerd asserts it.
const dockerdVersion = "20.10.24+dfsg1-1+deb12u1+b6"

func (e *env) dockerCase(bin string, i int, c dockerCase, image string) *dockerResult {
	r := &dockerResult{c: c}
	base := filepath.Join(e.dir, fmt.Sprintf("dk%d", i))
	dir := filepath.Join(base, "d") // everything dockerd writes
	root := e.dockerRoot(base, c, dir)
	sock := filepath.Join(dir, "d.sock")
	script := fmt.Sprintf("mount -t tmpfs tmpfs /run && mount -t tmpfs cg /sys/fs/cgroup && mkdir /sys/fs/cgroup/devices && "+
		"mount -t cgroup -o devices cgroup /sys/fs/cgroup/devices && mount --bind %s /etc/docker && mount --bind %s /etc/resolv.conf && "+
		"exec %s --config-file /etc/docker/daemon.json --containerd %s --bridge=none --iptables=false --ip6tables=false --ip-forward=false "+
		"--ip-masq=false --storage-driver vfs --data-root %s --exec-root %s --pidfile %s -H unix://%s",
		filepath.Join(root, "etc", "docker"), filepath.Join(root, "etc", "resolv.conf"), bin, e.ctrds[0].sock,
		filepath.Join(dir, "data"), filepath.Join(dir, "exec"), filepath.Join(dir, "d.pid"), sock)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.problems = append(r.problems, err.Error())
		return r
	}
	logName := fmt.Sprintf("dockerd-%d", i)
	cmd := e.start(logName, nil, "ip", e.inNS(e.nsNode, "sh", "-c", script)...)
	defer func() { // this dockerd only, by its PID (sh execs it)
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _, _ = cmd.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}, Timeout: 90 * time.Second}
	up := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := client.Get("http://dockerd/version"); err == nil {
			var v struct{ Version string }
			_ = json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
			if !strings.HasPrefix(dockerdVersion, v.Version) {
				r.problems = append(r.problems, fmt.Sprintf("dockerd is %q, the lab writes %s as its package", v.Version, dockerdVersion))
			}
			up = true
			break
		}
	}
	if !up {
		r.problems = append(r.problems, "dockerd did not come up; see "+filepath.Join(e.dir, "logs", logName+".log"))
		return r
	}
	repo, tag, _ := strings.Cut(image, ":")
	start := time.Now()
	r.ok, r.err = dockerPull(client, repo, tag)
	r.took = time.Since(start)
	if r.ok != c.wantOK {
		r.problems = append(r.problems, fmt.Sprintf("dockerd pull ok=%t, want %t: %s", r.ok, c.wantOK, r.err))
	}
	if !r.ok {
		if fs := e.explain(r.err); len(fs) > 0 {
			r.explain = fs[0].Class
		}
		if r.explain != c.class {
			r.problems = append(r.problems, fmt.Sprintf("explain class %q, want %q for dockerd's error: %s", r.explain, c.class, r.err))
		}
	}
	if c.next {
		logb, _ := os.ReadFile(filepath.Join(e.dir, "logs", logName+".log"))
		if !strings.Contains(string(logb), "Attempting next endpoint for pull after error") {
			r.problems = append(r.problems, "dockerd's log does not show it falling back from the mirror")
		}
	}
	r.probe = e.probe(e.nsNode, root, labCase{image: image}, nil)
	if r.probe.Class != c.class {
		r.problems = append(r.problems, fmt.Sprintf("probe --host-root class %q (%s), want %q\n%s", r.probe.Class, r.probe.Code, c.class, clip(r.probe.raw)))
	}
	if c.host != "" && (r.probe.Failing == nil || r.probe.Failing.Host != c.host) {
		r.problems = append(r.problems, fmt.Sprintf("probe failing %+v, want host %s", r.probe.Failing, c.host))
	}
	if c.warn != "" && !r.probe.warnsAbout(c.warn) {
		r.problems = append(r.problems, fmt.Sprintf("probe should warn about %s: %+v", c.warn, r.probe.Warnings))
	}
	return r
}

// dockerPull pulls through the Engine API (POST /images/create) and returns the error the client
// would print: the stream's last errorDetail, or the API's message.
func dockerPull(client *http.Client, repo, tag string) (bool, string) {
	resp, err := client.Post("http://dockerd/images/create?"+url.Values{"fromImage": {repo}, "tag": {tag}}.Encode(), "", nil)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var m struct{ Message string }
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return false, m.Message
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Error != "" {
			return false, m.Error
		}
	}
	if err := sc.Err(); err != nil {
		return false, err.Error()
	}
	return true, ""
}

func dockerTable(rs []*dockerResult) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DOCKER 20.10 CASE\tDOCKERD PULL\tEXPLAIN\tPROBE --HOST-ROOT DOCKER\tRESULT")
	for _, r := range rs {
		pull, ex, probe := sectionCells(r.ok, r.explain, r.probe)
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\t%s\n", r.c.name, pull, r.took.Round(10*time.Millisecond), ex, probe, agreement(r.problems))
	}
	_ = tw.Flush()
	return b.String()
}
