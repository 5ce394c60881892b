package contract

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/report"
)

// Documents with every field of the Go types set (omitempty ones included), so that a field added
// to a type without the schema fails here, not only when some run happens to fill it.

// fieldValues are the values of string fields whose schema is an enum or a pattern, by
// "pkg.Type.Field"; any other string is a host:port, which every plain string accepts.
var fieldValues = map[string]any{
	"report.Probe.APIVersion": report.APIVersion, "report.Probe.Kind": "ProbeReport", "report.Probe.Platform": "linux/amd64",
	"report.Allowlist.APIVersion": report.APIVersion, "report.Allowlist.Kind": "Allowlist",
	"report.Findings.APIVersion": report.APIVersion, "report.Findings.Kind": "ExplainReport",
	"report.RuntimeReport.APIVersion": report.APIVersion, "report.RuntimeReport.Kind": "RuntimeReport", "report.RuntimeReport.Runtime": "containerd",
	"report.Version.APIVersion": report.APIVersion, "report.Version.Kind": "Version", "report.Version.Commit": "0e8f21f4a1b2-dirty",
	"report.Version.BuildDate": "2026-12-02T10:00:00Z", "report.Version.GoVersion": "go1.26.8", "report.Version.Platform": "linux/arm64",
	"report.PodDiagnosis.APIVersion": report.APIVersion, "report.PodDiagnosis.Kind": "PodDiagnosis",
	"report.PullFailures.APIVersion": report.APIVersion, "report.PullFailures.Kind": "PullFailureList",
	"report.Ref.Digest":          "sha256:4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b",
	"report.Interruption.Reason": "timeout", "report.Interruption.Signal": "SIGTERM",
	"report.Address.Scope":          "private",
	"report.Runtime.Name":           "crio",
	"report.RuntimeReportHost.Role": "mirror", "report.RuntimeReportHost.URL": "https://mirror.internal/v2", "report.RuntimeReportHost.Capabilities": []string{"pull", "resolve"},
	"report.RuntimeWarning.Code":           "SKIP_VERIFY",
	"report.PodRef.Phase":                  "Pending",
	"report.ContainerRef.State":            "waiting",
	"report.PullSecret.From":               "serviceaccount",
	"report.CredentialTurn.Source":         "node-docker-config",
	"report.TimelineEntry.Kind":            "scale-up",
	"report.NextStep.Command":              "pullpath verify registry.corp.example/shop/web:1.4 --fresh --pool poolb",
	"report.PullFailureGroup.Command":      "pullpath pod web-new -n shop",
	"report.CredentialVerification.Policy": "AlwaysVerify", "report.NodeVerification.Policy": "NeverVerify", "report.VerificationEntry.Verdict": "breaks",
	"report.Download.Partial": "no-download", "report.Download.Verified": false,
	"report.Expiry.What": "registry-token", "report.Expiry.Source": "expires_in",
	"report.Demo.APIVersion": report.APIVersion, "report.Demo.Kind": "DemoReport",
	"report.Verification.APIVersion": report.APIVersion, "report.Verification.Kind": "Verification",
	"report.PoolResult.Delivery": "image", "report.RuntimePull.Result": "failed", "report.CRIResult.Result": "failed",
	"report.HTTP.Status": 403, "report.Hop.Status": 200, "report.Hop.Seq": 1,
}

func fill(v reflect.Value, owner string, field string) {
	if val, ok := fieldValues[owner+"."+field]; ok {
		rv := reflect.ValueOf(val)
		if rv.Type().ConvertibleTo(v.Type()) {
			v.Set(rv.Convert(v.Type()))
			return
		}
		if rv.Kind() == reflect.Slice && v.Kind() == reflect.Slice {
			s := reflect.MakeSlice(v.Type(), rv.Len(), rv.Len())
			for i := range rv.Len() {
				s.Index(i).Set(rv.Index(i).Convert(v.Type().Elem()))
			}
			v.Set(s)
			return
		}
	}
	switch v.Type() {
	case reflect.TypeFor[report.Class]():
		v.SetString(string(report.ClassEndpoint))
		return
	case reflect.TypeFor[report.Owner]():
		v.SetString(string(report.OwnerNetwork))
		return
	case reflect.TypeFor[report.Role]():
		v.SetString(string(report.RoleBlob))
		return
	case reflect.TypeFor[report.Code]():
		v.SetString(string(report.CodeBlobRedirectFailed))
		return
	case reflect.TypeFor[report.Verdict]():
		v.SetString(string(report.Fail))
		return
	case reflect.TypeFor[report.StepName]():
		v.SetInt(int64(report.StepTCP))
		return
	case reflect.TypeFor[report.Duration]():
		v.SetInt(int64(1500 * time.Microsecond))
		return
	case reflect.TypeFor[report.RuntimeSeverity]():
		v.SetString(string(report.SeverityError))
		return
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("registry.example:443")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(2)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), owner, field)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), owner, field)
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), owner, field)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, owner, field)
		fill(e, owner, field)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				fill(v.Field(i), t.String(), t.Field(i).Name)
			}
		}
	}
}

func filled[T any](patch func(*T)) *T {
	v := new(T)
	fill(reflect.ValueOf(v).Elem(), "", "")
	if patch != nil {
		patch(v)
	}
	return v
}

// fullDocuments are one document of each kind with every field set, consistent with the rules
// between fields (an interrupted probe is class other, an incomplete allowlist says where).
func fullDocuments() map[string]any {
	return map[string]any{
		"ProbeReport": filled(func(p *report.Probe) {
			p.Class, p.Code = report.ClassOther, report.CodeTimeout
		}),
		"Allowlist":     filled(func(a *report.Allowlist) { a.Complete = false }),
		"ExplainReport": filled[report.Findings](nil),
		"RuntimeReport": filled[report.RuntimeReport](nil),
		"Version":       filled[report.Version](nil),
		"PodDiagnosis":  filled[report.PodDiagnosis](nil),
		"PullFailureList": filled(func(l *report.PullFailures) {
			l.Class = l.Groups[0].Class
		}),
		"DemoReport": filled(func(d *report.Demo) {
			d.Interrupted = "SIGINT"
			d.Scenarios[0].Expect.Step, d.Scenarios[0].Failing.Step = report.StepTCP, report.StepTCP
		}),
		"Verification": filled(func(v *report.Verification) {
			v.Interrupted = "SIGINT"
			v.Pools[0].Probe.Class, v.Pools[0].Probe.Code = report.ClassOther, report.CodeTimeout
			v.FromPod.Probe.Class, v.FromPod.Probe.Code = report.ClassOther, report.CodeTimeout
			v.FromPod.PullSecrets[0].Key = ".dockercfg"
			v.PullSecrets[0].Key = ".dockerconfigjson"
		}),
	}
}

func TestEveryGoFieldIsInTheSchema(t *testing.T) {
	for kind, v := range fullDocuments() {
		t.Run(kind, func(t *testing.T) {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			validate(t, kind, b)
		})
	}
}

// Every kind's Go type is report's (docs/architecture.md): the command's package builds it, report
// renders it.
func TestKindsAreReportTypes(t *testing.T) {
	for kind, v := range fullDocuments() {
		if typ := reflect.TypeOf(v).Elem(); typ.PkgPath() != "github.com/pullpath/pullpath/internal/report" {
			t.Errorf("kind %s is %s, not a type of internal/report", kind, typ)
		}
	}
}

// The schema fails documents that drift from the contract.
func TestSchemaRejectsDrift(t *testing.T) {
	docs := fullDocuments()
	asMap := func(kind string) map[string]any {
		b, _ := json.Marshal(docs[kind])
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	obj := func(v any) map[string]any { return v.(map[string]any) }
	first := func(v any) map[string]any { return v.([]any)[0].(map[string]any) }
	for _, tc := range []struct {
		name, kind string
		mutate     func(m map[string]any)
	}{
		{"snake_case name", "ProbeReport", func(m map[string]any) { m["duration_ms"] = m["durationMs"]; delete(m, "durationMs") }},
		{"unknown field", "ProbeReport", func(m map[string]any) { obj(m["failing"])["layer"] = "tcp" }},
		{"unknown class", "ProbeReport", func(m map[string]any) { m["class"] = "broken" }},
		{"owner in prose", "ProbeReport", func(m map[string]any) { m["owner"] = "network + registry" }},
		{"host without port", "ProbeReport", func(m map[string]any) { obj(m["failing"])["host"] = "registry.example" }},
		{"broken without failing", "ProbeReport", func(m map[string]any) { delete(m, "interrupted"); m["class"] = "dns"; m["failing"] = nil }},
		{"ok with failing", "ProbeReport", func(m map[string]any) { delete(m, "interrupted"); m["class"] = "ok"; m["code"] = "OK"; m["owner"] = "" }},
		{"interrupted but classed", "ProbeReport", func(m map[string]any) { m["class"] = "route" }},
		{"duration as text", "ProbeReport", func(m map[string]any) { first(m["hops"])["durationMs"] = "12ms" }},
		{"unknown step key", "ProbeReport", func(m map[string]any) { obj(first(m["endpoints"])["steps"])["layer"] = "pass" }},
		{"unknown code", "ProbeReport", func(m map[string]any) { m["code"] = "NOT_A_CODE" }},
		{"other apiVersion", "ProbeReport", func(m map[string]any) { m["apiVersion"] = "pullpath/v1" }},
		{"no kind", "ProbeReport", func(m map[string]any) { delete(m, "kind") }},
		{"not a date", "ProbeReport", func(m map[string]any) { m["started"] = "yesterday" }},
		{"incomplete without where", "Allowlist", func(m map[string]any) { delete(m, "stoppedAt") }},
		{"finding host without port", "ExplainReport", func(m map[string]any) {
			f := first(m["findings"])
			f["host"], f["role"] = "registry.example", "registry"
		}},
		{"omitted zero", "ExplainReport", func(m map[string]any) { first(m["findings"])["sourcesOmitted"] = 0 }},
		{"unknown severity", "RuntimeReport", func(m map[string]any) { first(m["warnings"])["severity"] = "warning" }},
		{"unknown warning code", "RuntimeReport", func(m map[string]any) { first(m["warnings"])["code"] = "SOMETHING" }},
		{"pod owner", "PodDiagnosis", func(m map[string]any) { obj(m["pod"])["owner"] = "ReplicaSet/web" }},
		{"image present as text", "PodDiagnosis", func(m map[string]any) { first(m["nodes"])["imagePresent"] = "unknown" }},
		{"groups but ok", "PullFailureList", func(m map[string]any) { m["class"] = "ok" }},
		{"version without go", "Version", func(m map[string]any) { delete(m, "goVersion") }},
		{"from-pod secret handed over as text", "Verification", func(m map[string]any) { first(obj(m["fromPod"])["pullSecrets"])["handedOver"] = "yes" }},
		{"from-pod secret of an unknown key", "Verification", func(m map[string]any) { first(obj(m["fromPod"])["pullSecrets"])["key"] = "config.json" }},
		{"node probes' secret handed over as text", "Verification", func(m map[string]any) { first(m["pullSecrets"])["handedOver"] = "yes" }},
		{"node probes' secret without a name", "Verification", func(m map[string]any) { delete(first(m["pullSecrets"]), "name") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := asMap(tc.kind)
			if err := invalid(t, m); err != nil {
				t.Fatalf("the unmodified %s is rejected: %v", tc.kind, err)
			}
			tc.mutate(m)
			if invalid(t, m) == nil {
				b, _ := json.MarshalIndent(m, "", "  ")
				t.Errorf("the schema accepts a %s with %s:\n%s", tc.kind, tc.name, clip(b))
			}
		})
	}
	if !strings.Contains(schemaFile, "pullpath.schema.json") {
		t.Fatal(schemaFile)
	}
}
