package report

import (
	"strings"
	"testing"
)

// runtimeLike is a containerd node with a mirror, a proxy and a long NO_PROXY, a trap and a note,
// and a hosts.toml path with an escape sequence a hostile node wrote.
func runtimeLike() *RuntimeReport {
	return &RuntimeReport{APIVersion: APIVersion, Kind: "RuntimeReport", Runtime: "containerd", Version: "1.7.24", VersionSource: "dpkg",
		Image: "registry.corp.example:5000/team/app:1.4", Registry: "registry.corp.example:5000", HostRoot: "/host",
		Files:      []string{"/etc/containerd/config.toml", "/etc/containerd/certs.d/registry.corp.example_5000_/hosts.toml", "/etc/systemd/system/containerd.service.d/http-proxy.conf", "/etc/resolv.conf"},
		ConfigPath: &RuntimeConfigPath{Path: "/etc/containerd/certs.d", Source: "/etc/containerd/config.toml:17"},
		Hosts: []RuntimeReportHost{
			{Host: "mirror.corp.example:443", URL: "https://mirror.corp.example/v2", Role: "mirror", Capabilities: []string{"pull", "resolve"}, CA: []string{"/etc/containerd/certs.d/registry.corp.example_5000_/mirror-ca.pem"},
				Header: map[string][]string{"Authorization": {"REDACTED"}}, Proxy: "http://REDACTED@proxy.corp:3128/", Source: "/etc/containerd/certs.d/registry.corp.example_5000_/hosts.toml:3"},
			{Host: "registry.corp.example:5000", URL: "https://registry.corp.example:5000/v2", Role: "registry", Capabilities: []string{"pull", "resolve", "push"}, CA: []string{},
				Proxy: "http://REDACTED@proxy.corp:3128/", Auth: `user "puller"`, Source: "/etc/containerd/certs.d/registry.corp.example_5000_/hosts.toml\x1b[2J:1"},
		},
		Proxy: RuntimeProxy{HTTPSProxy: "http://REDACTED@proxy.corp:3128/", HTTPProxy: "http://REDACTED@proxy.corp:3128/",
			NoProxy: "localhost,127.0.0.1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,.svc,.svc.cluster.local,.corp.internal,169.254.169.254",
			Source:  "/etc/systemd/system/containerd.service.d/http-proxy.conf:2,3 (Environment=)"},
		Resolver: RuntimeResolver{File: "/etc/resolv.conf", Nameservers: []string{"127.0.0.53:53"}, Stub: true, Upstream: []string{"10.0.0.2:53"}},
		Warnings: []RuntimeWarning{
			{Code: "PROXY_WITHOUT_NO_PROXY", Severity: SeverityError, Message: "registry.corp.example:5000 is reached through the proxy http://REDACTED@proxy.corp:3128/: its NO_PROXY does not name it",
				Fix: "add registry.corp.example to NO_PROXY in the runtime's unit, then restart it", Source: "/etc/systemd/system/containerd.service.d/http-proxy.conf:3"},
			{Code: "RESOLVER_STUB", Severity: SeverityInfo, Message: "the runtime resolves through systemd-resolved's stub 127.0.0.53; its upstream is 10.0.0.2:53"},
		}}
}

// At 80 columns the hosts are blocks; at 300 they are a table. A long word stays whole, and the
// node's escape sequence is dropped, not obeyed.
func TestRuntimeTextGolden(t *testing.T) {
	var out strings.Builder
	for _, width := range []int{DefaultWidth, 300} {
		var b strings.Builder
		if err := WriteRuntimeText(&b, runtimeLike(), TextOptions{Width: width}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "\x1b") {
			t.Errorf("width %d: an escape sequence reached the text", width)
		}
		out.WriteString(b.String() + "---\n")
	}
	golden(t, "runtime.golden", out.String())
}
