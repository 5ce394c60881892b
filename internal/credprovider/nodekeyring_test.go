package credprovider

import (
	"testing"
	"testing/fstest"

	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// The node keyring's search, as the kubelet's (credentialprovider/config.go:87-94, :169): --root-dir
// first, then the working directory, $HOME/.docker and /.docker; a legacy .dockercfg only when no
// config.json parses; $HOME only when the kubelet's unit sets it.
func TestNodeDockerConfig(t *testing.T) {
	cfg := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	auths := `{"auths":{"reg.example":{"auth":"dTpw"}}}`
	unit := "[Service]\nExecStart=/usr/bin/kubelet --root-dir=/data/kubelet\n"
	for _, c := range []struct {
		name string
		fs   fstest.MapFS
		want string
	}{
		{"none", fstest.MapFS{"etc/hostname": cfg("n")}, ""},
		{"the default root dir first", fstest.MapFS{"var/lib/kubelet/config.json": cfg(auths), ".docker/config.json": cfg(auths), "config.json": cfg(auths)}, "/var/lib/kubelet/config.json"},
		{"--root-dir moves it", fstest.MapFS{"etc/systemd/system/kubelet.service": cfg(unit), "data/kubelet/config.json": cfg(auths), "var/lib/kubelet/config.json": cfg(auths)}, "/data/kubelet/config.json"},
		{"the working directory, /", fstest.MapFS{"config.json": cfg(auths), ".docker/config.json": cfg(auths)}, "/config.json"},
		{"one that does not parse is skipped", fstest.MapFS{"var/lib/kubelet/config.json": cfg("{not json"), ".docker/config.json": cfg(auths)}, "/.docker/config.json"},
		{"no $HOME under systemd: /root/.docker is not read", fstest.MapFS{"root/.docker/config.json": cfg(auths)}, ""},
		{"$HOME from the unit", fstest.MapFS{"etc/systemd/system/kubelet.service": cfg("[Service]\nEnvironment=HOME=/root\nExecStart=/usr/bin/kubelet\n"), "root/.docker/config.json": cfg(auths)}, "/root/.docker/config.json"},
		{"a legacy .dockercfg after every config.json", fstest.MapFS{"var/lib/kubelet/.dockercfg": cfg(`{"reg.example":{"auth":"dTpw"}}`), ".docker/config.json": cfg(auths)}, "/.docker/config.json"},
		{"a legacy .dockercfg", fstest.MapFS{"var/lib/kubelet/.dockercfg": cfg(`{"reg.example":{"auth":"dTpw"}}`)}, "/var/lib/kubelet/.dockercfg"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, b := NodeDockerConfig(ReadKubelet(runtimeconfig.Root{FS: c.fs, Name: "/host"}))
			if got != c.want || (got != "" && len(b) == 0) {
				t.Errorf("NodeDockerConfig = %q (%d bytes), want %q", got, len(b), c.want)
			}
		})
	}
}
