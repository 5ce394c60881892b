package contract

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/contract.md documents every kind and the vocabularies as the schema has them.
func TestContractDocument(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "contract.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, k := range kinds {
		if !strings.Contains(doc, "### "+k+" ") {
			t.Errorf("docs/contract.md has no section for kind %s", k)
		}
	}
	for _, c := range []struct{ def, row string }{{"code", "| `code` |"}, {"runtimeWarningCode", "| runtime warning `code` |"}} {
		want := fmt.Sprintf("(%d codes)", len(schemaEnum(t, c.def)))
		line := ""
		for _, l := range strings.Split(doc, "\n") {
			if strings.HasPrefix(l, c.row) {
				line = l
			}
		}
		if !strings.Contains(line, want) {
			t.Errorf("docs/contract.md row %q should say %s", c.row, want)
		}
	}
	for _, def := range []string{"class", "role", "step", "verdict", "severity"} {
		for _, v := range schemaEnum(t, def) {
			if !strings.Contains(doc, "`"+v+"`") {
				t.Errorf("docs/contract.md does not name the %s `%s`", def, v)
			}
		}
	}
	for _, v := range schemaEnum(t, "owner") {
		if v != "" && !strings.Contains(doc, "`"+v+"`") {
			t.Errorf("docs/contract.md does not name the owner `%s`", v)
		}
	}
}
