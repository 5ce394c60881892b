package watch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pullpath/pullpath/internal/cluster"
	"github.com/pullpath/pullpath/internal/registry"
)

// ManifestOptions fill the in-cluster install of watch.
type ManifestOptions struct {
	Images       []string // what every node must pull
	WatcherImage string   // an image holding the full pullpath binary at /pullpath
	// Namespace is the watcher's own (its Deployment, ServiceAccount and the janitor): Pod
	// Security restricted. RunNamespace holds its probe pods, delivery objects, lease and status:
	// privileged, and nothing in it can borrow the watcher's identity.
	Namespace      string
	RunNamespace   string
	Interval       string
	MetricsPort    int
	Replicas       int
	ServiceAccount string
	// Secret (NAMESPACE/NAME) and PullServiceAccount (NAMESPACE/NAME) are watch --secret and
	// --service-account: the pull identity the probes present, read where it lives.
	Secret, PullServiceAccount string
	// JanitorNamespace is verify's run namespace, whose expired leftovers the janitor CronJob
	// deletes; "" leaves the janitor out.
	JanitorNamespace string
	// Resident runs watch --resident: an agent pod on every node; AgentImage (digest-pinned) is
	// theirs, "" for the binary in ConfigMaps on each node's sandbox image.
	Resident   bool
	AgentImage string
}

// DefaultManifestOptions are watch manifests' defaults.
func DefaultManifestOptions() ManifestOptions {
	return ManifestOptions{Namespace: "pullpath-watcher", RunNamespace: cluster.WatchRunNamespace, Interval: "15m", MetricsPort: 9464,
		Replicas: 2, ServiceAccount: "pullpath-watch", JanitorNamespace: "pullpath"}
}

// systemNamespaces are never a run namespace: it is relabelled Pod Security privileged, and
// kubectl delete -f would delete it.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// Validate checks every value as the API server and watch would, so that what prints applies and
// runs: names, the interval watch accepts, the port, and namespaces that are pullpath's own.
func (o ManifestOptions) Validate() error {
	for _, n := range []struct{ flag, v string }{{"--namespace", o.Namespace}, {"--run-namespace", o.RunNamespace}} {
		if errs := validation.IsDNS1123Label(n.v); len(errs) > 0 {
			return fmt.Errorf("%s %q: not a namespace name (%s)", n.flag, n.v, strings.Join(errs, "; "))
		}
		if slices.Contains(systemNamespaces, n.v) || strings.HasPrefix(n.v, "kube-") || n.v == o.monitoring() {
			return fmt.Errorf("%s %s: a namespace pullpath does not own; the install labels it and kubectl delete -f deletes it: choose a namespace of pullpath's own", n.flag, n.v)
		}
	}
	if o.Namespace == o.RunNamespace {
		return fmt.Errorf("--namespace and --run-namespace are both %s: the watcher's identity must not live where pods run privileged", o.Namespace)
	}
	if o.JanitorNamespace != "" {
		if errs := validation.IsDNS1123Label(o.JanitorNamespace); len(errs) > 0 {
			return fmt.Errorf("--janitor-namespace %q: not a namespace name (%s)", o.JanitorNamespace, strings.Join(errs, "; "))
		}
		if o.JanitorNamespace == o.Namespace || o.JanitorNamespace == o.RunNamespace {
			return fmt.Errorf("--janitor-namespace %s: want verify's run namespace, not the watcher's own", o.JanitorNamespace)
		}
	}
	if errs := validation.IsDNS1123Subdomain(o.ServiceAccount); len(errs) > 0 {
		return fmt.Errorf("--watcher-service-account %q: not a ServiceAccount name (%s)", o.ServiceAccount, strings.Join(errs, "; "))
	}
	if err := CheckIdentity(o.Secret, o.PullServiceAccount); err != nil {
		return err
	}
	d, err := time.ParseDuration(o.Interval)
	if err != nil {
		return fmt.Errorf("--interval %q: want a duration such as 15m", o.Interval)
	}
	if d < MinInterval {
		return fmt.Errorf("--interval %s: want %s or more (watch refuses less: the Deployment would crash-loop)", o.Interval, MinInterval)
	}
	if o.Replicas < 1 || o.Replicas > 10 {
		return fmt.Errorf("--replicas %d: want 1 to 10 (one leads, the others wait)", o.Replicas)
	}
	if o.MetricsPort < 1 || o.MetricsPort > 65535 {
		return fmt.Errorf("--metrics-port %d: want a port, 1 to 65535", o.MetricsPort)
	}
	if o.AgentImage != "" {
		if !o.Resident {
			return errors.New("--agent-image is for the resident agents: add --resident")
		}
		ref, err := registry.ParseReference(o.AgentImage)
		if err != nil {
			return fmt.Errorf("--agent-image: %w", err)
		}
		if ref.Digest == "" {
			return fmt.Errorf("--agent-image %s: pin it by digest (IMAGE@sha256:…): the admission policy runs no other", o.AgentImage)
		}
	}
	return nil
}

// agentRepos are the repositories the probe-pod policy admits an image of, by digest: the
// agents' image.
func (o ManifestOptions) agentRepos() []string {
	if o.AgentImage == "" {
		return nil
	}
	ref, err := registry.ParseReference(o.AgentImage)
	if err != nil {
		return nil
	}
	return []string{ref.Name()}
}

// CheckIdentity checks watch's and watch manifests' --secret and --service-account: at most one,
// each NAMESPACE/NAME.
func CheckIdentity(secret, serviceAccount string) error {
	if secret != "" && serviceAccount != "" {
		return errors.New("give --secret or --service-account, not both")
	}
	for _, r := range []struct{ flag, v string }{{"--secret", secret}, {"--service-account", serviceAccount}} {
		if r.v == "" {
			continue
		}
		ns, name, ok := strings.Cut(r.v, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return fmt.Errorf("%s %q: want NAMESPACE/NAME, e.g. shop/regcred", r.flag, r.v)
		}
	}
	return nil
}

// monitoring is the namespace the metrics NetworkPolicy admits.
func (ManifestOptions) monitoring() string { return "monitoring" }

// MinInterval is the shortest interval watch accepts.
const MinInterval = 10 * time.Second

// Manifests is the in-cluster install of watch: the watcher's own namespace (Pod Security
// restricted: its Deployment, ServiceAccount and the janitor), the run namespace (privileged, as
// the probe pods need hostNetwork and a host mount) with a Role for the watcher there, watch's
// cluster rights, the janitor CronJob, and two admission policies: only the probe pod's shape in
// the run namespace, and only the ImagePullPathBroken condition in the watcher's node status
// writes. Every object is watch's own: deleting it never removes verify's (deploy/rbac.yaml).
// deploy/watch/watch.yaml is this output for placeholder images.
func Manifests(o ManifestOptions) string {
	r := strings.NewReplacer(o.placeholders()...)
	out := r.Replace(manifestTemplate)
	if o.Secret != "" || o.PullServiceAccount != "" {
		out += "---\n" + r.Replace(identityRoles(o))
	}
	if o.JanitorNamespace != "" {
		out += "---\n" + r.Replace(janitorTemplate)
	}
	// the probe pods' admission, under a name of watch's own: deleting this install never
	// removes verify's policy (deploy/admission.yaml)
	out += "---\n" + cluster.AdmissionPolicyNamed(WatchProbePolicy, o.RunNamespace, o.agentRepos())
	return out + "---\n" + NodeStatusPolicy(o.Namespace, o.ServiceAccount)
}

// placeholders are the templates' placeholders and their values for o, as strings.NewReplacer
// takes them. The Helm chart (deploy/helm/pullpath-watch) is these templates rendered with Helm
// expressions for the same placeholders; its test keeps both lists to the same keys.
func (o ManifestOptions) placeholders() []string {
	var images []string
	for _, im := range o.Images {
		images = append(images, fmt.Sprintf("            - --image=%s", im))
	}
	if o.Secret != "" {
		images = append(images, "            - --secret="+o.Secret)
	}
	if o.PullServiceAccount != "" {
		images = append(images, "            - --service-account="+o.PullServiceAccount)
	}
	if o.Resident {
		images = append(images, "            - --resident")
	}
	if o.AgentImage != "" {
		images = append(images, "            - --agent-image="+o.AgentImage)
	}
	return []string{"{NS}", o.Namespace, "{RUNNS}", o.RunNamespace, "{SA}", o.ServiceAccount, "{WATCHER}", o.WatcherImage, "{INTERVAL}", o.Interval,
		"{PORT}", fmt.Sprint(o.MetricsPort), "{REPLICAS}", fmt.Sprint(o.Replicas), "{IMAGES}", strings.Join(images, "\n"),
		"{MONITORING}", o.monitoring(), "{JANITORNS}", o.JanitorNamespace,
		// what the chart's values may add or change: nothing here
		"{WATCHERPOD}", "", "{JANITORPOD}", "", "{WATCHERRES}", watcherResources, "{JANITORRES}", janitorResources}
}

// watcherResources and janitorResources are the containers' resources, indented for their place.
const (
	watcherResources = "\n            requests: {cpu: 20m, memory: 64Mi}\n            limits: {memory: 256Mi}"
	janitorResources = "\n                requests: {cpu: 10m, memory: 32Mi}\n                limits: {memory: 128Mi}"
)

// WatchProbePolicy names the probe pods' admission policy of the watch install.
const WatchProbePolicy = "pullpath-watch-probe-pod"

// identityRoles are the rights of --secret or --service-account: read the pull identity by name
// where it lives, and keep its copies in the run namespace (create; delete on cleanup).
func identityRoles(o ManifestOptions) string {
	ref, rule := o.Secret, secretRule
	if o.PullServiceAccount != "" {
		ref, rule = o.PullServiceAccount, serviceAccountRule
	}
	ns, name, _ := strings.Cut(ref, "/")
	return strings.NewReplacer("{SRCNS}", ns, "{RULE}", strings.ReplaceAll(rule, "{NAME}", name)).Replace(identityTemplate)
}

// secretRule reads the secret {NAME}; serviceAccountRule reads the account {NAME}, and the
// secrets of its namespace, as the account names its pull secrets, which may change.
const (
	secretRule         = "  - apiGroups: [\"\"]\n    resources: [secrets]\n    resourceNames: [{NAME}]\n    verbs: [get]\n"
	serviceAccountRule = "  - apiGroups: [\"\"]\n    resources: [serviceaccounts]\n    resourceNames: [{NAME}]\n    verbs: [get]\n" +
		"  - apiGroups: [\"\"]\n    resources: [secrets]\n    verbs: [get]\n"
)

const manifestTemplate = `# pullpath watch, in the cluster: every Ready node's pull path probed all the time.
# kubectl apply -f this file; kubectl delete -f it removes everything it made, and nothing of
# verify's install (deploy/rbac.yaml, deploy/admission.yaml). The node conditions stay:
# kubectl get nodes -o jsonpath='{.items[*].status.conditions[?(@.type=="ImagePullPathBroken")]}'
# The rights below are watch's and no more; docs/rbac.md says what each allows.
#
# {NS}: the watcher's own namespace (Pod Security restricted): its Deployment and identity.
# {RUNNS}: its run namespace (privileged): the probe pods, the lease and the status. Nobody who
# may create pods there can borrow the watcher's identity: it does not live there.
apiVersion: v1
kind: Namespace
metadata:
  name: {NS}
  labels:
    app.kubernetes.io/managed-by: pullpath-admin   # not "pullpath": cleanup must never select it
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/warn: restricted
---
apiVersion: v1
kind: Namespace
metadata:
  name: {RUNNS}
  labels:
    app.kubernetes.io/managed-by: pullpath-admin
    pod-security.kubernetes.io/enforce: privileged  # the probe pods: hostNetwork and a read-only host mount
    pod-security.kubernetes.io/warn: privileged
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {SA}
  namespace: {NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: pullpath-watch
rules:
  # the node informer (list, then watch: no polling), and whether the API server answers
  - apiGroups: [""]
    resources: [nodes]
    verbs: [get, list, watch]
  # the ImagePullPathBroken condition; the policy pullpath-watch-node-status refuses any other change
  - apiGroups: [""]
    resources: [nodes/status]
    verbs: [patch]
  # whether the run namespace exists (the probe pods' owner is made in it)
  - apiGroups: [""]
    resources: [namespaces]
    verbs: [get]
  # the kubelets' pull failures (field-selected: reason Failed on pods): that node is probed at once
  - apiGroups: [""]
    resources: [events]
    verbs: [list, watch]
  # access reviews: whether the probe may be streamed (pods/attach) or goes in ConfigMaps
  - apiGroups: [authorization.k8s.io]
    resources: [selfsubjectaccessreviews]
    verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: pullpath-watch
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pullpath-watch}
subjects:
  - {kind: ServiceAccount, name: {SA}, namespace: {NS}}
---
# node events live in namespace default: one per transition of a node's condition (a ClusterRole
# bound by a RoleBinding in default only)
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: pullpath-watch-events
rules:
  - apiGroups: [""]
    resources: [events]
    verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: pullpath-watch-events
  namespace: default
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pullpath-watch-events}
subjects:
  - {kind: ServiceAccount, name: {SA}, namespace: {NS}}
---
# the run namespace only: probe pods, their logs and events, the owner, loader and status
# ConfigMaps, the leader's lease. create on pods/attach lets its holder attach to the stdin/stdout
# of any container of any pod in this namespace only, which holds nothing but pullpath's probe
# pods: watch streams the probe binary into its own probe pods' stdin with it.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pullpath-watch-runner
  namespace: {RUNNS}
rules:
  - apiGroups: [""]
    resources: [pods]
    verbs: [list, watch, create, delete]
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [list, create, delete]
  # update only the status: never the loader, an owner or another run's object
  - apiGroups: [""]
    resources: [configmaps]
    resourceNames: [pullpath-watch-status]
    verbs: [update]
  - apiGroups: [""]
    resources: [pods/attach]
    verbs: [get, create]   # a WebSocket upgrade is a GET, which the API server also checks for create
  - apiGroups: [""]
    resources: [pods/log]
    verbs: [get]
  - apiGroups: [""]
    resources: [events]
    verbs: [list]
  # RBAC cannot limit create by name (the object does not exist yet); get and update it can
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [create]
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    resourceNames: [pullpath-watch]
    verbs: [get, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: pullpath-watch-runner
  namespace: {RUNNS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pullpath-watch-runner}
subjects:
  - {kind: ServiceAccount, name: {SA}, namespace: {NS}}
---
# pullpath watch status --run-namespace {RUNNS}: read the watcher's status. Bind it to the people
# who ask (not bound here).
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pullpath-watch-status
  namespace: {RUNNS}
rules:
  - apiGroups: [""]
    resources: [configmaps]
    resourceNames: [pullpath-watch-status]
    verbs: [get]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pullpath-watch
  namespace: {NS}
  labels: {app.kubernetes.io/name: pullpath-watch}
spec:
  replicas: {REPLICAS}
  selector:
    matchLabels: {app.kubernetes.io/name: pullpath-watch}
  template:
    metadata:
      labels: {app.kubernetes.io/name: pullpath-watch}
      annotations: {prometheus.io/scrape: "true", prometheus.io/port: "{PORT}"}
    spec:
      serviceAccountName: {SA}{WATCHERPOD}
      terminationGracePeriodSeconds: 150   # SIGTERM: the watcher deletes its probe pods first
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        seccompProfile: {type: RuntimeDefault}
      containers:
        - name: watch
          image: {WATCHER}
          command: [/pullpath, watch]
          args:
{IMAGES}
            - --interval={INTERVAL}
            - --run-namespace={RUNNS}
            - --metrics-address=:{PORT}
            - --leader-elect
          ports:
            - {name: metrics, containerPort: {PORT}}
          readinessProbe:
            httpGet: {path: /healthz, port: metrics}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
          resources:{WATCHERRES}
---
# /metrics is plain HTTP: only the {MONITORING} namespace may reach it (edit the selector to where
# your Prometheus runs). The probe pods use the host network, which no NetworkPolicy governs.
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: pullpath-watch-metrics
  namespace: {NS}
spec:
  podSelector:
    matchLabels: {app.kubernetes.io/name: pullpath-watch}
  policyTypes: [Ingress]
  ingress:
    - from:
        - namespaceSelector:
            matchLabels: {kubernetes.io/metadata.name: {MONITORING}}
      ports:
        - {protocol: TCP, port: {PORT}}
`

// identityTemplate: watch --secret or --service-account reads its pull identity by name where it
// lives, and copies it into the run namespace (a pod can only use a secret of its own namespace).
const identityTemplate = `# the pull identity the probes present (watch --secret, --service-account), read where it lives
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pullpath-watch-secret
  namespace: {SRCNS}
rules:
{RULE}---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: pullpath-watch-secret
  namespace: {SRCNS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pullpath-watch-secret}
subjects:
  - {kind: ServiceAccount, name: {SA}, namespace: {NS}}
---
# its copies in the run namespace, owned by the watcher's owner ConfigMap (garbage-collected with
# it): create, and delete on the way out; no list, no get of any other secret
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pullpath-watch-secret-copies
  namespace: {RUNNS}
rules:
  - apiGroups: [""]
    resources: [secrets]
    verbs: [create, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: pullpath-watch-secret-copies
  namespace: {RUNNS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pullpath-watch-secret-copies}
subjects:
  - {kind: ServiceAccount, name: {SA}, namespace: {NS}}
`

// janitorTemplate: pullpath cleanup --expired every 10 minutes in verify's run namespace, as a
// ServiceAccount of the watcher's namespace. Its Role there is verify's install's (deploy/rbac.yaml,
// pullpath-janitor), so neither install's delete removes the other's objects.
const janitorTemplate = `# pullpath cleanup --expired, every 10 minutes: what a verify run killed before its own cleanup
# left in {JANITORNS} (its pull-secret copies, owner, loader, probe pods), once its
# pullpath.dev/expires label is past. Its rights there: Role pullpath-janitor of deploy/rbac.yaml.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: pullpath-janitor
  namespace: {NS}
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: pullpath-janitor
  namespace: {NS}
spec:
  schedule: "*/10 * * * *"
  concurrencyPolicy: Forbid
  successfulJobsHistoryLimit: 1
  failedJobsHistoryLimit: 3
  jobTemplate:
    spec:
      backoffLimit: 2
      activeDeadlineSeconds: 300
      ttlSecondsAfterFinished: 3600
      template:
        spec:
          serviceAccountName: pullpath-janitor{JANITORPOD}
          restartPolicy: Never
          securityContext:
            runAsNonRoot: true
            runAsUser: 65532
            seccompProfile: {type: RuntimeDefault}
          containers:
            - name: cleanup
              image: {WATCHER}
              command: [/pullpath, cleanup, --expired, --run-namespace={JANITORNS}]
              securityContext:
                allowPrivilegeEscalation: false
                readOnlyRootFilesystem: true
                capabilities: {drop: [ALL]}
              resources:{JANITORRES}
`
