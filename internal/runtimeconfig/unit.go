package runtimeconfig

import (
	"os"
	"strings"
)

// Setting is one value of a systemd directive or variable and where it was set ("file:line").
type Setting struct{ Value, Origin string }

// ServiceUnit reads svc's unit as systemd loads it: its ExecStart= values in order (the unit, then
// its drop-ins; an empty ExecStart= resets the list, as kubeadm's 10-kubeadm.conf does) and the
// environment systemd gives the service (DefaultEnvironment=, Environment=, EnvironmentFile=).
// Other packages (the kubelet's credential providers) read kubelet flags from it.
func ServiceUnit(root Root, svc string) (execStart []Setting, env map[string]Setting) {
	l := &loader{root: root, cfg: &Config{}}
	execStart, vals := l.unit(svc)
	env = map[string]Setting{}
	for k, v := range vals {
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

// Word is one word of a service's command line and where it was written.
type Word struct{ Text, Origin string }

// CommandLine splits an ExecStart= value into the words systemd passes: quotes honoured; a $VAR or
// ${VAR} that is a whole word is replaced by the words of env's value (none when unset), a word's
// origin then being the variable's; other $VAR and ${VAR} are expanded in place. The kubelet's
// flags and containerd's --config are both read from it. systemd.service(5) keeps a whole-word
// ${VAR} as one word; splitting it too is the kubelet reading's old rule, kept.
func CommandLine(exec Setting, env map[string]Setting) []Word {
	var out []Word
	for _, w := range SplitWords(exec.Value, exec.Origin) {
		name := ""
		switch {
		case strings.HasPrefix(w.Text, "${") && strings.HasSuffix(w.Text, "}"):
			name = w.Text[2 : len(w.Text)-1]
		case strings.HasPrefix(w.Text, "$") && !strings.ContainsAny(w.Text[1:], "${}/="):
			name = w.Text[1:]
		}
		if name != "" {
			if s, ok := env[name]; ok {
				out = append(out, SplitWords(s.Value, s.Origin)...)
			}
			continue
		}
		out = append(out, Word{os.Expand(w.Text, func(k string) string { return env[k].Value }), exec.Origin})
	}
	return out
}

// SplitWords splits s on blanks, honouring single and double quotes; every word has origin.
func SplitWords(s, origin string) []Word {
	var out []Word
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote, in = c, true
		case quote == 0 && (c == ' ' || c == '\t' || c == '\n'):
			if in {
				out = append(out, Word{cur.String(), origin})
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, Word{cur.String(), origin})
	}
	return out
}
