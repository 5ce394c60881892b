package probebin_test

import (
	"bytes"
	"debug/elf"
	"os/exec"
	"path/filepath"
	"runtime"
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
