package loader_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pullpath/pullpath/internal/loader"
)

func TestSplit(t *testing.T) {
	bin := bytes.Repeat([]byte("0123456789"), 25) // 250 bytes
	for _, tc := range []struct {
		name     string
		bin      []byte
		partSize int
		want     []int // part sizes
	}{
		{"exact", bin, 50, []int{50, 50, 50, 50, 50}},
		{"short last", bin, 100, []int{100, 100, 50}},
		{"one part", bin, 1000, []int{250}},
		{"default size", bin, 0, []int{250}},
		{"negative size", bin, -3, []int{250}},
		{"empty", nil, 10, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := loader.Split(tc.bin, tc.partSize)
			var sizes []int
			var joined []byte
			for i, p := range parts {
				if want := fmt.Sprintf("part-%03d", i); p.Name != want {
					t.Errorf("part %d: Name = %q, want %q", i, p.Name, want)
				}
				sizes = append(sizes, len(p.Data))
				joined = append(joined, p.Data...)
			}
			if !reflect.DeepEqual(sizes, tc.want) {
				t.Errorf("Split(%d bytes, %d) sizes = %v, want %v", len(tc.bin), tc.partSize, sizes, tc.want)
			}
			if !bytes.Equal(joined, tc.bin) {
				t.Errorf("the parts joined differ from the input")
			}
		})
	}
	// appending to a part must not overwrite the next one
	parts := loader.Split(bin, 100)
	_ = append(parts[0].Data, 'x')
	if parts[1].Data[0] != '0' {
		t.Errorf("a part's capacity reaches into the next part")
	}
	if n := len(loader.Split(make([]byte, 3*loader.PartSize+1), 0)); n != 4 {
		t.Errorf("Split(3*PartSize+1, 0) = %d parts, want 4", n)
	}
}

func TestPartSizeFitsAConfigMap(t *testing.T) {
	// the API server refuses a ConfigMap whose data exceeds 1 MiB; leave room for key and metadata
	if loader.PartSize+len("part-000") > 1<<20-16*1024 {
		t.Errorf("PartSize %d leaves less than 16 KiB under the 1 MiB ConfigMap limit", loader.PartSize)
	}
}

func TestStreamCommand(t *testing.T) {
	got := loader.StreamCommand("/pp/l/loader", "/pp/run/pullpath", 42, sumA, "probe", "-o", "json")
	want := []string{"/pp/l/loader", "-", "/pp/run/pullpath", "42", sumA, "--", "probe", "-o", "json"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("StreamCommand = %q, want %q", got, want)
	}
}

func TestCommand(t *testing.T) {
	got := loader.Command("/pullpath/parts", "/work/pullpath", 12345678, sumA, "probe", "registry.example/app:1", "-o", "json")
	want := []string{"/pullpath/parts/loader", "/pullpath/parts", "/work/pullpath", "12345678", sumA, "--",
		"probe", "registry.example/app:1", "-o", "json"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Command = %q, want %q", got, want)
	}
	if got := loader.Command("/p/", "/o", 0, sumA); !reflect.DeepEqual(got, []string{"/p/loader", "/p/", "/o", "0", sumA, "--"}) {
		t.Errorf("Command without args = %q", got)
	}
}

func TestBinary(t *testing.T) {
	elfMachine := map[string]uint16{"amd64": 62, "arm64": 183} // e_machine: EM_X86_64, EM_AARCH64
	arches := loader.Arches()
	if len(arches) == 0 || arches[0] != "amd64" {
		t.Fatalf("Arches() = %v, want amd64 first", arches)
	}
	for _, arch := range arches {
		b, err := loader.Binary(arch)
		if err != nil {
			t.Fatalf("Binary(%q): %v", arch, err)
		}
		if len(b) > 16*1024 {
			t.Errorf("Binary(%q) is %d bytes, want a few KB", arch, len(b))
		}
		if len(b) < 20 || string(b[:4]) != "\x7fELF" || b[4] != 2 || b[16] != 2 {
			t.Fatalf("Binary(%q) is not a 64-bit ELF executable", arch)
		}
		if m := uint16(b[18]) | uint16(b[19])<<8; m != elfMachine[arch] {
			t.Errorf("Binary(%q): e_machine %d, want %d", arch, m, elfMachine[arch])
		}
		t.Logf("loader-linux-%s: %d bytes", arch, len(b))
	}
	for _, arch := range []string{"riscv64", "", "../loader.c"} {
		if b, err := loader.Binary(arch); err == nil || b != nil || !strings.Contains(err.Error(), "built: [amd64") {
			t.Errorf("Binary(%q) = %d bytes, %v; want an error naming the built ones", arch, len(b), err)
		}
	}
}

// TestReproducible rebuilds the loaders from loader.c with scripts/loader.sh and compares the bytes
// with the committed ones: what ships is what the source says.
func TestReproducible(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found: the loader's byte comparison with loader.c needs it")
	}
	// read here so that go test's cache sees them: the script's own reads are invisible to it
	for _, f := range []string{"loader.c", "../../scripts/loader.sh", "toolchain.txt"} {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	out, err := exec.Command("bash", "../../scripts/loader.sh", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/loader.sh: %v\n%s", err, out)
	}
	t.Logf("scripts/loader.sh: %s", strings.TrimSpace(string(out)))
	committed := toolchains(t, "toolchain.txt")
	rebuilt := toolchains(t, filepath.Join(dir, "toolchain.txt"))
	for _, arch := range loader.Arches() {
		if committed[arch] == "" {
			t.Errorf("toolchain.txt does not say how loader-linux-%s was built", arch)
		}
		if rebuilt[arch] == "" {
			t.Logf("loader-linux-%s not compared: no compiler for it here", arch)
		}
	}
	if len(rebuilt) == 0 {
		t.Fatalf("scripts/loader.sh built nothing")
	}
	for arch, tc := range rebuilt {
		t.Run(arch, func(t *testing.T) {
			if committed[arch] != tc {
				t.Skipf("loader-linux-%s was built with %q, this machine has %q: the bytes depend on the compiler", arch, committed[arch], tc)
			}
			want, err := loader.Binary(arch)
			if err != nil {
				t.Fatalf("%v (rebuilt from loader.c but not committed: run scripts/loader.sh)", err)
			}
			got, err := os.ReadFile(filepath.Join(dir, "loader-linux-"+arch))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("loader-linux-%s (%d bytes) differs from loader.c rebuilt (%d bytes): run scripts/loader.sh and commit", arch, len(want), len(got))
			}
		})
	}
}

func toolchains(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if arch, tc, ok := strings.Cut(l, ": "); ok {
			m[arch] = tc
		}
	}
	return m
}

// echoBinary is testdata/echo built static, the stand-in for the probe.
var echoBinary = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "loader-echo")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "echo"), "./testdata/echo")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build testdata/echo: %v\n%s", err, out)
	}
	return os.ReadFile(filepath.Join(dir, "echo"))
})

// result is one run of the real loader.
type result struct {
	status         int
	stdout, stderr string
	termLog        string // what /dev/termination-log held afterwards ("?" when not observed)
}

// runLoader runs the loader of this machine's architecture. As root with unshare(1), it runs in a
// private mount namespace with a tmpfs on /dev holding an empty /dev/termination-log, which is
// read back; otherwise the termination log is not observed, and the failure cases are skipped
// where a real /dev/termination-log exists (a container's own, which they would overwrite).
func runLoader(t *testing.T, arch string, failing bool, args ...string) result {
	t.Helper()
	return runLoaderIn(t, arch, failing, nil, args...)
}

// runLoaderIn is runLoader with stdin as the loader's standard input.
func runLoaderIn(t *testing.T, arch string, failing bool, stdin io.Reader, args ...string) result {
	t.Helper()
	bin, err := loader.Binary(arch)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, loader.File)
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	args = append(append(launcher(t, arch), path), args...)
	var cmd *exec.Cmd
	tl := filepath.Join(dir, "termination-log")
	unshare, lookErr := exec.LookPath("unshare")
	observed := os.Geteuid() == 0 && lookErr == nil
	if observed {
		script := `mount -t tmpfs -o size=64k tmpfs /dev && : >/dev/termination-log || exit 99
"$@"; s=$?; cat /dev/termination-log >"$TL"; exit $s`
		cmd = exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh"}, args...)...)
	} else {
		if _, err := os.Stat("/dev/termination-log"); err == nil && failing {
			t.Skip("/dev/termination-log exists and cannot be hidden without root and unshare: a failing loader would overwrite it")
		}
		cmd = exec.Command(args[0], args[1:]...)
	}
	// the variables a borrowed image could set: none reaches the program, only PULLPATH_*
	cmd.Env = append(os.Environ(), "PULLPATH_LOADER_TEST_ENV=kept", "TL="+tl, "HTTPS_PROXY=http://127.0.0.1:9", "SSL_CERT_FILE=/evil/ca.pem",
		"GODEBUG=x509ignoreCN=0", "DOCKER_CONFIG=/evil", "HOME=/evil")
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), termLog: "?"}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.status = exit.ExitCode()
	case err != nil:
		t.Fatalf("run loader: %v", err)
	}
	if r.status == 99 {
		t.Fatalf("cannot set up /dev/termination-log in a mount namespace: %s", r.stderr)
	}
	if b, err := os.ReadFile(tl); err == nil {
		r.termLog = string(b)
	} else if observed {
		t.Fatalf("termination log not read back: %v (stderr %q)", err, r.stderr)
	}
	return r
}

// launcher is what runs a loader for arch here: nothing on the same architecture, qemu-user for
// arm64 on another one (its execve is the host's, so the test program runs natively).
func launcher(t *testing.T, arch string) []string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("the loader runs on linux, this is %s", runtime.GOOS)
	}
	if arch == runtime.GOARCH {
		return nil
	}
	if arch == "arm64" {
		for _, q := range []string{"qemu-aarch64-static", "qemu-aarch64"} {
			if p, err := exec.LookPath(q); err == nil {
				return []string{p}
			}
		}
	}
	t.Skipf("cannot run the linux/%s loader here (for arm64 on %s: qemu-aarch64-static on the PATH)", arch, runtime.GOARCH)
	return nil
}

// eachArch runs f for the loader of every architecture built.
func eachArch(t *testing.T, f func(t *testing.T, arch string)) {
	for _, arch := range loader.Arches() {
		t.Run(arch, func(t *testing.T) { f(t, arch) })
	}
}

func writeParts(t *testing.T, dir string, bin []byte, partSize int) []loader.Part {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	parts := loader.Split(bin, partSize)
	for _, p := range parts {
		if err := os.WriteFile(filepath.Join(dir, p.Name), p.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return parts
}

// TestRun runs the real loader on parts of a real static program, which prints its arguments and
// exits 7.
func TestRun(t *testing.T) { eachArch(t, testRun) }

func testRun(t *testing.T, arch string) {
	launcher(t, arch)
	bin, err := echoBinary()
	if err != nil {
		t.Fatal(err)
	}
	const partSize = 300_000
	dir := t.TempDir()
	parts := filepath.Join(dir, "parts")
	nparts := len(projectParts(t, parts, bin, partSize))
	if nparts < 4 {
		t.Fatalf("testdata/echo is %d bytes: too small for %d-byte parts", len(bin), partSize)
	}
	out := filepath.Join(dir, "work", "pullpath")
	if err := os.Mkdir(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	// a stale, longer, non-executable file in the way: the loader runs from a memfd and leaves it
	stale := bytes.Repeat([]byte{0xff}, len(bin)+4096)
	if err := os.WriteFile(out, stale, 0o600); err != nil {
		t.Fatal(err)
	}

	r := runLoader(t, arch, false, loader.Command(parts, out, len(bin), sum(bin), "probe", "registry.example/app:1", "two words", "")[1:]...)
	if r.status != 7 {
		t.Fatalf("status %d, want 7 (the program's own)\nstdout: %s\nstderr: %s", r.status, r.stdout, r.stderr)
	}
	want := "argv0=" + out + "\narg=probe\narg=registry.example/app:1\narg=two words\narg=\nenv=kept\nothers=\n"
	if r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	if r.stderr != "" {
		t.Errorf("stderr = %q, want nothing", r.stderr)
	}
	if r.termLog != "?" && r.termLog != "" {
		t.Errorf("termination log = %q after a good run, want it untouched", r.termLog)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.Equal(b, stale) {
		t.Errorf("%s was written (%v): the binary runs from a sealed memfd, never from OUT_FILE", out, err)
	}
	t.Logf("%d bytes in %d parts joined and run", len(bin), nparts)
}

// TestStream runs the real loader on a real static program read from its standard input, as
// verify streams it through the attach API: whole, cut short, and too long.
func TestStream(t *testing.T) { eachArch(t, testStream) }

func testStream(t *testing.T, arch string) {
	launcher(t, arch)
	bin, err := echoBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		input  []byte
		status int
		line   string // stderr, the loader's line; "" for the program's own run
	}{
		{"whole", bin, 7, ""},
		// a second attacher's bytes, or a stream cut and refilled: the same size, other bytes
		{"substituted", flip(bin), loader.ExitDigest, fmt.Sprintf("sha256 of the %d bytes is %s, want %s: refused, not run", len(bin), sum(flip(bin)), sum(bin))},
		{"cut", bin[:len(bin)/3], loader.ExitSize, fmt.Sprintf("read %d bytes from stdin, want %d: the stream was cut", len(bin)/3, len(bin))},
		{"empty", nil, loader.ExitSize, fmt.Sprintf("read 0 bytes from stdin, want %d: the stream was cut", len(bin))},
		{"too long", append(slices.Clone(bin), "tail"...), loader.ExitSize, fmt.Sprintf("read %d bytes from stdin, want %d: more bytes than expected", len(bin)+4, len(bin))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "pullpath")
			args := loader.StreamCommand("loader", out, len(bin), sum(bin), "probe", "two words")[1:]
			r := runLoaderIn(t, arch, tc.status != 7, bytes.NewReader(tc.input), args...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d\nstdout: %s\nstderr: %s", r.status, tc.status, r.stdout, r.stderr)
			}
			if tc.line == "" {
				want := "argv0=" + out + "\narg=probe\narg=two words\nenv=kept\nothers=\n"
				if r.stdout != want || r.stderr != "" {
					t.Errorf("stdout = %q, stderr = %q; want %q and nothing", r.stdout, r.stderr, want)
				}
				return
			}
			if want := "pullpath-loader: " + tc.line + "\n"; r.stderr != want || (r.termLog != "?" && r.termLog != want) {
				t.Errorf("stderr = %q, termination log %q\nwant both %q", r.stderr, r.termLog, want)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s left behind after a failure (%v): a partial binary must never run", out, err)
			}
		})
	}
}

// TestFailures: every failure is one clear line, on stderr and in the termination log, with its
// own status, and leaves no OUT_FILE behind.
func TestFailures(t *testing.T) { eachArch(t, testFailures) }

func testFailures(t *testing.T, arch string) {
	launcher(t, arch)
	bin, err := echoBinary()
	if err != nil {
		t.Fatal(err)
	}
	const partSize = 300_000
	size := fmt.Sprint(len(bin))
	digest := sum(bin)
	last := fmt.Sprintf("part-%03d", (len(bin)-1)/partSize)
	junk := "neither ELF nor script\n"
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, parts string) // after the parts are written
		args   func(parts, out string) []string
		status int
		line   string // {parts}, {out}, {size}, {last} replaced
	}{
		{
			name:   "missing part",
			setup:  func(t *testing.T, parts string) { remove(t, filepath.Join(parts, "part-002")) },
			status: loader.ExitSize,
			line:   "joined 600000 bytes from part-000..part-001, want {size}: a part is missing or truncated",
		},
		{
			name:   "truncated part",
			setup:  func(t *testing.T, parts string) { truncate(t, filepath.Join(parts, "part-001"), 1000) },
			status: loader.ExitSize,
			line:   fmt.Sprintf("joined %d bytes from part-000..{last}, want {size}: a part is missing or truncated", len(bin)-partSize+1000),
		},
		{
			name: "stale extra part",
			setup: func(t *testing.T, parts string) {
				write(t, filepath.Join(parts, fmt.Sprintf("part-%03d", (len(bin)-1)/partSize+1)), "stale")
			},
			status: loader.ExitSize,
			line:   fmt.Sprintf("joined %d bytes from part-000..part-%03d, want {size}: more bytes than expected (a stale or extra part)", len(bin)+5, (len(bin)-1)/partSize+1),
		},
		{
			name:   "no part-000",
			setup:  func(t *testing.T, parts string) { remove(t, filepath.Join(parts, "part-000")) },
			status: loader.ExitPart,
			line:   "part-000: open: ENOENT",
		},
		{
			name: "unreadable part",
			setup: func(t *testing.T, parts string) {
				remove(t, filepath.Join(parts, "part-001"))
				if err := os.Mkdir(filepath.Join(parts, "part-001"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			status: loader.ExitPart,
			line:   "part-001: read: EISDIR",
		},
		{
			// a replaced ConfigMap: the same size, other bytes
			name: "substituted part",
			setup: func(t *testing.T, parts string) {
				b := slices.Clone(bin[partSize : 2*partSize])
				b[100] ^= 0xff
				write(t, filepath.Join(parts, "part-001"), string(b))
			},
			status: loader.ExitDigest,
			line:   "sha256 of the {size} bytes is {flipped}, want {sum}: refused, not run",
		},
		{
			name:   "missing dir",
			args:   func(parts, out string) []string { return []string{parts + "-gone", out, size, digest, "--"} },
			status: loader.ExitDir,
			line:   "{parts}-gone: open: ENOENT",
		},
		{
			name:   "dir is a file",
			args:   func(parts, out string) []string { return []string{parts + "/part-000", out, size, digest, "--"} },
			status: loader.ExitDir,
			line:   "{parts}/part-000: open: ENOTDIR",
		},
		{
			name:   "digest not hex",
			args:   func(parts, out string) []string { return []string{parts, out, size, "sha256:" + digest, "--"} },
			status: loader.ExitUsage,
			line:   "SHA256: want 64 lowercase hex digits",
		},
		{
			name: "not executable",
			setup: func(t *testing.T, parts string) {
				for _, p := range loader.Split(bin, partSize) {
					remove(t, filepath.Join(parts, p.Name))
				}
				write(t, filepath.Join(parts, "part-000"), junk)
			},
			args:   func(parts, out string) []string { return []string{parts, out, "23", sum([]byte(junk)), "--", "x"} },
			status: loader.ExitExec,
			line:   "memfd: execve: ENOEXEC",
		},
		{
			name:   "size not a number",
			args:   func(parts, out string) []string { return []string{parts, out, "12MB", digest, "--"} },
			status: loader.ExitUsage,
			line:   `SIZE "12MB": want a decimal byte count`,
		},
		{
			name:   "size overflows",
			args:   func(parts, out string) []string { return []string{parts, out, "99999999999999999999", digest, "--"} },
			status: loader.ExitUsage,
			line:   `SIZE "99999999999999999999": want a decimal byte count`,
		},
		{
			name:   "no separator",
			args:   func(parts, out string) []string { return []string{parts, out, size, digest, "probe"} },
			status: loader.ExitUsage,
			line:   "usage: pullpath-loader PARTS_DIR OUT_FILE SIZE SHA256 -- ARGS...",
		},
		{
			name:   "no arguments",
			args:   func(parts, out string) []string { return nil },
			status: loader.ExitUsage,
			line:   "usage: pullpath-loader PARTS_DIR OUT_FILE SIZE SHA256 -- ARGS...",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			parts := filepath.Join(dir, "parts")
			writeParts(t, parts, bin, partSize)
			out := filepath.Join(dir, "pullpath")
			if tc.setup != nil {
				tc.setup(t, parts)
			}
			args := []string{parts, out, size, digest, "--", "probe"}
			if tc.args != nil {
				args = tc.args(parts, out)
			}
			r := runLoader(t, arch, true, args...)
			flipped := slices.Clone(bin)
			flipped[partSize+100] ^= 0xff
			want := "pullpath-loader: " + strings.NewReplacer("{parts}", parts, "{out}", out, "{size}", size, "{last}", last,
				"{sum}", digest, "{flipped}", sum(flipped)).Replace(tc.line) + "\n"
			if r.status != tc.status {
				t.Errorf("status %d, want %d", r.status, tc.status)
			}
			if r.stderr != want {
				t.Errorf("stderr = %q\nwant     %q", r.stderr, want)
			}
			if r.termLog != "?" && r.termLog != want {
				t.Errorf("termination log = %q, want the same line as stderr", r.termLog)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
			if _, err := os.Stat(out); tc.status != loader.ExitExec && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s left behind after a failure (%v)", out, err)
			}
		})
	}
}

// projectParts lays the parts out as the kubelet projects ConfigMap keys into a volume: each file
// a symlink into ..data, itself a symlink to a timestamped directory.
func projectParts(t *testing.T, dir string, bin []byte, partSize int) []loader.Part {
	t.Helper()
	parts := writeParts(t, filepath.Join(dir, "..2026_01_02_03_04_05.123456789"), bin, partSize)
	if err := os.Symlink("..2026_01_02_03_04_05.123456789", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if err := os.Symlink(filepath.Join("..data", p.Name), filepath.Join(dir, p.Name)); err != nil {
			t.Fatal(err)
		}
	}
	return parts
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sumA is a digest for the command tests: any 64 hex digits.
var sumA = strings.Repeat("a", 64)

// sum is b's SHA-256 in hex, as the loader wants it.
func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// flip is b with its middle byte changed: the same size, another binary.
func flip(b []byte) []byte {
	c := slices.Clone(b)
	c[len(c)/2] ^= 0xff
	return c
}
