//go:build !probeonly

package report

import (
	"strings"
	"unicode/utf8"
)

// Fit folds every line of text longer than width runes (DefaultWidth when width <= 0): it breaks
// at the last space that fits, or inside a word longer than the line (a URL, a node name), and
// continues under the line's own indent plus four spaces. Nothing is cut off. The renderers of
// verify, pod and pod --all lay tables out at their natural width; Fit keeps them within the 80
// columns of a pipe (README) or the terminal's width.
func Fit(text string, width int) string {
	if width <= 0 {
		width = DefaultWidth
	}
	var b strings.Builder
	lines := strings.SplitAfter(text, "\n")
	for _, l := range lines {
		body := strings.TrimSuffix(l, "\n")
		if utf8.RuneCountInString(body) <= width {
			b.WriteString(l)
			continue
		}
		body = strings.TrimRight(body, " ")
		indent := body[:len(body)-len(strings.TrimLeft(body, " "))]
		cont := indent + "    "
		if len(cont) > width/2 {
			cont = strings.Repeat(" ", width/2)
		}
		prefix := ""
		for rest := body; rest != ""; prefix = cont {
			var line string
			line, rest = cutAt(rest, width-len(prefix), prefix == "")
			b.WriteString(prefix + line + "\n")
			rest = strings.TrimLeft(rest, " ")
		}
		if !strings.HasSuffix(l, "\n") {
			s := b.String()
			b.Reset()
			b.WriteString(strings.TrimSuffix(s, "\n"))
		}
	}
	return b.String()
}

// cutAt splits s after at most n runes: at the last space within them when there is one past the
// line's indent, else after n runes.
func cutAt(s string, n int, first bool) (head, rest string) {
	if utf8.RuneCountInString(s) <= n {
		return s, ""
	}
	end, count := 0, 0
	for i := range s {
		if count == n {
			end = i
			break
		}
		count++
	}
	lead := 0
	if first {
		lead = len(s) - len(strings.TrimLeft(s, " "))
	}
	if sp := strings.LastIndexByte(s[:end+1], ' '); sp > lead {
		return strings.TrimRight(s[:sp], " "), s[sp+1:]
	}
	return s[:end], s[end:]
}
