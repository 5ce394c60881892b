package events

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/report"
)

var update = flag.Bool("update", false, "rewrite the generated cluster event fixtures in testdata/inputs")

// clusterGen builds `kubectl get events -A -o json` of a busy cluster, deterministically, from the
// event shapes the kubelet, the scheduler, the controllers and node-problem-detector write.
type clusterGen struct {
	rng   *rand.Rand
	t0    time.Time
	items []map[string]any
	n     int
}

var genNodes = []string{"aks-system-31415926-vmss000000", "aks-system-31415926-vmss000001", "aks-user-27182818-vmss000000",
	"aks-user-27182818-vmss000001", "aks-user-27182818-vmss000002"}

type genApp struct {
	ns, name, image, container string
	probe                      string // readiness/liveness probe URL
}

var genApps = []genApp{
	{"shop", "web", "corpacr.azurecr.io/shop/web:4.2.0", "web", "http://%s:8080/healthz"},
	{"shop", "cart", "corpacr.azurecr.io/shop/cart:1.9.3", "cart", "http://%s:8081/ready"},
	{"payments", "api", "corpacr.azurecr.io/payments/api:7.0.1", "api", "http://%s:9000/health"},
	{"payments", "worker", "corpacr.azurecr.io/payments/worker:7.0.1", "worker", ""},
	{"monitoring", "prometheus-server", "quay.io/prometheus/prometheus:v2.53.0", "prometheus", "http://%s:9090/-/ready"},
	{"monitoring", "grafana", "docker.io/grafana/grafana:11.1.0", "grafana", "http://%s:3000/api/health"},
	{"ingress-nginx", "ingress-nginx-controller", "registry.k8s.io/ingress-nginx/controller:v1.11.2", "controller", "http://%s:10254/healthz"},
	{"kube-system", "coredns", "mcr.microsoft.com/oss/kubernetes/coredns:v1.11.3", "coredns", "http://%s:8181/ready"},
	{"tools", "registry-cache", "docker.io/library/registry:2.8.3", "registry", "http://%s:5000/v2/"},
	{"data", "kafka", "docker.io/bitnami/kafka:3.7.0", "kafka", "http://%s:9092/"},
	{"default", "nginx", "nginx:1.27", "nginx", ""},
	{"batch", "nightly-report", "ghcr.io/corp/report:2024.11", "report", ""},
}

func (g *clusterGen) pick(xs []string) string { return xs[g.rng.IntN(len(xs))] }

func (g *clusterGen) suffix(n int) string {
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[g.rng.IntN(len(letters))]
	}
	return string(b)
}

func (g *clusterGen) add(ns, kind, name, fieldPath, typ, reason, component, host, msg string, count int) {
	g.n++
	ts := g.t0.Add(time.Duration(g.n) * 7 * time.Second).Format(time.RFC3339)
	first := g.t0.Add(time.Duration(g.n)*7*time.Second - time.Duration(count-1)*time.Minute).Format(time.RFC3339)
	obj := map[string]any{"apiVersion": "v1", "kind": kind, "name": name, "namespace": ns,
		"resourceVersion": fmt.Sprint(100000 + g.n*13), "uid": fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", g.rng.Uint32(), g.rng.IntN(1<<16), g.rng.IntN(1<<12), g.rng.IntN(1<<12), g.rng.Uint64()&(1<<48-1))}
	if kind == "Node" {
		delete(obj, "namespace")
		obj["uid"] = name
	}
	if fieldPath != "" {
		obj["fieldPath"] = fieldPath
	}
	src := map[string]any{"component": component}
	if host != "" {
		src["host"] = host
	}
	evNS := ns
	if evNS == "" {
		evNS = "default"
	}
	g.items = append(g.items, map[string]any{
		"apiVersion": "v1", "kind": "Event", "count": count, "eventTime": nil,
		"firstTimestamp": first, "lastTimestamp": ts, "involvedObject": obj, "message": msg,
		"metadata": map[string]any{"creationTimestamp": first, "name": fmt.Sprintf("%s.%x", name, 0x17f0000000000000+uint64(g.n)*0x1b3f),
			"namespace": evNS, "resourceVersion": fmt.Sprint(200000 + g.n*17), "uid": fmt.Sprintf("%08x-0000-4000-8000-%012x", g.n, g.rng.Uint64()&(1<<48-1))},
		"reason": reason, "reportingComponent": component, "reportingInstance": host, "source": src, "type": typ,
	})
}

// healthy adds the life of one pod: scheduled, pulled (or already present), created, started, and
// the noise of a busy cluster around it.
func (g *clusterGen) healthy(a genApp) {
	node := g.pick(genNodes)
	rs := a.name + "-" + g.suffix(10)
	pod := rs + "-" + g.suffix(5)
	ip := fmt.Sprintf("10.244.%d.%d", g.rng.IntN(5), 2+g.rng.IntN(250))
	fp := "spec.containers{" + a.container + "}"
	g.add(a.ns, "ReplicaSet", rs, "", "Normal", "SuccessfulCreate", "replicaset-controller", "", "Created pod: "+pod, 1)
	g.add(a.ns, "Pod", pod, "", "Normal", "Scheduled", "default-scheduler", "", fmt.Sprintf("Successfully assigned %s/%s to %s", a.ns, pod, node), 1)
	if g.rng.IntN(3) == 0 {
		g.add(a.ns, "Pod", pod, fp, "Normal", "Pulled", "kubelet", node, fmt.Sprintf("Container image %q already present on machine", a.image), 1)
	} else {
		g.add(a.ns, "Pod", pod, fp, "Normal", "Pulling", "kubelet", node, fmt.Sprintf("Pulling image %q", a.image), 1)
		ms := 300 + g.rng.IntN(9000)
		g.add(a.ns, "Pod", pod, fp, "Normal", "Pulled", "kubelet", node,
			fmt.Sprintf("Successfully pulled image %q in %dms (%dms including waiting). Image size: %d bytes.", a.image, ms, ms+g.rng.IntN(400), 5_000_000+g.rng.IntN(400_000_000)), 1)
	}
	g.add(a.ns, "Pod", pod, fp, "Normal", "Created", "kubelet", node, "Created container: "+a.container, 1)
	g.add(a.ns, "Pod", pod, fp, "Normal", "Started", "kubelet", node, "Started container "+a.container, 1)
	if a.probe != "" && g.rng.IntN(2) == 0 {
		u := fmt.Sprintf(a.probe, ip)
		port := strings.Split(strings.Split(u, "://")[1], "/")[0]
		switch g.rng.IntN(4) {
		case 0:
			g.add(a.ns, "Pod", pod, fp, "Warning", "Unhealthy", "kubelet", node, fmt.Sprintf("Readiness probe failed: Get %q: dial tcp %s: connect: connection refused", u, port), 1+g.rng.IntN(6))
		case 1:
			g.add(a.ns, "Pod", pod, fp, "Warning", "Unhealthy", "kubelet", node, fmt.Sprintf("Liveness probe failed: Get %q: context deadline exceeded (Client.Timeout exceeded while awaiting headers)", u), 1+g.rng.IntN(3))
		case 2:
			g.add(a.ns, "Pod", pod, fp, "Warning", "Unhealthy", "kubelet", node, "Readiness probe failed: HTTP probe failed with statuscode: 503", 2+g.rng.IntN(20))
		default:
			g.add(a.ns, "Pod", pod, fp, "Warning", "Unhealthy", "kubelet", node, fmt.Sprintf("Startup probe failed: Get %q: dial tcp %s: i/o timeout", u, port), 1)
		}
	}
	switch g.rng.IntN(9) {
	case 0:
		g.add(a.ns, "Pod", pod, fp, "Warning", "BackOff", "kubelet", node, fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", a.container, pod, a.ns, "3f1c9a2e-55aa-4bd0-9a65-"+g.suffix(12)), 3+g.rng.IntN(200))
	case 1:
		g.add(a.ns, "Pod", pod, fp, "Normal", "Killing", "kubelet", node, fmt.Sprintf("Container %s failed liveness probe, will be restarted", a.container), 1+g.rng.IntN(4))
	case 2:
		g.add(a.ns, "Pod", pod, "", "Warning", "FailedMount", "kubelet", node, fmt.Sprintf("MountVolume.SetUp failed for volume %q : configmap %q not found", a.name+"-config", a.name+"-config"), 1+g.rng.IntN(9))
	case 3:
		g.add(a.ns, "Pod", pod, "", "Warning", "FailedMount", "kubelet", node, fmt.Sprintf("MountVolume.MountDevice failed for volume \"pvc-%s\" : rpc error: code = Internal desc = could not mount device: dial tcp 10.1.0.%d:3260: i/o timeout", g.suffix(8), 4+g.rng.IntN(200)), 2)
	case 4:
		g.add(a.ns, "Pod", pod, "", "Warning", "FailedAttachVolume", "attachdetach-controller", "", fmt.Sprintf("AttachVolume.Attach failed for volume \"pvc-%s\" : rpc error: code = DeadlineExceeded desc = context deadline exceeded", g.suffix(8)), 1)
	case 5:
		g.add(a.ns, "Pod", pod, fp, "Warning", "Failed", "kubelet", node, fmt.Sprintf("Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"/app/%s\": stat /app/%s: no such file or directory: unknown", a.container, a.container), 1)
	case 6:
		g.add(a.ns, "Pod", pod, fp, "Warning", "Failed", "kubelet", node, fmt.Sprintf("Error: secret %q not found", a.name+"-db"), 3)
	case 7:
		g.add(a.ns, "Pod", pod, fp, "Normal", "Killing", "kubelet", node, "Stopping container "+a.container, 1)
	}
}

func (g *clusterGen) noise() {
	node := g.pick(genNodes)
	switch g.rng.IntN(16) {
	case 0:
		d := g.pick([]string{"web", "cart", "api", "worker", "grafana"})
		g.add(g.pick([]string{"shop", "payments", "monitoring"}), "Deployment", d, "", "Normal", "ScalingReplicaSet", "deployment-controller", "",
			fmt.Sprintf("Scaled %s replica set %s-%s to %d", g.pick([]string{"up", "down"}), d, g.suffix(10), 1+g.rng.IntN(6)), 1)
	case 1:
		p := "pending-" + g.suffix(5)
		g.add("shop", "Pod", p, "", "Warning", "FailedScheduling", "default-scheduler", "",
			"0/5 nodes are available: 2 node(s) had untolerated taint {CriticalAddonsOnly: true}, 3 Insufficient memory. preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.", 4)
	case 2:
		g.add("", "Node", node, "", "Warning", "OOMKilling", "kernel-monitor", node,
			fmt.Sprintf("Memory cgroup out of memory: Killed process %d (java) total-vm:%dkB, anon-rss:%dkB, file-rss:0kB, shmem-rss:0kB, UID:1001 pgtables:4224kB oom_score_adj:985", 1000+g.rng.IntN(30000), 4000000+g.rng.IntN(900000), 2000000+g.rng.IntN(90000)), 1)
	case 3:
		g.add("", "Node", node, "", "Normal", "NodeReady", "kubelet", node, "Node "+node+" status is now: NodeReady", 1)
	case 4:
		g.add("", "Node", node, "", "Normal", "RegisteredNode", "node-controller", "", "Node "+node+" event: Registered Node "+node+" in Controller", 1)
	case 5:
		g.add("kube-system", "Lease", "kube-controller-manager", "", "Normal", "LeaderElection", "kube-controller-manager", "",
			fmt.Sprintf("kube-controller-manager-%s_%08x-%04x became leader", g.suffix(6), g.rng.Uint32(), g.rng.IntN(1<<16)), 1)
	case 6:
		g.add("", "Node", node, "", "Warning", "NodeNotReady", "node-controller", "", "Node "+node+" status is now: NodeNotReady", 1)
	case 7:
		p := "coredns-" + g.suffix(10) + "-" + g.suffix(5)
		g.add("kube-system", "Pod", p, "", "Warning", "FailedCreatePodSandBox", "kubelet", node,
			fmt.Sprintf("Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox \"%s\": plugin type=\"azure-vnet\" failed (add): Failed to allocate address: dial tcp 10.96.0.1:443: connect: connection refused", g.suffix(40)), 2)
	case 8:
		g.add("", "Node", node, "", "Warning", "ImageGCFailed", "kubelet", node,
			fmt.Sprintf("failed to garbage collect required amount of images. Attempted to free %d bytes, but only found 0 bytes eligible to free.", 1_000_000_000+g.rng.IntN(900_000_000)), 1)
	case 9:
		g.add("shop", "HorizontalPodAutoscaler", "web", "", "Warning", "FailedGetResourceMetric", "horizontal-pod-autoscaler", "",
			"failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server is currently unable to handle the request (get pods.metrics.k8s.io)", 12)
	case 10:
		g.add("batch", "ReplicaSet", "loader-"+g.suffix(10), "", "Warning", "FailedCreate", "replicaset-controller", "",
			"Error creating: pods \"loader-\" is forbidden: exceeded quota: compute-resources, requested: limits.memory=2Gi, used: limits.memory=15Gi, limited: limits.memory=16Gi", 9)
	case 11:
		j := "nightly-report-" + fmt.Sprint(28900000+g.rng.IntN(9999))
		g.add("batch", "Job", j, "", "Normal", "SuccessfulCreate", "job-controller", "", "Created pod: "+j+"-"+g.suffix(5), 1)
		g.add("batch", "Job", j, "", "Normal", "Completed", "job-controller", "", "Job completed", 1)
		g.add("batch", "CronJob", "nightly-report", "", "Normal", "SawCompletedJob", "cronjob-controller", "", "Saw completed job: "+j+", status: Complete", 1)
	case 12:
		g.add("kube-system", "Pod", "kube-proxy-"+g.suffix(5), "", "Warning", "DNSConfigForming", "kubelet", node,
			"Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 168.63.129.16 10.0.0.10 10.0.0.11", 30)
	case 13:
		g.add("ingress-nginx", "Service", "ingress-nginx-controller", "", "Warning", "SyncLoadBalancerFailed", "service-controller", "",
			"Error syncing load balancer: failed to ensure load balancer: Retriable: true, RetryAfter: 0s, HTTPStatusCode: 429, RawError: Retriable: true, RetryAfter: 0s, HTTPStatusCode: 429, RawError: {\"error\":{\"code\":\"TooManyRequests\"}}", 2)
	case 14:
		g.add("", "Node", node, "", "Warning", "InvalidDiskCapacity", "kubelet", node, "invalid capacity 0 on image filesystem", 1)
	default:
		g.add("data", "Pod", "kafka-0", "", "Normal", "SandboxChanged", "kubelet", node, "Pod sandbox changed, it will be killed and re-created.", 1)
	}
}

// pullFailures are the real pull failures of the mixed fixture, each with the kubelet's causeless
// follow-ups, and what explain must find.
type wantFinding struct {
	class report.Class
	code  report.Code
	host  string
	count int
}

func (g *clusterGen) pullFailures() []wantFinding {
	node := genNodes[2]
	fp := "spec.containers{app}"
	img := "registry.corp.example:5000/shop/checkout:2.3.1"
	g.add("shop", "Pod", "checkout-6b7f9c-x2x9k", fp, "Normal", "Pulling", "kubelet", node, fmt.Sprintf("Pulling image %q", img), 4)
	g.add("shop", "Pod", "checkout-6b7f9c-x2x9k", fp, "Warning", "Failed", "kubelet", node,
		fmt.Sprintf("Failed to pull image %q: rpc error: code = Unknown desc = failed to pull and unpack image %q: failed to resolve reference %q: failed to do request: Head \"https://registry.corp.example:5000/v2/shop/checkout/manifests/2.3.1\": dial tcp 10.20.30.40:5000: connect: connection refused", img, img, img), 4)
	g.add("shop", "Pod", "checkout-6b7f9c-x2x9k", fp, "Warning", "Failed", "kubelet", node, "Error: ErrImagePull", 4)
	g.add("shop", "Pod", "checkout-6b7f9c-x2x9k", fp, "Normal", "BackOff", "kubelet", node, fmt.Sprintf("Back-off pulling image %q", img), 61)
	g.add("shop", "Pod", "checkout-6b7f9c-x2x9k", fp, "Warning", "Failed", "kubelet", node, "Error: ImagePullBackOff", 61)

	img = "corpacr.azurecr.io/payments/ledger:3.0.0"
	for _, p := range []string{"ledger-5c4d8-abcde", "ledger-5c4d8-fghij"} {
		g.add("payments", "Pod", p, fp, "Warning", "Failed", "kubelet", genNodes[3],
			fmt.Sprintf("Failed to pull image %q: rpc error: code = Unknown desc = failed to pull and unpack image %q: failed to resolve reference %q: failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://corpacr.azurecr.io/oauth2/token?scope=repository%%3Apayments%%2Fledger%%3Apull&service=corpacr.azurecr.io: 401 Unauthorized", img, img, img), 3)
		g.add("payments", "Pod", p, fp, "Warning", "Failed", "kubelet", genNodes[3], "Error: ErrImagePull", 3)
	}

	g.add("kube-system", "Pod", "konnectivity-agent-7d9f-qq2lm", "", "Warning", "FailedCreatePodSandBox", "kubelet", genNodes[4],
		`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox image "registry.k8s.io/pause:3.9": failed to pull image "registry.k8s.io/pause:3.9": failed to pull and unpack image "registry.k8s.io/pause:3.9": failed to resolve reference "registry.k8s.io/pause:3.9": failed to do request: Head "https://registry.k8s.io/v2/pause/manifests/3.9": dial tcp: lookup registry.k8s.io on 168.63.129.16:53: no such host`, 7)

	g.add("batch", "Pod", "nightly-report-28901234-abcde", "spec.containers{report}", "Warning", "InspectFailed", "kubelet", node,
		`Failed to apply default image tag "ghcr.io/corp/Report:2024.11": couldn't parse image reference "ghcr.io/corp/Report:2024.11": invalid reference format: repository name must be lowercase`, 2)
	g.add("batch", "Pod", "nightly-report-28901234-abcde", "spec.containers{report}", "Warning", "Failed", "kubelet", node, "Error: InvalidImageName", 2)

	g.add("monitoring", "Pod", "node-exporter-9xk2p", "spec.initContainers{setup}", "Warning", "ErrImageNeverPull", "kubelet", node,
		`Container image "corp/node-setup:1.0" is not present with pull policy of Never`, 1)

	return []wantFinding{
		{report.ClassRoute, report.CodeTCPRefused, "registry.corp.example:5000", 4},
		{report.ClassAuth, report.CodeAuth401, "corpacr.azurecr.io:443", 6},
		{report.ClassDNS, report.CodeDNSNXDomain, "registry.k8s.io:443", 7},
		{report.ClassOther, report.CodeInvalidReference, "", 2},
		{report.ClassOther, report.CodeNeverPull, "", 1},
	}
}

// generateCluster returns the busy healthy cluster's events and the same cluster with the pull
// failures mixed in, with the findings explain must report for the second.
func generateCluster() (healthy, mixed []byte, want []wantFinding) {
	build := func(withFailures bool) ([]byte, []wantFinding) {
		g := &clusterGen{rng: rand.New(rand.NewPCG(8, 11)), t0: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
		var w []wantFinding
		for round := range 5 {
			for _, a := range genApps {
				g.healthy(a)
				g.noise()
			}
			if withFailures && round == 2 {
				w = g.pullFailures()
			}
		}
		doc := map[string]any{"apiVersion": "v1", "kind": "List", "items": g.items, "metadata": map[string]any{"resourceVersion": ""}}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "    ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(doc); err != nil {
			panic(err)
		}
		return buf.Bytes(), w
	}
	healthy, _ = build(false)
	mixed, want = build(true)
	return healthy, mixed, want
}

const (
	healthyFixture = "testdata/inputs/cluster-healthy-events.json"
	mixedFixture   = "testdata/inputs/cluster-mixed-events.json"
)

// The fixtures are what the generator writes: regenerate with go test -run TestClusterFixtures -update.
func TestClusterFixtures(t *testing.T) {
	healthy, mixed, _ := generateCluster()
	for path, want := range map[string][]byte{healthyFixture: healthy, mixedFixture: mixed} {
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's output; run go test -run TestClusterFixtures -update", path)
		}
	}
}

// A busy healthy cluster holds no pull failure, though its events say BackOff, dial tcp,
// connection refused, rpc error and context deadline exceeded many times over.
func TestBusyHealthyClusterHasNoPullFailure(t *testing.T) {
	msgs, format := parseFile(t, healthyFixture)
	if format != FormatJSON {
		t.Fatalf("format %s", format)
	}
	var doc struct{ Items []json.RawMessage }
	b, _ := os.ReadFile(healthyFixture)
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Items) < 300 {
		t.Fatalf("fixture has %d events (%v), want several hundred", len(doc.Items), err)
	}
	for _, w := range []string{"Back-off restarting failed container", "Readiness probe failed", "FailedMount", "FailedScheduling", "OOMKilling", "FailedCreatePodSandBox", "NodeNotReady", "/v2/\\\": dial tcp"} {
		if !bytes.Contains(b, []byte(w)) {
			t.Errorf("the fixture lacks %q: it must be as noisy as a real cluster", w)
		}
	}
	if len(msgs) != 0 {
		for _, m := range msgs {
			t.Errorf("counted as a pull failure: %s: %.120s", m.Source, m.Text)
		}
	}
}

func TestMixedClusterReportsExactlyThePullFailures(t *testing.T) {
	msgs, _ := parseFile(t, mixedFixture)
	_, _, want := generateCluster()
	fs := Explain(msgs)
	if len(fs) != len(want) {
		for _, f := range fs {
			t.Logf("got %s %s %q ×%d: %.100s", f.Class, f.Code, f.Host, f.Count, f.Message)
		}
		t.Fatalf("%d findings, want %d", len(fs), len(want))
	}
	for i, w := range want {
		f := fs[i]
		if f.Class != w.class || f.Code != w.code || f.Host != w.host || f.Count != w.count {
			t.Errorf("finding %d = %s %s %q ×%d, want %s %s %q ×%d", i, f.Class, f.Code, f.Host, f.Count, w.class, w.code, w.host, w.count)
		}
	}
}

// Each shape on its own: what the kubelet says about other failures never counts; a pull does.
func TestIsPullFailure(t *testing.T) {
	cases := []struct {
		typ, reason, field, msg string
		want                    bool
	}{
		{"Warning", "BackOff", "spec.containers{app}", "Back-off restarting failed container app in pod app-1_ns(uid)", false},
		{"Normal", "BackOff", "spec.containers{app}", `Back-off pulling image "nginx:1.27"`, true},
		{"Warning", "Unhealthy", "spec.containers{app}", `Readiness probe failed: Get "http://10.244.1.5:8080/healthz": dial tcp 10.244.1.5:8080: connect: connection refused`, false},
		{"Warning", "Unhealthy", "spec.containers{registry}", `Liveness probe failed: Get "http://10.244.1.5:5000/v2/": dial tcp 10.244.1.5:5000: connect: connection refused`, false},
		{"Warning", "FailedMount", "", `MountVolume.MountDevice failed for volume "pvc-1" : rpc error: code = Internal desc = dial tcp 10.1.0.4:3260: i/o timeout`, false},
		{"Warning", "FailedScheduling", "", "0/3 nodes are available: 3 Insufficient cpu.", false},
		{"Warning", "OOMKilling", "", "Memory cgroup out of memory: Killed process 1 (java)", false},
		{"Warning", "FailedCreatePodSandBox", "", `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "x": plugin type="calico" failed (add): error getting ClusterInformation: Get "https://10.96.0.1:443/apis/crd.projectcalico.org/v1/clusterinformations/default": dial tcp 10.96.0.1:443: i/o timeout`, false},
		{"Warning", "FailedCreatePodSandBox", "", `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox image "registry.k8s.io/pause:3.9": failed to pull image "registry.k8s.io/pause:3.9": x509: certificate signed by unknown authority`, true},
		{"Warning", "Failed", "spec.containers{app}", `Error: secret "db" not found`, false},
		{"Warning", "Failed", "spec.containers{app}", `Failed to pull image "a/b:1": rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/a/b:1": failed to resolve reference "docker.io/a/b:1": docker.io/a/b:1: not found`, true},
		{"Warning", "Failed", "spec.volumes{x}", `Failed to pull image "a/b:1": x`, false},
		{"Normal", "Pulled", "spec.containers{app}", `Successfully pulled image "a/b:1" in 1s`, false},
		{"Warning", "ImageGCFailed", "", "failed to garbage collect required amount of images", false},
		{"Warning", "InspectFailed", "spec.containers{app}", `Failed to apply default image tag "A:1": couldn't parse image reference "A:1": invalid reference format`, true},
		{"Warning", "ErrImageNeverPull", "spec.containers{app}", `Container image "a:1" is not present with pull policy of Never`, true},
		{"Warning", "SomethingNew", "", `Failed to pull image "a:1": rpc error: code = Unknown desc = x`, true},
		{"Warning", "SomethingNew", "", `Get "https://r.example/v2/": dial tcp 1.2.3.4:443: i/o timeout`, false},
		{"", "", "", `Readiness probe failed: Get "http://10.0.0.1/": dial tcp 10.0.0.1:80: connect: connection refused`, false},
		{"", "", "", `Get "https://r.example/v2/": dial tcp 1.2.3.4:443: i/o timeout`, true},
	}
	for _, tc := range cases {
		if got := isPullFailure(tc.typ, tc.reason, tc.field, tc.msg); got != tc.want {
			t.Errorf("isPullFailure(%s, %s, %q, %.60q) = %v, want %v", tc.typ, tc.reason, tc.field, tc.msg, got, tc.want)
		}
	}
}

// `kubectl get events -A` as a table: the same rule, row by row.
func TestEventsTable(t *testing.T) {
	in := `NAMESPACE     LAST SEEN             TYPE      REASON              OBJECT                           MESSAGE
shop          2m                    Warning   BackOff             pod/web-5d8f9c7b6d-abcde         Back-off restarting failed container web in pod web-5d8f9c7b6d-abcde_shop(3f1c9a2e)
shop          3m                    Warning   Unhealthy           pod/web-5d8f9c7b6d-abcde         Readiness probe failed: Get "http://10.244.1.5:8080/healthz": dial tcp 10.244.1.5:8080: connect: connection refused
shop          4m                    Normal    Pulling             pod/cart-7c9-x2x9k               Pulling image "corpacr.azurecr.io/shop/cart:1.9.3"
shop          5m (x4 over 9m)       Warning   Failed              pod/checkout-6b7f9c-x2x9k        Failed to pull image "registry.corp.example:5000/shop/checkout:2.3.1": failed to resolve reference "registry.corp.example:5000/shop/checkout:2.3.1": failed to do request: Head "https://registry.corp.example:5000/v2/shop/checkout/manifests/2.3.1": dial tcp 10.20.30.40:5000: connect: connection refused
kube-system   6m                    Warning   FailedScheduling    pod/pending-abcde                0/5 nodes are available: 5 Insufficient memory.
`
	msgs, format, err := Parse(strings.NewReader(in))
	if err != nil || format != FormatTable {
		t.Fatalf("format %s, %v", format, err)
	}
	fs := Explain(msgs)
	if len(fs) != 1 || fs[0].Class != report.ClassRoute || fs[0].Count != 4 || !strings.Contains(fs[0].Sources[0], "shop/pod/checkout") {
		t.Fatalf("findings = %+v", fs)
	}
	healthy := strings.Join(slices.Delete(strings.Split(in, "\n"), 4, 5), "\n")
	if msgs, _, _ := Parse(strings.NewReader(healthy)); len(msgs) != 0 {
		t.Errorf("a healthy table counted %d pull failures: %+v", len(msgs), msgs)
	}
}
