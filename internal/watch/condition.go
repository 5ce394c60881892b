package watch

import (
	"fmt"
	"strings"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/report"
)

// ConditionType is the node condition watch maintains, in node-problem-detector's convention:
// True is a problem, so k8sgpt's node analyzer and taint controllers pick it up as it is.
const ConditionType = cluster.PathCondition

// Reason is the condition's reason for a class: the class in CamelCase.
func Reason(c report.Class) string {
	switch c {
	case report.ClassOK:
		return "OK"
	case report.ClassDNS:
		return "DNS"
	case report.ClassTLS:
		return "TLS"
	case report.ClassNotFound:
		return "NotFound"
	case report.ClassRateLimit:
		return "RateLimit"
	}
	if !c.Valid() || c == "" {
		return "Other" // a class from a node's report is used only when it is one of docs/taxonomy.md's
	}
	s := string(c)
	return strings.ToUpper(s[:1]) + s[1:]
}

// reasonOf is a reason read back from a node (an earlier watcher's, or anyone's who may patch
// the node status): one of Reason's, else Other.
func reasonOf(s string) string {
	for _, c := range report.Classes() {
		if Reason(c) == s {
			return s
		}
	}
	return "Other"
}

// ImageResult is one image's verdict on one node, as the probe gave it (Verdict nil: it could not
// run, Error says why).
type ImageResult struct {
	Image   string                `json:"image"`
	Verdict *report.ProbeSummary  `json:"verdict"`
	Error   string                `json:"error,omitempty"`
	Full    bool                  `json:"full"` // every layer downloaded, not only the first byte of each
	Stats   *report.DeliveryStats `json:"-"`
}

// Condition is what a node's condition says after a probe of every image.
type Condition struct {
	Status  string // "True" broken, "False" holds, "Unknown" not probed or could not run
	Reason  string
	Message string
}

// conditionOf decides the node's condition: broken when any image's path is broken (the first
// such image names it), healthy when every image's path holds, else unknown.
func conditionOf(results []ImageResult) Condition {
	var unknown *ImageResult
	for i := range results {
		r := &results[i]
		switch {
		case r.Verdict == nil:
			if unknown == nil {
				unknown = r
			}
		case r.Verdict.Class != report.ClassOK:
			return Condition{Status: "True", Reason: Reason(r.Verdict.Class), Message: line(oneLine(r.Image, r.Verdict), MaxMessage)}
		}
	}
	if unknown != nil {
		return Condition{Status: "Unknown", Reason: "Other", Message: line("the probe of "+unknown.Image+" could not run: "+line(unknown.Error, maxError), MaxMessage)}
	}
	return Condition{Status: "False", Reason: "OK", Message: line(fmt.Sprintf("the pull path holds for %s", imagesText(results)), MaxMessage)}
}

// oneLine is the condition's message for a broken path: image, host (role), step and code.
func oneLine(image string, v *report.ProbeSummary) string {
	if v.Host == "" {
		return fmt.Sprintf("%s: %s", image, v.Code)
	}
	return fmt.Sprintf("%s: %s (%s) step %s %s", image, v.Host, v.Role, stepOf(v.Step), v.Code)
}

func imagesText(rs []ImageResult) string {
	var names []string
	for _, r := range rs {
		names = append(names, r.Image)
	}
	return strings.Join(names, ", ")
}
