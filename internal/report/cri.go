package report

import (
	"fmt"
	"time"
)

// CRIResult is the node runtime's own pull of the image over the CRI (probe --cri), beside the
// probe's verdict.
type CRIResult struct {
	Socket        string   `json:"socket"`            // the CRI socket asked
	Runtime       string   `json:"runtime,omitempty"` // name and version from the CRI Version call
	PresentBefore bool     `json:"presentBefore"`     // the image was in the runtime's store before the pull
	Removed       bool     `json:"removed"`           // --cri-fresh removed it first (only when no container used it)
	Result        string   `json:"result"`            // "ok", "failed" or "skipped"
	Class         Class    `json:"class,omitempty"`   // the runtime's error, classified as explain does
	Code          Code     `json:"code,omitempty"`
	Host          string   `json:"host,omitempty"`
	Role          Role     `json:"role,omitempty"`
	Message       string   `json:"message,omitempty"` // the runtime's error text, redacted
	Duration      Duration `json:"durationMs"`
	// Agrees says whether the runtime's verdict and the probe's class agree; absent when skipped.
	Agrees *bool  `json:"agrees,omitempty"`
	Note   string `json:"note,omitempty"`
}

// criLine is the runtime's own pull in one line, for the text beside the probe's verdict.
func criLine(c *CRIResult) string {
	rt := c.Runtime
	if rt == "" {
		rt = "the runtime"
	}
	var s string
	switch c.Result {
	case "ok":
		s = fmt.Sprintf("%s pulled it itself over the CRI in %s", rt, c.Duration.Std().Round(time.Millisecond))
	case "failed":
		s = fmt.Sprintf("%s's own pull failed in %s: class %s", rt, c.Duration.Std().Round(time.Millisecond), c.Class)
		if c.Host != "" {
			s += fmt.Sprintf(" · %s (%s)", c.Host, c.Role)
		}
		if c.Code != "" {
			s += " · " + string(c.Code)
		}
	default:
		s = fmt.Sprintf("%s's own pull skipped", rt)
	}
	if c.Removed {
		s += " (image removed first, --cri-fresh)"
	}
	if c.Agrees != nil {
		if *c.Agrees {
			s += " · agrees with the probe"
		} else {
			s += " · DISAGREES with the probe"
		}
	}
	if c.Note != "" {
		s += ": " + c.Note
	}
	return s
}
