package contract

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/cli"
	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/registrytest"
)

// Every staged scenario of the demo (healthy, and each fault), through the command line: the
// report matches the schema and carries the scenario's class and code.
func TestProbeReportEveryScenario(t *testing.T) {
	for _, s := range demo.Scenarios() {
		t.Run(s.Name, func(t *testing.T) {
			e := lab(t)
			o := s.Stage(e)
			args := []string{"probe", "-o", "json", "--host-root", "none", "--hosts-file", "", "--platform", o.Platform,
				"--connect-timeout", "2s", "--stall-timeout", "1s"}
			for _, ns := range o.Resolver.Nameservers {
				args = append(args, "--dns-server", ns)
			}
			for _, ca := range o.CAFiles {
				args = append(args, "--ca-file", ca)
			}
			if o.Insecure {
				args = append(args, "--insecure")
			}
			if o.ExpectPrivate {
				args = append(args, "--expect-private")
			}
			stdin := ""
			if o.Credential.Username != "" {
				args = append(args, "-u", o.Credential.Username, "--password-stdin")
				stdin = o.Credential.Password + "\n"
			} else {
				args = append(args, "--anonymous")
			}
			r := run(t, stdin, append(args, o.Image)...)
			want := cli.ExitBroken
			if s.Expect == "ok" {
				want = cli.ExitOK
			}
			r.wantExit(t, want)
			doc := validate(t, "ProbeReport", r.out)
			if doc["class"] != string(s.Expect) || doc["code"] != string(s.Code) {
				t.Errorf("class %v code %v, want %s %s", doc["class"], doc["code"], s.Expect, s.Code)
			}
		})
	}
}

// A run cut by --timeout (exit 3) and one ended by SIGINT (exit 130) write partial reports that
// match the schema and say where they were cut.
func TestProbeReportInterrupted(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		e := lab(t)
		e.Lab.SetFaults(registrytest.Faults{Stall: true})
		r := run(t, "", probeArgs(e, "--anonymous", "--header-timeout", "1m", "--timeout", "500ms", e.Lab.Ref("team/app:1.4"))...)
		r.wantExit(t, cli.ExitTimeout)
		doc := validate(t, "ProbeReport", r.out)
		i, _ := doc["interrupted"].(map[string]any)
		if i == nil || i["reason"] != "timeout" || i["host"] != e.Lab.RegistryAddr() || doc["code"] != "TIMEOUT" {
			t.Errorf("interrupted %v code %v", i, doc["code"])
		}
	})
	t.Run("SIGINT", func(t *testing.T) {
		e := lab(t)
		e.Lab.SetFaults(registrytest.Faults{Stall: true})
		// what cli.Main does on SIGINT: cancel the run's context with the signal as its cause
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		before := e.Lab.Count("registry")
		go func() {
			for deadline := time.Now().Add(10 * time.Second); e.Lab.Count("registry") == before && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			}
			cancel(&cli.SignalError{Signal: syscall.SIGINT})
		}()
		r := runCtx(t, ctx, "", probeArgs(e, "--anonymous", "--header-timeout", "1m", "--timeout", "1m", e.Lab.Ref("team/app:1.4"))...)
		r.wantExit(t, 130)
		doc := validate(t, "ProbeReport", r.out)
		i, _ := doc["interrupted"].(map[string]any)
		if i == nil || i["reason"] != "canceled" || i["signal"] != "SIGINT" || doc["code"] != "CANCELED" {
			t.Errorf("interrupted %v code %v", i, doc["code"])
		}
	})
}

// Pulling the way the runtime does (--host-root on a containerd tree whose hosts.toml carries the
// lab's CA): the report's runtime section matches the schema too.
func TestProbeReportWithRuntime(t *testing.T) {
	e := lab(t)
	ca, err := os.ReadFile(e.Lab.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	reg := e.Lab.RegistryAddr()
	root := writeTree(t, map[string]string{
		"etc/containerd/config.toml":                    kindConfig,
		"var/lib/dpkg/status":                           "Package: containerd\nStatus: install ok installed\nVersion: 1.7.32\n\n",
		"etc/containerd/certs.d/" + reg + "/hosts.toml": "server = \"https://" + reg + "\"\nca = \"lab-ca.pem\"\n\n[host.\"https://" + reg + "\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"lab-ca.pem\"\n",
		"etc/containerd/certs.d/" + reg + "/lab-ca.pem": string(ca),
	})
	r := run(t, demo.Password+"\n", "probe", "-o", "json", "--host-root", root, "--dns-server", e.Lab.DNS.Addr, "--hosts-file", "",
		"--platform", demo.Platform, "-u", demo.User, "--password-stdin", e.Lab.Ref("team/app:1.4"))
	r.wantExit(t, cli.ExitOK)
	doc := validate(t, "ProbeReport", r.out)
	rt, _ := doc["runtime"].(map[string]any)
	if rt == nil || rt["name"] != "containerd" || rt["version"] != "1.7.32" {
		t.Errorf("runtime %v", rt)
	}
}

// The runtime's hosts in order: a mirror that refuses (a warning, then the registry holds), and a
// runtime whose proxy does not answer (class proxy, role proxy) with no mirror. The proxy and the mirror are
// closed loopback ports.
func TestProbeReportMirrorAndProxy(t *testing.T) {
	e := lab(t)
	ca, err := os.ReadFile(e.Lab.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	reg := e.Lab.RegistryAddr()
	mirror := "127.0.0.1:" + registrytest.ClosedPort()
	files := map[string]string{
		"etc/containerd/config.toml":                    kindConfig,
		"etc/containerd/certs.d/" + reg + "/hosts.toml": "server = \"https://" + reg + "\"\nca = \"lab-ca.pem\"\n\n[host.\"https://" + mirror + "\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
		"etc/containerd/certs.d/" + reg + "/lab-ca.pem": string(ca),
	}
	args := func(root string) []string {
		return []string{"probe", "-o", "json", "--host-root", root, "--dns-server", e.Lab.DNS.Addr, "--hosts-file", "", "--connect-timeout", "2s",
			"--platform", demo.Platform, "-u", demo.User, "--password-stdin", e.Lab.Ref("team/app:1.4")}
	}
	t.Run("mirror refuses", func(t *testing.T) {
		r := run(t, demo.Password+"\n", args(writeTree(t, files))...)
		r.wantExit(t, cli.ExitOK)
		doc := validate(t, "ProbeReport", r.out)
		if w, _ := doc["warnings"].([]any); len(w) == 0 {
			t.Errorf("the mirror's failure should be a warning: %v", doc["warnings"])
		}
		if rt := doc["runtime"].(map[string]any); len(rt["hosts"].([]any)) != 2 {
			t.Errorf("runtime hosts %v", rt["hosts"])
		}
	})
	t.Run("proxy down", func(t *testing.T) {
		// without the mirror: with it, both hosts fail and containerd reports the first (the mirror's)
		files["etc/containerd/certs.d/"+reg+"/hosts.toml"] = "server = \"https://" + reg + "\"\nca = \"lab-ca.pem\"\n\n[host]\n"
		files["etc/systemd/system/containerd.service.d/http-proxy.conf"] = "[Service]\nEnvironment=\"HTTPS_PROXY=http://127.0.0.1:" + registrytest.ClosedPort() + "\"\n"
		r := run(t, demo.Password+"\n", args(writeTree(t, files))...)
		r.wantExit(t, cli.ExitBroken)
		doc := validate(t, "ProbeReport", r.out)
		f, _ := doc["failing"].(map[string]any)
		if doc["class"] != "proxy" || f == nil || f["role"] != "proxy" {
			t.Errorf("class %v failing %v", doc["class"], f)
		}
	})
}

func TestAllowlist(t *testing.T) {
	t.Run("complete", func(t *testing.T) {
		e := lab(t)
		r := run(t, demo.Password+"\n", probeArgs(e, "-u", demo.User, "--password-stdin", "--allowlist", e.Lab.Ref("team/app:1.4"))...)
		r.wantExit(t, cli.ExitOK)
		doc := validate(t, "Allowlist", r.out)
		if doc["complete"] != true || len(doc["hosts"].([]any)) != 3 {
			t.Errorf("complete %v hosts %v", doc["complete"], doc["hosts"])
		}
	})
	t.Run("incomplete", func(t *testing.T) {
		e := lab(t)
		e.Lab.SetFaults(registrytest.Faults{Cert: registrytest.CertRogue})
		r := run(t, "", probeArgs(e, "--anonymous", "--allowlist", e.Lab.Ref("team/app:1.4"))...)
		r.wantExit(t, cli.ExitBroken)
		doc := validate(t, "Allowlist", r.out)
		if doc["complete"] != false || len(doc["undiscovered"].([]any)) == 0 {
			t.Errorf("complete %v undiscovered %v", doc["complete"], doc["undiscovered"])
		}
	})
}

// writeTree writes files (path relative to the root → content) under a new temporary root.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		f := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const kindConfig = `version = 2
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"
`
