package cluster

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/report"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

var updateDocs = flag.Bool("update", false, "rewrite the generated table of docs/rbac.md")

// deployRole is one Role or ClusterRole of deploy/, with the comment lines above it.
type deployRole struct {
	kind, name, namespace, file, comment string
	rules                                []rbacv1.PolicyRule
}

// deployRoles renders every Role and ClusterRole of every YAML file under deploy/.
func deployRoles(t *testing.T) []deployRole {
	t.Helper()
	var out []deployRole
	err := filepath.WalkDir("../../deploy", func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "helm" {
			// Go templates, not YAML: internal/watch's TestHelmChartRendersManifests holds the
			// chart's objects to watch manifests, whose output is deploy/watch/watch.yaml
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, doc := range bytes.Split(b, []byte("\n---\n")) {
			var r struct {
				Kind     string              `json:"kind"`
				Metadata metav1.ObjectMeta   `json:"metadata"`
				Rules    []rbacv1.PolicyRule `json:"rules"`
			}
			if err := yaml.Unmarshal(doc, &r); err != nil {
				return fmt.Errorf("%s: %v", p, err)
			}
			if r.Kind == "Role" || r.Kind == "ClusterRole" {
				out = append(out, deployRole{kind: r.Kind, name: r.Metadata.Name, namespace: r.Metadata.Namespace, file: p, comment: string(doc), rules: r.Rules})
			}
		}
		return nil
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("deploy/: %d roles, %v", len(out), err)
	}
	return out
}

// grant is one verb on one resource of one API group, as an RBAC rule grants it, limited to the
// object name when the rule names one.
type grant struct{ group, resource, verb, name string }

func (g grant) String() string {
	s := g.verb + " " + g.resource
	if g.name != "" {
		s += " named " + g.name
	}
	if g.group != "" {
		s += " (" + g.group + ")"
	}
	return s
}

func grantOf(r Right) grant { return grant{r.Group, r.Resource, r.Verb, r.Name} }

// grants expands a role's rules; a rule pullpath's table cannot express (a wildcard, more than one
// resource name, non-resource URLs) is an error.
func (d deployRole) grants(t *testing.T) map[grant]bool {
	out := map[grant]bool{}
	for _, r := range d.rules {
		if len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 {
			t.Errorf("%s %s: a rule with resourceNames beyond one, or nonResourceURLs: %+v", d.kind, d.name, r)
		}
		name := ""
		if len(r.ResourceNames) == 1 {
			name = r.ResourceNames[0]
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if g == "*" || res == "*" || v == "*" || strings.HasSuffix(res, "/*") {
						t.Errorf("%s %s grants a wildcard: %s %s %s", d.kind, d.name, v, res, g)
					}
					out[grant{g, res, v, name}] = true
				}
			}
		}
	}
	return out
}

// Every rule of every role in deploy/ is a right some command uses, and every right a command uses
// is granted by the role the table names, bound as docs/rbac.md binds it: the roles are what they
// say. The table is logged, command by command.
func TestDeployRolesGrantExactlyWhatCommandsUse(t *testing.T) {
	granted := map[string]map[grant]bool{}
	for _, d := range deployRoles(t) {
		if granted[d.name] != nil {
			t.Errorf("role %s is defined twice in deploy/", d.name)
		}
		granted[d.name] = d.grants(t)
		scopes, ok := Bindings[d.name]
		switch {
		case !ok:
			t.Errorf("%s: %s %s is bound by no command (Bindings)", d.file, d.kind, d.name)
		case slices.Equal(scopes, []Scope{ScopeRun}) && (d.kind != "Role" || (d.namespace != "pullpath" && d.namespace != WatchRunNamespace)):
			t.Errorf("%s: %s is bound only in the run namespace: want a Role in namespace pullpath (verify's default --run-namespace) or %s (watch's); got %s in %q", d.file, d.name, WatchRunNamespace, d.kind, d.namespace)
		case !slices.Equal(scopes, []Scope{ScopeRun}) && d.kind != "ClusterRole":
			t.Errorf("%s: %s is bound in %v: want a ClusterRole, got %s", d.file, d.name, scopes, d.kind)
		}
	}
	used := map[string]map[grant][]string{}
	for _, a := range Commands {
		for _, r := range a.Rights {
			if r.Use == NotGiven {
				for role, gs := range granted {
					if gs[grantOf(r)] && r.Scope == ScopeCluster {
						t.Errorf("%s: %s is %q (%s), yet role %s grants it", a.Command, grantOf(r), NotGiven, r.Why, role)
					}
				}
				if r.Role != "" {
					t.Errorf("%s: %s is %q but names role %s", a.Command, grantOf(r), NotGiven, r.Role)
				}
				continue
			}
			if used[r.Role] == nil {
				used[r.Role] = map[grant][]string{}
			}
			used[r.Role][grantOf(r)] = append(used[r.Role][grantOf(r)], a.Command)
			if b := Bindings[r.Role]; !slices.Contains(b, r.Scope) && !slices.Contains(b, ScopeCluster) {
				t.Errorf("%s: %s in scope %s from role %s, which is bound only in %v", a.Command, grantOf(r), r.Scope, r.Role, b)
			}
		}
	}
	for _, role := range sortedKeys(keysOf(granted)) {
		for g := range granted[role] {
			if used[role][g] == nil {
				t.Errorf("deploy/: role %s grants %s, which no command uses (internal/cluster/access.go)", role, g)
			}
		}
	}
	for _, role := range sortedKeys(keysOf(used)) {
		if slices.Contains(GeneratedRoles, role) {
			continue // watch manifests renders it for a flag's object: internal/watch's tests hold it
		}
		if granted[role] == nil {
			t.Errorf("no role %s in deploy/, which %d rights name", role, len(used[role]))
			continue
		}
		for g, cmds := range used[role] {
			if !granted[role][g] {
				t.Errorf("%s needs %s (role %s), which deploy/ does not grant", strings.Join(cmds, ", "), g, role)
			}
		}
	}
	var b strings.Builder
	for _, a := range Commands {
		fmt.Fprintf(&b, "\n%s", a.Command)
		for _, r := range a.Rights {
			fmt.Fprintf(&b, "\n  %-8s %-30s %-9s %-28s %s", r.Verb, r.Resource, r.Scope, report.OrDash(r.Role), r.Use)
		}
	}
	t.Logf("rights by command:%s", b.String())
}

// No role of deploy/ grants exec-like rights (nodes/proxy, pods/exec, pods/attach,
// pods/portforward) or RBAC escalation, except the two the table documents: get on nodes/proxy in
// its own, clearly named role that carries the warning, and create on pods/attach in the run
// namespace only. The default `pod` line never names the unsafe role.
func TestNoDefaultRoleGrantsExecLikeRights(t *testing.T) {
	dangerous := []string{"nodes/proxy", "pods/exec", "pods/attach", "pods/portforward", "nodes", "pods/proxy", "services/proxy"}
	allowed := map[string][]grant{RoleNodesProxy: {{"", "nodes/proxy", "get", ""}}, RoleRunner: {{"", "pods/attach", "create", ""}, {"", "pods/attach", "get", ""}},
		RoleWatch: {{"", "nodes", "watch", ""}}, RoleWatchRunner: {{"", "pods/attach", "create", ""}, {"", "pods/attach", "get", ""}}}
	for _, d := range deployRoles(t) {
		for g := range d.grants(t) {
			if slices.Contains([]string{"escalate", "bind", "impersonate"}, g.verb) {
				t.Errorf("%s %s grants %s", d.kind, d.name, g)
			}
			if !slices.Contains(dangerous, g.resource) || (g.resource == "nodes" && (g.verb == "get" || g.verb == "list")) {
				continue
			}
			if !slices.Contains(allowed[d.name], g) {
				t.Errorf("%s %s grants %s: an exec-like or node right no default role may hold", d.kind, d.name, g)
			}
		}
		if d.name == RoleNodesProxy && (!strings.Contains(d.comment, "WARNING") || !strings.Contains(d.comment, "run commands in every container")) {
			t.Errorf("%s carries no warning in deploy/rbac.yaml:\n%s", d.name, d.comment)
		}
		if d.name == RoleRunner && !strings.Contains(d.comment, "attach to the stdin/stdout of any container of any pod in this\n  # namespace only") {
			t.Errorf("%s: pods/attach has no comment saying what it allows:\n%s", d.name, d.comment)
		}
	}
	for _, line := range []string{"pod", "pod --all", "pod --all -A", "verify", "cleanup"} {
		for _, r := range Lines(line) {
			if r.Role == RoleNodesProxy || r.Resource == "nodes/proxy" {
				t.Errorf("%s uses %s (%s): only --read-kubelet-config may", line, grantOf(r), r.Role)
			}
		}
	}
	for _, r := range Lines("pod --read-kubelet-config") {
		if r.Use != OptIn {
			t.Errorf("pod --read-kubelet-config: %s is %s, want %s", grantOf(r), r.Use, OptIn)
		}
	}
}

// rightsTable is the table of every right by command line, as docs/rbac.md shows it.
func rightsTable() string {
	scope := map[Scope]string{ScopeCluster: "cluster-wide", ScopeRun: "run namespace", ScopePod: "the pod's (or `-n`'s) namespace", ScopeFromPod: "`--from-pod`'s namespace"}
	var b strings.Builder
	b.WriteString("| command | verb | resource | where | role | without it | what for |\n|---|---|---|---|---|---|---|\n")
	for _, a := range Commands {
		for i, r := range a.Rights {
			cmd := ""
			if i == 0 {
				cmd = "`" + a.Command + "`"
			}
			res := "`" + r.Resource + "`"
			if r.Group != "" {
				res = "`" + r.Group + "/" + r.Resource + "`"
			}
			if r.Name != "" {
				res += " named `" + r.Name + "`"
			}
			role := "none"
			if r.Role != "" {
				role = "`" + r.Role + "`"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", cmd, r.Verb, res, scope[r.Scope], role, r.Use, r.Why)
		}
	}
	return b.String()
}

// docs/rbac.md shows the table of rights by command as the code declares it (go test -run
// TestRBACDoc -update rewrites it), and reviews every right of every role of deploy/ in the role's
// own section.
func TestRBACDoc(t *testing.T) {
	const file = "../../docs/rbac.md"
	const begin, end = "<!-- rights by command: go test ./internal/cluster -run TestRBACDoc -update -->\n", "<!-- end of rights by command -->\n"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", file, begin, end)
	}
	want := doc[:i+len(begin)] + rightsTable() + doc[j:]
	if *updateDocs && want != doc {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = want
	}
	if doc != want {
		t.Errorf("%s: the rights by command differ from internal/cluster/access.go; go test ./internal/cluster -run TestRBACDoc -update rewrites them", file)
	}
	for _, d := range deployRoles(t) {
		head := "### `" + d.name + "`"
		k := strings.Index(doc, head)
		if k < 0 {
			t.Errorf("%s has no section %q", file, head)
			continue
		}
		section := doc[k+len(head):]
		if n := strings.Index(section, "\n### "); n >= 0 {
			section = section[:n]
		}
		for g := range d.grants(t) {
			row := "| `" + g.verb + " " + g.resource + "`"
			if !strings.Contains(section, row) {
				t.Errorf("%s, section %s: no row %q reviewing that right", file, d.name, row)
			}
		}
	}
}
