package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaFile is the schema, read from the repository (go test runs in the package directory).
var schemaFile = filepath.Join("..", "..", "docs", "schema", "pullpath.schema.json")

const schemaID = "https://github.com/pullpath/pullpath/docs/schema/pullpath.schema.json"

var (
	schemaOnce sync.Once
	compiler   *jsonschema.Compiler
	schemaRaw  map[string]any
	schemaErr  error
	schemas    = map[string]*jsonschema.Schema{}
	schemasMu  sync.Mutex
)

func loadSchema(t testing.TB) {
	t.Helper()
	schemaOnce.Do(func() {
		b, err := os.ReadFile(schemaFile)
		if err != nil {
			schemaErr = err
			return
		}
		if err := json.Unmarshal(b, &schemaRaw); err != nil {
			schemaErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			schemaErr = err
			return
		}
		compiler = jsonschema.NewCompiler()
		compiler.DefaultDraft(jsonschema.Draft2020)
		compiler.AssertFormat() // date-time is checked, not only annotated
		schemaErr = compiler.AddResource(schemaID, doc)
	})
	if schemaErr != nil {
		t.Fatalf("schema %s: %v", schemaFile, schemaErr)
	}
}

// schemaFor compiles the whole schema ("") or one $defs entry.
func schemaFor(t testing.TB, def string) *jsonschema.Schema {
	t.Helper()
	loadSchema(t)
	loc := schemaID
	if def != "" {
		loc += "#/$defs/" + def
	}
	schemasMu.Lock()
	defer schemasMu.Unlock()
	if s, ok := schemas[loc]; ok {
		return s
	}
	s, err := compiler.Compile(loc)
	if err != nil {
		t.Fatalf("compile %s: %v", loc, err)
	}
	schemas[loc] = s
	return s
}

// validate checks one JSON document against the schema as a whole (dispatching on kind) and
// against the definition of the kind the command must write.
func validate(t testing.TB, kind string, out []byte) map[string]any {
	t.Helper()
	doc, err := check(t, kind, out)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// check is validate returning the mismatch instead of stopping the test.
func check(t testing.TB, kind string, out []byte) (map[string]any, error) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("%s: output is not one JSON document: %v\n%s", kind, err, clip(out))
	}
	doc, ok := inst.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: output is not a JSON object:\n%s", kind, clip(out))
	}
	if doc["kind"] != kind {
		return nil, fmt.Errorf("kind %v, want %s", doc["kind"], kind)
	}
	for _, def := range []string{"", kind} {
		if err := schemaFor(t, def).Validate(inst); err != nil {
			return nil, fmt.Errorf("%s does not match the schema (%s):\n%v\n%s", kind, orWhole(def), err, clip(out))
		}
	}
	return doc, nil
}

// invalid reports whether the schema rejects a document.
func invalid(t testing.TB, doc any) error {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return schemaFor(t, "").Validate(inst)
}

func orWhole(def string) string {
	if def == "" {
		return "the whole schema"
	}
	return "$defs/" + def
}

func clip(b []byte) string {
	const max = 4000
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

func TestSchemaCompiles(t *testing.T) {
	schemaFor(t, "")
	for _, kind := range kinds {
		schemaFor(t, kind)
	}
}

// kinds are the documents pullpath writes: each has a $defs entry and is in the kind enum.
var kinds = []string{"ProbeReport", "Allowlist", "ExplainReport", "RuntimeReport", "Version", "PodDiagnosis", "PullFailureList", "Verification", "Cleanup", "WatchStatus", "DemoReport"}

// schemaEnum is the enum of $defs/name, as strings.
func schemaEnum(t testing.TB, name string) []string {
	t.Helper()
	loadSchema(t)
	def, _ := schemaRaw["$defs"].(map[string]any)[name].(map[string]any)
	vals, ok := def["enum"].([]any)
	if !ok {
		t.Fatalf("$defs/%s has no enum", name)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i], _ = v.(string)
	}
	return out
}
