package report

import "time"

// PodDiagnosis is the JSON contract of `pullpath pod -o json`: a failing pod joined with its
// node, its pool, the image caches of every node, the pull credentials and a timeline.
type PodDiagnosis struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"` // "PodDiagnosis"
	Pod        PodRef    `json:"pod"`
	Class      Class     `json:"class"` // the first finding's class, or ok when the pod has no pull failure
	Findings   []Finding `json:"findings"`
	// Nodes are the nodes of the pools concerned (the failing pods' pools and every node that
	// holds or runs the image), newest first.
	Nodes            []NodeImage      `json:"nodes"`
	NodesOmitted     int              `json:"nodesOmitted,omitempty"` // nodes left out of Nodes (other pools)
	CachedImage      *CachedImage     `json:"cachedImage"`            // null when the pod has no pull failure
	RunningElsewhere []RunningPod     `json:"runningElsewhere"`
	Credentials      *PullCredentials `json:"credentials"`
	Timeline         []TimelineEntry  `json:"timeline"`
	TimelineOmitted  int              `json:"timelineOmitted,omitempty"` // entries cut after the oldest, before the most recent
	Next             *NextStep        `json:"next,omitempty"`
	Notes            []string         `json:"notes,omitempty"` // what could not be read (RBAC) and what that leaves open
}

// PodRef names a pod and what its containers are waiting on.
type PodRef struct {
	Namespace  string         `json:"namespace"`
	Name       string         `json:"name"`
	Node       string         `json:"node"`
	Phase      string         `json:"phase"`
	Owner      string         `json:"controller,omitempty"` // Kind/name of the controller ("owner" is the fixer token elsewhere)
	Containers []ContainerRef `json:"containers"`
}

// ContainerRef is one container (or init container) and its state.
type ContainerRef struct {
	Name    string `json:"name"`
	Init    bool   `json:"init,omitempty"`
	Image   string `json:"image"`
	ImageID string `json:"imageID,omitempty"`
	State   string `json:"state"`            // "waiting", "running", "terminated", "unknown"
	Reason  string `json:"reason,omitempty"` // ErrImagePull, ImagePullBackOff, …
	Message string `json:"message,omitempty"`
}

// NodeImage is one node with its pool, age and whether the image is in its runtime's cache.
type NodeImage struct {
	Name         string    `json:"name"`
	Pool         string    `json:"pool"`
	PoolLabel    string    `json:"poolLabel"` // the label (or label set) the pool was read from
	Created      time.Time `json:"created"`
	Ready        bool      `json:"ready"`
	Schedulable  bool      `json:"schedulable"`
	ImageVersion string    `json:"imageVersion,omitempty"` // node image version, where the platform labels it
	OSImage      string    `json:"osImage,omitempty"`
	Kernel       string    `json:"kernel,omitempty"`
	Runtime      string    `json:"runtime,omitempty"` // containerd://1.7.x
	Kubelet      string    `json:"kubelet,omitempty"`
	Arch         string    `json:"arch,omitempty"`
	// ImagePresent: true when status.images lists the image, false when it does not, null when the
	// list is full (the kubelet reports at most nodeStatusMaxImages, 50 by default): unknown.
	ImagePresent *bool    `json:"imagePresent"`
	ImagesListed int      `json:"imagesListed"`
	ImagesCap    int      `json:"imagesCap"`
	FailingPods  []string `json:"failingPods"` // namespace/name of pods failing to pull the image here
	RunningPods  []string `json:"runningPods"` // namespace/name of pods running the image here
}

// CachedImage is the cached-image lie: where the image is in a runtime's cache and where not.
type CachedImage struct {
	Image     string   `json:"image"`
	Digest    string   `json:"digest,omitempty"` // from the imageID of pods that run it
	PresentOn []string `json:"presentOn"`
	AbsentOn  []string `json:"absentOn"`
	UnknownOn []string `json:"unknownOn"`
	Summary   string   `json:"summary"`
	Settle    string   `json:"settle,omitempty"` // how to learn about UnknownOn: verify on the pool, probe --cri on the node
}

// RunningPod is a pod that runs the same image (by digest or by reference).
type RunningPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	ImageID   string `json:"imageID,omitempty"`
}

// PullCredentials is what the kubelet would present for the image: the pod's and its service
// account's imagePullSecrets, or else the node's own identity. Never a secret value.
type PullCredentials struct {
	Registry       string       `json:"registry"`
	ServiceAccount string       `json:"serviceAccount"`
	PullSecrets    []PullSecret `json:"pullSecrets"`
	NodeIdentity   string       `json:"nodeIdentity,omitempty"` // what the node's credential providers present, after the pull secrets
	// Order is the kubelet's list of credentials for the image, tried in turn until one pulls: the
	// pod's covering pull secrets, then the node's docker config, then its credential providers.
	Order   []CredentialTurn `json:"order"`
	Summary string           `json:"summary"`
}

// CredentialTurn is one place in the kubelet's credential order. Only a pull secret can be read
// through the API; the node's docker config and providers are on the node, and Check says what
// reads them there.
type CredentialTurn struct {
	Source string `json:"source"`          // "pull-secret", "node-docker-config" or "credential-providers"
	Name   string `json:"name,omitempty"`  // the pull secret
	Entry  string `json:"entry,omitempty"` // the secret's key that covers the image
	Known  bool   `json:"known"`           // whether pod could read what it holds for the image
	Detail string `json:"detail"`
	Check  string `json:"check,omitempty"` // the command that tries it on the node, in this order
}

// PullSecret is one imagePullSecrets entry as the kubelet sees it.
type PullSecret struct {
	Name           string `json:"name"`
	From           string `json:"from"` // "pod" or "serviceaccount"
	Exists         *bool  `json:"exists"`
	Type           string `json:"type,omitempty"`
	CoversRegistry *bool  `json:"coversRegistry"`
	Entry          string `json:"entry,omitempty"` // the key that matched, or the keys it has
	Problem        string `json:"problem,omitempty"`
}

// TimelineEntry is one dated event of the story.
type TimelineEntry struct {
	Time  time.Time `json:"time"`
	Kind  string    `json:"kind"` // "node-created", "pool-upgrade", "scale-up", "first-failure", "last-failure", "pod-created", "image-running"
	Event string    `json:"event"`
}

// NextStep is the command that proves or refutes the diagnosis.
type NextStep struct {
	Command string   `json:"command"`
	Pools   []string `json:"pools"`
	Secret  string   `json:"secret,omitempty"`
	Why     string   `json:"why"`
}

// PullFailures is the JSON contract of `pullpath pod --all -o json`: pods with a pull failure,
// grouped by image and cause.
type PullFailures struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`      // "PullFailureList"
	Namespace  string             `json:"namespace"` // "" for all namespaces
	Class      Class              `json:"class"`     // the first group's class, or ok
	Groups     []PullFailureGroup `json:"groups"`
	PodsSeen   int                `json:"podsSeen"` // pods read: the Pending ones, and the Running ones when an event named one
	// Partial says that something was not read (a namespace without list rights, a continue
	// token that expired, a list cut at its bound): Notes say what.
	Partial bool     `json:"partial"`
	Notes   []string `json:"notes"`
	// CredentialVerification is the KEP-2535 pre-flight, with --credential-verification only.
	CredentialVerification *CredentialVerification `json:"credentialVerification,omitempty"`
}

// Verdicts of the credential-verification pre-flight: a container that would fail to start under
// the policy, one the API cannot decide (never counted as safe), one that starts.
const (
	VerdictBreaks  = "breaks"
	VerdictUnknown = "unknown"
	VerdictSafe    = "safe"
)

// CredentialVerification is what `pod --all --credential-verification POLICY` finds: the
// containers that run from a node's cache today and would not start again once their kubelet
// verifies pull credentials for cached images (imagePullCredentialsVerificationPolicy, KEP-2535).
type CredentialVerification struct {
	Policy string `json:"policy"` // the policy assumed: AlwaysVerify, NeverVerifyPreloadedImages, NeverVerifyAllowlistedImages
	// Containers counts the cached containers judged, by verdict; safe ones are not listed.
	Breaks  int `json:"breaks"`
	Unknown int `json:"unknown"`
	Safe    int `json:"safe"`
	// Verified counts the safe ones on nodes whose kubelet runs AlwaysVerify now: it verified them.
	Verified int `json:"verified"`
	// Nodes is each node's current policy, as its kubelet's /configz says (with --read-kubelet-config).
	Nodes  []NodeVerification  `json:"nodes"`
	Groups []VerificationGroup `json:"groups"` // breaks and unknown, by pool and image
}

// NodeVerification is one node's kubelet setting now.
type NodeVerification struct {
	Node      string   `json:"node"`
	Pool      string   `json:"pool"`
	Policy    string   `json:"policy"`    // "" when not read; the kubelet's default when read but unset
	Allowlist []string `json:"allowlist"` // preloadedImagesVerificationAllowlist
	// CredentialProviderConfig is the kubelet's imageCredentialProviderConfigPath, when set.
	CredentialProviderConfig string `json:"credentialProviderConfig,omitempty"`
	Problem                  string `json:"problem,omitempty"` // why the policy was not read
}

// VerificationGroup is one image on one pool.
type VerificationGroup struct {
	Pool     string              `json:"pool"`
	Image    string              `json:"image"`
	Registry string              `json:"registry"`
	Entries  []VerificationEntry `json:"entries"`
}

// VerificationEntry is one container of one pod, and why it would break or cannot be decided.
type VerificationEntry struct {
	Pod       string `json:"pod"` // namespace/name
	Container string `json:"container"`
	Node      string `json:"node"`
	Verdict   string `json:"verdict"` // breaks or unknown
	Reason    string `json:"reason"`
	Fix       string `json:"fix"`
}

// PullFailureGroup is one image failing for one cause.
type PullFailureGroup struct {
	Image   string   `json:"image"`
	Class   Class    `json:"class"`
	Code    Code     `json:"code"`
	Host    string   `json:"host,omitempty"`
	Role    Role     `json:"role,omitempty"`
	Reason  string   `json:"reason"`
	Pods    []string `json:"pods"`
	Nodes   []string `json:"nodes"`
	Pools   []string `json:"pools"`
	Command string   `json:"command"` // the pullpath pod line for one of them
}
