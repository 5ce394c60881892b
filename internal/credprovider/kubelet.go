// Package credprovider runs the kubelet's image credential providers the way the kubelet does: it
// finds the kubelet's --image-credential-provider-config and --image-credential-provider-bin-dir
// under a host root, matches an image against each provider's matchImages, and executes the
// provider with a CredentialProviderRequest on stdin. No client-go: it runs on nodes.
package credprovider

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// Kubelet is where the kubelet takes its credential providers from, and the runtime it asks to
// pull, with where each was set.
type Kubelet struct {
	ConfigPath, ConfigOrigin string // --image-credential-provider-config (or the KubeletConfiguration field)
	BinDir, BinDirOrigin     string // --image-credential-provider-bin-dir
	// ImageEndpoint is the CRI endpoint the kubelet pulls through: --image-service-endpoint, else
	// --container-runtime-endpoint (or their KubeletConfiguration fields); "" when not set.
	ImageEndpoint, ImageEndpointOrigin string
	// RootDir is --root-dir ("" when not set: the kubelet's default /var/lib/kubelet), where the
	// node keyring looks for a docker config first.
	RootDir, RootDirOrigin string
}

// argVars are the variables distributions hand kubelet flags in (kubeadm, AKS, EKS, k8s packages).
var argVars = []string{"KUBELET_KUBECONFIG_ARGS", "KUBELET_CONFIG_ARGS", "KUBELET_KUBEADM_ARGS", "KUBELET_EXTRA_ARGS", "KUBELET_ARGS", "KUBELET_FLAGS", "KUBELET_OPTS"}

// flagFiles hold those variables on distributions whose unit may not name them.
var flagFiles = []string{"/etc/default/kubelet", "/etc/sysconfig/kubelet", "/var/lib/kubelet/kubeadm-flags.env"}

// KubeletSettings is one reading of the kubelet's settings under a host root (ReadKubelet): its
// flags, its KubeletConfiguration file and its unit's $HOME. A probe reads them once and hands them
// to FindAll, NodeDockerConfig and the CRI socket lookup.
type KubeletSettings struct {
	Root    runtimeconfig.Root
	Kubelet Kubelet
	Home    string // the unit's HOME=, "" when it sets none
	// Env is the environment systemd gives the kubelet (DefaultEnvironment=, its unit's
	// Environment= and EnvironmentFile=): what its credential providers inherit
	Env map[string]runtimeconfig.Setting
	// Err is why the settings cannot be used for credential providers: the --config file unreadable,
	// or a provider config without a bin dir. Kubelet holds what was read before it.
	Err error
}

// Providers reports whether the kubelet runs credential providers: one is configured and Err is nil.
func (s KubeletSettings) Providers() bool { return s.Err == nil && s.Kubelet.ConfigPath != "" }

// ReadKubelet reads the kubelet's flags from its systemd unit, drop-ins and environment files under
// root, its KubeletConfiguration file (--config), and its unit's environment.
func ReadKubelet(root runtimeconfig.Root) KubeletSettings {
	exec, env := runtimeconfig.ServiceUnit(root, "kubelet")
	s := KubeletSettings{Root: root, Home: env["HOME"].Value, Env: env}
	s.Kubelet, s.Err = kubeletFlags(root, kubeletWords(root, exec, env))
	return s
}

// kubeletFlags reads the flags the kubelet takes its providers and CRI endpoint from, then what
// they leave empty from its --config file.
func kubeletFlags(root runtimeconfig.Root, words []runtimeconfig.Word) (k Kubelet, err error) {
	// as pflag: the last occurrence of a flag wins
	var configFile, configOrigin string
	var eps endpoints
	for i := 0; i < len(words); i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(words[i].Text, "-"), "=")
		if !strings.HasPrefix(words[i].Text, "-") {
			continue
		}
		switch name {
		case "image-credential-provider-config", "image-credential-provider-bin-dir", "config", "container-runtime-endpoint", "image-service-endpoint", "root-dir":
		default:
			continue
		}
		origin := words[i].Origin
		if !hasVal {
			if i+1 >= len(words) {
				continue
			}
			i++
			val = words[i].Text
		}
		switch name {
		case "image-credential-provider-config":
			k.ConfigPath, k.ConfigOrigin = val, origin
		case "image-credential-provider-bin-dir":
			k.BinDir, k.BinDirOrigin = val, origin
		case "config":
			configFile, configOrigin = val, origin
		case "container-runtime-endpoint":
			eps.runtime = [2]string{val, origin}
		case "image-service-endpoint":
			eps.image = [2]string{val, origin}
		case "root-dir":
			k.RootDir, k.RootDirOrigin = val, origin
		}
	}
	if configFile != "" {
		// the flags win over the file's fields (the kubelet's precedence)
		err = fromKubeletConfig(root, configFile, configOrigin, &k, &eps)
	}
	// the kubelet pulls through the image service endpoint when one is set, else the runtime's
	k.ImageEndpoint, k.ImageEndpointOrigin = eps.image[0], eps.image[1]
	if k.ImageEndpoint == "" {
		k.ImageEndpoint, k.ImageEndpointOrigin = eps.runtime[0], eps.runtime[1]
	}
	if err != nil || k.ConfigPath == "" {
		return k, err
	}
	if k.BinDir == "" {
		return k, fmt.Errorf("the kubelet's credential provider config %s (%s) has no --image-credential-provider-bin-dir: the kubelet refuses to start so", k.ConfigPath, k.ConfigOrigin)
	}
	return k, nil
}

// kubeletWords is the kubelet's command line: its unit's last ExecStart= as systemd passes it
// (runtimeconfig.CommandLine, as containerd's is read), else the flag variables of its environment
// and of the known environment files.
func kubeletWords(root runtimeconfig.Root, exec []runtimeconfig.Setting, env map[string]runtimeconfig.Setting) []runtimeconfig.Word {
	if len(exec) > 0 {
		return runtimeconfig.CommandLine(exec[len(exec)-1], env)
	}
	var out []runtimeconfig.Word
	for _, v := range argVars {
		if s, ok := env[v]; ok {
			out = append(out, runtimeconfig.SplitWords(s.Value, s.Origin)...)
		}
	}
	for _, f := range flagFiles {
		b, err := root.ReadFile(f)
		if err != nil {
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "export "), "=")
			if !ok || !isArgVar(k) {
				continue
			}
			out = append(out, runtimeconfig.SplitWords(strings.Trim(v, `"'`), fmt.Sprintf("%s:%d", f, i+1))...)
		}
	}
	return out
}

func isArgVar(k string) bool {
	for _, v := range argVars {
		if k == v {
			return true
		}
	}
	return false
}

// fromKubeletConfig fills what the flags left empty from the KubeletConfiguration file's
// imageCredentialProviderConfigPath and imageCredentialProviderBinDir (newer kubelets).
func fromKubeletConfig(root runtimeconfig.Root, file, origin string, k *Kubelet, eps *endpoints) error {
	b, err := root.ReadFile(file)
	if err != nil {
		return fmt.Errorf("the kubelet's --config (%s): %w", origin, err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return fmt.Errorf("the kubelet's configuration %s: neither YAML nor JSON: %v", file, err)
	}
	var kc struct {
		ConfigPath      string `json:"imageCredentialProviderConfigPath"`
		BinDir          string `json:"imageCredentialProviderBinDir"`
		RuntimeEndpoint string `json:"containerRuntimeEndpoint"`
		ImageEndpoint   string `json:"imageServiceEndpoint"`
	}
	if err := json.Unmarshal(j, &kc); err != nil {
		return fmt.Errorf("the kubelet's configuration %s: %v", file, err)
	}
	if k.ConfigPath == "" && kc.ConfigPath != "" {
		k.ConfigPath, k.ConfigOrigin = kc.ConfigPath, fmt.Sprintf("%s:%d", file, lineOf(b, "imageCredentialProviderConfigPath"))
	}
	if k.BinDir == "" && kc.BinDir != "" {
		k.BinDir, k.BinDirOrigin = kc.BinDir, fmt.Sprintf("%s:%d", file, lineOf(b, "imageCredentialProviderBinDir"))
	}
	if eps.image[0] == "" && kc.ImageEndpoint != "" {
		eps.image = [2]string{kc.ImageEndpoint, fmt.Sprintf("%s:%d", file, lineOf(b, "imageServiceEndpoint"))}
	}
	if eps.runtime[0] == "" && kc.RuntimeEndpoint != "" {
		eps.runtime = [2]string{kc.RuntimeEndpoint, fmt.Sprintf("%s:%d", file, lineOf(b, "containerRuntimeEndpoint"))}
	}
	return nil
}

// endpoints are the kubelet's CRI endpoints as {value, origin}, flags first, then the config file.
type endpoints struct {
	runtime, image [2]string
}

// lineOf is the 1-based line of the first line containing all of subs, or 0.
func lineOf(b []byte, subs ...string) int {
	for i, line := range strings.Split(string(b), "\n") {
		all := true
		for _, s := range subs {
			if !strings.Contains(line, s) {
				all = false
				break
			}
		}
		if all {
			return i + 1
		}
	}
	return 0
}
