package runtimeconfig

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pullpath/pullpath/internal/report"
)

// TestConfigPathIgnoredTable is a version 3 config with config_path under the 1.x CRI table:
// containerd 2.x ignores it. runtime names the line and the table, not "config_path not set".
func TestConfigPathIgnoredTable(t *testing.T) {
	conf := "version = 3\n\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n"
	for _, tc := range []struct {
		name, ver, want string
	}{
		{"version unknown", "", "config    config_path ignored: the config_path on /etc/containerd/config.toml:4 is under [plugins.\"io.containerd.grpc.v1.cri\".registry], the containerd 1.x table, which containerd 2.x ignores"},
		{"2.0", "2.0.5-1", "config    config_path ignored: the config_path on /etc/containerd/config.toml:4"},
		{"2.2: its default applies", "2.2.1-1", "sets none; the config_path on /etc/containerd/config.toml:4 is under"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{"etc/containerd/config.toml": file(conf)}
			if tc.ver != "" {
				fsys["var/lib/dpkg/status"] = dpkg("containerd", tc.ver)
			}
			c := load(t, fsys, "nginx", "")
			var b strings.Builder
			if err := report.WriteRuntimeText(&b, c.Report(), report.TextOptions{Width: 1000}); err != nil { // the content, unwrapped
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) || strings.Contains(b.String(), "config_path not set") {
				t.Errorf("want %q:\n%s", tc.want, b.String())
			}
			if c.ConfigPath == nil || !strings.Contains(c.ConfigPath.Why, "/etc/containerd/config.toml:4") {
				t.Errorf("configPath %+v", c.ConfigPath)
			}
		})
	}
}
