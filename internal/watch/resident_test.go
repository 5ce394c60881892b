package watch

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/pullpath/pullpath/internal/agent"
	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/cluster/clustertest"
	"github.com/pullpath/pullpath/internal/kube/kubefake"
	"github.com/pullpath/pullpath/internal/nodeprobe"
	"github.com/pullpath/pullpath/internal/report"
)

// fakeAgent is one node's agent on its own loopback address: a real agent.Agent, served over
// HTTP, whose probe answers the class the test sets.
type fakeAgent struct {
	a     atomic.Pointer[agent.Agent]
	class atomic.Value // report.Class
	ip    string
}

func (f *fakeAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.a.Load().Handler().ServeHTTP(w, r)
}

// restart is the agent's pod restarted: a new agent, whose numbers start again, probes at once.
func (f *fakeAgent) restart(t *testing.T, node string) {
	a, err := agent.New(agent.Options{Node: node, Images: []string{clustertest.Image}, Interval: time.Hour, Probe: f.probe})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Ask(context.Background(), clustertest.Image, time.Time{}); err != nil {
		t.Fatal(err)
	}
	f.a.Store(a)
}

func (f *fakeAgent) probe(_ context.Context, image string, full bool) (*report.Probe, error) {
	c := f.class.Load().(report.Class)
	p := &report.Probe{Kind: "ProbeReport", Image: image, Class: c, Code: report.CodeOK}
	if c == report.ClassRoute {
		p.Code = report.CodeRouteNone
		p.Failing = &report.Failing{Host: "registry.corp.example:443", Role: report.RoleRegistry, Step: report.StepRoute}
	}
	return p, nil
}

// residentCluster: three nodes, each with an agent listening on 127.0.0.1x:port; the agent pods
// the watcher creates turn Running on that address, except an image-mode pod on b1, which the
// node cannot pull.
func residentCluster(t *testing.T, classes map[string]report.Class) (*fake.Clientset, map[string]*fakeAgent, int, *atomic.Int32) {
	t.Helper()
	fc := fake.NewClientset(
		clustertest.Node("a1", "poola", clustertest.T0, "v1", "mcr.microsoft.com/oss/kubernetes/pause:3.6"),
		clustertest.Node("b1", "poolb", clustertest.T0.Add(time.Hour), "v1", "mcr.microsoft.com/oss/kubernetes/pause:3.6"),
		clustertest.Node("b2", "poolb", clustertest.T0.Add(2*time.Hour), "v1", "mcr.microsoft.com/oss/kubernetes/pause:3.6"),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pullpath"}})
	fc.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	var evSeq atomic.Int32
	fc.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		e := a.(k8stesting.CreateAction).GetObject().(*corev1.Event)
		e.Name = e.GenerateName + strconv.Itoa(int(evSeq.Add(1))) // the fake does not generate names
		return false, nil, nil
	})
	agents := map[string]*fakeAgent{}
	port := 0
	for i, node := range []string{"a1", "b1", "b2"} {
		f := &fakeAgent{ip: "127.0.0." + strconv.Itoa(11+i)}
		f.class.Store(classes[node])
		f.restart(t, node)
		l, err := net.Listen("tcp", net.JoinHostPort(f.ip, strconv.Itoa(port)))
		if err != nil {
			t.Skipf("loopback %s: %v", f.ip, err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		srv := &http.Server{Handler: f, ReadHeaderTimeout: time.Second}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { srv.Close() })
		agents[node] = f
	}
	for node, f := range agents {
		n, err := fc.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: f.ip}, {Type: corev1.NodeHostName, Address: node}}
		if _, err := fc.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var pods atomic.Int32
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if p.Labels[cluster.LabelRole] != "agent" {
			t.Errorf("a pod that is not an agent: %s", p.Name)
			return false, nil, nil
		}
		pods.Add(1)
		p.CreationTimestamp = metav1.Now()
		if p.Spec.NodeName == "b1" && nodeprobe.AgentMode(p) == nodeprobe.AgentImage {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
			return false, nil, nil
		}
		p.Status.Phase, p.Status.PodIP = corev1.PodRunning, agents[p.Spec.NodeName].ip
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		return false, nil, nil
	})
	return fc, agents, port, &pods
}

func init() { agentPoll = 300 * time.Millisecond }

func waitFor(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
	}
}

func nodeCondition(t *testing.T, fc *fake.Clientset, name string) *corev1.NodeCondition {
	n, err := fc.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return condition(n)
}

// The resident round: one agent pod per node, created once; the agents' verdicts become the
// conditions; an image the node cannot pull gets the no-pull agent; a fix on a node flips its
// condition with one event, and creates no pod; a condition that holds is not written again;
// SIGTERM deletes the agents.
func TestResidentAgentsReportWithoutPodsPerProbe(t *testing.T) {
	fc, agents, port, pods := residentCluster(t, map[string]report.Class{"a1": report.ClassOK, "b1": report.ClassOK, "b2": report.ClassRoute})
	var patches atomic.Int32
	var mu sync.Mutex
	patched := map[string]int{}
	fc.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		patches.Add(1)
		mu.Lock()
		patched[a.(k8stesting.PatchAction).GetName()]++
		mu.Unlock()
		return false, nil, nil
	})
	cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1()), NoWatchList: true}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logMu sync.Mutex
	var log strings.Builder
	w, err := New(ctx, cs, Options{Images: []string{clustertest.Image}, Interval: time.Hour, Concurrency: 2, Resident: true, AgentPort: port,
		Probe: nodeprobe.VerifyOptions{Namespace: "pullpath", Delivery: nodeprobe.ModeConfigMap, Timeout: 5 * time.Second,
			ProbeImage: "registry.corp.example/tools/pullpath@sha256:" + strings.Repeat("a", 64),
			Binary:     func(string) ([]byte, string, error) { return []byte("bin"), "test", nil }},
		Progress: func(s string) { logMu.Lock(); log.WriteString(s + "\n"); logMu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []string)
	go func() { done <- w.Run(ctx) }()
	want := map[string][2]string{"a1": {"False", "OK"}, "b1": {"False", "OK"}, "b2": {"True", "Route"}}
	waitFor(t, "every node's condition", 30*time.Second, func() bool {
		for name, wnt := range want {
			if c := nodeCondition(t, fc, name); c == nil || string(c.Status) != wnt[0] || c.Reason != wnt[1] {
				return false
			}
		}
		return true
	})
	if n := pods.Load(); n != 4 {
		t.Errorf("%d pods created, want 4: an agent per node, and b1's again without a pull", n)
	}
	logMu.Lock()
	said := log.String()
	logMu.Unlock()
	if !strings.Contains(said, "node b1: cannot pull the agent image registry.corp.example/tools/pullpath@sha256:") || !strings.Contains(said, "ImagePullBackOff") {
		t.Errorf("b1's unpullable agent image is not said:\n%s", said)
	}
	b1, err := fc.CoreV1().Pods("pullpath").Get(ctx, nodeprobe.AgentName("b1"), metav1.GetOptions{})
	if err != nil || nodeprobe.AgentMode(b1) != nodeprobe.AgentNoPull || b1.Spec.Containers[0].Image != "mcr.microsoft.com/oss/kubernetes/pause:3.6" {
		t.Fatalf("b1's agent: %v %+v", err, b1)
	}
	if b1.Spec.AutomountServiceAccountToken == nil || *b1.Spec.AutomountServiceAccountToken || b1.Spec.RestartPolicy != corev1.RestartPolicyAlways || !b1.Spec.HostNetwork {
		t.Errorf("b1's agent pod: token %v, restart %s, hostNetwork %t", b1.Spec.AutomountServiceAccountToken, b1.Spec.RestartPolicy, b1.Spec.HostNetwork)
	}
	if cmd := strings.Join(b1.Spec.Containers[0].Command, " "); !strings.Contains(cmd, "agent --image "+clustertest.Image+" --host-root /host --node b1 --listen :"+strconv.Itoa(port)) {
		t.Errorf("b1's agent command: %s", cmd)
	}
	rec := httptest.NewRecorder()
	w.Metrics().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if !strings.Contains(string(body), "pullpath_watch_agent_image_unpullable_total 1") {
		t.Errorf("metrics lack the unpullable agent image")
	}
	writes := patches.Load()

	// b2's route is fixed: its agent's next probe says so (a restarted agent, whose numbers
	// start again, is read whole)
	agents["b2"].class.Store(report.ClassOK)
	agents["b2"].restart(t, "b2")
	waitFor(t, "b2 healthy", 30*time.Second, func() bool {
		c := nodeCondition(t, fc, "b2")
		return c != nil && c.Status == "False"
	})
	time.Sleep(2 * agentPoll) // a few more reads of every agent: none may write
	if n := pods.Load(); n != 4 {
		t.Errorf("%d pods created after the fix, want still 4", n)
	}
	if got := patches.Load() - writes; got != 1 {
		mu.Lock()
		t.Errorf("%d condition writes after the first round, want 1 (b2's flip): %v", got, patched)
		mu.Unlock()
	}
	evs, _ := fc.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	var healthy int
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == "b2" && e.Reason == "ImagePullPathHealthy" {
			healthy++
		}
	}
	if healthy != 1 {
		t.Errorf("%d healthy events on b2, want 1", healthy)
	}
	cancel()
	if left := <-done; len(left) != 0 {
		t.Errorf("left behind %v", left)
	}
	if l, _ := fc.CoreV1().Pods("pullpath").List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("%d agent pods left after SIGTERM", len(l.Items))
	}
}

// An address reused by another node: the agent there refuses to answer for b2, which is marked
// failing (Unknown after the quiet time), never given a1's verdict.
func TestAgentAnsweringForAnotherNodeIsRefused(t *testing.T) {
	fc, agents, port, _ := residentCluster(t, map[string]report.Class{"a1": report.ClassOK, "b1": report.ClassOK, "b2": report.ClassOK})
	// b2's address is a1's (a reused address): a1's agent refuses to answer for b2
	agents["b2"].ip = agents["a1"].ip
	n, _ := fc.CoreV1().Nodes().Get(context.Background(), "b2", metav1.GetOptions{})
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: agents["a1"].ip}}
	if _, err := fc.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := &cluster.Client{Core: kubefake.Core(fc.CoreV1()), Authz: kubefake.Authz(fc.AuthorizationV1()), NoWatchList: true}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := New(ctx, cs, Options{Images: []string{clustertest.Image}, Interval: time.Hour, Resident: true, AgentPort: port,
		Probe: nodeprobe.VerifyOptions{Namespace: "pullpath", Delivery: nodeprobe.ModeConfigMap, Timeout: time.Second,
			Binary: func(string) ([]byte, string, error) { return []byte("bin"), "test", nil }}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []string)
	go func() { done <- w.Run(ctx) }()
	waitFor(t, "a1's condition", 20*time.Second, func() bool {
		c := nodeCondition(t, fc, "a1")
		return c != nil && c.Status == "False"
	})
	time.Sleep(agentPoll + time.Second)
	if c := nodeCondition(t, fc, "b2"); c != nil && c.Status == "False" {
		t.Errorf("b2 believed a1's agent: %+v", c)
	}
	w.mu.Lock()
	if ns := w.nodes["b2"]; ns == nil || ns.agent.failing.IsZero() {
		t.Errorf("b2's agent is not marked failing")
	}
	w.mu.Unlock()
	cancel()
	<-done
}

// An agent pod whose address is none of its node's is never read: the watcher dials node
// addresses only.
func TestAgentAddressMustBeTheNodes(t *testing.T) {
	n := &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeHostName, Address: "n"}}}}
	for ip, want := range map[string]bool{"10.0.0.5": true, "10.0.0.6": false, "n": false, "": false} {
		if got := nodeAddress(n, ip); got != want {
			t.Errorf("nodeAddress(%q) = %t, want %t", ip, got, want)
		}
	}
}
