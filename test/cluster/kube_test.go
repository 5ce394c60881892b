package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/test/internal/tierreport"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// Namespace creates a fresh namespace for one test, with what a controller-manager would have put
// in it (the default ServiceAccount, the kube-root-ca.crt ConfigMap); its pods are deleted when the
// test ends, and the namespace too when the namespace controller runs (without it, it would never
// finish terminating).
func (c *cluster) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	ctx := context.Background()
	ns, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.prepareNamespace(ctx, ns.Name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = c.Client.CoreV1().Pods(ns.Name).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		if c.Controllers {
			_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		}
	})
	return ns.Name
}

func (c *cluster) prepareNamespace(ctx context.Context, ns string) error {
	no := false
	_, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		AutomountServiceAccountToken: &no}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err = c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"},
		Data: map[string]string{"ca.crt": string(c.ca.PEM)}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// PodOn is a pod pinned to a node (there is no scheduler) running image with the given pull policy.
func PodOn(ns, name, nodeName, image string, policy corev1.PullPolicy) *corev1.Pod {
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      nodeName,
			TerminationGracePeriodSeconds: &zero,
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:                    []corev1.Container{{Name: "main", Image: image, ImagePullPolicy: policy}},
		},
	}
}

func (c *cluster) CreatePod(t testing.TB, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	p, err := c.Client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return p
}

// WaitPod polls the pod until cond holds; on timeout it fails with the pod's status and events.
func (c *cluster) WaitPod(t testing.TB, ns, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *corev1.Pod
	for time.Now().Before(deadline) {
		p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = p
			if cond(p) {
				return p
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s: not %s after %s\nstatus: %+v\nevents:\n%s", ns, name, what, timeout, statusOf(last), c.eventText(ns, name))
	return nil
}

func statusOf(p *corev1.Pod) any {
	if p == nil {
		return nil
	}
	return p.Status
}

// Events lists the events of an object (a pod, a node) in the order they first happened.
func (c *cluster) Events(ns, name string) []corev1.Event {
	list, err := c.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
	if err != nil {
		return nil
	}
	evs := list.Items
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(evs[i]).Before(eventTime(evs[j])) })
	return evs
}

func eventTime(e corev1.Event) time.Time {
	if !e.FirstTimestamp.IsZero() {
		return e.FirstTimestamp.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// WaitEvent polls for an event of the object with this reason whose message holds every fragment.
func (c *cluster) WaitEvent(t testing.TB, ns, name, reason string, timeout time.Duration, fragments ...string) corev1.Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, e := range c.Events(ns, name) {
			if e.Reason == reason && containsAll(e.Message, fragments) {
				return e
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s/%s: no %s event holding %q after %s; events:\n%s", ns, name, reason, fragments, timeout, c.eventText(ns, name))
	return corev1.Event{}
}

func containsAll(s string, fragments []string) bool {
	for _, f := range fragments {
		if !strings.Contains(s, f) {
			return false
		}
	}
	return true
}

func (c *cluster) eventText(ns, name string) string {
	var b strings.Builder
	for _, e := range c.Events(ns, name) {
		fmt.Fprintf(&b, "  %s %s %s (x%d): %s\n", eventTime(e).Format("15:04:05"), e.Type, e.Reason, e.Count, e.Message)
	}
	return b.String()
}

// Run runs the pullpath binary (built once) inside the hub's network namespace, where the
// apiserver is, with KUBECONFIG set to the admin kubeconfig and kubectl-pullpath on the PATH.
// It returns stdout, stderr and the exit code.
func (c *cluster) Run(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	c.buildOnce.Do(func() {
		bin := c.path("bin", "pullpath")
		out, err := exec.Command("go", "build", "-o", bin, "../../cmd/pullpath").CombinedOutput()
		if err != nil {
			c.buildErr = fmt.Errorf("build pullpath: %v\n%s", err, out)
			return
		}
		// a plain `go build`, as `go install` gives it (cgo on where a C compiler is): verify and
		// watch must work from it. Nothing is placed beside it, so verify ships the probe-only
		// build it embeds. (TestWatchInClusterFromImage builds its static watcher image apart.)
		c.buildErr = os.Symlink(bin, c.path("bin", "kubectl-pullpath"))
		c.pullpath = bin
	})
	if c.buildErr != nil {
		t.Fatal(c.buildErr)
	}
	return c.Exec(t, append([]string{c.pullpath}, args...)...)
}

// Exec runs a command inside the hub's network namespace with Run's environment.
func (c *cluster) Exec(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runIn(t, 5*time.Minute, []string{"KUBECONFIG=" + c.Kubeconfig, "PATH=" + c.path("bin") + ":" + os.Getenv("PATH")},
		append([]string{"nsenter", "--net=/run/netns/" + c.hub, "--"}, args...))
}

// runIn runs a command with env added to the test's, bounded by timeout, and returns its output
// and exit code; a command that cannot run at all fails the test.
func runIn(t testing.TB, timeout time.Duration, env, args []string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), code
}

// memory sums the resident memory of the cluster's processes by program name (kubelet,
// containerd, shims, kube-apiserver, etcd, …).
func (c *cluster) memory() map[string]int64 {
	want := map[string]bool{}
	for _, n := range c.nodes {
		want[n.pidNS] = true
	}
	hub := map[string]bool{}
	for _, p := range c.procs {
		if p.cmd.Process != nil {
			hub[strconv.Itoa(p.cmd.Process.Pid)] = true
		}
	}
	sum := map[string]int64{}
	for _, pid := range pids() {
		ns, _ := os.Readlink("/proc/" + pid + "/ns/pid")
		if !want[ns] && !hub[pid] {
			continue
		}
		status, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			continue
		}
		var comm string
		var kb int64
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Name:"); ok {
				comm = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			}
		}
		if kb > 0 {
			sum[comm] += kb << 10
		}
	}
	return sum
}

func (c *cluster) memoryFigure() string {
	mem := c.memory()
	names := make([]string, 0, len(mem))
	var total int64
	for k, v := range mem {
		names = append(names, k)
		total += v
	}
	sort.Strings(names)
	parts := []string{}
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %d MB", k, mem[k]>>20))
	}
	return fmt.Sprintf("memory (RSS): %d MB in all: %s", total>>20, strings.Join(parts, ", "))
}

// figure records a measurement for the tier's report.
func (c *cluster) figure(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.figures = append(c.figures, fmt.Sprintf(format, args...))
}

// writeReport appends the figures to $PULLPATH_CLUSTER_REPORT (scripts/test.sh prints it).
func (c *cluster) writeReport() { tierreport.Append("PULLPATH_CLUSTER_REPORT", c.figures...) }

// hasText reports whether a command's text output holds s once its folding to the width is undone
// (report.Fit goes on in a further-indented line): every run of white space counts as one space.
func hasText(out, s string) bool {
	squash := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	return strings.Contains(squash(out), squash(s))
}
