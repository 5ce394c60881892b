package runtimeconfig

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

// systemd itself is the oracle for how an ExecStart= line is split: `systemd --test` loads units
// from $SYSTEMD_UNIT_PATH without running anything and dumps each command's argv as it stored it
// (before the variables, which are expanded when the command runs: TestCommandLine covers those).
// Checked: every row of TestCommandLine and every ExecStart= of the unit fixtures (the corpus's
// nodes, the kubelet units of kubeadm and the credential-provider tests), and that drop-ins without
// their unit file make no service.
func TestCommandLineAgainstSystemd(t *testing.T) {
	bin, err := exec.LookPath("systemd")
	if err != nil {
		t.Skip("no systemd binary on this machine")
	}
	values := map[string]string{} // name → ExecStart= value
	for i, tc := range commandLineCases {
		values[fmt.Sprintf("row-%02d", i)] = tc.exec
	}
	units, _ := filepath.Glob("testdata/corpus/*/root/*/systemd/system/*.service*")
	more, _ := filepath.Glob("testdata/corpus/*/root/*/*/systemd/system/*.service*")
	units = append(units, more...)
	dropins, _ := filepath.Glob("testdata/corpus/*/root/*/systemd/system/*.service.d/*.conf")
	units = append(units, dropins...)
	n := 0
	for _, f := range units {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a directory
		}
		vals, _ := iniAssignments(b, "Service", "ExecStart")
		for _, v := range vals {
			if v != "" {
				values[fmt.Sprintf("fixture-%02d", n)] = v
				n++
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d ExecStart= values in the corpus's units", n)
	}
	// the kubelet's, as kubeadm's 10-kubeadm.conf and the distributions write it
	values["kubeadm"] = "/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS"
	values["eks"] = "/usr/bin/kubelet --config /etc/kubernetes/kubelet/config.json   --image-credential-provider-bin-dir=/etc/eks/image-credential-provider"
	values["aks"] = "/usr/local/bin/kubelet $KUBELET_FLAGS"

	dir, err := os.MkdirTemp("", "pullpath-systemd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // systemd refuses test mode as root: it runs as nobody
		t.Fatal(err)
	}
	var wants []string
	for name, v := range values {
		// Type=oneshot keeps every command of a line with ;, where other types refuse it
		unit := "[Unit]\nDefaultDependencies=no\n[Service]\nType=oneshot\nExecStart=" + v + "\n"
		if err := os.WriteFile(filepath.Join(dir, name+".service"), []byte(unit), 0o644); err != nil {
			t.Fatal(err)
		}
		wants = append(wants, name+".service")
	}
	// a drop-in without its unit file
	orphan := "[Service]\nExecStart=/usr/bin/kubelet --config /k\n"
	if err := os.MkdirAll(filepath.Join(dir, "orphan.service.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "orphan.service.d", "10.conf"), []byte(orphan), 0o644); err != nil {
		t.Fatal(err)
	}
	wants = append(wants, "orphan.service")
	target := "[Unit]\nDefaultDependencies=no\nWants=" + strings.Join(wants, " ") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "all.target"), []byte(target), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--test", "--system", "--unit=all.target", "--no-pager")
	cmd.Env = []string{"SYSTEMD_UNIT_PATH=" + dir, "SYSTEMD_LOG_TARGET=console", "SYSTEMD_LOG_LEVEL=err", "HOME=/", "PATH=/usr/bin:/bin"}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("systemd --test did not run here: %v", err)
	}
	stored := parseSystemdDump(string(out))
	if len(stored) < len(values)/2 {
		t.Fatalf("systemd dumped %d of %d units:\n%s", len(stored), len(values), out)
	}
	_, block, _ := strings.Cut(string(out), "-> Unit orphan.service:")
	if block, _, _ = strings.Cut(block, "-> Unit "); !strings.Contains(block, "Load State: not-found") || stored["orphan.service"] != nil {
		t.Errorf("systemd on a drop-in without its unit: %q, want not-found and no command", block)
	}
	if exec, _ := ServiceUnit(Root{FS: fstest.MapFS{"etc/systemd/system/orphan.service.d/10.conf": {Data: []byte(orphan)}}}, "orphan"); exec != nil {
		t.Errorf("ServiceUnit on a drop-in without its unit: ExecStart %v, want none", exec)
	}
	for name, v := range values {
		argv, _, ok := execArgv(v)
		if !ok {
			argv = nil
		}
		if got := stored[name+".service"]; !slices.Equal(argv, got) {
			t.Errorf("ExecStart=%s: execArgv %q, systemd stores %q", v, argv, got)
		}
	}
}

// parseSystemdDump returns each unit's first ExecStart= argv from `systemd --test`'s dump
// ("Command Line:", each argument quoted by quote_command_line when it needs it).
func parseSystemdDump(dump string) map[string][]string {
	out := map[string][]string{}
	unit, inExec := "", false
	for _, line := range strings.Split(dump, "\n") {
		l := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(l, "-> Unit "):
			unit, inExec = strings.TrimSuffix(strings.TrimPrefix(l, "-> Unit "), ":"), false
			out[unit] = nil
		case l == "-> ExecStart:":
			inExec = true
		case inExec && strings.HasPrefix(l, "Command Line: "):
			out[unit] = unquoteDumpWords(strings.TrimPrefix(l, "Command Line: "))
			inExec = false
		}
	}
	return out
}

// unquoteDumpWords undoes shell_maybe_quote: a word with a blank or special character is in double
// quotes, with \ before " \ ` and $.
func unquoteDumpWords(s string) []string {
	var words []string
	for s != "" {
		if s[0] == ' ' {
			s = s[1:]
			continue
		}
		if s[0] != '"' {
			w, rest, _ := strings.Cut(s, " ")
			words, s = append(words, w), rest
			continue
		}
		var b strings.Builder
		i := 1
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
		}
		words, s = append(words, b.String()), s[min(i+1, len(s)):]
	}
	return words
}
