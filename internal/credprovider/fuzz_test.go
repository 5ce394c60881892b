package credprovider

import (
	"encoding/json"
	"testing"
	"testing/fstest"

	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// A node's provider config, kubelet flags and a provider's answer are input: parsing and matching
// them give a result or an error, never a panic.
func FuzzProviderConfig(f *testing.F) {
	f.Add("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: acr\n  matchImages: [\"*.azurecr.io\", \"*.*.azurecr.io:5000/team\"]\n  defaultCacheDuration: 10m\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n",
		"myreg.azurecr.io/team/app", `{"auth":{"*.azurecr.io":{"username":"u","password":"p"},"[":{}}}`)
	f.Add("{\"kind\":\"CredentialProviderConfig\",\"apiVersion\":\"kubelet.config.k8s.io/v1\",\"providers\":[{\"name\":\"x\",\"matchImages\":[\"[\"]}]}", "reg:5000/a", `{"auth":null}`)
	f.Fuzz(func(t *testing.T, config, image, answer string) {
		if cfg, err := ParseConfig([]byte(config), "/etc/cp.yaml"); err == nil {
			for _, p := range cfg.MatchAll(image) {
				if p.Name == "" || len(p.MatchImages) == 0 {
					t.Fatalf("matched an invalid provider %+v", p)
				}
			}
		}
		var resp response
		if json.Unmarshal([]byte(answer), &resp) == nil {
			if k, _, ok := pickAuth(resp.Auth, image); ok {
				if _, present := resp.Auth[k]; !present {
					t.Fatalf("picked key %q not in the answer", k)
				}
			}
		}
	})
}

func FuzzKubeletFlags(f *testing.F) {
	f.Add("KUBELET_FLAGS=--config=/k.yaml --image-credential-provider-config '/a b.yaml' --image-credential-provider-bin-dir=/bin\n",
		"[Service]\nEnvironmentFile=-/etc/default/kubelet\nExecStart=/usr/bin/kubelet $KUBELET_FLAGS ${KUBELET_EXTRA_ARGS}\n", "kind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/c.sock\n")
	f.Add("KUBELET_EXTRA_ARGS=\"--container-runtime-endpoint\n", "[Service]\nExecStart=\nExecStart=/usr/bin/kubelet \"$X\n", "{")
	f.Fuzz(func(t *testing.T, defaults, unit, kubeletConfig string) {
		fsys := fstest.MapFS{
			"etc/default/kubelet":                  {Data: []byte(defaults)},
			"etc/systemd/system/kubelet.service":   {Data: []byte(unit)},
			"k.yaml":                               {Data: []byte(kubeletConfig)},
			"a b.yaml":                             {Data: []byte(kubeletConfig)},
			"etc/kubernetes/credential-provider.y": {Data: []byte(kubeletConfig)},
		}
		s := ReadKubelet(runtimeconfig.Root{FS: fsys, Name: "/host"})
		if s.Providers() && (s.Err != nil || s.Kubelet.ConfigPath == "" || s.Kubelet.BinDir == "") {
			t.Fatalf("providers with %+v, %v", s.Kubelet, s.Err)
		}
	})
}
