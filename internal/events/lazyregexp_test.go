package events

import (
	"regexp"
	"testing"
)

// The rules compile at their first use, so a typo in one would panic only when a message reaches
// it: every rule is compiled here.
func TestEveryRuleCompiles(t *testing.T) {
	if len(lazyRegexps) < 100 {
		t.Fatalf("only %d rules registered", len(lazyRegexps))
	}
	for _, r := range lazyRegexps {
		if _, err := regexp.Compile(r.src); err != nil {
			t.Errorf("%q: %v", r.src, err)
		}
	}
}
