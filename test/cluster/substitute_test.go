package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/pullpath/pullpath/internal/loader"
)

// TestSubstitutedBinaryRefused: on a real kubelet, containerd and runc, the loader runs the probe
// only when its bytes are the ones whose SHA-256 the pod's command names. Bytes of the same size
// from a replaced ConfigMap, or from whoever attaches first to the pod's stdin, end the container
// with exit 119 and "refused, not run"; the right bytes run, from a sealed memfd under the
// runtime's default seccomp profile (issue 33 item 2).
func TestSubstitutedBinaryRefused(t *testing.T) {
	c := sharedCluster(t)
	ns := c.Namespace(t, "substitute")
	prog, err := os.ReadFile(c.progs["exitwith"])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(prog)
	digest := hex.EncodeToString(sum[:])
	other := slices.Clone(prog)
	other[len(other)/2] ^= 0xff
	ld, err := loader.Binary(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps(ns)
	mk := func(name string, data map[string][]byte) {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, BinaryData: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("loader", map[string][]byte{loader.File: ld})
	mk("part-real", map[string][]byte{"part-000": prog})
	mk("part-replaced", map[string][]byte{"part-000": other})

	// pod is a probe pod as verify makes it (the loader and the parts projected, the sandbox
	// image, no pull), with a variable of the image's kind beside the probe's own
	pod := func(name, part string, stream bool) *corev1.Pod {
		exec, ro := int32(0o555), int32(0o444)
		p := PodOn(ns, name, "poola-1", pauseRef, corev1.PullNever)
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		sources := []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "loader"},
			Items: []corev1.KeyToPath{{Key: loader.File, Path: loader.File, Mode: &exec}}}}}
		args := []string{"3", "the checked binary ran"}
		cmd := loader.StreamCommand("/pp/parts/"+loader.File, "/pp/run/pullpath", len(prog), digest, args...)
		if !stream {
			sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: part},
				Items: []corev1.KeyToPath{{Key: "part-000", Path: "part-000"}}}})
			cmd = loader.Command("/pp/parts", "/pp/run/pullpath", len(prog), digest, args...)
		}
		f := false
		ctr := &p.Spec.Containers[0]
		ctr.Command, ctr.Stdin, ctr.StdinOnce = cmd, stream, stream
		ctr.Env = []corev1.EnvVar{{Name: "PULLPATH_PULL_SECRET_1_NAME", Value: "kept"}, {Name: "HTTPS_PROXY", Value: "http://10.78.0.1:9"}}
		ctr.SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: &[]bool{true}[0], AllowPrivilegeEscalation: &f,
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		ctr.VolumeMounts = []corev1.VolumeMount{{Name: "parts", MountPath: "/pp/parts", ReadOnly: true}, {Name: "run", MountPath: "/pp/run"}}
		p.Spec.Volumes = []corev1.Volume{
			{Name: "parts", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources, DefaultMode: &ro}}},
			{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		}
		return p
	}
	ended := func(name string) *corev1.ContainerStateTerminated {
		p := c.WaitPod(t, ns, name, 2*time.Minute, "ended", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
		})
		return p.Status.ContainerStatuses[0].State.Terminated
	}
	refused := fmt.Sprintf("sha256 of the %d bytes is %s, want %s: refused, not run", len(prog), hex.EncodeToString(func() []byte { s := sha256.Sum256(other); return s[:] }()), digest)

	t.Run("replaced ConfigMap", func(t *testing.T) {
		c.CreatePod(t, pod("replaced", "part-replaced", false))
		if term := ended("replaced"); term == nil || term.ExitCode != loader.ExitDigest || !strings.Contains(term.Message, refused) {
			t.Errorf("terminated %+v, want exit %d and %q", term, loader.ExitDigest, refused)
		}
	})
	t.Run("the real binary runs", func(t *testing.T) {
		c.CreatePod(t, pod("real", "part-real", false))
		if term := ended("real"); term == nil || term.ExitCode != 3 || term.Message != "the checked binary ran" {
			t.Errorf("terminated %+v, want the program's own exit 3 and message", term)
		}
	})
	t.Run("attach race", func(t *testing.T) {
		// the first attacher feeds other bytes of the right size: refused
		c.CreatePod(t, pod("raced", "", true))
		c.WaitPod(t, ns, "raced", time.Minute, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		file := filepath.Join(t.TempDir(), "bytes")
		if err := os.WriteFile(file, other, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := c.Exec(t, "env", "PULLPATH_CLUSTER_ROLE=attach", "PULLPATH_ATTACH="+ns+"/raced", "PULLPATH_ATTACH_FILE="+file, os.Args[0]); code != 0 {
			t.Fatalf("attach: exit %d: %s", code, errOut)
		}
		if term := ended("raced"); term == nil || term.ExitCode != loader.ExitDigest || !strings.Contains(term.Message, refused) {
			t.Errorf("terminated %+v, want exit %d and %q", term, loader.ExitDigest, refused)
		}
	})
}

// attachRole streams PULLPATH_ATTACH_FILE into the stdin of container main of pod
// PULLPATH_ATTACH (namespace/name), as an attacker with pods/attach would; run inside the hub.
func attachRole() {
	ns, name, _ := strings.Cut(os.Getenv("PULLPATH_ATTACH"), "/")
	b, err := os.ReadFile(os.Getenv("PULLPATH_ATTACH_FILE"))
	if err == nil {
		err = attachStdin(ns, name, b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "attach:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func attachStdin(ns, name string, b []byte) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	u := strings.TrimSuffix(cfg.Host, "/") + "/api/v1/namespaces/" + ns + "/pods/" + name + "/attach?container=main&stdin=true"
	ex, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: bytes.NewReader(b)})
}
