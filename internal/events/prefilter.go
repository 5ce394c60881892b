package events

import (
	"regexp/syntax"
	"strings"
)

// prefilter is a cheap necessary condition for a regexp: the lowercased text must contain one of
// lits, or the regexp cannot match. Go's regexp walks alternations of literals slowly; a
// strings.Contains per literal skips most rules for most messages.
type prefilter struct {
	re   *lazyRegexp
	lits []string // nil: no condition could be derived, always run the regexp
}

func newPrefilter(re *lazyRegexp) prefilter {
	p := prefilter{re: re}
	if t, err := syntax.Parse(re.String(), syntax.Perl); err == nil {
		p.lits = required(t.Simplify())
	}
	return p
}

// prefiltersOf builds the prefilters of a table's regexps, in the table's order.
func prefiltersOf[T any](rows []T, re func(T) *lazyRegexp) []prefilter {
	out := make([]prefilter, len(rows))
	for i, r := range rows {
		out[i] = newPrefilter(re(r))
	}
	return out
}

// mayMatch reports whether the regexp can match text, whose lowercase form is lower.
func (p prefilter) mayMatch(lower string) bool {
	if p.lits == nil {
		return true
	}
	for _, l := range p.lits {
		if strings.Contains(lower, l) {
			return true
		}
	}
	return false
}

// required returns literals (lowercased) one of which every match contains, or nil.
func required(t *syntax.Regexp) []string {
	switch t.Op {
	case syntax.OpLiteral:
		return []string{strings.ToLower(string(t.Rune))}
	case syntax.OpCapture, syntax.OpPlus:
		return required(t.Sub[0])
	case syntax.OpRepeat:
		if t.Min > 0 {
			return required(t.Sub[0])
		}
	case syntax.OpConcat:
		var best []string
		for _, s := range t.Sub {
			r := required(s)
			if r != nil && (best == nil || shortest(r) > shortest(best)) {
				best = r
			}
		}
		return best
	case syntax.OpAlternate:
		var all []string
		for _, s := range t.Sub {
			r := required(s)
			if r == nil {
				return nil
			}
			all = append(all, r...)
		}
		return all
	}
	return nil
}

func shortest(ls []string) int {
	n := -1
	for _, l := range ls {
		if n < 0 || len(l) < n {
			n = len(l)
		}
	}
	return n
}

// litRegexp is a regexp with its prefilter, for the extraction patterns run on every message.
type litRegexp struct {
	*lazyRegexp
	pf prefilter
}

func mustLit(expr string) litRegexp {
	re := lazyRE(expr)
	return litRegexp{re, newPrefilter(re)}
}

// find is FindStringSubmatch, skipped when lower (text lowercased) lacks the literals.
func (r litRegexp) find(text, lower string) []string {
	if !r.pf.mayMatch(lower) {
		return nil
	}
	return r.FindStringSubmatch(text)
}

func (r litRegexp) findAll(text, lower string) [][]string {
	if !r.pf.mayMatch(lower) {
		return nil
	}
	return r.FindAllStringSubmatch(text, -1)
}

func (r litRegexp) match(text, lower string) bool { return r.pf.mayMatch(lower) && r.MatchString(text) }

func (r litRegexp) findAllIndex(text, lower string) [][]int {
	if !r.pf.mayMatch(lower) {
		return nil
	}
	return r.FindAllStringIndex(text, -1)
}
