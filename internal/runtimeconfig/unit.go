package runtimeconfig

import "fmt"

// Setting is one value of a systemd directive or variable and where it was set ("file:line").
type Setting struct{ Value, Origin string }

// ServiceUnit reads svc's unit as systemd loads it: its ExecStart= values in order (the unit, then
// its drop-ins; an empty ExecStart= resets the list, as kubeadm's 10-kubeadm.conf does) and the
// environment systemd gives the service (DefaultEnvironment=, Environment=, EnvironmentFile=).
// Other packages (the kubelet's credential providers) read kubelet flags from it.
func ServiceUnit(root Root, svc string) (execStart []Setting, env map[string]Setting) {
	l := &loader{root: root, cfg: &Config{}}
	files := []string{}
	if unit := l.unitFile(svc); unit != "" {
		files = append(files, unit)
	}
	files = append(files, l.dropInFiles(unitDirs, svc+".service.d", "service.d")...)
	for _, f := range files {
		b, err := root.ReadFile(f)
		if err != nil {
			continue
		}
		vals, lines := iniAssignments(b, "Service", "ExecStart")
		for i, v := range vals {
			if v == "" {
				execStart = nil
				continue
			}
			execStart = append(execStart, Setting{specifiers(v, svc), fmt.Sprintf("%s:%d (ExecStart=)", f, lines[i])})
		}
	}
	env = map[string]Setting{}
	for k, v := range l.unitEnv(svc) {
		env[k] = Setting{v.value, v.origin}
	}
	return execStart, env
}

// Resolve returns the path of the host path p relative to the root's directory, every symlink
// resolved inside the root (to execute a host binary through the host mount).
func (r Root) Resolve(p string) (string, error) {
	rp, err := r.resolve(p)
	if err != nil {
		return "", r.wrap(p, err)
	}
	return rp, nil
}
