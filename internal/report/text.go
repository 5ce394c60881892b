package report

import (
	"strings"
	"unicode/utf8"

	"github.com/pullpath/pullpath/internal/redact"
)

// DefaultWidth is the width text output fits when the terminal's is unknown (not a terminal).
const DefaultWidth = 80

// ANSI styles, used only when TextOptions.Color is set (a terminal without NO_COLOR).
const (
	styleRed    = "\x1b[31m"
	styleBold   = "\x1b[1;31m"
	styleYellow = "\x1b[33m"
	styleGreen  = "\x1b[32m"
	styleReset  = "\x1b[0m"
)

// paint wraps s in style when colour is on.
func paint(on bool, style, s string) string {
	if !on || s == "" {
		return s
	}
	return style + s + styleReset
}

// Wrap word-wraps text to width: the first line starts with first, the others with rest (the
// hanging indent). A word longer than a line (a URL) is kept whole on a line of its own, so it
// stays copyable. Every line ends with a newline. text may come from a registry or a node: its
// control and escape characters are shown, never obeyed (first and rest carry pullpath's colours).
func Wrap(b *strings.Builder, first, rest, text string, width int) {
	wrapTokens(b, first, rest, strings.Fields(redact.Clean(text)), " ", width)
}

// wrapList is Wrap for a list with no spaces after its commas (NO_PROXY): it wraps after a comma.
func wrapList(b *strings.Builder, first, rest, list string, width int) {
	var items []string
	for _, it := range strings.SplitAfter(redact.Clean(list), ",") {
		if it != "" {
			items = append(items, it)
		}
	}
	wrapTokens(b, first, rest, items, "", width)
}

// wrapTokens is Wrap's layout: tokens joined by sep, a token that does not fit starting the next line.
func wrapTokens(b *strings.Builder, first, rest string, tokens []string, sep string, width int) {
	line := first
	n := visibleLen(first)
	empty := true // nothing but the prefix on the line yet
	for _, w := range tokens {
		wl := utf8.RuneCountInString(w)
		if !empty && n+len(sep)+wl > width {
			b.WriteString(strings.TrimRight(line, " "))
			b.WriteByte('\n')
			line, n, empty = rest, visibleLen(rest), true
		}
		if !empty {
			line += sep
			n += len(sep)
		}
		line += w
		n += wl
		empty = false
	}
	b.WriteString(strings.TrimRight(line, " "))
	b.WriteByte('\n')
}

// table lays rows out in columns two spaces apart (one from column tight on), padding by rune count (so colour codes added by
// style after padding do not disturb the alignment); the last column is not padded.
func table(rows [][]string, tight int, style func(row, col int, cell string) string) []string {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			c = redact.Clean(c) // a cell may come from a registry or a node; styles come after
			r[i] = c
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	out := make([]string, 0, len(rows))
	for ri, r := range rows {
		var b strings.Builder
		for i, c := range r {
			pad := ""
			if i < len(r)-1 {
				gap := 2
				if i+1 >= tight {
					gap = 1
				}
				pad = strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+gap)
			}
			if style != nil {
				c = style(ri, i, c)
			}
			b.WriteString(c)
			b.WriteString(pad)
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	return out
}

// maxWidth is the widest line, in runes.
func maxWidth(lines []string) int {
	w := 0
	for _, l := range lines {
		w = max(w, utf8.RuneCountInString(l))
	}
	return w
}

// visibleLen counts the runes of s a terminal shows: ANSI colour sequences take no column.
func visibleLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			if j := strings.IndexByte(s[i:], 'm'); j > 0 {
				i += j + 1
				continue
			}
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return n
}
