package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/watch"
)

// fieldShape is one of issue 32 item 5's ways a node pulls, on a node of its own in fieldSpec:
// the image it pulls (the same content, on the host:port the shape needs), what the probe's report
// must show of the shape when it holds, and how the shape is broken and restored.
type fieldShape struct {
	name, node, pool string
	ref              string
	holds            func(t *testing.T, p report.PoolResult) // shape-specific checks of a passing probe
	// break and restore the shape on the running node; the runtime's failure then has every one of
	// event (its Failed event), and pullpath's class is class on host (role)
	breakIt, restore func(t *testing.T)
	event            []string
	class            report.Class
	host             string
	role             report.Role
}

func fieldShapes(c *cluster, app pushedImage) []fieldShape {
	repo := strings.TrimPrefix(app.Ref, registry) // "/field/app:v1"
	etc := func(node string, elem ...string) string {
		return filepath.Join(append([]string{c.node(node).dir, "etc-containerd"}, elem...)...)
	}
	write := func(t *testing.T, path string, body []byte) {
		t.Helper()
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runtimeHosts := func(p report.PoolResult) []report.RuntimeHost {
		if p.Probe.Runtime == nil {
			return nil
		}
		return p.Probe.Runtime.Hosts
	}
	return []fieldShape{
		{
			// containerd tries the [host] first, then the server; the node routes to the mirror only,
			// so its pull proves the mirror served it
			name: "mirror host different from the registry", node: "mirror-1", pool: "mirror", ref: app.Ref,
			holds: func(t *testing.T, p report.PoolResult) {
				h := runtimeHosts(p)
				if len(h) == 0 || h[0].URL != "https://"+mirrorHost+"/v2" || h[0].Role != report.RoleMirror || h[0].Result != "ok" {
					t.Errorf("mirror-1: the runtime's first host must be the mirror https://%s/v2, ok: %+v", mirrorHost, h)
				}
			},
			// the mirror moves to a closed port: the mirror refuses, the server is not routed
			breakIt: func(t *testing.T) {
				write(t, etc("mirror-1", "certs.d", registry, "hosts.toml"), mirrorHostsToml("mirror."+zone+":5444"))
			},
			restore: func(t *testing.T) {
				write(t, etc("mirror-1", "certs.d", registry, "hosts.toml"), mirrorHostsToml(mirrorHost))
			},
			// a mirror that fails is a host the pull is handed besides the registry API: endpoint
			event: []string{"mirror." + zone + ":5444", "connection refused"},
			class: report.ClassEndpoint, host: "mirror." + zone + ":5444", role: report.RoleMirror,
		},
		{
			name: "credentials in the kubelet's docker config", node: "dockercfg-1", pool: "dockercfg", ref: authRegistry + repo,
			holds: func(t *testing.T, p report.PoolResult) {
				if !strings.Contains(p.Probe.CredentialSource, "docker config /var/lib/kubelet/config.json") {
					t.Errorf("dockercfg-1: identity %q, want the kubelet's docker config /var/lib/kubelet/config.json", p.Probe.CredentialSource)
				}
			},
			// the credential removed: the kubelet keeps its docker config 5 min (kubelet v1.37
			// credentialprovider/provider.go:104, CachingDockerConfigProvider), so it is restarted, as
			// an operator who changed the file would have to
			breakIt: func(t *testing.T) {
				write(t, filepath.Join(c.node("dockercfg-1").dir, "var-lib", "kubelet", "config.json"), kubeletDockerConfig(false))
				c.restartDaemon(t, "dockercfg-1", "kubelet")
			},
			// the file back; the restarted kubelet has cached it empty for 5 min, past the test's end
			restore: func(t *testing.T) {
				write(t, filepath.Join(c.node("dockercfg-1").dir, "var-lib", "kubelet", "config.json"), kubeletDockerConfig(true))
			},
			event: []string{"401 Unauthorized"},
			class: report.ClassAuth, host: authRegistry, role: report.RoleRegistry,
		},
		{
			name: "runtime proxy with NO_PROXY covering the registry", node: "proxy-1", pool: "proxy", ref: app.Ref,
			// NO_PROXY covers every host of the pull: the probe goes direct, as the runtime does, with
			// no proxy endpoint and no warning (ShapesBroken shows it reads the drop-in)
			holds: func(t *testing.T, p report.PoolResult) {
				for _, e := range p.Probe.Endpoints {
					if e.Role == report.RoleProxy || strings.Contains(e.Host, ":3128") {
						t.Errorf("proxy-1: the probe went through the proxy %s, which NO_PROXY bypasses", e.Host)
					}
				}
				for _, w := range p.Probe.Warnings {
					if strings.Contains(string(w.Code), "PROXY") {
						t.Errorf("proxy-1: warning %s: %s", w.Code, w.Message)
					}
				}
			},
			// NO_PROXY gone from the drop-in and from containerd's environment, containerd restarted
			// (its environment changes no other way): every pull goes to the proxy, where nothing listens
			breakIt: func(t *testing.T) {
				n := c.node("proxy-1")
				write(t, filepath.Join(n.dir, "etc-systemd-system", "containerd.service.d", "http-proxy.conf"), proxyDropIn(false))
				write(t, filepath.Join(n.dir, "containerd.env"), proxyEnv(false))
				c.restartDaemon(t, "proxy-1", "containerd")
			},
			restore: func(t *testing.T) {
				n := c.node("proxy-1")
				write(t, filepath.Join(n.dir, "etc-systemd-system", "containerd.service.d", "http-proxy.conf"), proxyDropIn(true))
				write(t, filepath.Join(n.dir, "containerd.env"), proxyEnv(true))
				c.restartDaemon(t, "proxy-1", "containerd")
			},
			event: []string{"proxyconnect", "connection refused"},
			class: report.ClassProxy, host: strings.TrimPrefix(deadProxy, "http://"), role: report.RoleProxy,
		},
		{
			name: "plain-HTTP registry the runtime allows", node: "plainhttp-1", pool: "plainhttp", ref: plainRegistry + repo,
			holds: func(t *testing.T, p report.PoolResult) {
				h := runtimeHosts(p)
				if len(h) == 0 || h[0].URL != "http://"+plainRegistry+"/v2" || h[0].Result != "ok" {
					t.Errorf("plainhttp-1: the runtime's first host must be http://%s/v2, ok: %+v", plainRegistry, h)
				}
			},
			// the allowance gone: containerd speaks TLS to a plain-HTTP server
			breakIt: func(t *testing.T) {
				if err := os.Remove(etc("plainhttp-1", "certs.d", plainRegistry, "hosts.toml")); err != nil {
					t.Fatal(err)
				}
			},
			restore: func(t *testing.T) {
				write(t, etc("plainhttp-1", "certs.d", plainRegistry, "hosts.toml"), plainHostsToml())
			},
			event: []string{"server gave HTTP response to HTTPS client"},
			class: report.ClassTLS, host: plainRegistry, role: report.RoleRegistry,
		},
	}
}

// byRef groups the shapes by image: verify takes one image, and probes its pools at once.
func byRef(shapes []fieldShape) map[string][]fieldShape {
	out := map[string][]fieldShape{}
	for _, s := range shapes {
		out[s.ref] = append(out[s.ref], s)
	}
	return out
}

// verifyShapes runs one verify --runtime-pull -o json per image, at once, over the shapes' pools,
// and returns each pool's result and its verify's exit code.
func (c *cluster) verifyShapes(t *testing.T, shapes []fieldShape) (map[string]report.PoolResult, map[string]int) {
	t.Helper()
	var mu sync.Mutex
	res, codes := map[string]report.PoolResult{}, map[string]int{}
	var wg sync.WaitGroup
	for ref, group := range byRef(shapes) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"verify", ref, "--runtime-pull", "--run-namespace", runNS, "--probe-timeout", "90s", "-o", "json"}
			for _, s := range group {
				args = append(args, "--pool", s.pool)
			}
			out, errOut, code := c.Run(t, args...)
			var v report.Verification
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Errorf("verify %s: exit %d, not JSON: %v\n%s\n%s", ref, code, err, out, errOut)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range group {
				i := slices.IndexFunc(v.Pools, func(p report.PoolResult) bool { return p.Pool == s.pool })
				if i < 0 || v.Pools[i].Probe == nil {
					t.Errorf("verify %s: no probe report of pool %s\n%s\n%s", ref, s.pool, out, errOut)
					continue
				}
				res[s.pool], codes[s.pool] = v.Pools[i], code
			}
		}()
	}
	wg.Wait()
	return res, codes
}

// The shapes hold: each node's own runtime pulls its image (the ground truth), and verify exits
// 0, class ok, with the kubelet's canary agreeing and the shape visible in the probe's report.
func testShapesVerify(t *testing.T, c *cluster, app pushedImage) {
	shapes := fieldShapes(c, app)
	ns := c.Namespace(t, "shapes")
	for _, s := range shapes {
		c.CreatePod(t, PodOn(ns, s.pool, s.node, s.ref, corev1.PullAlways))
	}
	for _, s := range shapes {
		c.WaitPod(t, ns, s.pool, 2*time.Minute, "Running", running)
		c.WaitEvent(t, ns, s.pool, "Pulled", 30*time.Second, "Successfully pulled image", s.ref)
	}
	begin := time.Now()
	res, codes := c.verifyShapes(t, shapes)
	c.figure("field: verify of the %d shapes' pools (%d runs at once) in %s", len(shapes), len(byRef(shapes)), time.Since(begin).Round(100*time.Millisecond))
	for _, s := range shapes {
		p, ok := res[s.pool]
		if !ok {
			continue
		}
		if codes[s.pool] != 0 || p.Class != report.ClassOK {
			t.Errorf("%s (%s): exit %d class %s %s (%s), want exit 0, class ok: the node's runtime pulled", s.name, s.node, codes[s.pool], p.Class, p.Probe.Code, p.Probe.Summary)
		}
		if rp := p.RuntimePull; rp == nil || rp.Agrees == nil || !*rp.Agrees || rp.Result != "ok" {
			t.Errorf("%s (%s): the kubelet's real pull must succeed and agree: %s", s.name, s.node, pullText(rp))
		}
		s.holds(t, p)
		if t.Failed() {
			raw, _ := json.MarshalIndent(p.Probe, "", " ")
			t.Logf("%s: probe report\n%s", s.node, raw)
		}
	}
	assertNothingLeft(t, c)
}

// Each shape broken once, on its running node (all four at once, one node each): the runtime's
// own pull fails (its event), and probe --host-root on the node, pod on the failing pod, verify
// and one watch round give one class, on one host, and agree with it. Then the shape is restored.
func testShapesBroken(t *testing.T, c *cluster, app pushedImage) {
	shapes := fieldShapes(c, app)
	for _, s := range shapes {
		s.breakIt(t)
		defer s.restore(t)
	}
	ns := c.Namespace(t, "broken")
	for _, s := range shapes {
		c.CreatePod(t, PodOn(ns, s.pool, s.node, s.ref, corev1.PullAlways))
	}
	for _, s := range shapes {
		e := c.WaitEvent(t, ns, s.pool, "Failed", 2*time.Minute, append([]string{"Failed to pull image"}, s.event...)...)
		t.Logf("%s: the runtime: %s", s.node, e.Message)
	}

	// the probe, on the node, as an operator runs it there; pod, on the kubelet's failure
	var wg sync.WaitGroup
	for _, s := range shapes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, errOut, code := c.OnNode(t, s.node, "probe", s.ref, "--host-root", "/", "-o", "json")
			var p report.Probe
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Errorf("%s: probe --host-root: exit %d, not JSON: %v\n%s\n%s", s.node, code, err, out, errOut)
				return
			}
			if code != 1 || p.Class != s.class || p.Failing == nil || p.Failing.Host != s.host || p.Failing.Role != s.role {
				raw, _ := json.MarshalIndent(p.Runtime, "", " ")
				t.Errorf("%s (%s): probe --host-root: exit %d class %s %s failing %+v (%s), want exit 1, %s on %s (%s)\nruntime %s",
					s.name, s.node, code, p.Class, p.Code, p.Failing, p.Summary, s.class, s.host, s.role, raw)
			}
			out, errOut, code = c.Run(t, "pod", s.pool, "-n", ns, "-o", "json")
			var d report.PodDiagnosis
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Errorf("%s: pod: exit %d, not JSON: %v\n%s\n%s", s.node, code, err, out, errOut)
				return
			}
			if code != 1 || d.Class != s.class || len(d.Findings) == 0 || d.Findings[0].Host != s.host {
				t.Errorf("%s (%s): pod: exit %d class %s findings %+v, want exit 1, %s on %s", s.name, s.node, code, d.Class, d.Findings, s.class, s.host)
			}
		}()
	}
	wg.Wait()

	res, codes := c.verifyShapes(t, shapes)
	for _, s := range shapes {
		p, ok := res[s.pool]
		if !ok {
			continue
		}
		if codes[s.pool] != 1 || p.Class != s.class || p.Probe.Failing == nil || p.Probe.Failing.Host != s.host {
			t.Errorf("%s (%s): verify: exit %d class %s %s failing %+v (%s), want exit 1, %s on %s", s.name, s.node, codes[s.pool], p.Class, p.Probe.Code, p.Probe.Failing, p.Probe.Summary, s.class, s.host)
		}
		if rp := p.RuntimePull; rp == nil || rp.Agrees == nil || !*rp.Agrees || rp.Class != s.class {
			t.Errorf("%s (%s): verify: the kubelet's canary must fail with %s and agree: %s", s.name, s.node, s.class, pullText(rp))
		}
	}

	// one watch round with every shape's image: each broken node's status for its own image
	var args []string
	for ref := range byRef(shapes) {
		args = append(args, "--image", ref)
	}
	begin := time.Now()
	w := c.startWatch(t, append(args, "--interval", "10s", "--concurrency", fmt.Sprint(len(c.nodes)), "--run-namespace", runNS, "--probe-timeout", "90s")...)
	for _, s := range shapes {
		w.waitLog(t, "node "+s.node+" (pool "+s.pool+"): ", 3*time.Minute)
	}
	// the status ConfigMap is written at most every 10 s
	var st watch.Status
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		out, errOut, code := c.Run(t, "watch", "status", "--run-namespace", runNS, "-o", "json")
		st = watch.Status{}
		if err := json.Unmarshal([]byte(out), &st); err != nil && code != 2 {
			t.Fatalf("watch status: exit %d: %v\n%s\n%s", code, err, out, errOut)
		}
		if len(st.Nodes) == len(c.nodes) || time.Now().After(deadline) {
			break
		}
	}
	w.stopClean(t, c)
	t.Logf("one watch round, %d images over %d nodes, in %s", len(args)/2, len(c.nodes), time.Since(begin).Round(100*time.Millisecond))
	c.figure("field: one watch round, %d images over %d nodes, in %s", len(args)/2, len(c.nodes), time.Since(begin).Round(100*time.Millisecond))
	for _, s := range shapes {
		i := slices.IndexFunc(st.Nodes, func(n watch.NodeStatus) bool { return n.Node == s.node })
		if i < 0 {
			t.Errorf("%s: not in the watch status", s.node)
			continue
		}
		n := st.Nodes[i]
		j := slices.IndexFunc(n.Images, func(im watch.ImageStatus) bool { return im.Image == s.ref })
		if n.Condition != "True" || j < 0 || n.Images[j].Class != string(s.class) || n.Images[j].Host != s.host {
			t.Errorf("%s (%s): watch: condition %s %s, images %+v; want True, and %s on %s for %s", s.name, s.node, n.Condition, n.Reason, n.Images, s.class, s.host, s.ref)
		}
	}
}
