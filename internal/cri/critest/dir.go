package critest

import (
	"os"
	"testing"
)

// shortDir makes a temp directory with a short path (the socket path limit), removed with the test.
func shortDir(t testing.TB) (string, error) {
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir, nil
}
