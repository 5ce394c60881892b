package credprovider

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// The kubelet's flags and containerd's --config come from one reading of a unit
// (runtimeconfig.ServiceUnit, then CommandLine): the same unit text gives both the same --config.
func TestKubeletAndContainerdReadExecStartAlike(t *testing.T) {
	want := map[string]string{"kubelet": "/etc/kubernetes/kubelet.yaml", "containerd": "/etc/containerd/custom.toml"}
	for _, tc := range []struct {
		name  string
		files map[string]string // paths and texts; %[1]s is the service, %[2]s its --config
	}{
		{"a drop-in resets ExecStart=", map[string]string{
			"lib/systemd/system/%[1]s.service":                  "[Service]\nExecStart=/usr/bin/%[1]s --config /wrong\n",
			"etc/systemd/system/%[1]s.service.d/10-custom.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/%[1]s --config %[2]s\n",
		}},
		{"a whole-word $VAR from an EnvironmentFile", map[string]string{
			"lib/systemd/system/%[1]s.service": "[Service]\nEnvironmentFile=-/etc/default/%%N\nExecStart=/usr/bin/%[1]s $ARGS\n",
			"etc/default/%[1]s":                "ARGS=\"-v 2 --config %[2]s\"\n",
		}},
		{"a drop-in's Environment= wins", map[string]string{
			"lib/systemd/system/%[1]s.service":                  "[Service]\nEnvironment=CFG=/wrong\nExecStart=/usr/bin/%[1]s --config=${CFG}\n",
			"etc/systemd/system/%[1]s.service.d/20-config.conf": "[Service]\nEnvironment=CFG=%[2]s\n",
		}},
		{"a quoted path", map[string]string{
			"etc/systemd/system/%[1]s.service": "[Service]\nExecStart=/usr/bin/%[1]s --config \"%[2]s\"\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"etc/kubernetes/kubelet.yaml": {Data: []byte("kind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/containerd/containerd.sock\n")},
				"etc/containerd/custom.toml":  {Data: []byte("version = 2\n")},
				"etc/containerd/config.toml":  {Data: []byte("version = 2\n")},
			}
			for _, svc := range []string{"kubelet", "containerd"} {
				for p, text := range tc.files {
					fsys[fmt.Sprintf(p, svc)] = &fstest.MapFile{Data: []byte(fmt.Sprintf(text, svc, want[svc]))}
				}
			}
			root := runtimeconfig.Root{FS: fsys, Name: "/host"}
			if s := ReadKubelet(root); s.Err != nil || !strings.HasPrefix(s.Kubelet.ImageEndpointOrigin, want["kubelet"]+":") {
				t.Errorf("the kubelet's --config: endpoint from %q (%v), want from %s", s.Kubelet.ImageEndpointOrigin, s.Err, want["kubelet"])
			}
			cfg, err := runtimeconfig.Load(runtimeconfig.Options{Root: fsys, Name: "/host", Image: "registry.example/app:1", Runtime: runtimeconfig.Containerd})
			if err != nil || !slices.Contains(cfg.Files, want["containerd"]) {
				t.Errorf("containerd's --config: read %v (%v), want %s", cfg.Files, err, want["containerd"])
			}
		})
	}
}
