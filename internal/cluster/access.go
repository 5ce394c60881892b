package cluster

// Scope is where a right applies, in the words of the command line.
type Scope string

const (
	ScopeCluster Scope = "cluster"  // a cluster-scoped resource, or every namespace
	ScopeRun     Scope = "run"      // the --run-namespace (deploy/rbac.yaml makes "pullpath", watch's manifests "pullpath-watch")
	ScopePod     Scope = "pod"      // the pod's namespace (pod NAME, pod --all -n, verify --pod), or --secret's (-n; watch: its NAMESPACE/), or --service-account's
	ScopeFromPod Scope = "from-pod" // the namespace of verify --from-pod's pod
	ScopeEvents  Scope = "default"  // namespace default, where a node's events live (watch)
)

// Use says what a command does without a right.
type Use string

const (
	Required Use = "required"  // the command stops and names the right
	Optional Use = "optional"  // the report narrows and a note names the right
	OptIn    Use = "opt-in"    // asked only with a flag that says so
	NotGiven Use = "not given" // tried only in a case deploy/rbac.yaml avoids; no role grants it
)

// Right is one RBAC permission a command uses: a verb on a resource in a scope, the role of
// deploy/rbac.yaml that grants it, and why.
type Right struct {
	Verb     string
	Resource string // as RBAC writes it: "pods/log"
	Group    string // the API group; "" is the core group
	Scope    Scope
	Role     string // "" when no role grants it (NotGiven)
	Use      Use
	Why      string
	Name     string // the one object the role's rule names (resourceNames); "" any
}

// Access is what one command line uses.
type Access struct {
	Command string // "pod", "verify --from-pod"
	Rights  []Right
}

// Role names of deploy/rbac.yaml.
const (
	RoleReader      = "pullpath-reader"
	RoleNodesProxy  = "pullpath-unsafe-nodes-proxy"
	RoleSecrets     = "pullpath-secret-reader"
	RolePodProber   = "pullpath-pod-prober"
	RoleRunner      = "pullpath-runner"
	authorizationV1 = "authorization.k8s.io"
	coordinationV1  = "coordination.k8s.io"
	// watch's, in deploy/watch/watch.yaml (the in-cluster install; watch manifests prints it)
	RoleWatch       = "pullpath-watch"
	RoleWatchEvents = "pullpath-watch-events"
	RoleWatchRunner = "pullpath-watch-runner"
	RoleWatchStatus = "pullpath-watch-status"
	RoleJanitor     = "pullpath-janitor" // the manifests' CronJob: cleanup --expired
	// watch --secret and --service-account's: rendered by watch manifests only with those flags
	// (they name the secret or the account), so not in deploy/
	RoleWatchSecret       = "pullpath-watch-secret"
	RoleWatchSecretCopies = "pullpath-watch-secret-copies"
	// WatchLease is the Lease the watchers elect their leader with (in the run namespace).
	WatchLease = "pullpath-watch"
	// WatchRunNamespace is watch's default run namespace: its own, never verify's "pullpath",
	// so that neither install's delete removes the other's objects.
	WatchRunNamespace = "pullpath-watch"
)

// Commands is every API request pullpath's cluster commands make, by command line: the source the
// tests hold deploy/rbac.yaml (every rule used, every right granted), the requests of real runs
// (test/cluster) and docs/rbac.md to. A flag's line lists only what it adds.
var Commands = []Access{
	{"pod", []Right{
		{"get", "pods", "", ScopePod, RoleReader, Required, "the pod", ""},
		{"list", "events", "", ScopePod, RoleReader, Required, "the pod's events and its owner's", ""},
		{"list", "nodes", "", ScopeCluster, RoleReader, Required, "every node's pool, age, runtime and status.images", ""},
		{"list", "pods", "", ScopeCluster, RoleReader, Optional, "pods running or failing on the image elsewhere (else the pod's namespace only)", ""},
		{"list", "events", "", ScopeCluster, RoleReader, Optional, "node-pool scale-ups for the timeline", ""},
		{"get", "serviceaccounts", "", ScopePod, RoleReader, Optional, "the service account's imagePullSecrets", ""},
		{"get", "secrets", "", ScopePod, RoleSecrets, Optional, "which registries each pull secret covers (never a value)", ""},
		{"get", "namespaces", "", ScopeCluster, RoleReader, Optional, "whether the namespace of a pod not found exists", ""},
	}},
	{"pod --all", []Right{
		{"list", "pods", "", ScopePod, RoleReader, Required, "pods waiting for an image", ""},
		{"list", "events", "", ScopePod, RoleReader, Required, "their warning events", ""},
		{"list", "nodes", "", ScopeCluster, RoleReader, Optional, "the pools of their nodes", ""},
		{"get", "namespaces", "", ScopeCluster, RoleReader, Optional, "whether -n names a namespace that exists, when no pod is seen", ""},
	}},
	{"pod --all -A", []Right{
		{"list", "pods", "", ScopeCluster, RoleReader, Required, "pods waiting for an image, in every namespace", ""},
		{"list", "events", "", ScopeCluster, RoleReader, Required, "their warning events, in every namespace", ""},
		{"list", "namespaces", "", ScopeCluster, RoleReader, Optional, "without cluster-wide list on pods: read the namespaces one by one (those refused are named)", ""},
	}},
	{"pod --all --credential-verification", []Right{
		{"list", "pods", "", ScopePod, RoleReader, Optional, "the Running pods whose containers may start from a cached image (with -A, at cluster scope); a scope refused is named, its pods not judged", ""},
		{"list", "nodes", "", ScopeCluster, RoleReader, Optional, "the nodes' pools, image lists and cloud (a platform credential provider)", ""},
		{"get", "serviceaccounts", "", ScopePod, RoleReader, Optional, "the imagePullSecrets of the service account of a pod that names none", ""},
		{"get", "secrets", "", ScopePod, RoleSecrets, Optional, "which registries each pull secret covers (never a value); one not read makes its pods unknown", ""},
	}},
	{"pod --read-kubelet-config", []Right{
		{"get", "nodes/proxy", "", ScopeCluster, RoleNodesProxy, OptIn, "each undecided node's nodeStatusMaxImages from its kubelet's /configz; with --credential-verification, every node's imagePullCredentialsVerificationPolicy", ""},
	}},
	{"verify", []Right{
		{"create", "selfsubjectaccessreviews", authorizationV1, ScopeCluster, RoleReader, Required, "its own rights, checked before anything is created", ""},
		{"list", "nodes", "", ScopeCluster, RoleReader, Required, "a node per pool, and whether it has the image", ""},
		{"list", "pods", "", ScopeCluster, RoleReader, Required, "which nodes run the image (else the run namespace only)", ""},
		{"get", "namespaces", "", ScopeCluster, RoleReader, Optional, "whether the run namespace exists", ""},
		{"create", "namespaces", "", ScopeCluster, "", NotGiven, "the run namespace, only when it does not exist", ""},
		{"delete", "namespaces", "", ScopeCluster, "", NotGiven, "the run namespace, only when the run made it", ""},
		{"create", "configmaps", "", ScopeRun, RoleRunner, Required, "the run's owner, the probe binary and the loader", ""},
		{"list", "configmaps", "", ScopeRun, RoleRunner, Required, "cleanup: what is left; the loader, re-checked before each probe pod", ""},
		{"delete", "configmaps", "", ScopeRun, RoleRunner, Required, "cleanup", ""},
		{"create", "pods", "", ScopeRun, RoleRunner, Required, "the probe pods (and canaries); first a dry run of one, which fails fast where Pod Security or a policy refuses it", ""},
		{"watch", "pods", "", ScopeRun, RoleRunner, Required, "each probe pod's state as it changes: one watch a probe, no polling", ""},
		{"list", "pods", "", ScopeRun, RoleRunner, Required, "each probe pod's state before its watch; cleanup: what is left", ""},
		{"delete", "pods", "", ScopeRun, RoleRunner, Required, "cleanup", ""},
		{"create", "pods/attach", "", ScopeRun, RoleRunner, Optional, "the probe binary streamed to its own probe pods' stdin (ConfigMaps when refused)", ""},
		{"get", "pods/attach", "", ScopeRun, RoleRunner, Optional, "the same stream's WebSocket upgrade, a GET (the API server checks create on it too)", ""},
		{"get", "pods/log", "", ScopeRun, RoleRunner, Required, "the probes' full reports (checked first; refused later, their compact verdicts)", ""},
		{"list", "events", "", ScopeRun, RoleRunner, Required, "why a probe pod could not start; the canary's pull", ""},
		{"list", "secrets", "", ScopeRun, RoleRunner, Required, "cleanup: what is left", ""},
		{"delete", "secrets", "", ScopeRun, RoleRunner, Required, "cleanup", ""},
	}},
	{"verify --secret", []Right{
		{"get", "secrets", "", ScopePod, RoleSecrets, Required, "the pull secret to copy", ""},
		{"create", "secrets", "", ScopeRun, RoleRunner, Required, "the run's copy of the pull secret", ""},
	}},
	{"verify --pod", []Right{
		{"get", "pods", "", ScopePod, RoleReader, Required, "the pod's pull secrets", ""},
		{"get", "secrets", "", ScopePod, RoleSecrets, Optional, "each pull secret to copy (one not read is named)", ""},
		{"create", "secrets", "", ScopeRun, RoleRunner, Required, "the run's copies of the pull secrets", ""},
	}},
	{"verify --from-pod", []Right{
		{"get", "pods", "", ScopeFromPod, RoleReader, Required, "the pod", ""},
		{"get", "nodes", "", ScopeCluster, RoleReader, Optional, "the pod's node's pool", ""},
		{"get", "secrets", "", ScopeFromPod, RoleSecrets, Optional, "which pull secrets of the pod cover the image", ""},
		{"update", "pods/ephemeralcontainers", "", ScopeFromPod, RolePodProber, Required, "the probe as an ephemeral container", ""},
		{"get", "pods/log", "", ScopeFromPod, RolePodProber, Optional, "its full report (else its compact verdict)", ""},
	}},
	{"watch", []Right{
		{"list", "nodes", "", ScopeCluster, RoleWatch, Required, "the node informer's list", ""},
		{"watch", "nodes", "", ScopeCluster, RoleWatch, Required, "the node informer's watch: new and Ready-again nodes at once, no polling", ""},
		{"get", "nodes", "", ScopeCluster, RoleWatch, Optional, "whether the API server, not the node, failed a probe", ""},
		{"patch", "nodes/status", "", ScopeCluster, RoleWatch, Required, "the ImagePullPathBroken condition (a strategic merge of that condition only)", ""},
		{"create", "selfsubjectaccessreviews", authorizationV1, ScopeCluster, RoleWatch, Required, "whether the probe may be streamed (pods/attach)", ""},
		{"get", "namespaces", "", ScopeCluster, RoleWatch, Optional, "whether the run namespace exists", ""},
		{"list", "events", "", ScopeCluster, RoleWatch, Optional, "the kubelets' pull failures (reason Failed, field-selected): that node is probed at once (else on its interval)", ""},
		{"watch", "events", "", ScopeCluster, RoleWatch, Optional, "the same, as they come", ""},
		{"create", "events", "", ScopeEvents, RoleWatchEvents, Optional, "a node's event per transition (the condition stands without it)", ""},
		{"create", "pods", "", ScopeRun, RoleWatchRunner, Required, "the probe pods; first a dry run of one (Pod Security, admission)", ""},
		{"watch", "pods", "", ScopeRun, RoleWatchRunner, Required, "each probe pod's state as it changes: one watch a probe, no polling", ""},
		{"list", "pods", "", ScopeRun, RoleWatchRunner, Required, "each probe pod's state before its watch; cleanup, and an earlier watcher's leftovers", ""},
		{"delete", "pods", "", ScopeRun, RoleWatchRunner, Required, "cleanup", ""},
		{"create", "pods/attach", "", ScopeRun, RoleWatchRunner, Optional, "the probe binary streamed to its own probe pods' stdin (ConfigMaps when refused)", ""},
		{"get", "pods/attach", "", ScopeRun, RoleWatchRunner, Optional, "the same stream's WebSocket upgrade, a GET (the API server checks create on it too)", ""},
		{"get", "pods/log", "", ScopeRun, RoleWatchRunner, Required, "the probes' full reports", ""},
		{"list", "events", "", ScopeRun, RoleWatchRunner, Required, "why a probe pod could not start", ""},
		{"create", "configmaps", "", ScopeRun, RoleWatchRunner, Required, "the owners, the loader and the status", ""},
		{"update", "configmaps", "", ScopeRun, RoleWatchRunner, Required, "the status, after a change and every minute (the heartbeat cleanup reads)", WatchStatusConfigMap},
		{"list", "configmaps", "", ScopeRun, RoleWatchRunner, Required, "cleanup; the loader, re-checked before each probe pod", ""},
		{"delete", "configmaps", "", ScopeRun, RoleWatchRunner, Required, "cleanup", ""},
	}},
	{"watch --leader-elect", []Right{
		{"get", "leases", coordinationV1, ScopeRun, RoleWatchRunner, Required, "who leads", WatchLease},
		{"create", "leases", coordinationV1, ScopeRun, RoleWatchRunner, Required, "the lease, the first time", ""},
		{"update", "leases", coordinationV1, ScopeRun, RoleWatchRunner, Required, "renew it", WatchLease},
	}},
	{"watch --secret", []Right{
		{"get", "secrets", "", ScopePod, RoleWatchSecret, Required, "the pull secret to copy (the manifests' Role names it)", ""},
		{"create", "secrets", "", ScopeRun, RoleWatchSecretCopies, Required, "the watcher's copies of the pull secret (garbage-collected with its owner)", ""},
		{"delete", "secrets", "", ScopeRun, RoleWatchSecretCopies, Required, "cleanup", ""},
	}},
	{"watch --service-account", []Right{
		{"get", "serviceaccounts", "", ScopePod, RoleWatchSecret, Required, "the account's imagePullSecrets (the manifests' Role names it)", ""},
		{"get", "secrets", "", ScopePod, RoleWatchSecret, Optional, "each of its pull secrets to copy (one not read is named)", ""},
		{"create", "secrets", "", ScopeRun, RoleWatchSecretCopies, Required, "the watcher's copies of the pull secrets (garbage-collected with their owner)", ""},
		{"delete", "secrets", "", ScopeRun, RoleWatchSecretCopies, Required, "cleanup", ""},
	}},
	{"watch status", []Right{
		{"get", "configmaps", "", ScopeRun, RoleWatchStatus, Required, "the status the watcher keeps", WatchStatusConfigMap},
	}},
	{"cleanup", []Right{
		{"list", "pods", "", ScopeRun, RoleRunner, Required, "what verify runs left", ""},
		{"delete", "pods", "", ScopeRun, RoleRunner, Required, "delete it", ""},
		{"list", "configmaps", "", ScopeRun, RoleRunner, Required, "what verify runs left; whether a watcher runs (its status heartbeat)", ""},
		{"delete", "configmaps", "", ScopeRun, RoleRunner, Required, "delete it", ""},
		{"list", "secrets", "", ScopeRun, RoleRunner, Required, "what verify runs left", ""},
		{"delete", "secrets", "", ScopeRun, RoleRunner, Required, "delete it", ""},
	}},
	{"cleanup --expired (the watch manifests' CronJob)", []Right{
		{"list", "pods", "", ScopeRun, RoleJanitor, Required, "what killed verify runs left", ""},
		{"delete", "pods", "", ScopeRun, RoleJanitor, Required, "delete it, once expired", ""},
		{"list", "configmaps", "", ScopeRun, RoleJanitor, Required, "what killed verify runs left; whether a watcher runs", ""},
		{"delete", "configmaps", "", ScopeRun, RoleJanitor, Required, "delete it, once expired", ""},
		{"list", "secrets", "", ScopeRun, RoleJanitor, Required, "the pull-secret copies killed runs left", ""},
		{"delete", "secrets", "", ScopeRun, RoleJanitor, Required, "delete them, once expired", ""},
	}},
}

// Bindings say how docs/rbac.md binds each role: cluster-wide (a ClusterRoleBinding), or with a
// RoleBinding in the namespaces of a scope.
var Bindings = map[string][]Scope{
	RoleReader:     {ScopeCluster},
	RoleNodesProxy: {ScopeCluster},
	RoleSecrets:    {ScopePod, ScopeFromPod},
	RolePodProber:  {ScopeFromPod},
	RoleRunner:     {ScopeRun},
	// the watcher's ServiceAccount (deploy/watch/watch.yaml binds them); watch status's readers
	RoleWatch:       {ScopeCluster},
	RoleWatchEvents: {ScopeEvents},
	RoleWatchRunner: {ScopeRun},
	RoleWatchStatus: {ScopeRun},
	RoleJanitor:     {ScopeRun},
	// watch --secret, --service-account: where the identity lives, and its copies
	RoleWatchSecret:       {ScopePod},
	RoleWatchSecretCopies: {ScopeRun},
}

// GeneratedRoles are roles only watch manifests renders, for the flags that name their objects:
// internal/watch's tests hold them to the table, as TestDeployRolesGrantExactlyWhatCommandsUse
// holds deploy/.
var GeneratedRoles = []string{RoleWatchSecret, RoleWatchSecretCopies}

// Lines returns the rights of the command lines named ("verify", "verify --pod"), in order.
func Lines(names ...string) []Right {
	var out []Right
	for _, n := range names {
		for _, a := range Commands {
			if a.Command == n {
				out = append(out, a.Rights...)
			}
		}
	}
	return out
}
