// Command gen builds the probe-only pullpath for linux/amd64 and linux/arm64, compresses each with
// zstd into internal/probebin, and writes stamp.json: the hash of the sources they were built from
// and the size and sha256 of each binary. scripts/probebin.sh runs it; with -check it only says
// whether the committed builds still match the sources (exit 1 when stale).
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Flags are part of the stamp: the same sources built otherwise are another binary.
var buildArgs = []string{"build", "-tags", "probeonly", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w -buildid="}

var arches = []string{"amd64", "arm64"}

type stamp struct {
	Source   string            `json:"source"` // sha256 of the probe-only build's own sources and module versions
	Go       string            `json:"go"`     // the toolchain that built them, for the record
	Binaries map[string]binary `json:"binaries"`
}

type binary struct {
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
	Zstd   int    `json:"zstd"`
}

func main() {
	check := flag.Bool("check", false, "only compare the committed stamp with the sources")
	verify := flag.Bool("verify", false, "rebuild with the stamp's toolchain and compare the bytes with the committed builds (exit 1 when they differ, or when the toolchain is not the stamp's)")
	dir := flag.String("dir", "internal/probebin", "where the builds and stamp.json go")
	flag.Parse()
	run := run
	if *verify {
		run = func(_ bool, dir string) error { return verifyBytes(dir) }
	}
	if err := run(*check, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "probebin:", err)
		os.Exit(1)
	}
}

func run(check bool, dir string) error {
	src, err := sourceHash()
	if err != nil {
		return err
	}
	if check {
		var old stamp
		b, err := os.ReadFile(filepath.Join(dir, "stamp.json"))
		if err == nil {
			err = json.Unmarshal(b, &old)
		}
		if err != nil {
			return fmt.Errorf("no stamp (%v): run scripts/probebin.sh", err)
		}
		if old.Source != src {
			return fmt.Errorf("the embedded probe builds are stale: their sources changed (stamp %s, now %s); run scripts/probebin.sh and commit internal/probebin", old.Source[:12], src[:12])
		}
		return nil
	}
	goVer, _ := exec.Command("go", "env", "GOVERSION").Output()
	st := stamp{Source: src, Go: strings.TrimSpace(string(goVer)), Binaries: map[string]binary{}}
	tmp, err := os.MkdirTemp("", "probebin")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, arch := range arches {
		raw, err := build(tmp, arch)
		if err != nil {
			return err
		}
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return err
		}
		z := enc.EncodeAll(raw, nil)
		sum := sha256.Sum256(raw)
		st.Binaries[arch] = binary{Size: len(raw), SHA256: hex.EncodeToString(sum[:]), Zstd: len(z)}
		if err := os.WriteFile(filepath.Join(dir, "probe-linux-"+arch+".zst"), z, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "probebin: linux/%s %d bytes, %d zstd\n", arch, len(raw), len(z))
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "stamp.json"), append(b, '\n'), 0o644)
}

// sourceHash hashes what decides the probe-only build's code, for both architectures: the files
// of this module's packages it links (Go and embedded) and the versions of the other modules. The
// toolchain is left out on purpose: a new Go patch release must not make the builds stale.
func sourceHash() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "flags %q\n", buildArgs)
	for _, arch := range arches {
		cmd := exec.Command("go", "list", "-deps", "-tags", "probeonly", "-json=ImportPath,Dir,GoFiles,EmbedFiles,Module,Standard", "./cmd/pullpath")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("go list linux/%s: %v", arch, err)
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for dec.More() {
			var p struct {
				ImportPath, Dir     string
				GoFiles, EmbedFiles []string
				Standard            bool
				Module              *struct {
					Path, Version string
					Main          bool
				}
			}
			if err := dec.Decode(&p); err != nil {
				return "", err
			}
			switch {
			case p.Standard:
				continue
			case p.Module != nil && !p.Module.Main:
				fmt.Fprintf(h, "%s %s@%s %s\n", arch, p.ImportPath, p.Module.Path, p.Module.Version)
				continue
			}
			fmt.Fprintf(h, "%s %s\n", arch, p.ImportPath)
			for _, f := range append(slices.Clone(p.GoFiles), p.EmbedFiles...) {
				b, err := os.ReadFile(filepath.Join(p.Dir, f))
				if err != nil {
					return "", err
				}
				fmt.Fprintf(h, "%s %d %x\n", f, len(b), sha256.Sum256(b))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// verifyBytes rebuilds both probe builds into a temporary directory and compares them with the
// committed ones, byte for byte: the stamp's source hash says what they were built from, this says
// that the committed bytes are that build (a hand-placed binary with a matching stamp fails here).
// The bytes depend on the toolchain: another one than the stamp's is an error, so that a Go
// security release forces a rebuild before a release.
func verifyBytes(dir string) error {
	var st stamp
	b, err := os.ReadFile(filepath.Join(dir, "stamp.json"))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		return fmt.Errorf("no stamp (%v): run scripts/probebin.sh", err)
	}
	goVer, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return err
	}
	if v := strings.TrimSpace(string(goVer)); v != st.Go {
		return fmt.Errorf("the embedded probe builds were made with %s, this toolchain is %s: run scripts/probebin.sh with it and commit internal/probebin", st.Go, v)
	}
	tmp, err := os.MkdirTemp("", "probebin-verify")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dec, err := zstd.NewReader(nil)
	if err != nil {
		return err
	}
	defer dec.Close()
	for _, arch := range arches {
		raw, err := build(tmp, arch)
		if err != nil {
			return err
		}
		z, err := os.ReadFile(filepath.Join(dir, "probe-linux-"+arch+".zst"))
		if err != nil {
			return err
		}
		committed, err := dec.DecodeAll(z, nil)
		if err != nil {
			return fmt.Errorf("probe-linux-%s.zst: %v", arch, err)
		}
		sum, csum := sha256.Sum256(raw), sha256.Sum256(committed)
		switch {
		case !bytes.Equal(raw, committed):
			return fmt.Errorf("linux/%s: the committed build (sha256 %x, %d bytes) is not what the sources build (sha256 %x, %d bytes): run scripts/probebin.sh and commit internal/probebin", arch, csum, len(committed), sum, len(raw))
		case hex.EncodeToString(sum[:]) != st.Binaries[arch].SHA256:
			return fmt.Errorf("linux/%s: stamp.json names sha256 %s, the build is %x", arch, st.Binaries[arch].SHA256, sum)
		}
		fmt.Fprintf(os.Stderr, "probebin: linux/%s rebuilt, %d bytes, identical (sha256 %x)\n", arch, len(raw), sum)
	}
	return nil
}

// build makes the probe-only build for linux/arch in dir and returns its bytes.
func build(dir, arch string) ([]byte, error) {
	out := filepath.Join(dir, "pullpath-"+arch)
	cmd := exec.Command("go", append(slices.Clone(buildArgs), "-o", out, "./cmd/pullpath")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build linux/%s: %v", arch, err)
	}
	return os.ReadFile(out)
}
