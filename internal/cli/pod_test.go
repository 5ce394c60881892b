//go:build !probeonly

package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/report"
)

// Without a cluster, pod and verify say what to do, exit 2, and create nothing.
func TestClusterCommandsWithoutACluster(t *testing.T) {
	t.Setenv("KUBECONFIG", t.TempDir()+"/none")
	t.Setenv("HOME", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pod", "web"}, "no cluster to talk to: no kubeconfig in $KUBECONFIG or ~/.kube/config"},
		{[]string{"pod"}, "pod needs a pod NAME (or --all)"},
		{[]string{"pod", "a", "b"}, "pod takes one pod NAME, got 2"},
		{[]string{"pod", "--all", "web"}, "give a pod NAME or --all, not both"},
		{[]string{"verify", "nginx:1"}, "no cluster to talk to"},
		{[]string{"verify", "BAD REF"}, "contains whitespace"},
		{[]string{"verify", "nginx:1", "--secret", "s", "--pod", "p"}, "give --secret or --pod, not both"},
		{[]string{"cleanup", "--kubeconfig", "/nonexistent/kubeconfig"}, "kubeconfig: stat /nonexistent/kubeconfig"},
	} {
		r := run(t, "", tc.args...)
		if r.code != ExitUsage || !strings.Contains(r.errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.errOut, tc.want)
		}
	}
}

func TestProbeBudgetStaysPositive(t *testing.T) {
	for pod, want := range map[time.Duration]time.Duration{10 * time.Second: 8 * time.Second, 3 * time.Minute: 150 * time.Second, 20 * time.Minute: 1170 * time.Second} {
		if got := probeBudget(pod); got != want {
			t.Errorf("probeBudget(%s) = %s, want %s", pod, got, want)
		}
	}
}

// pod never asks a kubelet through nodes/proxy unless told: the flag is off by default, and its
// help names the unsafe role and what else the right allows.
func TestPodReadsNoKubeletConfigByDefault(t *testing.T) {
	c := newPodCmd(Streams{})
	f := c.Flags().Lookup("read-kubelet-config")
	if f == nil || f.DefValue != "false" {
		t.Fatalf("--read-kubelet-config: %+v, want a flag that defaults to false", f)
	}
	for _, w := range []string{"UNSAFE", "nodes/proxy", "pullpath-unsafe-nodes-proxy", "exec in every container"} {
		if !strings.Contains(f.Usage, w) {
			t.Errorf("--read-kubelet-config's help lacks %q: %s", w, f.Usage)
		}
	}
	if !strings.Contains(c.Long, "never calls a kubelet through nodes/proxy unless\n--read-kubelet-config asks") {
		t.Errorf("pod's help does not say it leaves nodes/proxy alone:\n%s", c.Long)
	}
}

// verify --host-mount takes root or narrow, and nothing else, before any cluster is asked.
func TestVerifyHostMountFlag(t *testing.T) {
	t.Setenv("KUBECONFIG", t.TempDir()+"/none")
	t.Setenv("HOME", t.TempDir())
	r := run(t, "", "verify", "nginx:1", "--host-mount", "etc")
	if r.code != ExitUsage || !strings.Contains(r.errOut, `--host-mount "etc": want root or narrow`) {
		t.Errorf("--host-mount etc: exit %d, stderr %q", r.code, r.errOut)
	}
	for _, m := range []string{"root", "narrow"} {
		if r := run(t, "", "verify", "nginx:1", "--host-mount", m); r.code != ExitUsage || !strings.Contains(r.errOut, "no cluster to talk to") {
			t.Errorf("--host-mount %s: exit %d, stderr %q, want it accepted (then no cluster)", m, r.code, r.errOut)
		}
	}
}

// --credential-verification goes with --all and takes a policy that verifies; a pod that would
// break exits 1, as a pull failure does.
func TestCredentialVerificationFlag(t *testing.T) {
	t.Setenv("KUBECONFIG", t.TempDir()+"/none")
	t.Setenv("HOME", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pod", "web", "--credential-verification", "AlwaysVerify"}, "--credential-verification goes with --all"},
		{[]string{"pod", "--all", "--credential-verification", "NeverVerify"}, `--credential-verification "NeverVerify": want one of AlwaysVerify, NeverVerifyPreloadedImages, NeverVerifyAllowlistedImages`},
		{[]string{"pod", "--all", "--credential-verification", "AlwaysVerify"}, "no cluster to talk to"},
	} {
		r := run(t, "", tc.args...)
		if r.code != ExitUsage || !strings.Contains(r.errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.errOut, tc.want)
		}
	}
	for _, tc := range []struct {
		l    report.PullFailures
		want int
	}{
		{report.PullFailures{}, 0},
		{report.PullFailures{CredentialVerification: &report.CredentialVerification{Unknown: 2, Safe: 5}}, 0},
		{report.PullFailures{CredentialVerification: &report.CredentialVerification{Breaks: 1}}, ExitBroken},
		{report.PullFailures{Groups: []report.PullFailureGroup{{}}}, ExitBroken},
	} {
		got := 0
		var e *ExitError
		if err := allExit(&tc.l); errors.As(err, &e) {
			got = e.Code
		}
		if got != tc.want {
			t.Errorf("exit %d for %+v, want %d", got, tc.l.CredentialVerification, tc.want)
		}
	}
}
