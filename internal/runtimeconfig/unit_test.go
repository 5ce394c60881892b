package runtimeconfig

import (
	"slices"
	"testing"
)

// containerdUnit is a packaged containerd unit, beside which its drop-ins apply as on a node.
const containerdUnit = "[Service]\nExecStart=/usr/bin/containerd\n"

// commandLineCases are ExecStart= values and the arguments systemd passes for them (env below).
var commandLineCases = []struct {
	name, exec string
	want       []string // nil: systemd refuses the line
}{
	// man: "${FOO} ... always resulting in exactly a single argument"; env-util.c: "If ${FOO}
	// appears as part of a word, replace it by the variable as-is"
	{"a whole-word ${VAR} is one argument", "/bin/k ${SP}", []string{"/bin/k", "x y"}},
	{"${VAR} inside a word", "/bin/k --config=${CFG}", []string{"/bin/k", "--config=/etc/containerd/custom.toml"}},
	// man: "$FOO as a separate word ... split at whitespace, resulting in zero or more arguments";
	// env-util.c: the value is split with EXTRACT_UNQUOTE, so its quotes hold
	{"a whole-word $VAR splits, quotes in its value hold", "/bin/k $ARGS", []string{"/bin/k", "--a=1", "--b=2 3", "--c"}},
	{"an unset whole-word $VAR leaves no word", "/bin/k $NOPE --x", []string{"/bin/k", "--x"}},
	{"an empty whole-word $VAR leaves no word", "/bin/k $EMPTY --x", []string{"/bin/k", "--x"}},
	{"an unset ${VAR} is one empty argument", "/bin/k ${NOPE} --x", []string{"/bin/k", "", "--x"}},
	// env-util.c: the whole word after $ is the name; not a valid name, it is a bad variable and
	// the word goes
	{"a whole-word $VAR/x is no name: no word", "/bin/k $CFG/x --x", []string{"/bin/k", "--x"}},
	// man: "To pass a literal dollar sign, use "$$""; env-util.c: CURLY state, a second $
	{"$$ is a literal $", "/bin/k --p=$$CFG $${CFG}", []string{"/bin/k", "--p=$CFG", "${CFG}"}},
	// env-util.c: replace_env_full is called without REPLACE_ENV_ALLOW_BRACELESS
	{"$VAR inside a word stays", "/bin/k --config=$CFG", []string{"/bin/k", "--config=$CFG"}},
	// env-util.c: without REPLACE_ENV_ALLOW_EXTENDED a ':' ends the variable unexpanded
	{"${VAR:-x} stays", "/bin/k ${CFG:-/x}", []string{"/bin/k", "${CFG:-/x}"}},
	{"an invalid ${name} is empty", "/bin/k a${1X}b", []string{"/bin/k", "ab"}},
	// extract-word: quotes and C escapes are undone before expansion, so a quoted $VAR still splits
	{"a quoted whole-word $VAR still splits", `/bin/k "$ARGS"`, []string{"/bin/k", "--a=1", "--b=2 3", "--c"}},
	// load-fragment.c: prefixes - @ : + ! !! before the executable
	{"- and + are stripped", "-+/usr/bin/containerd --config /c", []string{"/usr/bin/containerd", "--config", "/c"}},
	{"!! is stripped", "!!/usr/bin/containerd -c /c", []string{"/usr/bin/containerd", "-c", "/c"}},
	{"@: argv[0] is the next word", "@/usr/bin/kubelet kubelet --config=/k", []string{"kubelet", "--config=/k"}},
	{"@ without argv[0] is refused", "@/usr/bin/kubelet", nil},
	{": expands nothing", ":/bin/k $ARGS ${CFG} $$", []string{"/bin/k", "$ARGS", "${CFG}", "$$"}},
	{"a prefix alone is refused", "-", nil},
	// extract-word.c / systemd.syntax(7) Quoting: quotes anywhere in a word, C escapes
	{"quotes join a word", `/bin/k "--config "/c' 'd`, []string{"/bin/k", "--config /c d"}},
	{"C escapes", `/bin/k --x=\x41\sB \\ --t="a\"b"`, []string{"/bin/k", "--x=A B", `\`, `--t=a"b`}},
	{"an unknown escape is kept, blank and all", `/bin/k a\ b`, []string{"/bin/k", `a\ b`}},
	{"unbalanced quotes are refused", `/bin/k "--config /c`, nil},
	// load-fragment.c: a lone ; separates commands, \; is a ; argument
	{"; ends the command", "/bin/k --x ; /bin/other --y", []string{"/bin/k", "--x"}},
	{`\; is an argument`, `/bin/k \; --x`, []string{"/bin/k", ";", "--x"}},
	{"a ; inside a word is no separator", "/bin/k --x=a; --y", []string{"/bin/k", "--x=a;", "--y"}},
}

// CommandLine passes what systemd passes. Each row cites systemd.service(5) "Command lines" (man),
// src/core/load-fragment.c config_parse_exec (load-fragment.c), src/basic/env-util.c
// replace_env_argv and replace_env_full (env-util.c), src/basic/extract-word.c and escape.c
// cunescape_one. The rows without variables were also checked against systemd 252's own parse
// (TestCommandLineAgainstSystemd).
func TestCommandLine(t *testing.T) {
	env := map[string]Setting{
		"CFG":   {"/etc/containerd/custom.toml", "env:1"},
		"ARGS":  {`--a=1 "--b=2 3"  --c`, "env:2"},
		"EMPTY": {"", "env:3"},
		"SP":    {"x y", "env:4"},
	}
	for _, tc := range commandLineCases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, w := range CommandLine(Setting{tc.exec, "unit:1"}, env) {
				got = append(got, w.Text)
			}
			if !slices.Equal(got, tc.want) || (tc.want != nil && got == nil) {
				t.Errorf("CommandLine(%q) = %q, want %q", tc.exec, got, tc.want)
			}
		})
	}
}

// A word that is one variable is where that variable was set; the rest is where ExecStart= was.
func TestCommandLineOrigins(t *testing.T) {
	env := map[string]Setting{"ARGS": {"--a --b", "/etc/default/k:2"}, "CFG": {"/c", "/etc/default/k:3"}}
	got := CommandLine(Setting{"/bin/k $ARGS ${CFG} --config=${CFG}", "unit:1"}, env)
	want := []Word{{"/bin/k", "unit:1"}, {"--a", "/etc/default/k:2"}, {"--b", "/etc/default/k:2"}, {"/c", "/etc/default/k:3"}, {"--config=/c", "unit:1"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
