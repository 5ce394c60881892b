package credprovider

import (
	"fmt"
	"io/fs"
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

// countFS counts the opens of each file; a Stat is not one.
type countFS struct {
	fs.FS
	opens map[string]int
}

func (c countFS) Open(name string) (fs.File, error) {
	c.opens[name]++
	return c.FS.Open(name)
}

func (c countFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(c.FS, name) }

// One reading of the kubelet's settings serves the provider plans and the node keyring: its
// unit, its --config file and its environment file are each opened once.
func TestKubeletSettingsReadOnce(t *testing.T) {
	c := countFS{FS: fstest.MapFS{
		"etc/systemd/system/kubelet.service": {Data: []byte("[Service]\nEnvironment=HOME=/root\nEnvironmentFile=-/etc/default/kubelet\nExecStart=/usr/bin/kubelet $KUBELET_FLAGS\n")},
		"etc/default/kubelet":                {Data: []byte("KUBELET_FLAGS=--config=/etc/kubernetes/kubelet.yaml --image-credential-provider-bin-dir=/opt/cp\n")},
		"etc/kubernetes/kubelet.yaml":        {Data: []byte("kind: KubeletConfiguration\nimageCredentialProviderConfigPath: /etc/kubernetes/cp.yaml\ncontainerRuntimeEndpoint: unix:///run/containerd/containerd.sock\n")},
		"etc/kubernetes/cp.yaml":             {Data: []byte("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: acr\n  matchImages: [\"*.azurecr.io\"]\n  defaultCacheDuration: 10m\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n")},
		"root/.docker/config.json":           {Data: []byte(`{"auths":{"reg.example":{"auth":"dTpw"}}}`)},
		"opt/cp/acr":                         {Data: []byte("#!/bin/sh\n"), Mode: 0o755},
	}, opens: map[string]int{}}
	s := ReadKubelet(runtimeconfig.Root{FS: c, Name: "/host"})
	plans, _, err := FindAll(s, "reg.azurecr.io/app")
	f, _ := NodeDockerConfig(s)
	if err != nil || len(plans) != 1 || f != "/root/.docker/config.json" || s.Kubelet.ImageEndpoint != "unix:///run/containerd/containerd.sock" {
		t.Fatalf("plans %d (%v), docker config %q, endpoint %q", len(plans), err, f, s.Kubelet.ImageEndpoint)
	}
	for _, p := range []string{"etc/systemd/system/kubelet.service", "etc/kubernetes/kubelet.yaml", "etc/default/kubelet"} {
		if n := c.opens[p]; n != 1 {
			t.Errorf("%s opened %d times, want once", p, n)
		}
	}
}

// Drop-ins without a unit file make no service (systemd loads it as not-found and runs nothing):
// neither reading takes their ExecStart= or Environment=.
func TestDropInsWithoutUnitMakeNoService(t *testing.T) {
	fsys := fstest.MapFS{
		"etc/containerd/config.toml":                        {Data: []byte("version = 2\n")},
		"etc/containerd/dropin.toml":                        {Data: []byte("version = 2\n")},
		"etc/kubernetes/dropin.yaml":                        {Data: []byte("kind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/dropin.sock\n")},
		"etc/default/kubelet":                               {Data: []byte("KUBELET_FLAGS=--container-runtime-endpoint=unix:///run/flags.sock\n")},
		"run/systemd/system/kubelet.service.d/10-x.conf":    {Data: []byte("[Service]\nEnvironment=HOME=/dropin\nExecStart=\nExecStart=/usr/bin/kubelet --config /etc/kubernetes/dropin.yaml\n")},
		"run/systemd/system/containerd.service.d/10-x.conf": {Data: []byte("[Service]\nExecStart=\nExecStart=/usr/bin/containerd --config /etc/containerd/dropin.toml\n")},
	}
	root := runtimeconfig.Root{FS: fsys, Name: "/host"}
	// no unit: the kubelet's flags come from its environment files, as on a node without systemd's unit
	if s := ReadKubelet(root); s.Kubelet.ImageEndpoint != "unix:///run/flags.sock" || s.Home != "" {
		t.Errorf("kubelet: endpoint %q from %q, HOME %q; want the flags file's, no HOME", s.Kubelet.ImageEndpoint, s.Kubelet.ImageEndpointOrigin, s.Home)
	}
	cfg, err := runtimeconfig.Load(runtimeconfig.Options{Root: fsys, Name: "/host", Image: "registry.example/app:1", Runtime: runtimeconfig.Containerd})
	if err != nil || slices.Contains(cfg.Files, "/etc/containerd/dropin.toml") || !slices.Contains(cfg.Files, "/etc/containerd/config.toml") {
		t.Errorf("containerd: read %v (%v), want the standard config.toml", cfg.Files, err)
	}
	// with the unit files, the drop-ins apply to both
	fsys["lib/systemd/system/kubelet.service"] = &fstest.MapFile{Data: []byte("[Service]\nExecStart=/usr/bin/kubelet\n")}
	fsys["lib/systemd/system/containerd.service"] = &fstest.MapFile{Data: []byte("[Service]\nExecStart=/usr/bin/containerd\n")}
	if s := ReadKubelet(root); s.Kubelet.ImageEndpoint != "unix:///run/dropin.sock" || s.Home != "/dropin" {
		t.Errorf("kubelet with its unit: endpoint %q, HOME %q; want the drop-in's", s.Kubelet.ImageEndpoint, s.Home)
	}
	cfg, err = runtimeconfig.Load(runtimeconfig.Options{Root: fsys, Name: "/host", Image: "registry.example/app:1", Runtime: runtimeconfig.Containerd})
	if err != nil || !slices.Contains(cfg.Files, "/etc/containerd/dropin.toml") {
		t.Errorf("containerd with its unit: read %v (%v), want the drop-in's --config", cfg.Files, err)
	}
}
