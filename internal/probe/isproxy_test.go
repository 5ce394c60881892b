package probe

import "testing"

// containerd's isProxy (core/remotes/docker/registry.go:85-92): names compared as written.
func TestIsProxy(t *testing.T) {
	for _, tc := range []struct {
		url, registry string
		want          bool
	}{
		{"https://registry.corp.example/v2", "registry.corp.example", false},
		{"https://192.168.12.34:5000/v2", "192.168.12.34:5000", false},
		{"https://registry-1.docker.io/v2", "docker.io", false},
		{"https://docker.io/v2", "docker.io", false},
		{"https://mirror.corp.example/v2", "registry.corp.example", true},
		{"https://harbor.corp.example/v2/dockerhub-proxy", "docker.io", true},
		// the same registry named with its default port: containerd still sends ns
		{"https://registry.corp.example:443/v2", "registry.corp.example", true},
	} {
		if got := isProxy(tc.url, tc.registry); got != tc.want {
			t.Errorf("isProxy(%s, %s) = %t, want %t", tc.url, tc.registry, got, tc.want)
		}
	}
}
