package watch

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/yaml"

	"github.com/pullpath/pullpath/internal/report"
)

// servedMetrics are the names a leading watcher serves, read from its own registry after one
// of every kind of observation: probes that ran (steps, registry requests, a delivered binary; a
// broken path and one that holds), a broken condition, a skipped node, API requests. A histogram serves _bucket, _sum and _count.
func servedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	api := NewAPICounter()
	api.counter("GET nodes").Add(1)
	m := newMetrics(time.Minute, api, "test")
	v := report.ProbeSummary{Class: report.ClassRoute}
	m.observe("n1", "p", ImageResult{Image: "registry.example/app:1", Verdict: &v}, &report.PoolResult{
		Delivery: "attach", DeliveryStats: &report.DeliveryStats{Bytes: 1},
		Probe: &report.Probe{Hops: []report.Hop{{Role: report.RoleRegistry}},
			Steps:            []report.Step{{Step: report.StepDNS, Role: report.RoleRegistry, Verdict: report.Pass}},
			CredentialExpiry: []report.Expiry{{What: report.ExpiryCredential, Expires: time.Now().Add(time.Hour), Source: report.SourceJWTExp}}},
	}, time.Now())
	ok := report.ProbeSummary{Class: report.ClassOK}
	m.observe("n3", "p", ImageResult{Image: "registry.example/app:1", Verdict: &ok}, &report.PoolResult{}, time.Now())
	m.setCondition("n1", "p", Condition{Status: "True", Reason: "Route"})
	m.setSkipped("n2", "p", "cordoned")
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, f := range families {
		n := f.GetName()
		served[n] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			served[n+"_bucket"], served[n+"_sum"], served[n+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			served[n+"_sum"], served[n+"_count"] = true, true
		}
	}
	for _, want := range []string{"pullpath_watch_path_ok", "pullpath_watch_last_success_timestamp_seconds", "pullpath_watch_node_skipped", "pullpath_watch_api_requests_total", "process_resident_memory_bytes"} {
		if !served[want] {
			t.Fatalf("the test's watcher does not serve %s: observe more", want)
		}
	}
	return served
}

// dashboardExprs are the PromQL expressions of a Grafana dashboard: every target of every panel
// (rows' panels too), and the metric of each label_values variable. Grafana's variables are
// replaced by what an "All" selection gives.
func dashboardExprs(t *testing.T, b []byte) (exprs, variableMetrics []string) {
	t.Helper()
	type panel struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ X, Y, W, H int } `json:"gridPos"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		UID        string            `json:"uid"`
		Title      string            `json:"title"`
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q title %q: want both (an import keeps the uid)", d.UID, d.Title)
	}
	ids := map[int]string{}
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("panel: %v", err)
			}
			if prev, dup := ids[p.ID]; dup {
				t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("panel %q: gridPos %+v outside Grafana's 24 columns", p.Title, g)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
				t.Errorf("panel %q: datasource %+v, %d targets: want ${datasource} (the import asks for it) and a query", p.Title, p.Datasource, len(p.Targets))
			}
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*), *[a-z_]+\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q, want label_values(metric, label)", v.Name, v.Definition)
			continue
		}
		variableMetrics = append(variableMetrics, m[1])
	}
	all := strings.NewReplacer("$__rate_interval", "5m", "$pool", ".*", "$image", ".*")
	for i, e := range exprs {
		exprs[i] = all.Replace(e)
		if strings.Contains(exprs[i], "$") {
			t.Errorf("expression %q has a variable the test does not know", e)
		}
	}
	return exprs, variableMetrics
}

var (
	promqlStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promqlBraces    = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promqlLabelList = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlIdent     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promqlKeywords  = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true,
		"on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true, "Inf": true, "NaN": true}
)

// metricNames are the metrics expr selects: identifiers outside strings, matchers, ranges and
// label lists that call nothing and are no keyword. Not a parser (promtool parses), enough to see
// a metric name the watcher does not serve.
func metricNames(expr string) []string {
	s := promqlStrings.ReplaceAllString(expr, `""`)
	s = promqlBraces.ReplaceAllString(s, " ")
	s = promqlLabelList.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promqlIdent.FindAllStringIndex(s, -1) {
		id := s[loc[0]:loc[1]]
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // a number's exponent or a duration's unit
		}
		if promqlKeywords[id] || strings.HasPrefix(strings.TrimLeft(s[loc[1]:], " \t\n"), "(") {
			continue
		}
		out = append(out, id)
	}
	return out
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`count by (pool, image) (pullpath_watch_path_ok{pool=~"a|b"} == 0) > 0`:                                      {"pullpath_watch_path_ok"},
		`histogram_quantile(0.9, sum by (le) (rate(x_bucket{a="}"}[5m])))`:                                           {"x_bucket"},
		`(time() - y) > on () group_left 2 * max(z) or label_replace(vector(1e3), "reason", "none", "", "")`:         {"y", "z"},
		`rate(process_cpu_seconds_total[5m]) and on (job, instance) pullpath_watch_build_info unless absent(q) or w`: {"process_cpu_seconds_total", "pullpath_watch_build_info", "q", "w"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%s) = %q, want %q", expr, got, want)
		}
	}
}

// deploy/watch/dashboard.json (Grafana): every expression parses (promtool, the Prometheus
// parser), and it and every alert of alerts.yaml select only metrics a watcher serves: pools ×
// nodes, broken by class, probe age and pullpath's own cost come from the watcher, not a guess.
func TestDashboard(t *testing.T) {
	dir := filepath.Join("..", "..", "deploy", "watch")
	b, err := os.ReadFile(filepath.Join(dir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	exprs, varMetrics := dashboardExprs(t, b)
	if len(exprs) < 20 {
		t.Fatalf("%d expressions in the dashboard, want its 20 or more", len(exprs))
	}
	rules, err := os.ReadFile(filepath.Join(dir, "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var alerts struct {
		Groups []struct {
			Rules []struct {
				Alert, Expr string
			}
		}
	}
	if err := yaml.Unmarshal(rules, &alerts); err != nil {
		t.Fatal(err)
	}
	var alertExprs []string
	for _, g := range alerts.Groups {
		for _, r := range g.Rules {
			alertExprs = append(alertExprs, r.Expr)
		}
	}
	if len(alertExprs) == 0 {
		t.Fatal("no alert in alerts.yaml")
	}
	served := servedMetrics(t)
	for _, e := range append(slices.Clone(exprs), alertExprs...) {
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("%q selects no metric", e)
		}
		for _, n := range names {
			if !served[n] {
				t.Errorf("%q selects %s, which the watcher does not serve", e, n)
			}
		}
	}
	for _, n := range varMetrics {
		if !served[n] {
			t.Errorf("a variable lists the labels of %s, which the watcher does not serve", n)
		}
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found (Debian's prometheus package has it; scripts/deps.sh installs it as root)")
	}
	var rf strings.Builder
	rf.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range exprs {
		q, _ := json.Marshal(e) // a JSON string is a YAML string
		fmt.Fprintf(&rf, "      - record: dashboard:expr_%d\n        expr: %s\n", i, q)
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(file, []byte(rf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules (the dashboard's expressions): %v\n%s", err, out)
	}
}
