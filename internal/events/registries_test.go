package events

import (
	"crypto/sha256"
	"slices"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/report"
)

// Every row of the registry table names its vendor source and stays within the alternatives cap.
func TestRegistryRows(t *testing.T) {
	for _, r := range denialRows {
		if !strings.HasPrefix(r.source, "https://") || r.why == "" || len(r.classes) == 0 || len(r.classes) > maxAlternatives+1 {
			t.Errorf("row %s %q: needs a https source, a why and 1..%d classes", r.family, r.wording, maxAlternatives+1)
		}
		if r.literal != "" && !strings.Contains(strings.ToLower(r.wording.String()), r.literal) {
			// the literal is the cheap test before the regexp: it must be text the wording needs
			t.Errorf("row %s: literal %q is not part of %q", r.family, r.literal, r.wording)
		}
	}
}

// TestRegistrySemanticsOnDev checks the vendors' table against dev before it is kept: on each of
// dev's three folds (by source, as TestPhraseTableCrossValidated cuts them) it compares explain
// with and without the table. The table is written from the vendors' documentation, not fitted
// to the corpus, so it must hold on every fold; it fails if it lowers dev's first-class or
// with-alternatives accuracy overall.
func TestRegistrySemanticsOnDev(t *testing.T) {
	defer func() { useRegistrySemantics = true }()
	fold := func(s sample) int { h := sha256.Sum256([]byte(s.source)); return int(h[1] % 3) }
	var on, off, onAlt, offAlt [3]int
	var n [3]int
	for _, file := range corpusFiles {
		for _, s := range loadCorpus(t, file) {
			if heldOut(s.source) {
				continue // never judged on the held-out third
			}
			k := fold(s)
			n[k]++
			for _, use := range []bool{true, false} {
				useRegistrySemantics = use
				got := Classify(s.message)
				right, alt := got.Class == s.class, got.Class == s.class || slices.Contains(got.Alternatives, s.class)
				switch {
				case use && right:
					on[k]++
				case !use && right:
					off[k]++
				}
				switch {
				case use && alt:
					onAlt[k]++
				case !use && alt:
					offAlt[k]++
				}
			}
		}
	}
	var tn, ton, toff, tonAlt, toffAlt int
	for k := range 3 {
		t.Logf("dev fold %d: %d messages: first class %d with the registry table, %d without (with alternatives %d / %d)", k, n[k], on[k], off[k], onAlt[k], offAlt[k])
		tn, ton, toff, tonAlt, toffAlt = tn+n[k], ton+on[k], toff+off[k], tonAlt+onAlt[k], toffAlt+offAlt[k]
	}
	t.Logf("dev: first class %.1f%% with the registry table, %.1f%% without; with alternatives %.1f%% / %.1f%%", pct(ton, tn), pct(toff, tn), pct(tonAlt, tn), pct(toffAlt, tn))
	if ton < toff || tonAlt < toffAlt {
		t.Errorf("the registry table lowers dev accuracy: first class %d < %d or with alternatives %d < %d", ton, toff, tonAlt, toffAlt)
	}
}

// A registry's documented answer is reordered only by its own family's learned row: what the
// same phrase meant on other registries must not override it.
func TestDocumentedAnswerOutranksPooledRows(t *testing.T) {
	saved := phraseTable
	defer func() { phraseTable = saved }()
	phraseTable = map[phraseKey][]classCount{
		{"403", notHub}: {{report.ClassForbidden, 9}},
		{"403", "*"}:    {{report.ClassForbidden, 9}},
	}
	msg := `failed to resolve reference "public.ecr.aws/lambda/nodejs:18": unexpected status from HEAD request to https://public.ecr.aws/v2/lambda/nodejs/manifests/18: 403 Forbidden`
	got := Classify(msg)
	if got.Class != report.ClassAuth || got.Decided || !slices.Contains(got.Alternatives, report.ClassForbidden) {
		t.Errorf("ECR Public's 403: got %s (alt %v, decided %v), want auth first as AWS documents, forbidden an alternative", got.Class, got.Alternatives, got.Decided)
	}
	// the family's own row, with enough support, still weighs in
	phraseTable[phraseKey{"403", "ecr-public"}] = []classCount{{report.ClassForbidden, 6}}
	if got := Classify(msg); got.Class != report.ClassForbidden {
		t.Errorf("with ECR Public's own learned row: got %s, want forbidden", got.Class)
	}
}
