package watch

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/pullpath/pullpath/internal/cluster"
)

// The manifests bind the probe pods' admission policy to their own run namespace, and watch's
// Role names the status ConfigMap and the lease it updates, and grants nothing on Secrets.
func TestManifestsAdmissionAndNamedRights(t *testing.T) {
	out := Manifests(ManifestOptions{Images: []string{"registry.example/app:1"}, WatcherImage: "registry.example/tools/pullpath:v1",
		Namespace: "ops", Interval: "15m", MetricsPort: 9464, Replicas: 2, ServiceAccount: "pullpath-watch"})
	var bound string
	var runner *rbacv1.Role
	for _, doc := range strings.Split(out, "\n---\n") {
		var head struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		switch {
		case head.Kind == "ValidatingAdmissionPolicyBinding":
			var b admissionv1.ValidatingAdmissionPolicyBinding
			if err := yaml.UnmarshalStrict([]byte(doc), &b); err != nil {
				t.Fatal(err)
			}
			if b.Spec.PolicyName == cluster.AdmissionPolicyName {
				bound = b.Spec.MatchResources.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
			}
		case head.Kind == "Role" && head.Metadata.Name == cluster.RoleWatchRunner:
			runner = &rbacv1.Role{}
			if err := yaml.UnmarshalStrict([]byte(doc), runner); err != nil {
				t.Fatal(err)
			}
		}
	}
	if bound != "ops" {
		t.Errorf("the admission policy is bound to namespace %q, want the run namespace ops", bound)
	}
	if runner == nil {
		t.Fatal("no watch runner Role")
	}
	named := map[string]string{}
	for _, r := range runner.Rules {
		for _, res := range r.Resources {
			if res == "secrets" {
				t.Errorf("watch's Role grants %v on secrets", r.Verbs)
			}
			for _, v := range r.Verbs {
				if v == "update" {
					named[res] = strings.Join(r.ResourceNames, ",")
				}
			}
		}
	}
	if named["configmaps"] != StatusConfigMap || named["leases"] != cluster.WatchLease {
		t.Errorf("update is limited to %v; want configmaps %s and leases %s", named, StatusConfigMap, cluster.WatchLease)
	}
}
