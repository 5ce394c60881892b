package nodeprobe

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/kube/kubefake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/pullpath/pullpath/internal/cluster"
)

// documentedProbeSpec is the probe pod docs/rbac.md shows: run 0a1b2c3d on node-1, with the probe
// image (--probe-image), or with the binary in ConfigMaps when configMaps is set.
func documentedProbeSpec(mount string, configMaps bool) *corev1.Pod {
	r := &run{cs: &cluster.Client{Core: kubefake.Core(fake.NewClientset().CoreV1())}, id: "0a1b2c3d",
		o: VerifyOptions{Image: "registry.example/team/app:1.4", Namespace: "pullpath", Timeout: 3 * time.Minute, HostMount: mount,
			ProbeImage: "registry.example/tools/pullpath-probe:v1", ProbeArgs: []string{"--timeout", "2m30s"}},
		owner: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pullpath-run-0a1b2c3d", UID: "5b0c8f6e-0000-4000-8000-000000000001"}}}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	if configMaps {
		r.o.ProbeImage = ""
		return r.probeSpec("pullpath-0a1b2c3d-probe-node-1", n, &delivery{parts: []string{"pullpath-0a1b2c3d-bin-amd64-000"}, loader: "pullpath-0a1b2c3d-loader-amd64", size: 1 << 20},
			"registry.k8s.io/pause:3.10")
	}
	return r.probeSpec("pullpath-0a1b2c3d-probe-node-1", n, nil, r.o.ProbeImage)
}

// podFields is a pod as the generic tree its YAML or JSON is, without its status.
func podFields(t *testing.T, p *corev1.Pod) map[string]any {
	t.Helper()
	p = p.DeepCopy()
	p.APIVersion, p.Kind = "v1", "Pod"
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "status")
	return m
}

// fieldDiff lists every field path where a and b differ ("spec.containers[0].image: x != y").
func fieldDiff(path string, a, b any) []string {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %v != %v", path, a, b)}
		}
		var out []string
		for _, k := range slices.Sorted(maps.Keys(av)) {
			out = append(out, fieldDiff(strings.TrimPrefix(path+"."+k, "."), av[k], bv[k])...)
		}
		for _, k := range slices.Sorted(maps.Keys(bv)) {
			if _, ok := av[k]; !ok {
				out = append(out, fmt.Sprintf("%s: missing != %v", strings.TrimPrefix(path+"."+k, "."), bv[k]))
			}
		}
		return out
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return []string{fmt.Sprintf("%s: %v != %v", path, a, b)}
		}
		var out []string
		for i := range av {
			out = append(out, fieldDiff(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i])...)
		}
		return out
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		return []string{fmt.Sprintf("%s: %v != %v", path, a, b)}
	}
	return nil
}

// docYAML is the YAML block that follows marker in docs/rbac.md, as a generic tree.
func docYAML(t *testing.T, doc, marker string) any {
	t.Helper()
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("docs/rbac.md has no %q", marker)
	}
	rest := doc[i:]
	start := strings.Index(rest, "```yaml\n")
	end := strings.Index(rest[start+8:], "```")
	if start < 0 || end < 0 {
		t.Fatalf("docs/rbac.md: no yaml block after %q", marker)
	}
	var v any
	if err := yaml.Unmarshal([]byte(rest[start+8:start+8+end]), &v); err != nil {
		t.Fatalf("docs/rbac.md, the block after %q: %v", marker, err)
	}
	return v
}

// The probe pod verify creates is the one docs/rbac.md shows, field by field: with the whole root
// mounted, with the narrow mount (the documented volumes instead), and with the binary in ConfigMaps
// (the documented pod, less the probe image, plus the loader's two volumes and nothing else).
func TestProbePodIsTheDocumentedOne(t *testing.T) {
	b, err := os.ReadFile("../../docs/rbac.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	documented := docYAML(t, doc, "<!-- the probe pod: TestProbePodIsTheDocumentedOne -->").(map[string]any)
	for _, d := range fieldDiff("", podFields(t, documentedProbeSpec(HostMountRoot, false)), documented) {
		t.Errorf("--host-mount root: the probe pod differs from docs/rbac.md's: %s", d)
	}

	narrow := docYAML(t, doc, "<!-- the narrow host mount: TestProbePodIsTheDocumentedOne -->").(map[string]any)
	want := podFields(t, documentedProbeSpec(HostMountRoot, false))
	spec := want["spec"].(map[string]any)
	spec["volumes"] = narrow["volumes"]
	spec["containers"].([]any)[0].(map[string]any)["volumeMounts"] = narrow["volumeMounts"]
	for _, d := range fieldDiff("", podFields(t, documentedProbeSpec(HostMountNarrow, false)), want) {
		t.Errorf("--host-mount narrow: the probe pod differs from docs/rbac.md's: %s", d)
	}

	// ConfigMap delivery: only the image, its pull policy, the command and the loader's volumes differ
	cm := documentedProbeSpec(HostMountRoot, true)
	c := &cm.Spec.Containers[0]
	if c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("ConfigMap delivery pulls: %s", c.ImagePullPolicy)
	}
	loaderVols := map[string]bool{}
	cm.Spec.Volumes = slices.DeleteFunc(cm.Spec.Volumes, func(v corev1.Volume) bool {
		switch {
		case v.Name == "parts" && v.Projected != nil:
		case v.Name == "run" && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory:
		default:
			return false
		}
		loaderVols[v.Name] = true
		return true
	})
	c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		if m.Name == "parts" && !m.ReadOnly {
			t.Errorf("the ConfigMap parts are mounted writable")
		}
		return loaderVols[m.Name]
	})
	if len(loaderVols) != 2 {
		t.Errorf("ConfigMap delivery: loader volumes %v, want parts and run", loaderVols)
	}
	c.Image, c.ImagePullPolicy, c.Command = "", "", nil
	base := documentedProbeSpec(HostMountRoot, false)
	bc := &base.Spec.Containers[0]
	bc.Image, bc.ImagePullPolicy, bc.Command = "", "", nil
	for _, d := range fieldDiff("", podFields(t, cm), podFields(t, base)) {
		t.Errorf("ConfigMap delivery: the probe pod differs from the documented one beyond its image, command and loader volumes: %s", d)
	}
}
