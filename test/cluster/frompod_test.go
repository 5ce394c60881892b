package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pullpath/pullpath/internal/report"
)

// podWrongPass is what the second pod's pull secret says; the registry rejects it. It shares no
// substring with registryPass, so a leak of either is told apart.
const podWrongPass = "rejected-pod-password"

// TestVerifyFromPodPullSecret: --from-pod presents the pod's own pull secret, on the registry path
// that wants credentials (:5001). A pod whose kubelet pulled its image with its secret gets a full
// verified pull from its ephemeral container, the identity naming the secret (never its value); a
// pod whose secret has a wrong password gets auth (401) on the registry, which the comparison counts
// as reached. A pod with the wrong secret first and a right legacy kubernetes.io/dockercfg one
// second: its kubelet pulled with the second, and so does the probe in the pod, saying what each
// got. The password stays out of every output and of the ephemeral container's spec: its variables
// refer to the secrets. With --pod the node probes get the same secrets the same way, from the
// run's copies, and pull with the second too, as the canary's real pull does.
func TestVerifyFromPodPullSecret(t *testing.T) {
	c := sharedCluster(t)
	begin := time.Now()
	runNamespace(t, c)
	probe := pushProbeImage(t, c)
	im := c.Push(t, fmt.Sprintf("frompod/auth-%d:v1", time.Now().UnixNano()))
	ref := authRegistry + strings.TrimPrefix(im.Ref, registry)
	ns := c.Namespace(t, "podsecret")
	secrets := []string{registryPass, podWrongPass}
	for name, pass := range map[string]string{"good": registryPass, "wrong": podWrongPass, "legacy": registryPass} {
		auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + pass))
		secrets = append(secrets, auth)
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, authRegistry, auth))}}
		if name == "legacy" { // kubernetes.io/dockercfg: the auths map without its wrapper, under .dockercfg
			s.Type, s.Data = corev1.SecretTypeDockercfg, map[string][]byte{corev1.DockerConfigKey: []byte(fmt.Sprintf(`{%q:{"auth":%q}}`, authRegistry, auth))}
		}
		if _, err := c.Client.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// "app" runs the image its kubelet pulled with secret good; "app-wrong" runs the present sandbox
	// image (nothing to pull) with secret wrong; "app-second" runs the image its kubelet pulled after
	// secret wrong was refused, with the legacy secret listed second
	podSecrets := map[string][]string{"app": {"good"}, "app-wrong": {"wrong"}, "app-second": {"wrong", "legacy"}}
	for _, p := range []*corev1.Pod{PodOn(ns, "app", "poola-1", ref, corev1.PullAlways), PodOn(ns, "app-wrong", "poola-1", pauseRef, corev1.PullNever),
		PodOn(ns, "app-second", "poola-1", ref, corev1.PullAlways)} {
		p.Spec.DNSPolicy = corev1.DNSDefault
		for _, s := range podSecrets[p.Name] {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
		}
		c.CreatePod(t, p)
	}
	c.WaitPod(t, ns, "app", time.Minute, "Running", running)
	c.WaitEvent(t, ns, "app", "Pulled", 10*time.Second, "Successfully pulled image", ref)
	c.WaitPod(t, ns, "app-wrong", time.Minute, "Running", running)
	c.WaitPod(t, ns, "app-second", time.Minute, "Running", running)
	c.WaitEvent(t, ns, "app-second", "Pulled", 10*time.Second, "Successfully pulled image", ref)

	verify := func(pod string, extra ...string) (report.Verification, int) {
		t.Helper()
		args := append([]string{"verify", ref, "--pool", "poola", "--probe-image", probe, "--from-pod", ns + "/" + pod,
			"--run-namespace", runNS, "--probe-timeout", "60s", "-o", "json"}, extra...)
		out, errOut, code := c.Run(t, args...)
		for _, s := range secrets {
			if strings.Contains(out+errOut, s) {
				t.Errorf("verify --from-pod %s: a password or its Authorization value reached the output", pod)
			}
		}
		var v report.Verification
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("verify --from-pod %s: not JSON (exit %d): %v\n%s\n%s", pod, code, err, out, errOut)
		}
		if v.FromPod == nil || v.FromPod.Probe == nil {
			t.Fatalf("verify --from-pod %s: no probe from the pod: %+v\n%s", pod, v.FromPod, errOut)
		}
		return v, code
	}

	// the secret that pulled the pod's image: a full verified pull from the pod; the node's probe
	// presents the same secret (--pod), so every pool passes
	v, code := verify("app", "--pod", ns+"/app")
	fp := v.FromPod
	if code != 0 || v.Class != report.ClassOK {
		t.Errorf("good secret: exit %d class %s, want 0 ok (pools %+v)", code, v.Class, v.Pools)
	}
	if fp.Class != report.ClassOK || fp.Probe.Failing != nil || !fp.Probe.Download.Verified || fp.Node != "poola-1" {
		t.Errorf("good secret, from the pod: class %s node %s failing %+v download %+v: %s", fp.Class, fp.Node, fp.Probe.Failing, fp.Probe.Download, fp.Probe.Summary)
	}
	wantID := func(secret string) string { return ns + "/" + secret + " key " + corev1.DockerConfigJsonKey }
	if !strings.Contains(fp.Probe.CredentialSource, wantID("good")) {
		t.Errorf("good secret: the probe in the pod presents %q, want the secret named (%s)", fp.Probe.CredentialSource, wantID("good"))
	}
	if !strings.Contains(fp.Comparison, "both reach the registry") {
		t.Errorf("good secret: comparison %q", fp.Comparison)
	}

	// the wrong password: the registry refuses the probe in the pod (401 on the registry host), and
	// was reached. The node's probe is anonymous (no --pod): refused too.
	v, code = verify("app-wrong")
	fp = v.FromPod
	if code != 1 {
		t.Errorf("wrong secret: exit %d, want 1", code)
	}
	if f := fp.Probe.Failing; fp.Class != report.ClassAuth || f == nil || f.Host != authRegistry || f.Role != report.RoleRegistry || f.Code != report.CodeAuth401 {
		t.Errorf("wrong secret, from the pod: class %s failing %+v, want auth AUTH_401 on %s (registry): %s", fp.Class, f, authRegistry, fp.Probe.Summary)
	}
	if !strings.Contains(fp.Probe.CredentialSource, wantID("wrong")) {
		t.Errorf("wrong secret: the probe in the pod presents %q, want the secret named (%s)", fp.Probe.CredentialSource, wantID("wrong"))
	}
	if fp.NodeClass != report.ClassAuth || !strings.Contains(fp.Comparison, "both reach the registry (it answered auth to the probe in the pod and auth to the node's probe)") {
		t.Errorf("wrong secret: node class %s, comparison %q: the registry was reached", fp.NodeClass, fp.Comparison)
	}
	text, errOut, _ := c.Run(t, "verify", ref, "--pool", "poola", "--probe-image", probe, "--from-pod", ns+"/app-wrong", "--run-namespace", runNS, "--probe-timeout", "60s")
	for _, s := range secrets {
		if strings.Contains(text+errOut, s) {
			t.Errorf("verify --from-pod app-wrong, text: a password or its Authorization value reached the output")
		}
	}
	if !strings.Contains(text, "wrong key .dockerconfigjson") || !strings.Contains(text, "=> the pod and the node poola-") {
		t.Errorf("text output names neither the secret nor the comparison:\n%s", text)
	}
	t.Logf("verify --from-pod with the wrong password:\n%s", text)

	// the wrong secret first, a right legacy kubernetes.io/dockercfg one second: the kubelet pulled
	// with the second, and so does the probe in the pod, saying what each got
	v, code = verify("app-second")
	fp = v.FromPod
	if fp.Class != report.ClassOK || !fp.Probe.Download.Verified || !strings.Contains(fp.Probe.CredentialSource, ns+"/legacy key "+corev1.DockerConfigKey) {
		t.Errorf("second secret, from the pod: class %s verified %t identity %q, want ok with %s/legacy: %s", fp.Class, fp.Probe.Download.Verified, fp.Probe.CredentialSource, ns, fp.Probe.Summary)
	}
	turns := ""
	for _, w := range fp.Probe.Warnings {
		if w.Code == report.CodePullSecretMore {
			turns = w.Message
		}
	}
	if !strings.Contains(turns, wantID("wrong")) || !strings.Contains(turns, ": auth (AUTH_401)") || !strings.Contains(turns, ns+"/legacy key .dockercfg") || !strings.Contains(turns, ": ok (OK)") {
		t.Errorf("second secret: what each secret got %q", turns)
	}
	var handed []string
	for _, ps := range fp.PullSecrets {
		handed = append(handed, fmt.Sprintf("%s %s %t", ps.Name, ps.Key, ps.HandedOver))
	}
	if strings.Join(handed, ", ") != "wrong .dockerconfigjson true, legacy .dockercfg true" {
		t.Errorf("second secret: fromPod.pullSecrets %q", handed)
	}
	if code != 1 || fp.NodeClass != report.ClassAuth || !strings.Contains(fp.Comparison, "both reach the registry (it answered auth to the node's probe)") {
		t.Errorf("second secret: exit %d node class %s comparison %q (the node's probe is anonymous: auth)", code, fp.NodeClass, fp.Comparison)
	}

	// the node probes with --pod app-second get the pod's two secrets the same way, and try them in
	// turn as its kubelet did: the wrong one refused, the legacy one pulls; the canary (the kubelet's
	// real pull with the run's copies) agrees
	v, code = verify("app-second", "--pod", ns+"/app-second", "--runtime-pull")
	handed = nil
	for _, ps := range v.PullSecrets {
		handed = append(handed, fmt.Sprintf("%s %s %t", ps.Name, ps.Key, ps.HandedOver))
	}
	if strings.Join(handed, ", ") != "wrong .dockerconfigjson true, legacy .dockercfg true" {
		t.Errorf("--pod app-second: pullSecrets %q", handed)
	}
	if code != 0 || v.Class != report.ClassOK || len(v.Pools) == 0 {
		t.Fatalf("--pod app-second: exit %d class %s, want 0 ok: pools %+v notes %q", code, v.Class, v.Pools, v.Notes)
	}
	pool := v.Pools[0]
	if pool.Probe == nil || !pool.Probe.Download.Verified || !strings.Contains(pool.Probe.CredentialSource, ns+"/legacy key "+corev1.DockerConfigKey) {
		t.Errorf("--pod app-second, the node's probe: %+v", pool.Probe)
	} else {
		turns = ""
		for _, w := range pool.Probe.Warnings {
			if w.Code == report.CodePullSecretMore {
				turns = w.Message
			}
		}
		if !strings.Contains(turns, wantID("wrong")) || !strings.Contains(turns, ": auth (AUTH_401)") || !strings.Contains(turns, ns+"/legacy key .dockercfg") || !strings.Contains(turns, ": ok (OK)") {
			t.Errorf("--pod app-second: what each secret got on the node %q", turns)
		}
	}
	if rp := pool.RuntimePull; rp == nil || rp.Result != "ok" || rp.Agrees == nil || !*rp.Agrees {
		t.Errorf("--pod app-second: the canary with the run's copies %+v, want a pull that agrees", rp)
	}
	if !strings.Contains(v.FromPod.Comparison, "both reach the registry") || strings.Contains(v.FromPod.Comparison, "answered") {
		t.Errorf("--pod app-second: comparison %q, want both reached with no refusal", v.FromPod.Comparison)
	}

	// the same through the loader (the binary streamed by attach, no --probe-image): the variables
	// reach the probe it execs
	out, errOut, code := c.Run(t, "verify", ref, "--pool", "poola", "--pod", ns+"/app-second", "--run-namespace", runNS, "--probe-timeout", "60s", "-o", "json")
	for _, s := range secrets {
		if strings.Contains(out+errOut, s) {
			t.Errorf("verify --pod app-second (attach): a password or its Authorization value reached the output")
		}
	}
	var vc report.Verification
	if err := json.Unmarshal([]byte(out), &vc); err != nil {
		t.Fatalf("verify --pod app-second (attach): not JSON (exit %d): %v\n%s\n%s", code, err, out, errOut)
	}
	if code != 0 || len(vc.Pools) == 0 || vc.Pools[0].Delivery != "attach" || vc.Pools[0].Probe == nil ||
		!strings.Contains(vc.Pools[0].Probe.CredentialSource, ns+"/legacy key "+corev1.DockerConfigKey) {
		t.Errorf("verify --pod app-second (attach): exit %d pools %+v", code, vc.Pools)
	}

	// the ephemeral containers as the API keeps them: the variable refers to the secret
	for pod, want := range map[string]string{"app": "good .dockerconfigjson", "app-wrong": "wrong .dockerconfigjson", "app-second": "wrong .dockerconfigjson, legacy .dockercfg"} {
		p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Spec.EphemeralContainers) == 0 {
			t.Fatalf("%s: no ephemeral container", pod)
		}
		for _, ec := range p.Spec.EphemeralContainers {
			var refs []string
			for _, e := range ec.Env {
				if cmd := strings.Join(ec.Command, " ") + " "; strings.Contains(cmd, "--pull-secret-env "+e.Name+" ") {
					if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
						t.Errorf("%s: %s is not a reference to a secret: %+v", pod, e.Name, e)
						continue
					}
					refs = append(refs, e.ValueFrom.SecretKeyRef.Name+" "+e.ValueFrom.SecretKeyRef.Key)
				}
			}
			if strings.Join(refs, ", ") != want {
				t.Errorf("%s: the ephemeral container %s has env %+v and command %q, want --pull-secret-env naming secretKeyRefs to %s", pod, ec.Name, ec.Env, ec.Command, want)
			}
		}
		spec, _ := json.Marshal(p)
		for _, s := range secrets {
			if strings.Contains(string(spec), s) {
				t.Errorf("%s: a password or its Authorization value is in the pod as the API keeps it", pod)
			}
		}
	}
	assertNothingLeft(t, c)
	t.Logf("the test took %s past bring-up", time.Since(begin).Round(100*time.Millisecond))
}
