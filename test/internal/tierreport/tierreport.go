// Package tierreport appends a tier's figures to the report file scripts/test.sh prints after the
// tests (its path in an environment variable, one per tier).
package tierreport

import (
	"fmt"
	"os"
	"path/filepath"
)

// Append adds lines to the file $env names; nothing when env is unset or the file cannot be
// written (a figure must never fail a test).
func Append(env string, lines ...string) {
	path := os.Getenv(env)
	if path == "" || len(lines) == 0 {
		return
	}
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	for _, l := range lines {
		fmt.Fprintln(f, l)
	}
}
