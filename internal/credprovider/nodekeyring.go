package credprovider

import (
	"encoding/json"
	"path"
)

// NodeDockerConfig finds the docker config the kubelet's node keyring reads, which it tries after
// the pod's pull secrets and before its credential providers (kubelet v1.37
// kuberuntime_manager.go:359, credentialprovider/provider.go:104). As config.go:87-94 and :169:
// config.json in --root-dir (default /var/lib/kubelet, server.go:1307), the working directory,
// $HOME/.docker and /.docker, the first that parses; else a legacy .dockercfg in the root dir,
// the working directory, $HOME and /. A kubelet under systemd runs in / without $HOME (systemd
// sets it only for units with User=) unless its unit sets one: $HOME is then the working
// directory. file is "" when there is none.
func NodeDockerConfig(s KubeletSettings) (file string, data []byte) {
	root := s.Root
	rootDir := s.Kubelet.RootDir
	if rootDir == "" {
		rootDir = "/var/lib/kubelet"
	}
	home := "/"
	if s.Home != "" {
		home = s.Home
	}
	var auths struct {
		Auths map[string]json.RawMessage `json:"auths"`
	}
	for _, dir := range []string{rootDir, "/", path.Join(home, ".docker"), "/.docker"} {
		f := path.Join(dir, "config.json")
		if b, err := root.ReadFile(f); err == nil && json.Unmarshal(b, &auths) == nil {
			return f, b
		}
	}
	var legacy map[string]json.RawMessage
	for _, dir := range []string{rootDir, "/", home, "/"} {
		f := path.Join(dir, ".dockercfg")
		if b, err := root.ReadFile(f); err == nil && json.Unmarshal(b, &legacy) == nil {
			return f, b
		}
	}
	return "", nil
}
