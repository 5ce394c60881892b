package watch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/pullpath/pullpath/internal/cluster"
)

// object is one document of a manifest: kind, namespace, name, and the document.
type object struct{ kind, ns, name, doc string }

func objects(t *testing.T, manifests string) []object {
	t.Helper()
	var out []object
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var head struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		if head.Kind != "" {
			out = append(out, object{head.Kind, head.Metadata.Namespace, head.Metadata.Name, doc})
		}
	}
	return out
}

func testManifestOptions() ManifestOptions {
	o := DefaultManifestOptions()
	o.Images, o.WatcherImage = []string{"registry.example/app:1"}, "registry.example/tools/pullpath:v1"
	return o
}

// The manifests bind the probe pods' admission policy to their own run namespace, and watch's
// Role names the status ConfigMap and the lease it updates, and grants nothing on Secrets. The
// watcher, its identity and the janitor live in the watcher's namespace, not the run namespace.
func TestManifestsAdmissionAndNamedRights(t *testing.T) {
	o := testManifestOptions()
	o.Namespace, o.RunNamespace = "ops", "ops-probes"
	var bound string
	var runner *rbacv1.Role
	for _, ob := range objects(t, Manifests(o)) {
		switch {
		case ob.kind == "ValidatingAdmissionPolicyBinding" && ob.name != NodeStatusPolicyName:
			var b admissionv1.ValidatingAdmissionPolicyBinding
			if err := yaml.UnmarshalStrict([]byte(ob.doc), &b); err != nil {
				t.Fatal(err)
			}
			if b.Spec.PolicyName == WatchProbePolicy {
				bound = b.Spec.MatchResources.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
			}
		case ob.kind == "Role" && ob.name == cluster.RoleWatchRunner:
			runner = &rbacv1.Role{}
			if err := yaml.UnmarshalStrict([]byte(ob.doc), runner); err != nil {
				t.Fatal(err)
			}
		case ob.kind == "Deployment" || ob.kind == "ServiceAccount" || ob.kind == "CronJob":
			if ob.ns != "ops" {
				t.Errorf("%s %s is in namespace %s; the watcher's identity and workloads belong in its own namespace ops, not where pods run privileged", ob.kind, ob.name, ob.ns)
			}
		}
	}
	if bound != "ops-probes" {
		t.Errorf("the admission policy is bound to namespace %q, want the run namespace ops-probes", bound)
	}
	if runner == nil || runner.Namespace != "ops-probes" {
		t.Fatalf("no watch runner Role in the run namespace: %+v", runner)
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

// watch manifests refuses what the API server or watch would refuse, and namespaces pullpath does
// not own, before printing anything.
func TestManifestsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*ManifestOptions)
		want string
	}{
		{"interval watch refuses", func(o *ManifestOptions) { o.Interval = "5s" }, "--interval 5s: want 10s or more"},
		{"not a duration", func(o *ManifestOptions) { o.Interval = "often" }, "--interval \"often\""},
		{"service account with a space", func(o *ManifestOptions) { o.ServiceAccount = "pull path" }, "--watcher-service-account \"pull path\""},
		{"run namespace default", func(o *ManifestOptions) { o.RunNamespace = "default" }, "--run-namespace default: a namespace pullpath does not own"},
		{"run namespace kube-system", func(o *ManifestOptions) { o.RunNamespace = "kube-system" }, "--run-namespace kube-system"},
		{"watcher namespace monitoring", func(o *ManifestOptions) { o.Namespace = "monitoring" }, "--namespace monitoring"},
		{"one namespace for both", func(o *ManifestOptions) { o.Namespace = o.RunNamespace }, "both pullpath-watch"},
		{"janitor in its own namespace", func(o *ManifestOptions) { o.JanitorNamespace = o.Namespace }, "--janitor-namespace pullpath-watcher"},
		{"bad namespace", func(o *ManifestOptions) { o.RunNamespace = "Pull_Path" }, "not a namespace name"},
		{"secret without namespace", func(o *ManifestOptions) { o.Secret = "regcred" }, "--secret \"regcred\": want NAMESPACE/NAME"},
		{"both identities", func(o *ManifestOptions) { o.Secret, o.PullServiceAccount = "shop/a", "shop/b" }, "not both"},
		{"replicas", func(o *ManifestOptions) { o.Replicas = 0 }, "--replicas 0"},
		{"port", func(o *ManifestOptions) { o.MetricsPort = 70000 }, "--metrics-port 70000"},
		{"agent image without resident", func(o *ManifestOptions) { o.AgentImage = pinnedAgent }, "add --resident"},
		{"agent image by tag", func(o *ManifestOptions) { o.Resident, o.AgentImage = true, "registry.corp.example/tools/pullpath:v1" }, "pin it by digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testManifestOptions()
			tc.set(&o)
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate: %v, want an error with %q", err, tc.want)
			}
		})
	}
	if err := testManifestOptions().Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

const pinnedAgent = "registry.corp.example/tools/pullpath@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// --resident runs the watcher with it, and the probe pods' policy admits the agent image by its
// digest, and no other image of its repository.
func TestManifestsResident(t *testing.T) {
	o := testManifestOptions()
	o.Resident, o.AgentImage = true, pinnedAgent
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	out := Manifests(o)
	for _, want := range []string{"            - --resident\n", "            - --agent-image=" + pinnedAgent + "\n",
		`expression: "['registry.corp.example/tools/pullpath']"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the manifests lack %q", want)
		}
	}
	if plain := Manifests(testManifestOptions()); strings.Contains(plain, "--resident") || strings.Contains(plain, "tools/pullpath'") {
		t.Errorf("manifests without --resident name the agents")
	}
}

// watch's install and verify's (deploy/rbac.yaml, deploy/admission.yaml) share no object:
// kubectl delete -f of one never removes the other's namespace, roles or policy.
func TestManifestsShareNothingWithVerifysInstall(t *testing.T) {
	o := testManifestOptions()
	o.Secret = "shop/regcred"
	mine := map[string]bool{}
	for _, ob := range objects(t, Manifests(o)) {
		mine[ob.kind+" "+ob.ns+"/"+ob.name] = true
	}
	for _, f := range []string{"rbac.yaml", "admission.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, ob := range objects(t, string(b)) {
			if key := ob.kind + " " + ob.ns + "/" + ob.name; mine[key] {
				t.Errorf("deploy/%s and watch manifests both declare %s: deleting one install removes the other's", f, key)
			}
		}
	}
}

// The roles watch manifests renders for --secret and --service-account grant exactly the rights
// internal/cluster/access.go declares for those lines, limited by name where RBAC allows.
func TestManifestIdentityRolesGrantTheirRights(t *testing.T) {
	for _, tc := range []struct {
		line, secret, sa string
		named            map[string]string // resource -> name the get is limited to
	}{
		{"watch --secret", "shop/regcred", "", map[string]string{"secrets": "regcred"}},
		{"watch --service-account", "", "shop/puller", map[string]string{"serviceaccounts": "puller", "secrets": ""}},
	} {
		t.Run(tc.line, func(t *testing.T) {
			o := testManifestOptions()
			o.Secret, o.PullServiceAccount = tc.secret, tc.sa
			granted := map[string]bool{}
			for _, ob := range objects(t, Manifests(o)) {
				if ob.kind != "Role" || !slices.Contains(cluster.GeneratedRoles, ob.name) {
					continue
				}
				var r rbacv1.Role
				if err := yaml.UnmarshalStrict([]byte(ob.doc), &r); err != nil {
					t.Fatal(err)
				}
				want := map[string]string{cluster.RoleWatchSecret: "shop", cluster.RoleWatchSecretCopies: o.RunNamespace}[r.Name]
				if r.Namespace != want {
					t.Errorf("role %s in namespace %s, want %s", r.Name, r.Namespace, want)
				}
				for _, rule := range r.Rules {
					for _, res := range rule.Resources {
						for _, v := range rule.Verbs {
							granted[r.Name+" "+v+" "+res] = true
							if r.Name == cluster.RoleWatchSecret && strings.Join(rule.ResourceNames, ",") != tc.named[res] {
								t.Errorf("%s %s limited to %v, want %q", v, res, rule.ResourceNames, tc.named[res])
							}
						}
					}
				}
			}
			used := map[string]bool{}
			for _, r := range cluster.Lines(tc.line) {
				used[r.Role+" "+r.Verb+" "+r.Resource] = true
				if !granted[r.Role+" "+r.Verb+" "+r.Resource] {
					t.Errorf("%s needs %s %s (role %s), which the manifests do not grant", tc.line, r.Verb, r.Resource, r.Role)
				}
			}
			for g := range granted {
				if !used[g] {
					t.Errorf("the manifests grant %s, which %s does not use", g, tc.line)
				}
			}
		})
	}
}
