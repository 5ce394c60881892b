package runtimeconfig

import (
	"strings"
	"testing"
	"testing/fstest"
)

// A registry the runtime's proxy does not exempt is a trap (an error) when the node's own
// configuration shows it is internal, and a note otherwise (issue 24, item 6): each piece of
// evidence on its own, and the public name that has none.
func TestProxiedRegistryInternalEvidence(t *testing.T) {
	// kubespray's drop-in: NO_PROXY lists the nodes, their names, the service and pod CIDRs and
	// svc, never the registry (roles/kubespray-defaults/tasks/no_proxy.yml)
	const dropIn = "[Service]\nEnvironment=\"HTTP_PROXY=http://proxy.example.com:3128\" \"HTTPS_PROXY=http://proxy.example.com:3128\" \"NO_PROXY=10.10.1.11,node1,node1.cluster.local,127.0.0.1,localhost,10.233.0.0/18,10.233.64.0/18,svc,svc.cluster.local\"\n"
	for _, tc := range []struct {
		name, image, resolv, code, why string
	}{
		{"a private address literal", "10.20.30.40:5000/team/app:1", "nameserver 10.10.0.2\n", WarnProxyNoNoProxy, "a private address"},
		{"a CGNAT address literal", "100.64.3.4/team/app:1", "nameserver 10.10.0.2\n", WarnProxyNoNoProxy, "a private address"},
		{"a public address literal", "203.0.113.7/team/app:1", "nameserver 10.10.0.2\n", WarnProxyRoute, ""},
		{"a name under the node's search domain", "harbor.dc1.example.com/team/app:1", "nameserver 10.10.0.2\nsearch dc1.example.com\n", WarnProxyNoNoProxy, "search domain dc1.example.com"},
		{"the same name, no search domain covers it", "harbor.dc1.example.com/team/app:1", "nameserver 10.10.0.2\nsearch other.example.com\n", WarnProxyRoute, ""},
		{"a search domain is a whole label: no match inside one", "harbor.xdc1.example.com/team/app:1", "nameserver 10.10.0.2\nsearch dc1.example.com\n", WarnProxyRoute, ""},
		{"a name under an internal-only suffix", "harbor.corp/team/app:1", "nameserver 10.10.0.2\n", WarnProxyNoNoProxy, "ends in .corp"},
		{"a public registry", "mcr.microsoft.com/oss/nginx:1.27", "nameserver 10.10.0.2\nsearch dc1.example.com\n", WarnProxyRoute, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, fstest.MapFS{
				"etc/containerd/config.toml":                              file(kindConfig),
				"lib/systemd/system/containerd.service":                   file(containerdUnit),
				"etc/systemd/system/containerd.service.d/http-proxy.conf": file(dropIn),
				"etc/resolv.conf":                                         file(tc.resolv),
			}, tc.image, "")
			var got *Warning
			for i, w := range c.Warnings {
				if w.Code == WarnProxyNoNoProxy || w.Code == WarnProxyRoute {
					got = &c.Warnings[i]
				}
			}
			if got == nil || got.Code != tc.code || !strings.Contains(got.Message, tc.why) {
				t.Fatalf("warning %+v, want %s saying %q", got, tc.code, tc.why)
			}
			if want := tc.code == WarnProxyNoNoProxy; c.Broken() != want || (got.Severity == SeverityError) != want {
				t.Errorf("broken %t, severity %s: want an error only with evidence", c.Broken(), got.Severity)
			}
		})
	}
}

func TestInternalEvidence(t *testing.T) {
	search := []string{"dc1.example.com."}
	for _, tc := range []struct{ host, want string }{
		{"10.1.2.3", "private"},
		{"192.168.0.10", "private"},
		{"[fd00::1]", "private"},
		{"127.0.0.1", "loopback"},
		{"169.254.10.1", "link-local"},
		{"8.8.8.8", ""},
		{"harbor.dc1.example.com", "search domain dc1.example.com"},
		{"HARBOR.DC1.EXAMPLE.COM.", "search domain dc1.example.com"},
		{"dc1.example.com", "search domain dc1.example.com"},
		{"harbor", "single-label"},
		{"registry.cluster.local", ".local"},
		{"registry-1.docker.io", ""},
	} {
		got := InternalEvidence(tc.host, search)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("InternalEvidence(%q) = %q, want %q", tc.host, got, tc.want)
		}
	}
}
