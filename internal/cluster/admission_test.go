package cluster

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// admissionDocs parses a policy and its binding from YAML, strictly (an unknown field fails).
func admissionDocs(t *testing.T, b []byte) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	var pol *admissionv1.ValidatingAdmissionPolicy
	var bind *admissionv1.ValidatingAdmissionPolicyBinding
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var head struct{ Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		switch head.Kind {
		case "ValidatingAdmissionPolicy":
			pol = &admissionv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict(doc, pol); err != nil {
				t.Fatalf("policy: %v", err)
			}
		case "ValidatingAdmissionPolicyBinding":
			bind = &admissionv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict(doc, bind); err != nil {
				t.Fatalf("binding: %v", err)
			}
		}
	}
	if pol == nil || bind == nil {
		t.Fatalf("policy %v, binding %v", pol != nil, bind != nil)
	}
	return pol, bind
}

// deploy/admission.yaml is AdmissionPolicy("pullpath", nil) (-update rewrites it): a policy that
// denies (failurePolicy Fail) pods of any other shape, created or changed, in namespace pullpath
// only, with every sandbox repository verify borrows and the checks the probe pod's shape needs.
func TestAdmissionPolicyFile(t *testing.T) {
	const file = "../../deploy/admission.yaml"
	want := AdmissionPolicy("pullpath", nil)
	if *updateDocs {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("%s differs from AdmissionPolicy(\"pullpath\", nil): go test ./internal/cluster -run TestAdmissionPolicyFile -update", file)
	}
	pol, bind := admissionDocs(t, b)
	if pol.Name != AdmissionPolicyName || bind.Spec.PolicyName != pol.Name {
		t.Errorf("policy %q, binding's policy %q", pol.Name, bind.Spec.PolicyName)
	}
	if fp := pol.Spec.FailurePolicy; fp == nil || *fp != admissionv1.Fail {
		t.Errorf("failurePolicy %v, want Fail: a policy that cannot be evaluated must refuse", fp)
	}
	if !slices.Equal(bind.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
		t.Errorf("validationActions %v, want [Deny]", bind.Spec.ValidationActions)
	}
	if sel := bind.Spec.MatchResources.NamespaceSelector; sel == nil || len(sel.MatchLabels) != 1 || sel.MatchLabels["kubernetes.io/metadata.name"] != "pullpath" {
		t.Errorf("binding's namespaceSelector %+v, want the run namespace pullpath only", sel)
	}
	rules := pol.Spec.MatchConstraints.ResourceRules
	if len(rules) != 1 || !slices.Contains(rules[0].Resources, "pods") || !slices.Contains(rules[0].Resources, "pods/ephemeralcontainers") ||
		!slices.Contains(rules[0].Operations, admissionv1.Create) || !slices.Contains(rules[0].Operations, admissionv1.Update) {
		t.Errorf("matchConstraints %+v, want pods and pods/ephemeralcontainers on CREATE and UPDATE", rules)
	}
	var sandbox string
	for _, v := range pol.Spec.Variables {
		if v.Name == "sandbox" {
			sandbox = v.Expression
		}
	}
	for _, r := range SandboxRepos {
		if !strings.Contains(sandbox, "'"+r+"'") {
			t.Errorf("variables.sandbox lacks %s", r)
		}
	}
	all := ""
	for _, v := range pol.Spec.Validations {
		if v.Message == "" {
			t.Errorf("validation %q has no message", v.Expression)
		}
		all += v.Expression + "\n"
	}
	for _, want := range []string{"object.spec.hostNetwork", "!object.spec.automountServiceAccountToken", "'ALL' in c.securityContext.capabilities.drop",
		"!c.securityContext.allowPrivilegeEscalation", "c.securityContext.readOnlyRootFilesystem", "m.readOnly", "'/pp/parts/loader'", "'/pullpath'",
		"variables.probe.exists(r, c.image.startsWith(r + '@sha256:'))", "object.spec.hostPID", "c.securityContext.privileged"} {
		if !strings.Contains(all, want) {
			t.Errorf("no validation checks %s", want)
		}
	}
}
