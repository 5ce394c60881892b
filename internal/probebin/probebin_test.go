package probebin_test

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/probebin"
)

// TestFresh fails when a source of the probe-only build changed since scripts/probebin.sh built
// the embedded binaries: verify would ship yesterday's probe.
func TestFresh(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the sources")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("go", "run", "./internal/probebin/gen", "-check")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestReproducible rebuilds both probe builds and compares the bytes with the committed ones: the
// stamp's source hash cannot tell a hand-placed binary from the real build, this can. The bytes
// depend on the toolchain: with another Go than the stamp's it skips here (release builds refuse
// it, scripts/build.sh).
func TestReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two probe builds")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build with")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	var st struct{ Go string }
	b, err := os.ReadFile("stamp.json")
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		t.Fatal(err)
	}
	goVer, _ := exec.Command("go", "env", "GOVERSION").Output()
	if v := strings.TrimSpace(string(goVer)); v != st.Go {
		t.Skipf("the builds were made with %s, this is %s: the bytes cannot match (scripts/probebin.sh rebuilds them)", st.Go, v)
	}
	cmd := exec.Command("go", "run", "./internal/probebin/gen", "-verify")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestBinary: each embedded build decompresses to a static linux program of its architecture.
func TestBinary(t *testing.T) {
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		b, err := probebin.Binary(arch)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if f.Machine != machine {
			t.Errorf("%s: machine %v, want %v", arch, f.Machine, machine)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: dynamically linked: a node image without its libc could not run it", arch)
			}
		}
		info, _ := probebin.Stat(arch)
		t.Logf("linux/%s: %d bytes, %d compressed (%.0f %%)", arch, info.Size, info.Zstd, 100*float64(info.Zstd)/float64(info.Size))
	}
	if _, err := probebin.Binary("s390x"); err == nil {
		t.Error("Binary(s390x) gave a build")
	}
}
