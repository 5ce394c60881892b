package runtimeconfig

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Setting is one value of a systemd directive or variable and where it was set ("file:line").
type Setting struct{ Value, Origin string }

// ServiceUnit reads svc's unit as systemd loads it: its ExecStart= values in order (the unit, then
// its drop-ins; an empty ExecStart= resets the list, as kubeadm's 10-kubeadm.conf does) and the
// environment systemd gives the service (DefaultEnvironment=, Environment=, EnvironmentFile=).
// Without a unit file (or masked) there is no service: no ExecStart=, and drop-ins do not count.
// Other packages (the kubelet's credential providers) read kubelet flags from it.
func ServiceUnit(root Root, svc string) (execStart []Setting, env map[string]Setting) {
	l := &loader{root: root, cfg: &Config{}}
	if l.unitFile(svc) == "" {
		return nil, settings(l.managerEnv())
	}
	u := l.readUnit(svc)
	return u.execStart, settings(u.env)
}

func settings(env map[string]envVal) map[string]Setting {
	out := make(map[string]Setting, len(env))
	for k, v := range env {
		out[k] = Setting{v.value, v.origin}
	}
	return out
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

// CommandLine returns the arguments systemd passes for an ExecStart= value, argv[0] first
// (systemd.service(5) "Command lines"; src/core/load-fragment.c config_parse_exec and
// src/basic/env-util.c replace_env_argv), or nil where systemd refuses the line (unbalanced quotes,
// no executable). The kubelet's flags and containerd's --config are both read from it:
//   - words are unquoted and C-unescaped as systemd.syntax(7) "Quoting" says, before any expansion;
//   - the executable may carry the prefixes @ - : + ! !! (stripped); with @ the second word is
//     argv[0]; with : nothing is expanded;
//   - a word that is exactly $VAR becomes the words of VAR's value (none when unset); ${VAR}, alone or
//     inside a word, is VAR's value as it stands, one argument; $$ is a $; $VAR inside a word stays;
//   - a lone ; ends the command (a next one follows), \; is a literal ; argument.
func CommandLine(exec Setting, env map[string]Setting) []Word {
	argv, noExpand, ok := execArgv(exec.Value)
	if !ok {
		return nil
	}
	var out []Word
	for _, w := range argv {
		switch {
		case noExpand:
			out = append(out, Word{w, exec.Origin})
		case len(w) >= 1 && w[0] == '$' && (len(w) == 1 || (w[1] != '{' && w[1] != '$')):
			// replace_env_argv: the whole word names the variable; an invalid name (a word like
			// $A/b) or an unset one leaves no word at all
			if s, ok := env[w[1:]]; ok && validEnvName(w[1:]) {
				for _, v := range splitValue(s.Value) {
					out = append(out, Word{v, s.Origin})
				}
			}
		default:
			origin := exec.Origin
			if s, ok := env[strings.TrimSuffix(strings.TrimPrefix(w, "${"), "}")]; ok && strings.HasPrefix(w, "${") && strings.Count(w, "}") == 1 && strings.HasSuffix(w, "}") {
				origin = s.Origin // the argument is exactly that variable's value
			}
			out = append(out, Word{expandBraces(w, env), origin})
		}
	}
	return out
}

// execArgv is the argv systemd stores for an ExecStart= value when it loads the unit, before any
// expansion (config_parse_exec), and whether the : prefix turns expansion off; ok is false where
// systemd refuses the line.
func execArgv(value string) (argv []string, noExpand, ok bool) {
	words, ok := execWords(value)
	if !ok || len(words) == 0 {
		return nil, false, false
	}
	f, argv0, noExpand := execPrefixes(words[0])
	if f == "" {
		return nil, false, false // "Empty path in command line"
	}
	argv = words[1:]
	if !argv0 {
		argv = append([]string{f}, argv...)
	}
	if len(argv) == 0 {
		return nil, false, false // "@/bin/x" without argv[0]: "Empty executable name or zeroeth argument"
	}
	return argv, noExpand, true
}

// execPrefixes strips the executable's prefixes as config_parse_exec does: each of - @ : once, and
// one of + ! !! (a + after a ! ends the prefixes, and so does a third !).
func execPrefixes(f string) (path string, argv0, noExpand bool) {
	var ignore, plus, bang, bang2 bool
	for ; f != ""; f = f[1:] {
		switch {
		case f[0] == '-' && !ignore:
			ignore = true
		case f[0] == '@' && !argv0:
			argv0 = true
		case f[0] == ':' && !noExpand:
			noExpand = true
		case f[0] == '+' && !plus && !bang && !bang2:
			plus = true
		case f[0] == '!' && !plus && !bang && !bang2:
			bang = true
		case f[0] == '!' && !plus && !bang2:
			bang, bang2 = false, true
		default:
			return f, argv0, noExpand
		}
	}
	return "", argv0, noExpand
}

const whitespace = " \t\n\r" // systemd's WHITESPACE

// execWords splits the first command of an ExecStart= value into its words, unquoted and
// C-unescaped (extract_first_word with EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE; an unknown escape is kept
// as written, as systemd does after its warning). ok is false where systemd refuses the line.
func execWords(s string) (words []string, ok bool) {
	p := s
	for {
		p = strings.TrimLeft(p, whitespace)
		if p == "" {
			return words, true
		}
		if len(words) > 0 {
			// an unquoted ; alone ends this command; \; alone is a ; argument (config_parse_exec)
			if p[0] == ';' && (len(p) == 1 || strings.IndexByte(whitespace, p[1]) >= 0) {
				return words, true
			}
			if strings.HasPrefix(p, "\\;") && (len(p) == 2 || strings.IndexByte(whitespace, p[2]) >= 0) {
				words, p = append(words, ";"), p[2:]
				continue
			}
		}
		w, rest, ok := extractWord(p, true)
		if !ok {
			return nil, false
		}
		p = rest
		if len(words) == 0 && w == ";" {
			continue // a leading separator
		}
		words = append(words, w)
	}
}

// splitValue splits a variable's value into the words a whole-word $VAR becomes: quotes honoured,
// a backslash takes the next character as it is, an open quote runs to the end
// (strv_split_full with EXTRACT_RELAX|EXTRACT_UNQUOTE).
func splitValue(s string) []string {
	var out []string
	for {
		s = strings.TrimLeft(s, whitespace)
		if s == "" {
			return out
		}
		w, rest, _ := extractWord(s, false)
		out, s = append(out, w), rest
	}
}

// extractWord reads one word at the start of p (no leading blanks) as extract_first_word does with
// EXTRACT_UNQUOTE, and EXTRACT_CUNESCAPE when unescape is set, else EXTRACT_RELAX. Quotes may open
// anywhere in the word. ok is false for an unbalanced quote (or a trailing backslash inside one)
// under unescape, which systemd refuses.
func extractWord(p string, unescape bool) (word, rest string, ok bool) {
	var b []byte
	quote := byte(0)
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			if i+1 == len(p) {
				if !unescape {
					return string(b), "", true // EXTRACT_RELAX drops it
				}
				if quote != 0 {
					return "", "", false
				}
				return string(b) + "\\", "", true // kept, as EXTRACT_CUNESCAPE_RELAX does
			}
			if !unescape {
				b = append(b, p[i+1])
				i++
				continue
			}
			if e, n, ok := cunescapeOne(p[i+1:]); ok {
				b = append(b, e...)
				i += n
			} else {
				b = append(b, '\\', p[i+1]) // unknown escape: kept
				i++
			}
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				b = append(b, c)
			}
		case c == '\'' || c == '"':
			quote = c
		case strings.IndexByte(whitespace, c) >= 0:
			return string(b), p[i:], true
		default:
			b = append(b, c)
		}
	}
	if quote != 0 && unescape {
		return "", "", false
	}
	return string(b), "", true
}

// cunescapeOne decodes the escape after a backslash (src/basic/escape.c cunescape_one): the bytes
// and how many characters of p it used; ok is false for an unknown or invalid escape.
func cunescapeOne(p string) (out []byte, n int, ok bool) {
	simple := map[byte]byte{'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v', '\\': '\\', '"': '"', '\'': '\'', 's': ' '}
	if c, found := simple[p[0]]; found {
		return []byte{c}, 1, true
	}
	hex := func(s string) (uint64, bool) {
		v, err := strconv.ParseUint(s, 16, 32)
		return v, err == nil && !strings.ContainsAny(s, "+-_xX")
	}
	switch p[0] {
	case 'x':
		if len(p) >= 3 {
			if v, ok := hex(p[1:3]); ok && v != 0 {
				return []byte{byte(v)}, 3, true
			}
		}
	case 'u', 'U':
		k := map[byte]int{'u': 4, 'U': 8}[p[0]]
		if len(p) >= k+1 {
			if v, ok := hex(p[1 : k+1]); ok && v != 0 && v <= unicode.MaxRune && utf8.ValidRune(rune(v)) {
				return utf8.AppendRune(nil, rune(v)), k + 1, true
			}
		}
	case '0', '1', '2', '3', '4', '5', '6', '7':
		if len(p) >= 3 && isOctal(p[1]) && isOctal(p[2]) {
			v := int(p[0]-'0')<<6 | int(p[1]-'0')<<3 | int(p[2]-'0')
			if v != 0 && v <= 255 {
				return []byte{byte(v)}, 3, true
			}
		}
	}
	return nil, 0, false
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// validEnvName is env_name_is_valid: bash's rule.
func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			return false
		}
	}
	return true
}

// expandBraces expands a word as replace_env_full does without its extended flags: ${VAR} is VAR's
// value ("" when unset or not a valid name), $$ a $, anything else kept (a braceless $VAR, and
// ${VAR:-x}, which only some other settings understand).
func expandBraces(w string, env map[string]Setting) string {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		if w[i] != '$' || i+1 == len(w) {
			b.WriteByte(w[i])
			continue
		}
		switch w[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			j := strings.IndexAny(w[i+2:], "}:")
			if j < 0 {
				b.WriteString(w[i:]) // unterminated: as written
				return b.String()
			}
			end := i + 2 + j
			if w[end] == ':' {
				b.WriteString(w[i : end+1]) // ${VAR:-x}: not expanded here
				i = end
				continue
			}
			if name := w[i+2 : end]; validEnvName(name) {
				b.WriteString(env[name].Value)
			}
			i = end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
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
