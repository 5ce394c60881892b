package events

import (
	"fmt"
	"strings"

	"github.com/pullpath/pullpath/internal/report"
)

// A finding says the text decides it only when that is a calibrated judgement, not the reading of
// one message: the rules must find the cause named (decided in classify.go), and the kind of
// evidence behind the reading must have been right for every dev message read so, with enough of
// them. The kind of evidence is the reading's code, role and class and the ambiguous phrase the
// rules read (evidenceKey); decidetable.go counts, from the dev third of the corpus only, the
// labels of the dev messages read with each key, and TestDecideTable fails when the checked-in
// table differs from what dev gives. TestDecideCrossValidated measures the judgement on dev's
// three folds, each judged by the table learned on the other two.

// evidenceKey is one kind of evidence: what the rules read (code), where (role), the class they
// concluded, and the ambiguous phrase behind it ("" when the code names one cause).
type evidenceKey struct {
	code   report.Code
	role   report.Role
	class  report.Class
	phrase string
	// named says the rules found the cause named (decided before the calibration): the precision
	// that decides is that of the readings the rules would decide
	named bool
}

// evidenceOf is the kind of evidence behind a finding: its reading and the ambiguous phrase.
func evidenceOf(fd report.Finding, key phraseKey) evidenceKey {
	return evidenceKey{fd.Code, fd.Role, fd.Class, key.phrase, fd.Decided}
}

// Calibration thresholds, chosen on dev's folds (TestDecideCrossValidated).
var (
	// minDecideSupport is how many dev messages the rules decided must have been read with the
	// key, all of them with the finding's class, before a text that names its cause decides it.
	// On dev's folds (2026-12-03, with minPromoteSupport 6): 0 (a kind never seen decides) 47.0 %
	// decided, 99.1 % right; 1: 42.6 %, 99.3 %; 2: 39.2 %, 99.6 %; 3: 35.4 %, 99.6 %; without
	// the calibration 50.3 %, 97.9 %. A wrong decided verdict sends the operator to the wrong
	// team: precision first
	minDecideSupport = 2
	// minPromoteSupport is how many dev messages, all of one class, let a transport or TLS
	// reading at a host whose role decides the class (a blob host's timeout is the endpoint's)
	// decide although the cause underneath is another class's (on dev's folds, 4 let one wrong
	// one through, 6 none)
	minPromoteSupport = 6
	// useDecideTable turns the calibration off, for the table's own generation
	useDecideTable = true
)

// offThePath are the readings of a failure on the node or in the pod spec, in the words of the
// component that failed (the kubelet's throttle, the disk, the reference parser): no registry's
// answer is read, so nothing the corpus could confuse; their decided stays the text's.
var offThePath = map[report.Code]bool{report.CodeNeverPull: true, report.CodeInvalidReference: true, report.CodeDiskFull: true,
	report.CodeDiskIO: true, report.CodeUnpackFailed: true, report.CodeKubeletPullQPS: true}

// calibrate turns the rules' decided into the calibrated one, with its reason; it may add the
// classes dev messages with this evidence carried as alternatives.
func calibrate(fd *report.Finding, k evidenceKey) {
	if !useDecideTable || offThePath[fd.Code] {
		return
	}
	row := decideTable[k]
	n, right := total(row), 0
	for _, c := range row {
		if c.class == fd.Class {
			right = c.n
		}
	}
	switch {
	case fd.Decided && (n < minDecideSupport || right < n):
		fd.Decided = false
		for _, c := range row {
			if c.n >= minConfusion {
				addAlternative(fd, c.class)
			}
		}
		if right < n {
			fd.DecidedBecause = fmt.Sprintf("the text names a cause, but %s", evidenceWas(k, row))
		} else {
			fd.DecidedBecause = fmt.Sprintf("the text names a cause, but pullpath's corpus has %d message(s) read this way, too few to decide on", n)
		}
	case !fd.Decided && promotable(fd, k) && n >= minPromoteSupport && right == n:
		fd.Decided, fd.Alternatives = true, nil
		fd.DecidedBecause = fmt.Sprintf("at a %s host the role decides the class: %s", k.role, evidenceWas(k, row))
	}
}

// promotable says an undecided finding is a transport or TLS reading at a named host whose role
// decides the class (the taxonomy: class follows what broke, role says where), whose only doubt
// is the cause underneath. Denials, statuses, EOFs and texts without a cause are never promoted:
// what they mean is documented as ambiguous or not said at all.
func promotable(fd *report.Finding, k evidenceKey) bool {
	if k.phrase != "" || fd.Host == "" || codeGroup(k.code, "") != groupNone || k.class == report.ClassOther {
		return false
	}
	return k.role == report.RoleBlob || k.role == report.RoleToken || k.role == report.RoleMirror
}

// evidenceWas says what dev messages read with this evidence were labelled.
func evidenceWas(k evidenceKey, row []classCount) string {
	parts := make([]string, len(row))
	for i, c := range row {
		parts[i] = fmt.Sprintf("%s %d", c.class, c.n)
	}
	what := string(k.code)
	if k.phrase != "" {
		what = fmt.Sprintf("%q (%s)", k.phrase, k.code)
	}
	return fmt.Sprintf("pullpath's corpus messages read so (%s) were %s", what, strings.Join(parts, ", "))
}
