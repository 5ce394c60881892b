package cluster

import (
	"strings"

	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// AdmissionPolicyName is the ValidatingAdmissionPolicy that admits only the probe pod's shape.
const AdmissionPolicyName = "pullpath-probe-pod"

// AdmissionPolicy renders a ValidatingAdmissionPolicy and its binding to namespace ns: a pod a
// user (not a workload controller) creates or changes there must have the probe pod's shape:
// hostNetwork, one container, every capability dropped, no privilege or escalation, a read-only
// root filesystem, host paths ("/" or the narrow directories) mounted read-only, no service
// account token, the loader or /pullpath as the command, and an image of SandboxRepos (the
// delivered probe) or of probeRepos pinned by digest (--probe-image). deploy/admission.yaml is
// AdmissionPolicy("pullpath", nil).
func AdmissionPolicy(ns string, probeRepos []string) string {
	return AdmissionPolicyNamed(AdmissionPolicyName, ns, probeRepos)
}

// AdmissionPolicyNamed is AdmissionPolicy under another name: each install (verify's, watch's)
// owns its policy, so that deleting one never removes the other's.
func AdmissionPolicyNamed(name, ns string, probeRepos []string) string {
	quote := func(ss []string) string {
		q := make([]string, len(ss))
		for i, s := range ss {
			q[i] = "'" + s + "'"
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	paths := append([]string{"/"}, runtimeconfig.NarrowRoot...)
	r := strings.NewReplacer("{NAME}", name, "{NS}", ns, "{SANDBOX}", quote(SandboxRepos), "{PROBE}", quote(probeRepos),
		"{PATHS}", quote(paths), "{LOADER}", "/pp/parts/loader")
	return r.Replace(admissionTemplate)
}

// admissionTemplate: CEL over the pod. Controllers' pods (a Deployment's, a Job's) are left to
// whoever may create workloads there; no pullpath role can.
const admissionTemplate = `# Only pullpath's probe pod in the run namespace: Pod Security there is "privileged" (the probe
# needs hostNetwork and a host mount), so without this any pod creator there is root on any node.
# A pod made by a workload controller (the watcher's Deployment, the janitor's CronJob) is not
# checked: creating workloads there needs rights no pullpath role grants. Add your --sandbox-image
# repositories to variables.sandbox, and your --probe-image repositories to variables.probe.
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {NAME}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [pods, pods/ephemeralcontainers]
  matchConditions:
    - name: not-a-workload-controller
      expression: >-
        !(request.userInfo.username.startsWith('system:serviceaccount:kube-system:') ||
        request.userInfo.username == 'system:kube-controller-manager')
  variables:
    - name: sandbox
      expression: "{SANDBOX}"
    - name: probe
      expression: "{PROBE}"
    - name: paths
      expression: "{PATHS}"
    - name: hostVolumes
      expression: "has(object.spec.volumes) ? object.spec.volumes.filter(v, has(v.hostPath)).map(v, v.name) : []"
  validations:
    - expression: "has(object.spec.hostNetwork) && object.spec.hostNetwork && !(has(object.spec.hostPID) && object.spec.hostPID) && !(has(object.spec.hostIPC) && object.spec.hostIPC)"
      message: "the probe pod uses the host's network and no other host namespace"
    - expression: "has(object.spec.automountServiceAccountToken) && !object.spec.automountServiceAccountToken"
      message: "the probe pod mounts no service-account token (automountServiceAccountToken: false)"
    - expression: >-
        size(object.spec.containers) == 1 &&
        (!has(object.spec.initContainers) || size(object.spec.initContainers) == 0) &&
        (!has(object.spec.ephemeralContainers) || size(object.spec.ephemeralContainers) == 0)
      message: "the probe pod has one container, no init or ephemeral container"
    - expression: >-
        has(object.spec.securityContext) && has(object.spec.securityContext.seccompProfile) &&
        object.spec.securityContext.seccompProfile.type == 'RuntimeDefault' &&
        !has(object.spec.securityContext.seLinuxOptions)
      message: "the probe pod runs with seccomp RuntimeDefault and no SELinux options"
    - expression: >-
        object.spec.containers.all(c, has(c.securityContext) &&
        !(has(c.securityContext.privileged) && c.securityContext.privileged) &&
        has(c.securityContext.allowPrivilegeEscalation) && !c.securityContext.allowPrivilegeEscalation &&
        has(c.securityContext.readOnlyRootFilesystem) && c.securityContext.readOnlyRootFilesystem &&
        has(c.securityContext.capabilities) && has(c.securityContext.capabilities.drop) &&
        'ALL' in c.securityContext.capabilities.drop &&
        (!has(c.securityContext.capabilities.add) || size(c.securityContext.capabilities.add) == 0) &&
        !has(c.securityContext.seLinuxOptions) && !has(c.securityContext.seccompProfile) &&
        !has(c.securityContext.appArmorProfile) && !has(c.securityContext.procMount))
      message: "the probe container drops every capability, is not privileged, cannot escalate and has a read-only root filesystem"
    - expression: >-
        !has(object.spec.volumes) || object.spec.volumes.all(v,
        (has(v.hostPath) && v.hostPath.path in variables.paths) ||
        has(v.emptyDir) ||
        (has(v.projected) && v.projected.sources.all(s, has(s.configMap))))
      message: "the probe pod's volumes are the node's / or its narrow directories, the loader's ConfigMaps and an emptyDir"
    - expression: >-
        object.spec.containers.all(c, !has(c.volumeMounts) || c.volumeMounts.all(m,
        !(m.name in variables.hostVolumes) ||
        (has(m.readOnly) && m.readOnly && (!has(m.mountPropagation) || m.mountPropagation == 'None'))))
      message: "host paths are mounted read-only"
    - expression: >-
        object.spec.containers.all(c, has(c.command) && size(c.command) > 0 &&
        (c.command[0] == '{LOADER}' || c.command[0] == '/pullpath') &&
        !has(c.args) && !has(c.envFrom) && !has(c.ports) &&
        (!has(c.env) || c.env.all(e, e.name.startsWith('PULLPATH_'))))
      message: "the probe container runs the loader (/pp/parts/loader) or /pullpath, with PULLPATH_ variables only"
    - expression: >-
        object.spec.containers.all(c,
        variables.sandbox.exists(r, c.image.startsWith(r + ':') || c.image.startsWith(r + '@sha256:')) ||
        variables.probe.exists(r, c.image.startsWith(r + '@sha256:')))
      message: "the probe runs on a node's sandbox image, or on a listed probe image pinned by digest"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {NAME}-{NS}
spec:
  policyName: {NAME}
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: {NS}}
`
