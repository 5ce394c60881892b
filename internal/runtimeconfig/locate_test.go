package runtimeconfig

import (
	"testing"
	"testing/fstest"
)

func TestConfigFile(t *testing.T) {
	talosSystem := file("version = 3\ndisabled_plugins = [\n    \"io.containerd.cri.v1.images\",\n    \"io.containerd.grpc.v1.cri\",\n]\n")
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"standard", fstest.MapFS{"etc/containerd/config.toml": file(kindConfig)}, containerdConfig},
		{"nothing: built-in defaults", fstest.MapFS{}, containerdConfig},
		{"Flatcar: --config ${CONTAINERD_CONFIG} from the unit", fstest.MapFS{
			"usr/lib/systemd/system/containerd.service": file("[Service]\nEnvironment=CONTAINERD_CONFIG=/usr/share/containerd/config.toml\nExecStart=/usr/bin/containerd --config ${CONTAINERD_CONFIG}\n"),
			"etc/containerd/config.toml":                file(kindConfig), // not the one containerd runs with
		}, "/usr/share/containerd/config.toml"},
		{"a drop-in's -c replaces ExecStart", fstest.MapFS{
			"lib/systemd/system/containerd.service":                         file("[Service]\nExecStart=/usr/bin/containerd\n"),
			"etc/systemd/system/containerd.service.d/10-custom-config.conf": file("[Service]\nExecStart=\nExecStart=/usr/bin/containerd -c /etc/containerd/custom.toml\n"),
		}, "/etc/containerd/custom.toml"},
		{"no flag after --", fstest.MapFS{
			"lib/systemd/system/containerd.service": file("[Service]\nExecStart=/usr/bin/containerd -- --config /etc/containerd/custom.toml\n"),
			"etc/containerd/config.toml":            file(kindConfig),
		}, containerdConfig},
		{"k0s", fstest.MapFS{"etc/k0s/containerd.toml": file("version = 3\n")}, k0sConfig},
		{"Talos: the system containerd's file disables the CRI", fstest.MapFS{
			"etc/containerd/config.toml": talosSystem,
			"etc/cri/containerd.toml":    file("version = 3\nimports = [\"/etc/cri/conf.d/cri.toml\"]\n"),
		}, talosCRIConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &loader{root: Root{FS: tc.fsys, Name: "/"}, cfg: &Config{}}
			if got := l.configFile(); got != tc.want {
				t.Errorf("configFile = %s, want %s", got, tc.want)
			}
		})
	}
}

// containerd's --config is read from its command line as systemd passes it (CommandLine), as the
// kubelet's flags are: strings.Fields missed each of these and fell back to the standard file.
func TestConfigFileCommandLine(t *testing.T) {
	unit := "[Service]\nEnvironmentFile=-/etc/default/containerd\nExecStart=/usr/bin/containerd $CONTAINERD_OPTS\n"
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
	}{
		{"a whole-word $VAR splits into words", fstest.MapFS{
			"lib/systemd/system/containerd.service": file(unit),
			"etc/default/containerd":                file("CONTAINERD_OPTS=\"--log-level debug --config /etc/containerd/custom.toml\"\n"),
		}},
		{"a quoted path", fstest.MapFS{
			"lib/systemd/system/containerd.service": file("[Service]\nExecStart=/usr/bin/containerd --config \"/etc/containerd/custom.toml\"\n"),
		}},
		{"quotes inside the word", fstest.MapFS{
			"lib/systemd/system/containerd.service": file("[Service]\nExecStart=/usr/bin/containerd '--config=/etc/containerd/custom.toml'\n"),
		}},
		// Go's flag package, under urfave/cli: "One or two dashes may be used; they are equivalent"
		{"one dash, value after =", fstest.MapFS{
			"lib/systemd/system/containerd.service": file("[Service]\nExecStart=/usr/bin/containerd -c=/etc/containerd/custom.toml\n"),
		}},
		{"-config with the value in the next word", fstest.MapFS{
			"lib/systemd/system/containerd.service": file("[Service]\nExecStart=/usr/bin/containerd -config /etc/containerd/custom.toml\n"),
		}},
		{"the last --config wins", fstest.MapFS{
			"lib/systemd/system/containerd.service": file("[Service]\nExecStart=/usr/bin/containerd --config /etc/containerd/config.toml --log-level debug -c /etc/containerd/custom.toml\n"),
		}},
		{"a whole-word ${VAR} is one argument: --config=/x as a flag", fstest.MapFS{
			"lib/systemd/system/containerd.service": file("[Service]\nEnvironment=\"OPTS=--config=/etc/containerd/custom.toml\"\nExecStart=/usr/bin/containerd ${OPTS}\n"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fsys["etc/containerd/config.toml"] = file(kindConfig)
			l := &loader{root: Root{FS: tc.fsys, Name: "/"}, cfg: &Config{}}
			if got := l.configFile(); got != "/etc/containerd/custom.toml" {
				t.Errorf("configFile = %s, want /etc/containerd/custom.toml", got)
			}
		})
	}
}
