package report

import "time"

// Verification is the JSON contract of `pullpath verify -o json`: a fresh, complete probe on a node
// of every pool, run through Kubernetes, with the runtime's own pull beside it when asked.
type Verification struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"` // "Verification"
	Image      string `json:"image"`
	Class      Class  `json:"class"` // ok when every pool passes, else the first failing pool's class
	Run        string `json:"run"`   // the run's id: every object it made carries the label pullpath.dev/run=<run>
	Namespace  string `json:"namespace"`
	// Interrupted is the signal that ended the run early ("SIGINT", "SIGTERM"): the pools it did
	// not finish are not verified, and the verdict is no verdict on them.
	Interrupted string       `json:"interrupted,omitempty"`
	Pools       []PoolResult `json:"pools"`
	LeftBehind  []string     `json:"leftBehind"` // objects not cleaned up (kind/namespace/name)
	Notes       []string     `json:"notes,omitempty"`
	FromPod     *PodProbe    `json:"fromPod,omitempty"` // verify --from-pod: the probe from the pod's own network namespace
	// PullSecrets are the pull secrets the node probes (and canaries) present, handed over as
	// fromPod's are: with --pod the pod's imagePullSecrets in its order, each with whether it is
	// presented and why not; with --secret that secret. Absent without either.
	PullSecrets []PodPullSecret `json:"pullSecrets,omitempty"`
	// Stored is what the run wrote to the API server (ConfigMaps and Secrets), all deleted at its end.
	Stored   Stored    `json:"stored"`
	Started  time.Time `json:"started"`
	Duration Duration  `json:"durationMs"`
}

// DeliveryStats describe how the probe binary reached one node.
type DeliveryStats struct {
	Source string `json:"source"` // where the binary came from (a file, or the build embedded in pullpath)
	Bytes  int    `json:"bytes"`  // the binary's size: what reached the node
	// Start is from the probe pod's creation to the probe's start (the binary complete on the node).
	Start Duration `json:"startMs"`
	// Fallback says why the other delivery was used for this node (the attach stream failed).
	Fallback string `json:"fallback,omitempty"`
}

// Stored counts the objects a run wrote to the API server and their data bytes.
type Stored struct {
	Objects int `json:"objects"`
	Bytes   int `json:"bytes"`
}

// PoolResult is the proof for one pool: the node chosen, how the probe reached it, its verdict.
type PoolResult struct {
	Pool               string    `json:"pool"`
	Node               string    `json:"node"` // "" when no eligible node exists
	NodeCreated        time.Time `json:"nodeCreated"`
	Choice             string    `json:"choice"`             // why this node
	ImagePresentBefore *bool     `json:"imagePresentBefore"` // null: the node's image list is full
	Delivery           string    `json:"delivery"`           // "attach", "configmap" or "image"
	// DeliveryStats say what reached the node and how soon the probe started (not with "image").
	DeliveryStats *DeliveryStats `json:"deliveryStats,omitempty"`
	Class         Class          `json:"class"`           // the probe's class; without a probe, PodCause's or other (never ok)
	Probe         *Probe         `json:"probe"`           // the probe's full report (null when it could not run)
	Error         string         `json:"error,omitempty"` // why there is no probe report
	// Summary is the probe's compact verdict from its termination message, when its full report
	// (its log) could not be read.
	Summary     *ProbeSummary `json:"summary,omitempty"`
	Findings    []Finding     `json:"findings,omitempty"` // explain's reading of a probe pod that could not start
	RuntimePull *RuntimePull  `json:"runtimePull"`
}

// PodCause is the finding that decides a pool whose probe pod never ran, or nil. The rule (JSON,
// text, JUnit and the exit code follow it): such a pool is not verified and never ok. When the pod
// pulled its own image (delivery "image") and explain names a cause in its events, that failed
// pull is the pool's class: real evidence of the node's path, on the probe image's host the finding
// names. Otherwise (delivery "configmap" pulls nothing; events that name no cause) the class is other.
func (p *PoolResult) PodCause() *Finding {
	if p.Probe != nil || p.Summary != nil || p.Delivery != "image" {
		return nil
	}
	return Cause(p.Findings)
}

// Cause is the first finding that names a cause: not explain's stand-ins (other with UNKNOWN or
// BACKOFF_NO_CAUSE) for events that name none.
func Cause(fs []Finding) *Finding {
	for i := range fs {
		f := &fs[i]
		if f.Class != ClassOther || f.Code != CodeUnknown && f.Code != CodeBackoffNoCause {
			return f
		}
	}
	return nil
}

// PodProbe is the probe run in a pod's own network namespace (an ephemeral container of the probe
// image), beside the verdict on the node of its pool: the pull is done by the node, not the pod.
type PodProbe struct {
	Pod       string `json:"pod"` // namespace/name
	Node      string `json:"node"`
	Pool      string `json:"pool"`
	Container string `json:"container"` // the ephemeral container; it stays in the pod's spec (Kubernetes cannot remove one)
	Class     Class  `json:"class"`     // the probe's class; when it could not run, the class of its failed pull (Findings), else other
	Probe     *Probe `json:"probe"`
	// Summary is the compact verdict from the container's termination message, when its log
	// could not be read (Probe is then null).
	Summary *ProbeSummary `json:"summary,omitempty"`
	Error   string        `json:"error,omitempty"`
	// Findings are explain's reading of the probe image's pull when the container could not start.
	Findings   []Finding `json:"findings,omitempty"`
	NodeClass  Class     `json:"nodeClass,omitempty"` // the verdict on the pod's pool, when it was probed
	Comparison string    `json:"comparison"`
	// PullSecrets are the pod's imagePullSecrets in its order, each with whether the probe in the
	// pod presents it as the kubelet does, and why not.
	PullSecrets []PodPullSecret `json:"pullSecrets,omitempty"`
}

// PodPullSecret is one of the pod's imagePullSecrets as handed (or not) to a probe: the probe in the
// pod (fromPod.pullSecrets) or the node probes (pullSecrets).
type PodPullSecret struct {
	Name       string `json:"name"`
	Key        string `json:"key,omitempty"`     // the key handed over: .dockerconfigjson or .dockercfg
	HandedOver bool   `json:"handedOver"`        // the probe presents it (from an env var that refers to the secret, or the run's copy of it)
	Problem    string `json:"problem,omitempty"` // why not: not readable (the missing right), no entry for the image, absent
}

// RuntimePull is the kubelet's real pull of the image on the same node (a canary pod).
type RuntimePull struct {
	Result  string   `json:"result"` // "ok", "failed" or "skipped"
	Class   Class    `json:"class,omitempty"`
	Code    Code     `json:"code,omitempty"`
	Host    string   `json:"host,omitempty"`
	Role    Role     `json:"role,omitempty"`
	Message string   `json:"message,omitempty"`
	Cached  bool     `json:"cached"` // the image was in the node's cache before: a success proves nothing about the network
	Agrees  *bool    `json:"agrees"` // the runtime's result and the probe's verdict say the same
	Note    string   `json:"note,omitempty"`
	Took    Duration `json:"durationMs"`
}

// ProbeSummary is the compact verdict a probe writes to its termination message (at most 4 KiB).
type ProbeSummary struct {
	Class   Class    `json:"class"`
	Code    Code     `json:"code"`
	Host    string   `json:"host,omitempty"`
	Role    Role     `json:"role,omitempty"`
	Step    StepName `json:"step,omitempty"`
	Summary string   `json:"summary"`
}

// Summarize cuts a probe report to the compact verdict.
func Summarize(p *Probe) ProbeSummary {
	s := ProbeSummary{Class: p.Class, Code: p.Code, Summary: p.Summary}
	if f := p.Failing; f != nil {
		s.Host, s.Role, s.Step = f.Host, f.Role, f.Step
	}
	if len(s.Summary) > 3000 {
		s.Summary = s.Summary[:3000] + "…"
	}
	return s
}

// Cleanup is the JSON contract of `pullpath cleanup -o json`.
type Cleanup struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"` // "Cleanup"
	Namespace  string   `json:"namespace"`
	Run        string   `json:"run,omitempty"` // the one run cleaned up; absent: every run
	LeftBehind []string `json:"leftBehind"`    // what could not be deleted (kind/namespace/name)
}

// Demo is the JSON contract of `pullpath demo -o json`: each staged scenario, the diagnosis it
// expects and the probe's.
type Demo struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`  // "DemoReport"
	Match      bool   `json:"match"` // every scenario run was diagnosed as staged
	// Interrupted is the signal that ended the run early; scenarios then lists the ones that finished.
	Interrupted string         `json:"interrupted,omitempty"`
	Scenarios   []DemoScenario `json:"scenarios"`
}

// DemoScenario is one scenario: what it stages and what the probe said.
type DemoScenario struct {
	Name   string       `json:"name"`
	Expect DemoExpected `json:"expect"`
	Match  bool         `json:"match"`
	// Class and Code are the probe's verdict; Failing where it put the failure (null when ok).
	Class    Class    `json:"class,omitempty"`
	Code     Code     `json:"code,omitempty"`
	Failing  *Failing `json:"failing"`
	Duration Duration `json:"durationMs"`
	Error    string   `json:"error,omitempty"` // the probe could not run
}

// DemoExpected is the diagnosis a scenario's staged fault must get.
type DemoExpected struct {
	Class Class    `json:"class"`
	Role  Role     `json:"role,omitempty"` // the failing role; absent for ok
	Step  StepName `json:"step,omitempty"`
	Code  Code     `json:"code"`
}
