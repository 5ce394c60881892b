package watch

import "strings"

// NodeStatusPolicyName is the admission policy that limits the watcher's node status writes.
const NodeStatusPolicyName = "pullpath-watch-node-status"

// nodeStatusFields are NodeStatus's fields besides conditions (k8s.io/api/core/v1, 1.37): the
// watcher's write must leave each as it was. A field added later is not covered until listed.
var nodeStatusFields = []string{"capacity", "allocatable", "phase", "addresses", "daemonEndpoints", "nodeInfo", "images",
	"volumesInUse", "volumesAttached", "config", "runtimeHandlers", "features", "declaredFeatures"}

// NodeStatusPolicy renders a ValidatingAdmissionPolicy and its binding: a node status write by the
// watcher's ServiceAccount (ns/sa) may change the ImagePullPathBroken condition and nothing else.
// RBAC grants patch on every node's status; this is what keeps that right to one condition.
func NodeStatusPolicy(ns, sa string) string {
	var same []string
	for _, f := range nodeStatusFields {
		same = append(same, "        (has(object.status."+f+") == has(oldObject.status."+f+")) &&\n"+
			"        (!has(object.status."+f+") || object.status."+f+" == oldObject.status."+f+")")
	}
	r := strings.NewReplacer("{NAME}", NodeStatusPolicyName, "{USER}", "system:serviceaccount:"+ns+":"+sa, "{SAME}", strings.Join(same, " &&\n"),
		"{TYPE}", ConditionType)
	return r.Replace(nodeStatusTemplate)
}

const nodeStatusTemplate = `# The watcher's identity patches nodes/status on every node (RBAC cannot name a condition): this
# policy lets it change the {TYPE} condition and nothing else of a node's status.
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
        operations: [UPDATE]
        resources: [nodes/status]
  matchConditions:
    - name: the-watcher
      expression: "request.userInfo.username == '{USER}'"
  variables:
    - name: others
      expression: "has(object.status.conditions) ? object.status.conditions.filter(c, c.type != '{TYPE}') : []"
    - name: oldOthers
      expression: "has(oldObject.status.conditions) ? oldObject.status.conditions.filter(c, c.type != '{TYPE}') : []"
  validations:
    - expression: "variables.others == variables.oldOthers"
      message: "pullpath watch may change the {TYPE} condition of a node, no other condition"
    - expression: >-
{SAME}
      message: "pullpath watch may change the {TYPE} condition of a node, nothing else of its status"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {NAME}
spec:
  policyName: {NAME}
  validationActions: [Deny]
`
