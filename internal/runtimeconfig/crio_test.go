package runtimeconfig

import (
	"strings"
	"testing"
	"testing/fstest"
)

// Mirrors with a path (Harbor proxy-cache projects, Artifactory remote repositories): containers/image
// replaces the matched prefix with the location, so the path becomes the start of the repository
// asked of the mirror. Every source points at the entry's own header line.
func TestCRIOLocationsWithPaths(t *testing.T) {
	conf := `unqualified-search-registries = ["docker.io"]

# Harbor proxy-cache project "dockerhub", then an Artifactory remote repository
[[registry]]
prefix = "docker.io"
location = "docker.io"

[[registry.mirror]]
location = "harbor.corp.example/dockerhub"

[[registry.mirror]]
location = "artifactory.corp.example:8443/docker-remote"
insecure = true

[[registry]]
prefix = "quay.io/team"
location = "registry.corp.example/quay/team"
`
	fsys := fstest.MapFS{
		"etc/crio/crio.conf":             file("[crio]\n"),
		"etc/containers/registries.conf": file(conf),
		"etc/resolv.conf":                file("nameserver 10.0.0.2\n"),
	}
	type want struct{ url, apiRoot, repo, source string }
	for _, tc := range []struct {
		image string
		hosts []want
	}{
		{"nginx:1.27", []want{
			{"https://harbor.corp.example/v2/dockerhub", "https://harbor.corp.example/v2", "dockerhub/library/nginx", "/etc/containers/registries.conf:8"},
			{"https://artifactory.corp.example:8443/v2/docker-remote", "https://artifactory.corp.example:8443/v2", "docker-remote/library/nginx", "/etc/containers/registries.conf:11"},
			{"https://registry-1.docker.io/v2", "https://registry-1.docker.io/v2", "", "/etc/containers/registries.conf:4"},
		}},
		// the prefix is a namespace: only its part of the reference is replaced
		{"quay.io/team/app:2", []want{
			{"https://registry.corp.example/v2/quay/team", "https://registry.corp.example/v2", "quay/team/app", "/etc/containers/registries.conf:15"},
		}},
	} {
		t.Run(tc.image, func(t *testing.T) {
			c := load(t, fsys, tc.image, "")
			if len(c.Hosts) != len(tc.hosts) {
				t.Fatalf("hosts %v, want %d", urls(c), len(tc.hosts))
			}
			for i, w := range tc.hosts {
				h := c.Hosts[i]
				if h.URL != w.url || h.APIRoot() != w.apiRoot || h.Repository != w.repo || h.Source != w.source {
					t.Errorf("host %d = url %s root %s repo %q source %s, want %+v", i, h.URL, h.APIRoot(), h.Repository, h.Source, w)
				}
			}
		})
	}
	c := load(t, fsys, "nginx:1.27", "")
	if len(c.Warnings) != 1 || c.Warnings[0].Code != WarnInsecureRegistry || c.Warnings[0].Source != "/etc/containers/registries.conf:11" ||
		!strings.Contains(c.Warnings[0].Message, "artifactory.corp.example:8443") {
		t.Errorf("one insecure warning at the mirror's own line, got %+v", c.Warnings)
	}
}

// A location that makes an invalid reference is an error naming the entry, not a panic.
func TestCRIOBadLocation(t *testing.T) {
	_, err := Load(Options{Root: fstest.MapFS{
		"etc/crio/crio.conf":             file(""),
		"etc/containers/registries.conf": file("[[registry]]\nprefix = \"docker.io\"\nlocation = \"Mirror.Corp/UPPER\"\n"),
	}, Name: "/host", Image: "nginx"})
	if err == nil || !strings.Contains(err.Error(), "registries.conf:1") {
		t.Errorf("error %v, want one naming registries.conf:1", err)
	}
}
