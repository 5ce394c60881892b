package events

import (
	"regexp"
	"sync"
)

// lazyRegexp is a rule compiled at its first use. The full build links explain into every
// command, and compiling its rules at start cost every command 3 MB and 20 ms, the probe
// included; only a command that reads a message compiles them.
type lazyRegexp struct {
	src  string
	once sync.Once
	rx   *regexp.Regexp
}

// lazyRegexps are every rule, for the test that compiles each.
var lazyRegexps []*lazyRegexp

func lazyRE(src string) *lazyRegexp {
	r := &lazyRegexp{src: src}
	lazyRegexps = append(lazyRegexps, r)
	return r
}

func (r *lazyRegexp) re() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.src) })
	return r.rx
}

func (r *lazyRegexp) String() string                 { return r.src }
func (r *lazyRegexp) MatchString(s string) bool      { return r.re().MatchString(s) }
func (r *lazyRegexp) FindString(s string) string     { return r.re().FindString(s) }
func (r *lazyRegexp) FindStringIndex(s string) []int { return r.re().FindStringIndex(s) }
func (r *lazyRegexp) FindStringSubmatch(s string) []string {
	return r.re().FindStringSubmatch(s)
}
func (r *lazyRegexp) FindStringSubmatchIndex(s string) []int {
	return r.re().FindStringSubmatchIndex(s)
}
func (r *lazyRegexp) FindAllString(s string, n int) []string { return r.re().FindAllString(s, n) }
func (r *lazyRegexp) FindAllStringIndex(s string, n int) [][]int {
	return r.re().FindAllStringIndex(s, n)
}
func (r *lazyRegexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.re().FindAllStringSubmatch(s, n)
}
func (r *lazyRegexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return r.re().FindAllStringSubmatchIndex(s, n)
}
func (r *lazyRegexp) ReplaceAllString(s, repl string) string {
	return r.re().ReplaceAllString(s, repl)
}
func (r *lazyRegexp) ReplaceAllStringFunc(s string, f func(string) string) string {
	return r.re().ReplaceAllStringFunc(s, f)
}
func (r *lazyRegexp) Split(s string, n int) []string { return r.re().Split(s, n) }
func (r *lazyRegexp) SubexpIndex(name string) int    { return r.re().SubexpIndex(name) }
func (r *lazyRegexp) Match(b []byte) bool            { return r.re().Match(b) }
