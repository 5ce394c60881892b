package contract

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/report"
)

// goConsts reads the string constants of the non-test files of a package directory, by declared
// type name ("Class", "Code", …; "" for untyped), resolving string(pkg.Name) through known.
func goConsts(t *testing.T, dir string, known map[string]string) (byType map[string][]string, byName map[string]string) {
	t.Helper()
	byType, byName = map[string][]string{}, map[string]string{}
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				typ := ""
				if id, ok := vs.Type.(*ast.Ident); ok {
					typ = id.Name
				}
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					v, ok := stringValue(vs.Values[i], known)
					if !ok {
						continue
					}
					byType[typ] = append(byType[typ], v)
					byName[name.Name] = v
				}
			}
		}
	}
	return byType, byName
}

func stringValue(e ast.Expr, known map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		}
	case *ast.CallExpr: // string(report.CodeX)
		if len(e.Args) == 1 {
			if sel, ok := e.Args[0].(*ast.SelectorExpr); ok {
				v, ok := known[sel.Sel.Name]
				return v, ok
			}
		}
	}
	return "", false
}

func sameSet(t *testing.T, what string, schema, code []string) {
	t.Helper()
	var onlySchema, onlyCode []string
	for _, s := range schema {
		if !slices.Contains(code, s) {
			onlySchema = append(onlySchema, s)
		}
	}
	for _, c := range code {
		if !slices.Contains(schema, c) {
			onlyCode = append(onlyCode, c)
		}
	}
	if len(onlyCode) > 0 {
		t.Errorf("%s: the Go code has %v, the schema's enum does not: add them to docs/schema/pullpath.schema.json and docs/contract.md", what, onlyCode)
	}
	if len(onlySchema) > 0 {
		t.Errorf("%s: the schema's enum has %v, the Go code does not (codes are added, never renamed or removed)", what, onlySchema)
	}
}

// The schema's enums are the Go constants: a class, owner, role, verdict, code, step, runtime
// warning code or severity added on one side only fails here.
func TestEnumsMatchGoConstants(t *testing.T) {
	reportConsts, reportNames := goConsts(t, "../report", nil)
	rtConsts, rtNames := goConsts(t, "../runtimeconfig", reportNames)

	var classes []string
	for _, c := range report.Classes() {
		classes = append(classes, string(c))
	}
	sameSet(t, "class (report.Classes)", schemaEnum(t, "class"), classes)
	sameSet(t, "class (constants)", schemaEnum(t, "class"), reportConsts["Class"])
	sameSet(t, "owner", schemaEnum(t, "owner"), append([]string{""}, reportConsts["Owner"]...))
	for _, c := range report.Classes() {
		if !slices.Contains(schemaEnum(t, "owner"), string(c.Owner())) {
			t.Errorf("class %s has owner %q, not in the schema", c, c.Owner())
		}
		if (c.Owner() == "") != (c == report.ClassOK || c == report.ClassOther) {
			t.Errorf("class %s: owner %q; only ok and other have none (docs/contract.md)", c, c.Owner())
		}
	}
	sameSet(t, "role", schemaEnum(t, "role"), reportConsts["Role"])
	sameSet(t, "verdict", schemaEnum(t, "verdict"), reportConsts["Verdict"])
	sameSet(t, "code", schemaEnum(t, "code"), reportConsts["Code"])

	var steps []string
	for s := report.StepName(0); !strings.HasPrefix(s.String(), "step("); s++ {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, string(b))
	}
	sameSet(t, "step", schemaEnum(t, "step"), steps)
	for _, s := range report.EndpointSteps {
		if !slices.Contains(steps, s.String()) {
			t.Errorf("endpoint step %s is not a step", s)
		}
	}

	var warn []string
	for name, v := range rtNames {
		if strings.HasPrefix(name, "Warn") {
			warn = append(warn, v)
		}
	}
	sort.Strings(warn)
	sameSet(t, "runtime warning code", schemaEnum(t, "runtimeWarningCode"), warn)
	sameSet(t, "severity", schemaEnum(t, "severity"), reportConsts["RuntimeSeverity"])
	var runtimes []string
	runtimes = append(runtimes, rtConsts["Runtime"]...)
	sameSet(t, "runtime", enumAt(t, "RuntimeReport", "runtime"), runtimes)
	expiry := schemaRaw["$defs"].(map[string]any)["ProbeReport"].(map[string]any)["properties"].(map[string]any)["credentialExpiry"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)
	for prop, typ := range map[string]string{"what": "ExpiryWhat", "source": "ExpirySource"} {
		var enum []string
		for _, v := range expiry[prop].(map[string]any)["enum"].([]any) {
			enum = append(enum, v.(string))
		}
		sameSet(t, "credentialExpiry "+prop, enum, reportConsts[typ])
	}
}

// enumAt is the enum of a property of a $defs entry.
func enumAt(t *testing.T, def, prop string) []string {
	t.Helper()
	loadSchema(t)
	p := schemaRaw["$defs"].(map[string]any)[def].(map[string]any)["properties"].(map[string]any)[prop].(map[string]any)
	var out []string
	for _, v := range p["enum"].([]any) {
		out = append(out, v.(string))
	}
	return out
}

// kindLiteral finds the kind of a pullpath document where one is made ({APIVersion: report.APIVersion,
// Kind: "…"}), not the Kinds of Kubernetes objects.
var kindLiteral = regexp.MustCompile(`APIVersion:\s*(?:report\.)?APIVersion,\s*Kind:\s*"([A-Z][A-Za-z]+)"`)

// Every document kind the code writes has its definition in the schema, and the schema lists no
// kind the code does not write (Verification excepted while it is a TODO).
func TestKindsMatchTheCode(t *testing.T) {
	loadSchema(t)
	found := map[string]string{}
	err := filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range kindLiteral.FindAllStringSubmatch(string(b), -1) {
			found[m[1]] = p
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defs := schemaRaw["$defs"].(map[string]any)
	var enum []string
	for _, v := range schemaRaw["properties"].(map[string]any)["kind"].(map[string]any)["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	for k, where := range found {
		if _, ok := defs[k]; !ok || !slices.Contains(enum, k) {
			t.Errorf("%s writes kind %s: the schema has no definition for it", where, k)
		}
	}
	for _, k := range enum {
		if _, ok := found[k]; ok {
			continue
		}
		if c, _ := defs[k].(map[string]any)["$comment"].(string); strings.HasPrefix(c, "TODO") {
			t.Logf("kind %s is a TODO in the schema: %s", k, c)
			continue
		}
		t.Errorf("the schema lists kind %s, which no command writes", k)
	}
	if !slices.Equal(enum, kinds) {
		t.Errorf("kind enum %v, tests cover %v", enum, kinds)
	}
}

var camel = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// The naming rules of docs/contract.md, checked on the schema itself: camelCase names, objects
// closed to unknown fields, durations in ms named …Ms, hosts as host:port, owner as the token,
// no "layer", cut lists with an …Omitted count.
func TestSchemaNamingRules(t *testing.T) {
	loadSchema(t)
	defs := schemaRaw["$defs"].(map[string]any)
	var walk func(path string, n any)
	walk = func(path string, n any) {
		switch n := n.(type) {
		case []any:
			for i, v := range n {
				walk(path+"/"+strconv.Itoa(i), v)
			}
		case map[string]any:
			if props, ok := n["properties"].(map[string]any); ok && isObjectSchema(n) {
				todo, _ := n["$comment"].(string)
				if n["additionalProperties"] != false && path != "" && !strings.HasPrefix(todo, "TODO") {
					t.Errorf("%s: an object with properties must set additionalProperties: false", path)
				}
				for name, p := range props {
					checkProperty(t, path+"/properties/"+name, name, p, props)
				}
			}
			for k, v := range n {
				walk(path+"/"+k, v)
			}
		}
	}
	for name, d := range defs {
		walk("#/$defs/"+name, d)
	}
	for _, k := range kinds {
		d := defs[k].(map[string]any)
		req, _ := d["required"].([]any)
		if !slices.Contains(req, any("apiVersion")) || !slices.Contains(req, any("kind")) {
			t.Errorf("%s: apiVersion and kind must be required", k)
		}
	}
}

func isObjectSchema(n map[string]any) bool {
	typ, _ := n["type"].(string)
	return typ == "object"
}

func ref(p any) string {
	m, _ := p.(map[string]any)
	r, _ := m["$ref"].(string)
	return r
}

func checkProperty(t *testing.T, path, name string, p any, siblings map[string]any) {
	t.Helper()
	if !camel.MatchString(name) {
		t.Errorf("%s: %q is not camelCase", path, name)
	}
	if strings.Contains(strings.ToLower(name), "layer") && name != "layers" {
		t.Errorf("%s: \"layer\" names an image layer only; a network step is \"step\"", path)
	}
	r := ref(p)
	if strings.HasSuffix(name, "Ms") != (r == "#/$defs/durationMs") {
		t.Errorf("%s: a duration is milliseconds (#/$defs/durationMs) and its name ends in Ms", path)
	}
	if strings.HasSuffix(name, "Omitted") {
		if r != "#/$defs/omitted" {
			t.Errorf("%s: an …Omitted count refs #/$defs/omitted", path)
		}
		if _, ok := siblings[strings.TrimSuffix(name, "Omitted")]; !ok {
			t.Errorf("%s: no list %s beside it", path, strings.TrimSuffix(name, "Omitted"))
		}
	}
	switch name {
	case "owner":
		if r != "#/$defs/owner" {
			t.Errorf("%s: owner is the stable token (#/$defs/owner)", path)
		}
	case "class":
		if r != "#/$defs/class" {
			t.Errorf("%s: refs #/$defs/class", path)
		}
	case "role", "step", "verdict", "code", "phase":
		if !strings.HasPrefix(r, "#/$defs/") && enumOf(p) == nil {
			t.Errorf("%s: an enum (or a $defs enum)", path)
		}
	case "endpoint", "addr", "address", "server", "resolver":
		if r != "#/$defs/hostPort" && !isObject(p) {
			t.Errorf("%s: a host is host:port (#/$defs/hostPort)", path)
		}
	case "host":
		if r != "#/$defs/hostPort" && !strings.Contains(path, "/finding/") {
			t.Errorf("%s: a host is host:port (#/$defs/hostPort)", path)
		}
	}
}

func enumOf(p any) []any {
	m, _ := p.(map[string]any)
	e, _ := m["enum"].([]any)
	return e
}

func isObject(p any) bool {
	m, _ := p.(map[string]any)
	return m != nil && isObjectSchema(m)
}
