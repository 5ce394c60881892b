package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// CRI-O's pull library is containers/image; Debian's skopeo (1.9.3, containers/image 5.23.1) pulls
// with it from inside the node namespace, with the registries.conf and certs.d of a CRI-O host
// root the lab writes, and pullpath reads the same root.

// crioCase is one pull through registries.conf.
type crioCase struct {
	name    string
	image   string // %s is a fresh repository; %d its digest
	wantOK  bool   // skopeo succeeds
	class   string // explain of skopeo's error, and the probe's class
	role    string // the probe's failing role
	code    string // the code explain and the probe must both give
	first   string // the host `pullpath runtime` lists first ("" when none)
	runtime string // a warning `pullpath runtime` must give
	warn    string // a host the probe must warn about (a mirror that failed too)
}

var crioCases = []crioCase{
	{name: "mirror (the upstream is not in DNS)", image: "crio-mirrored.lab.test/%s:v1", wantOK: true, class: "ok", first: "registry.lab.test"},
	{name: "blocked registry", image: "direct.lab.test:4443/%s:v1", class: "other", code: "REGISTRY_BLOCKED", runtime: "REGISTRY_BLOCKED"},
	{name: "insecure registry, plain HTTP", image: "registry.lab.test:5004/%s:v1", wantOK: true, class: "ok", first: "registry.lab.test:5004"},
	{name: "digest-only mirror, tag pull", image: "digest.lab.test/%s:v1", class: "dns", role: "registry", first: "digest.lab.test", runtime: "MIRROR_SKIPPED"},
	{name: "digest-only mirror, digest pull", image: "digest.lab.test/%s@%s", wantOK: true, class: "ok", first: "registry.lab.test"},
	// every location fails: containers/image returns the primary's error, the mirrors' only prefix it
	// (docker/docker_image_src.go:104-111 at v5.23.1)
	{name: "all fail: untrusted mirror, primary NXDOMAIN", image: "crio-allfail.lab.test/%s:v1", class: "dns", role: "registry", first: "registry.lab.test:5002", warn: "registry.lab.test:5002"},
	{name: "all fail: mirror refused, primary tag missing", image: "crio-nope.lab.test/%s:nope", class: "not_found", role: "registry", first: "mirror.lab.test", warn: "mirror.lab.test:443"},
}

// crioRegistries is the CRI-O node's registries.conf (containers-registries.conf(5), v2 format).
const crioRegistries = `unqualified-search-registries = []

# the upstream is not in DNS: the mirror is the only way to the image
[[registry]]
prefix = "crio-mirrored.lab.test"
location = "crio-mirrored.lab.test"

[[registry.mirror]]
location = "registry.lab.test"

[[registry]]
prefix = "direct.lab.test:4443"
location = "direct.lab.test:4443"
blocked = true

# every location fails: the mirror's certificate is not the lab CA's, the primary is not in DNS
[[registry]]
prefix = "crio-allfail.lab.test"
location = "crio-allfail.lab.test"

[[registry.mirror]]
location = "registry.lab.test:5002"

# every location fails: the mirror refuses, the primary lacks the tag
[[registry]]
prefix = "crio-nope.lab.test"
location = "registry.lab.test"

[[registry.mirror]]
location = "mirror.lab.test"

# plain HTTP
[[registry]]
prefix = "registry.lab.test:5004"
location = "registry.lab.test:5004"
insecure = true
`

// crioDropIn is a registries.conf.d drop-in: the mirror serves pulls by digest only, and the
// upstream is not in DNS.
const crioDropIn = `[[registry]]
prefix = "digest.lab.test"
location = "digest.lab.test"

[[registry.mirror]]
location = "registry.lab.test"
pull-from-mirror = "digest-only"
`

// crio writes the CRI-O host root: crio.conf, registries.conf and a drop-in, certs.d with the lab CA.
func (e *env) crio() string {
	root := filepath.Join(e.dir, "crio", "root")
	writeFile(e.t, filepath.Join(root, "etc", "crio", "crio.conf"), "[crio]\n[crio.image]\n")
	writeFile(e.t, filepath.Join(root, "etc", "containers", "registries.conf"), crioRegistries)
	writeFile(e.t, filepath.Join(root, "etc", "containers", "registries.conf.d", "50-digest.conf"), crioDropIn)
	writeFile(e.t, filepath.Join(root, "etc", "containers", "policy.json"), `{"default": [{"type": "insecureAcceptAnything"}]}`+"\n")
	for _, h := range []string{"registry.lab.test", "direct.lab.test:4443"} {
		writeFile(e.t, filepath.Join(root, "etc", "containers", "certs.d", h, "ca.crt"), string(e.ca.PEM))
	}
	writeFile(e.t, filepath.Join(root, "etc", "resolv.conf"), "nameserver "+regIP+"\n")
	writeFile(e.t, filepath.Join(root, "etc", "hosts"), "127.0.0.1 localhost\n")
	return root
}

type crioResult struct {
	c          crioCase
	ok         bool
	err        string
	explain    string
	probe      probeResult
	first      string
	runtimeOut string
	took       time.Duration
	problems   []string
}

// skopeo pulls every CRI-O case with skopeo and compares with explain, probe and runtime.
func (e *env) skopeo(t interface{ Logf(string, ...any) }) []*crioResult {
	root := e.crio()
	var out []*crioResult
	for i, c := range crioCases {
		repo := fmt.Sprintf("lab/crio%02d-%d", i, time.Now().UnixNano()%1e6)
		dg := e.push(repo+":v1", 2, 256<<10)
		if strings.Count(c.image, "%s") == 2 {
			c.image = fmt.Sprintf(c.image, repo, dg)
		} else {
			c.image = fmt.Sprintf(c.image, repo)
		}
		out = append(out, e.crioCase(root, c))
	}
	return out
}

func (e *env) crioCase(root string, c crioCase) *crioResult {
	r := &crioResult{c: c}
	dst, err := os.MkdirTemp(e.dir, "skopeo-")
	if err != nil {
		r.problems = append(r.problems, err.Error())
		return r
	}
	defer os.RemoveAll(dst)
	// skopeo reads /etc/containers (registries.conf, certs.d) of the CRI-O root in its private
	// mounts; the tmpfs keeps its blob-info cache out of the machine's /var/lib/containers
	script := fmt.Sprintf("mount --bind %s /etc/containers && mount --bind %s /etc/resolv.conf && mount -t tmpfs tmpfs /var/lib && exec skopeo --command-timeout 40s copy docker://%s dir:%s",
		filepath.Join(root, "etc", "containers"), filepath.Join(root, "etc", "resolv.conf"), c.image, dst)
	start := time.Now()
	o, err := exec.Command("ip", "netns", "exec", e.nsNode, "sh", "-c", script).CombinedOutput()
	r.took = time.Since(start)
	r.ok, r.err = err == nil, strings.TrimSpace(string(o))
	if r.ok != c.wantOK {
		r.problems = append(r.problems, fmt.Sprintf("skopeo ok=%t, want %t: %s", r.ok, c.wantOK, r.err))
	}
	if !r.ok {
		if fs := e.explain(r.err); len(fs) > 0 {
			r.explain = fs[0].Class
			if c.code != "" && fs[0].Code != c.code {
				r.problems = append(r.problems, fmt.Sprintf("explain code %q, want %q for skopeo's error: %s", fs[0].Code, c.code, r.err))
			}
		}
		if r.explain != c.class {
			r.problems = append(r.problems, fmt.Sprintf("explain class %q, want %q for skopeo's error: %s", r.explain, c.class, r.err))
		}
	}
	r.probe = e.probe(e.nsNode, root, labCase{image: c.image}, nil)
	if r.probe.Class != c.class {
		r.problems = append(r.problems, fmt.Sprintf("probe --host-root class %q (%s), want %q\n%s", r.probe.Class, r.probe.Code, c.class, clip(r.probe.raw)))
	}
	if c.role != "" && (r.probe.Failing == nil || r.probe.Failing.Role != c.role) {
		r.problems = append(r.problems, fmt.Sprintf("probe failing %+v, want role %s", r.probe.Failing, c.role))
	}
	if c.code != "" && r.probe.Code != c.code {
		r.problems = append(r.problems, fmt.Sprintf("probe code %q, want %q", r.probe.Code, c.code))
	}
	if c.warn != "" && !r.probe.warnsAbout(c.warn) {
		r.problems = append(r.problems, fmt.Sprintf("probe should warn about %s: %+v", c.warn, r.probe.Warnings))
	}
	ro, _ := exec.Command(e.pullpath, "runtime", "-o", "json", "--host-root", root, c.image).Output()
	r.runtimeOut = string(ro)
	var rc struct {
		Runtime  string
		Hosts    []struct{ Host string }
		Warnings []struct{ Code string }
	}
	if err := json.Unmarshal(ro, &rc); err != nil {
		r.problems = append(r.problems, fmt.Sprintf("pullpath runtime -o json: %v\n%s", err, clip(r.runtimeOut)))
		return r
	}
	if rc.Runtime != "crio" {
		r.problems = append(r.problems, fmt.Sprintf("pullpath runtime read the root as %q, want crio", rc.Runtime))
	}
	if len(rc.Hosts) > 0 {
		r.first = rc.Hosts[0].Host
	}
	if strings.TrimSuffix(r.first, ":443") != c.first {
		r.problems = append(r.problems, fmt.Sprintf("pullpath runtime lists %q first, want %q\n%s", r.first, c.first, clip(r.runtimeOut)))
	}
	if c.runtime != "" {
		found := false
		for _, w := range rc.Warnings {
			found = found || w.Code == c.runtime
		}
		if !found {
			r.problems = append(r.problems, fmt.Sprintf("pullpath runtime should warn %s:\n%s", c.runtime, clip(r.runtimeOut)))
		}
	}
	return r
}

func crioTable(rs []*crioResult) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CRI-O CASE\tSKOPEO\tEXPLAIN\tPROBE --HOST-ROOT CRIO\tRUNTIME: FIRST HOST\tRESULT")
	for _, r := range rs {
		pull, ex, probe := sectionCells(r.ok, r.explain, r.probe)
		first := r.first
		if first == "" {
			first = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\t%s\t%s\n", r.c.name, pull, r.took.Round(10*time.Millisecond), ex, probe, first, agreement(r.problems))
	}
	_ = tw.Flush()
	return b.String()
}

// sectionCells are the cells a runtime's section (CRI-O, docker) shows for a case: its real pull,
// explain's reading of its error and the probe's verdict.
func sectionCells(ok bool, explain string, p probeResult) (pull, ex, probe string) {
	pull, ex, probe = "ok", explain, p.Class
	if !ok {
		pull = "fail"
	}
	if ex == "" {
		ex = "-"
	}
	if f := p.Failing; f != nil {
		probe += " " + f.Host + " (" + f.Role + ")"
	}
	return pull, ex, probe
}

func agreement(problems []string) string {
	if len(problems) > 0 {
		return "MISMATCH"
	}
	return "agree"
}
