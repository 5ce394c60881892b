package watch

import (
	"strings"

	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

// MaxMessage bounds the condition's message, the Event's note and a status entry's message: every
// informer of Nodes and Events in the cluster carries them.
const MaxMessage = 1024

// maxError bounds why a probe could not run, as the status and the condition quote it.
const maxError = 300

// intake is one image's result as the watcher uses it. A report or compact verdict comes from a
// node, which may be tampered with: class, code, role and step are checked against their closed
// sets (anything else is other, UNKNOWN), the host is named cut when it is no DNS name, and every
// string is cleaned, scrubbed and bounded before it reaches a condition, an event, the status or
// a metric.
func intake(img string, full bool, res *report.PoolResult) ImageResult {
	r := ImageResult{Image: img, Full: full}
	if res == nil {
		r.Error = "no verdict"
		return r
	}
	r.Stats = res.DeliveryStats
	switch {
	case res.Probe != nil:
		s := report.Summarize(res.Probe)
		r.Verdict = &s
	case res.Summary != nil:
		s := *res.Summary
		r.Verdict = &s
	default:
		r.Error = line(res.Error, maxError)
		if r.Error == "" {
			r.Error = "no verdict"
		}
		return r
	}
	v := r.Verdict
	v.Class, v.Code, v.Role = classOf(v.Class), codeOf(v.Code), roleOf(v.Role)
	v.Host = registry.ShownHost(v.Host)
	v.Summary = line(v.Summary, MaxMessage)
	return r
}

// line is untrusted text as one bounded line.
func line(s string, n int) string {
	return strings.Join(strings.Fields(redact.Untrusted(s, n)), " ")
}

func classOf(c report.Class) report.Class {
	if c.Valid() {
		return c
	}
	return report.ClassOther
}

func codeOf(c report.Code) report.Code {
	if c.Known() {
		return c
	}
	return report.CodeUnknown
}

// roleOther is the role watch writes and exports for a role outside docs/taxonomy.md's set.
const roleOther report.Role = "other"

func roleOf(r report.Role) report.Role {
	switch r {
	case "", report.RoleRegistry, report.RoleToken, report.RoleBlob, report.RoleMirror, report.RoleProxy:
		return r
	}
	return roleOther
}

// stepOf is a step's name, "other" outside the known steps.
func stepOf(s report.StepName) string {
	if s < report.StepConfig || s > report.StepBlob {
		return "other"
	}
	return s.String()
}
