package report

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
