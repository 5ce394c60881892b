package nodeprobe

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProbePodShapes are the probe pods verify and watch create in ns on node, for admission tests:
// the binary in ConfigMaps and streamed (attach), each run by the loader on sandboxImage, with a
// pull secret handed over, with the narrow host mount, and the digest-pinned probeImage itself.
func ProbePodShapes(ns, node, sandboxImage, probeImage string) []*corev1.Pod {
	r := &run{id: "0a1b2c3d", o: VerifyOptions{Image: "registry.example/team/app:1.4", Namespace: ns, Timeout: 3 * time.Minute,
		ProbeArgs: []string{"--timeout", "2m30s"}}}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	d := func(mode string) *delivery {
		return &delivery{mode: mode, loader: "pullpath-0a1b2c3d-loader-amd64", parts: []string{"pullpath-0a1b2c3d-bin-amd64-000"},
			size: 1 << 20, sha256: strings.Repeat("0", 64)}
	}
	out := []*corev1.Pod{r.probeSpec("pullpath-0a1b2c3d-probe-configmap", n, d(ModeConfigMap), sandboxImage),
		r.probeSpec("pullpath-0a1b2c3d-probe-attach", n, d(ModeAttach), sandboxImage)}
	r.secretEnv = secretEnv([]secretRef{{secret: "pullpath-0a1b2c3d-pull-1", key: corev1.DockerConfigJsonKey, label: "shop/corp"}})
	out = append(out, r.probeSpec("pullpath-0a1b2c3d-probe-secret", n, d(ModeConfigMap), sandboxImage))
	r.secretEnv, r.o.HostMount = nil, HostMountNarrow
	out = append(out, r.probeSpec("pullpath-0a1b2c3d-probe-narrow", n, d(ModeConfigMap), sandboxImage))
	r.o.HostMount, r.o.ProbeImage = "", probeImage
	return append(out, r.probeSpec("pullpath-0a1b2c3d-probe-image", n, nil, probeImage))
}
