package watch

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/pullpath/pullpath/internal/cluster"
)

var updateChart = flag.Bool("update", false, "rewrite the Helm chart's generated files (deploy/helm/pullpath-watch)")

// chartDir is the Helm chart of the watch install, from this package's directory.
var chartDir = filepath.Join("..", "..", "deploy", "helm", "pullpath-watch")

// helmPlaceholders are placeholders' values as Helm expressions: the chart's main template is
// Manifests' templates rendered with them, so the chart cannot drift from watch manifests.
func helmPlaceholders() []string {
	// the pod's additions, at the pod spec's indentation
	pod := func(indent int) string {
		sp := strings.Repeat(" ", indent)
		var b strings.Builder
		for _, v := range []string{"imagePullSecrets", "nodeSelector", "tolerations", "affinity"} {
			fmt.Fprintf(&b, "\n{{- with .Values.%s }}\n%s%s: {{- toYaml . | nindent %d }}\n{{- end }}", v, sp, v, indent+2)
		}
		return b.String()
	}
	return []string{"{NS}", "{{ .Values.namespace }}", "{RUNNS}", "{{ .Values.runNamespace }}", "{SA}", "{{ .Values.watcherServiceAccount }}",
		"{WATCHER}", "{{ .Values.watcherImage }}", "{INTERVAL}", "{{ .Values.interval }}", "{PORT}", "{{ .Values.metricsPort }}",
		"{REPLICAS}", "{{ .Values.replicas }}",
		"{IMAGES}", "{{- range .Values.images }}\n            - --image={{ . }}\n{{- end }}" +
			"\n{{- with .Values.secret }}\n            - --secret={{ . }}\n{{- end }}" +
			"\n{{- with .Values.serviceAccount }}\n            - --service-account={{ . }}\n{{- end }}" +
			"\n{{- if .Values.resident }}\n            - --resident\n{{- end }}" +
			"\n{{- with .Values.agentImage }}\n            - --agent-image={{ . }}\n{{- end }}",
		"{MONITORING}", ManifestOptions{}.monitoring(), "{JANITORNS}", "{{ .Values.janitorNamespace }}",
		"{WATCHERPOD}", pod(6), "{JANITORPOD}", pod(10),
		"{WATCHERRES}", " {{- toYaml .Values.resources | nindent 12 }}", "{JANITORRES}", " {{- toYaml .Values.janitorResources | nindent 16 }}"}
}

// helmAgentRepo stands for the agent image's repository in the policy, replaced by a Helm expression.
const helmAgentRepo = "AGENTREPO"

// helmTemplate is the chart's templates/watch.yaml: Manifests, each optional part under the
// value that turns it on.
func helmTemplate() string {
	r := strings.NewReplacer(helmPlaceholders()...)
	// the pull identity's rules: the secret's, or the ServiceAccount's ($ref is NAMESPACE/NAME)
	name := "{{ index $ref 1 }}"
	rule := "{{- if .Values.secret }}\n" + strings.ReplaceAll(secretRule, "{NAME}", name) +
		"{{- else }}\n" + strings.ReplaceAll(serviceAccountRule, "{NAME}", name) + "{{- end }}\n"
	identity := strings.NewReplacer("{SRCNS}", "{{ index $ref 0 }}", "{RULE}", rule).Replace(identityTemplate)
	return "{{- /* Generated from internal/watch/manifests.go: go test ./internal/watch -run TestHelmChart -update. Do not edit. */ -}}\n" +
		"{{- include \"pullpath-watch.validate\" . }}\n" +
		r.Replace(manifestTemplate) +
		"{{- if or .Values.secret .Values.serviceAccount }}\n" +
		"{{- $ref := splitList \"/\" (.Values.secret | default .Values.serviceAccount) }}\n---\n" + r.Replace(identity) + "{{- end }}\n" +
		"{{- if .Values.janitorNamespace }}\n---\n" + r.Replace(janitorTemplate) + "{{- end }}\n" +
		"---\n" + strings.Replace(cluster.AdmissionPolicyNamed(WatchProbePolicy, "{{ .Values.runNamespace }}", []string{helmAgentRepo}),
		"['"+helmAgentRepo+"']", `{{ with .Values.agentImage }}['{{ index (splitList "@" .) 0 }}']{{ else }}[]{{ end }}`, 1) +
		"---\n" + NodeStatusPolicy("{{ .Values.namespace }}", "{{ .Values.watcherServiceAccount }}")
}

// The chart's generated files are fresh: templates/watch.yaml is Manifests' templates with Helm
// expressions (every placeholder has one, none is left), files/alerts.yaml is deploy/watch/alerts.yaml.
func TestHelmChart(t *testing.T) {
	keys := func(pairs []string) []string {
		var k []string
		for i := 0; i < len(pairs); i += 2 {
			k = append(k, pairs[i])
		}
		sort.Strings(k)
		return k
	}
	if got, want := keys(helmPlaceholders()), keys(testManifestOptions().placeholders()); !slices.Equal(got, want) {
		t.Fatalf("the chart's placeholders are %v, Manifests' %v: give each a Helm expression", got, want)
	}
	tmpl := helmTemplate()
	if left := regexp.MustCompile(`\{[A-Z]+\}`).FindAllString(tmpl, -1); len(left) > 0 {
		t.Fatalf("placeholders left in the chart's template: %v", left)
	}
	alerts, err := os.ReadFile(filepath.Join("..", "..", "deploy", "watch", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		want []byte
	}{{filepath.Join(chartDir, "templates", "watch.yaml"), []byte(tmpl)}, {filepath.Join(chartDir, "files", "alerts.yaml"), alerts}} {
		if *updateChart {
			if err := os.WriteFile(f.path, f.want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.want) {
			t.Errorf("%s is stale: regenerate it with go test ./internal/watch -run TestHelmChart -update", f.path)
		}
	}
}

// tool finds a test tool: $env (set by scripts/deps.sh, which CI sources: then it must work),
// else the newest build scripts/NAME.sh cached, else name on the PATH; else the test skips.
func tool(t *testing.T, env, cached, name, how string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	root := os.Getenv("PULLPATH_CACHE")
	if root == "" {
		root = "/var/cache/pullpath"
	}
	if m, _ := filepath.Glob(filepath.Join(root, cached, name)); len(m) > 0 {
		return m[len(m)-1]
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("no %s: %s, or set %s", name, how, env)
	return ""
}

func helmBin(t *testing.T) string {
	return tool(t, "PULLPATH_HELM", "helm-v4.3.2-*", "helm", "bash scripts/helmbin.sh builds it (about 3 min cold)")
}

// helm runs helm on the chart's directory only: nothing it reads or writes leaves the machine.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBin(t), args...)
	// a home of its own: no repositories, no plugins, no registry logins of the machine's
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data",
		"KUBECONFIG="+home+"/none")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// parsed are a stream's objects by kind, namespace and name; comments and empty documents go.
func parsed(t *testing.T, stream string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(stream, -1) {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if len(o) == 0 {
			continue
		}
		md, _ := o["metadata"].(map[string]any)
		key := fmt.Sprintf("%v %v/%v", o["kind"], md["namespace"], md["name"])
		if _, dup := out[key]; dup {
			t.Fatalf("%s twice", key)
		}
		out[key] = o
	}
	return out
}

// sameObjects reports each object one stream has and the other lacks or has otherwise.
func sameObjects(t *testing.T, gotName, got, wantName, want string) {
	t.Helper()
	g, w := parsed(t, got), parsed(t, want)
	for k, wo := range w {
		switch go_, ok := g[k]; {
		case !ok:
			t.Errorf("%s lacks %s", gotName, k)
		case !reflect.DeepEqual(go_, wo):
			a, _ := yaml.Marshal(go_)
			b, _ := yaml.Marshal(wo)
			t.Errorf("%s differs:\n%s:\n%s\n%s:\n%s", k, gotName, a, wantName, b)
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			t.Errorf("%s has %s, which %s lacks", gotName, k, wantName)
		}
	}
}

// the chart's values for o, as --set flags (helm template's, helm lint's)
func setFlags(o ManifestOptions) []string {
	s := []string{"--set-string", "watcherImage=" + o.WatcherImage, "--set", "images={" + strings.Join(o.Images, ",") + "}",
		"--set-string", "namespace=" + o.Namespace, "--set-string", "runNamespace=" + o.RunNamespace, "--set-string", "interval=" + o.Interval,
		"--set", fmt.Sprintf("metricsPort=%d", o.MetricsPort), "--set", fmt.Sprintf("replicas=%d", o.Replicas),
		"--set-string", "watcherServiceAccount=" + o.ServiceAccount, "--set-string", "secret=" + o.Secret,
		"--set-string", "serviceAccount=" + o.PullServiceAccount, "--set-string", "janitorNamespace=" + o.JanitorNamespace,
		"--set", fmt.Sprintf("resident=%t", o.Resident), "--set-string", "agentImage=" + o.AgentImage}
	return s
}

// With the same images, helm template renders the objects of watch manifests: with the chart's
// defaults, and with a value for each of its flags. helm lint passes.
func TestHelmChartRendersManifests(t *testing.T) {
	def := testManifestOptions()
	images := []string{"--set", "images={registry.example/app:1}", "--set", "watcherImage=registry.example/tools/pullpath:v1"}
	if out, err := helm(t, append([]string{"lint", "--strict", chartDir}, images...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got, err := helm(t, append([]string{"template", "pullpath-watch", chartDir}, images...)...)
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "helm template (defaults)", got, "watch manifests", Manifests(def))
	for _, tc := range []struct {
		name string
		set  func(*ManifestOptions)
	}{
		{"secret", func(o *ManifestOptions) { o.Secret = "shop/regcred" }},
		{"service account, no janitor", func(o *ManifestOptions) { o.PullServiceAccount, o.JanitorNamespace = "shop/puller", "" }},
		{"resident", func(o *ManifestOptions) { o.Resident = true }},
		{"resident with its image", func(o *ManifestOptions) { o.Resident, o.AgentImage = true, pinnedAgent }},
		{"every flag", func(o *ManifestOptions) {
			o.Images = []string{"registry.example/app:1", "registry.example/team/web@sha256:" + strings.Repeat("ab", 32)}
			o.WatcherImage = "registry.corp.example/tools/pullpath:v2"
			o.Namespace, o.RunNamespace, o.JanitorNamespace = "ops-watch", "ops-probes", "ops-verify"
			o.Interval, o.MetricsPort, o.Replicas, o.ServiceAccount = "1h30m", 9000, 3, "watcher"
			o.Secret = "shop/regcred"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testManifestOptions()
			tc.set(&o)
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			got, err := helm(t, append([]string{"template", "pullpath-watch", chartDir}, setFlags(o)...)...)
			if err != nil {
				t.Fatal(err)
			}
			sameObjects(t, "helm template", got, "watch manifests", Manifests(o))
		})
	}
}

// What the chart adds: the pods' scheduling, pull secrets and resources where the pods are, and
// for Prometheus Operator a Service, a ServiceMonitor and a PrometheusRule with alerts.yaml's groups.
func TestHelmChartAdditions(t *testing.T) {
	got, err := helm(t, "template", "pullpath-watch", chartDir, "--set", "images={registry.example/app:1}", "--set", "watcherImage=registry.example/tools/pullpath:v1",
		"--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.labels.release=kps", "--set", "serviceMonitor.interval=30s",
		"--set", "prometheusRule.enabled=true", "--set", "prometheusRule.labels.release=kps",
		"--set", "imagePullSecrets[0].name=regcred", "--set", "nodeSelector.pool=system",
		"--set", "tolerations[0].key=dedicated", "--set", "tolerations[0].operator=Exists",
		"--set", "resources.limits.memory=512Mi", "--set", "janitorResources.limits.memory=64Mi")
	if err != nil {
		t.Fatal(err)
	}
	objs := parsed(t, got)
	type podSpec struct {
		ImagePullSecrets []struct{ Name string }
		NodeSelector     map[string]string
		Tolerations      []struct{ Key, Operator string }
		Containers       []struct {
			Resources struct{ Limits map[string]string }
		}
	}
	var deploy struct {
		Spec struct{ Template struct{ Spec podSpec } }
	}
	var cron struct {
		Spec struct {
			JobTemplate struct {
				Spec struct{ Template struct{ Spec podSpec } }
			}
		}
	}
	remarshal(t, objs["Deployment pullpath-watcher/pullpath-watch"], &deploy)
	remarshal(t, objs["CronJob pullpath-watcher/pullpath-janitor"], &cron)
	for _, p := range []struct {
		what, mem string
		spec      podSpec
	}{{"the watcher's pod", "512Mi", deploy.Spec.Template.Spec}, {"the janitor's pod", "64Mi", cron.Spec.JobTemplate.Spec.Template.Spec}} {
		if len(p.spec.ImagePullSecrets) != 1 || p.spec.ImagePullSecrets[0].Name != "regcred" || p.spec.NodeSelector["pool"] != "system" ||
			len(p.spec.Tolerations) != 1 || p.spec.Tolerations[0].Key != "dedicated" || p.spec.Containers[0].Resources.Limits["memory"] != p.mem {
			t.Errorf("%s: %+v, want the pull secret regcred, nodeSelector pool=system, the toleration dedicated and a %s limit", p.what, p.spec, p.mem)
		}
	}
	var svc struct {
		Spec struct {
			Selector map[string]string
			Ports    []struct {
				Name       string
				Port       int
				TargetPort string
			}
		}
	}
	remarshal(t, objs["Service pullpath-watcher/pullpath-watch-metrics"], &svc)
	if svc.Spec.Selector["app.kubernetes.io/name"] != "pullpath-watch" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9464 || svc.Spec.Ports[0].TargetPort != "metrics" {
		t.Errorf("the metrics Service: %+v, want the watcher's pods' port metrics (9464)", svc.Spec)
	}
	var sm struct {
		Metadata struct{ Labels map[string]string }
		Spec     struct {
			Selector  struct{ MatchLabels map[string]string }
			Endpoints []struct{ Port, Interval string }
		}
	}
	remarshal(t, objs["ServiceMonitor pullpath-watcher/pullpath-watch"], &sm)
	if sm.Metadata.Labels["release"] != "kps" || sm.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "pullpath-watch" ||
		len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Interval != "30s" {
		t.Errorf("the ServiceMonitor: %+v", sm)
	}
	var rule struct {
		Metadata struct{ Labels map[string]string }
		Spec     map[string]any
	}
	remarshal(t, objs["PrometheusRule pullpath-watcher/pullpath-watch"], &rule)
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "watch", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var alerts map[string]any
	if err := yaml.Unmarshal(b, &alerts); err != nil {
		t.Fatal(err)
	}
	if rule.Metadata.Labels["release"] != "kps" || !reflect.DeepEqual(rule.Spec, alerts) {
		t.Errorf("the PrometheusRule's spec is not alerts.yaml's groups (or lacks the label release=kps):\n%v", rule.Spec)
	}
	// off by default: the watch manifests objects only
	def, err := helm(t, "template", "pullpath-watch", chartDir, "--set", "images={registry.example/app:1}", "--set", "watcherImage=registry.example/tools/pullpath:v1")
	if err != nil {
		t.Fatal(err)
	}
	for k := range parsed(t, def) {
		if strings.HasPrefix(k, "Service ") || strings.HasPrefix(k, "ServiceMonitor ") || strings.HasPrefix(k, "PrometheusRule ") {
			t.Errorf("%s rendered by default", k)
		}
	}
}

func remarshal(t *testing.T, in any, out any) {
	t.Helper()
	if in == nil {
		t.Fatalf("not rendered: want a %T", out)
	}
	b, err := yaml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

// helm refuses the values watch manifests refuses, and says which and why.
func TestHelmChartRefuses(t *testing.T) {
	// --set-json as a case's own: helm applies every --set-json before any --set
	images := []string{"--set-json", `images=["registry.example/app:1"]`, "--set", "watcherImage=registry.example/tools/pullpath:v1"}
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"no image", []string{"--set-json", "images=[]"}, "images: give at least one image"},
		{"no watcher image", []string{"--set", "watcherImage="}, "watcherImage: give the image"},
		{"interval watch refuses", []string{"--set", "interval=5s"}, "interval 5s: want 10s or more"},
		{"interval under 10s in two parts", []string{"--set", "interval=9s999ms"}, "interval 9s999ms: want 10s or more"},
		{"not a duration", []string{"--set", "interval=often"}, "/interval"},
		{"run namespace default", []string{"--set", "runNamespace=default"}, "runNamespace default: a namespace pullpath does not own"},
		{"run namespace kube-", []string{"--set", "runNamespace=kube-probes"}, "runNamespace kube-probes: a namespace pullpath does not own"},
		{"watcher namespace monitoring", []string{"--set", "namespace=monitoring"}, "namespace monitoring: a namespace pullpath does not own"},
		{"one namespace for both", []string{"--set", "runNamespace=pullpath-watcher"}, "namespace and runNamespace are both pullpath-watcher"},
		{"janitor in the watcher's namespace", []string{"--set", "janitorNamespace=pullpath-watcher"}, "janitorNamespace pullpath-watcher: want verify's run namespace"},
		{"bad namespace", []string{"--set", "runNamespace=Pull_Path"}, "/runNamespace"},
		{"agent image without resident", []string{"--set-string", "agentImage=" + pinnedAgent}, "agentImage is for the resident agents"},
		{"agent image by tag", []string{"--set", "resident=true", "--set-string", "agentImage=registry.corp.example/tools/pullpath:v1"}, "/agentImage"},
		{"secret without namespace", []string{"--set", "secret=regcred"}, "/secret"},
		{"both identities", []string{"--set", "secret=shop/a", "--set", "serviceAccount=shop/b"}, "give secret or serviceAccount, not both"},
		{"replicas", []string{"--set", "replicas=0"}, "/replicas"},
		{"port", []string{"--set", "metricsPort=70000"}, "/metricsPort"},
		{"a value the chart does not have", []string{"--set", "watcherimage=x"}, "additional properties 'watcherimage' not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(t, append(append([]string{"template", "pullpath-watch", chartDir}, images...), tc.set...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template: %v, want it refused with %q\n%s", err, tc.want, out)
			}
		})
	}
	// the edge watch accepts
	if _, err := helm(t, append(append([]string{"template", "pullpath-watch", chartDir}, images...), "--set", "interval=10s")...); err != nil {
		t.Errorf("interval 10s: %v", err)
	}
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	bin := tool(t, "PULLPATH_KUBECTL", "kubectl-v1.37.2-*", "kubectl", "bash scripts/fleetbins.sh kubectl builds it")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// The kustomize base (deploy/watch/kustomization.yaml) renders watch.yaml's objects, and the
// overlay of docs/commands/watch.md sets the watcher's image and the probed image.
func TestKustomizeBase(t *testing.T) {
	base, err := filepath.Abs(filepath.Join("..", "..", "deploy", "watch"))
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "kubectl kustomize deploy/watch", kubectl(t, "kustomize", base), "watch manifests", Manifests(testManifestOptions()))
	overlay := t.TempDir()
	rel, err := filepath.Rel(overlay, base)
	if err != nil {
		t.Fatal(err)
	}
	k := strings.ReplaceAll(kustomizeOverlay, "../../deploy/watch", rel)
	if !strings.Contains(k, rel) {
		t.Fatal("the overlay example no longer names ../../deploy/watch")
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := parsed(t, kubectl(t, "kustomize", overlay))
	var deploy, cron struct {
		Spec map[string]any
	}
	remarshal(t, objs["Deployment pullpath-watcher/pullpath-watch"], &deploy)
	remarshal(t, objs["CronJob pullpath-watcher/pullpath-janitor"], &cron)
	c := deploy.Spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	j := cron.Spec["jobTemplate"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if c["image"] != "registry.corp.example/tools/pullpath:v1.2.0" || j["image"] != c["image"] {
		t.Errorf("the overlay's images: watcher %v, janitor %v, want registry.corp.example/tools/pullpath:v1.2.0", c["image"], j["image"])
	}
	if args := c["args"].([]any); args[0] != "--image=registry.corp.example/shop/web:1.4" || args[1] != "--image=registry.corp.example/shop/api:2.0" {
		t.Errorf("the overlay's args: %v, want the two images first", args)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "commands", "watch.md"))
	if err != nil {
		t.Fatal(err)
	}
	// in a list item: indented by two
	if !strings.Contains(string(doc), "  "+strings.ReplaceAll(strings.TrimSuffix(kustomizeOverlay, "\n"), "\n", "\n  ")) {
		t.Errorf("docs/commands/watch.md does not show the overlay this test renders:\n%s", kustomizeOverlay)
	}
}

// kustomizeOverlay is the overlay docs/commands/watch.md shows, in a directory two levels below the
// repository's root.
const kustomizeOverlay = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../deploy/watch
images:
  - name: registry.example/tools/pullpath
    newName: registry.corp.example/tools/pullpath
    newTag: v1.2.0
patches:
  - target: {kind: Deployment, name: pullpath-watch}
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/args/0
        value: --image=registry.corp.example/shop/web:1.4
      - op: add
        path: /spec/template/spec/containers/0/args/1
        value: --image=registry.corp.example/shop/api:2.0
`
