package credprovider

import (
	"encoding/json"
	"fmt"
	"path"

	"github.com/pullpath/pullpath/internal/creds"
)

// AddNodeConfig adds the kubelet's own docker config (NodeDockerConfig) to k's node keyring, when
// its entries for the image name (host[:port]/repository) are usable. An error says why it is
// not used (it does not parse, or the entry for the image is unusable): the kubelet skips it too.
func (s KubeletSettings) AddNodeConfig(k *creds.Keyring, name string) error {
	f, b := NodeDockerConfig(s)
	if f == "" {
		return nil
	}
	var one creds.Keyring
	if err := one.AddNodeConfig(f, b); err != nil {
		return fmt.Errorf("the kubelet's docker config %s: %w", f, err)
	}
	if _, err := one.Credentials(name); err != nil {
		return err
	}
	return k.AddNodeConfig(f, b)
}

// NodeDockerConfig finds the docker config the kubelet's node keyring reads (kubelet v1.37
// kuberuntime_manager.go:359, credentialprovider/provider.go:104; its place in the kubelet's order
// is creds.Keyring's NodeConfig). As config.go:87-94 and :169:
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
