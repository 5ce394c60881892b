package watch

import (
	"fmt"
	"strings"

	"github.com/pullpath/pullpath/internal/cluster"
)

// ManifestOptions fill the in-cluster install of watch.
type ManifestOptions struct {
	Images         []string // what every node must pull
	WatcherImage   string   // an image holding the full pullpath binary at /pullpath
	Namespace      string   // the run namespace: the watcher, its probes, its lease and status
	Interval       string
	MetricsPort    int
	Replicas       int
	ServiceAccount string
}

// Manifests is the in-cluster install of watch: the run namespace (Pod Security privileged, as
// the probe pods need hostNetwork and a host mount), a ServiceAccount with exactly watch's rights,
// a Deployment of replicas that elect one leader, a CronJob that deletes what killed verify runs
// left (their pull-secret copies first of all), and the admission policy that admits only the
// probe pod's shape in the run namespace. deploy/watch/watch.yaml is this output.
func Manifests(o ManifestOptions) string {
	var images []string
	for _, im := range o.Images {
		images = append(images, fmt.Sprintf("            - --image=%s", im))
	}
	r := strings.NewReplacer("{NS}", o.Namespace, "{SA}", o.ServiceAccount, "{WATCHER}", o.WatcherImage, "{INTERVAL}", o.Interval,
		"{PORT}", fmt.Sprint(o.MetricsPort), "{REPLICAS}", fmt.Sprint(o.Replicas), "{IMAGES}", strings.Join(images, "\n"))
	// the probe pods' admission: only their shape may be created in the run namespace
	return r.Replace(manifestTemplate) + "---\n" + cluster.AdmissionPolicy(o.Namespace, nil)
}

const manifestTemplate = `# pullpath watch, in the cluster: every Ready node's pull path probed all the time.
# kubectl apply -f this file; kubectl delete -f it removes everything (the node conditions stay:
# kubectl get nodes -o jsonpath='{.items[*].status.conditions[?(@.type=="ImagePullPathBroken")]}').
# The rights below are watch's and no more; docs/rbac.md says what each allows.
apiVersion: v1
kind: Namespace
metadata:
  name: {NS}
  labels:
    app.kubernetes.io/managed-by: pullpath-admin   # not "pullpath": cleanup must never select it
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
  # the ImagePullPathBroken condition, and nothing else of the node's status is written
  - apiGroups: [""]
    resources: [nodes/status]
    verbs: [patch]
  # whether the run namespace exists (the probe pods' owner is made in it)
  - apiGroups: [""]
    resources: [namespaces]
    verbs: [get]
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
  namespace: {NS}
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
  namespace: {NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pullpath-watch-runner}
subjects:
  - {kind: ServiceAccount, name: {SA}, namespace: {NS}}
---
# pullpath watch status: read the watcher's status. Bind it to the people who ask (not bound here).
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pullpath-watch-status
  namespace: {NS}
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
      serviceAccountName: {SA}
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
            - --run-namespace={NS}
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
          resources:
            requests: {cpu: 20m, memory: 64Mi}
            limits: {memory: 256Mi}
---
# pullpath cleanup --expired, every 10 minutes: what a verify run killed before its own cleanup
# left in this namespace (its pull-secret copies, owner, loader, probe pods), once its
# pullpath.dev/expires label is past. A watcher's objects carry no expiry: never touched.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: pullpath-janitor
  namespace: {NS}
---
# list returns whole objects: the janitor reads the pull-secret copies it deletes
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pullpath-janitor
  namespace: {NS}
rules:
  - apiGroups: [""]
    resources: [pods, configmaps, secrets]
    verbs: [list, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: pullpath-janitor
  namespace: {NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pullpath-janitor}
subjects:
  - {kind: ServiceAccount, name: pullpath-janitor, namespace: {NS}}
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
          serviceAccountName: pullpath-janitor
          restartPolicy: Never
          securityContext:
            runAsNonRoot: true
            runAsUser: 65532
            seccompProfile: {type: RuntimeDefault}
          containers:
            - name: cleanup
              image: {WATCHER}
              command: [/pullpath, cleanup, --expired, --run-namespace={NS}]
              securityContext:
                allowPrivilegeEscalation: false
                readOnlyRootFilesystem: true
                capabilities: {drop: [ALL]}
              resources:
                requests: {cpu: 10m, memory: 32Mi}
                limits: {memory: 128Mi}
---
# /metrics is plain HTTP: only the monitoring namespace may reach it (edit the selector to where
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
            matchLabels: {kubernetes.io/metadata.name: monitoring}
      ports:
        - {protocol: TCP, port: {PORT}}
`
