// Package probebin holds the probe-only pullpath for linux/amd64 and linux/arm64, zstd-compressed,
// so that every build of pullpath (go install, go build, a release archive, krew) has what verify
// ships to a node: the probe-only build is about a fifth of the full one, which links client-go.
// scripts/probebin.sh rebuilds them; a test fails when their sources changed since.
package probebin

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

//go:embed probe-linux-*.zst stamp.json
var files embed.FS

// Info is what is known of one embedded build before it is decompressed.
type Info struct {
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
	Zstd   int    `json:"zstd"`
}

type stamp struct {
	Source   string          `json:"source"`
	Go       string          `json:"go"`
	Binaries map[string]Info `json:"binaries"`
}

func readStamp() (*stamp, error) {
	b, err := files.ReadFile("stamp.json")
	if err != nil {
		return nil, err
	}
	var s stamp
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("probebin: stamp.json: %v", err)
	}
	return &s, nil
}

// Stat describes the embedded build for linux/goarch.
func Stat(goarch string) (Info, error) {
	s, err := readStamp()
	if err != nil {
		return Info{}, err
	}
	i, ok := s.Binaries[goarch]
	if !ok {
		return Info{}, fmt.Errorf("no embedded probe build for linux/%s (there are: amd64, arm64)", goarch)
	}
	return i, nil
}

// Binary returns the embedded probe-only build for linux/goarch, decompressed and checked against
// its recorded size and sha256.
func Binary(goarch string) ([]byte, error) {
	info, err := Stat(goarch)
	if err != nil {
		return nil, err
	}
	z, err := files.ReadFile("probe-linux-" + goarch + ".zst")
	if err != nil {
		return nil, fmt.Errorf("no embedded probe build for linux/%s", goarch)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(info.Size)+1<<20))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	raw, err := dec.DecodeAll(z, make([]byte, 0, info.Size))
	if err != nil {
		return nil, fmt.Errorf("embedded probe build for linux/%s: %v", goarch, err)
	}
	sum := sha256.Sum256(raw)
	if len(raw) != info.Size || hex.EncodeToString(sum[:]) != info.SHA256 {
		return nil, fmt.Errorf("embedded probe build for linux/%s: %d bytes with sha256 %x, want %d bytes with %s", goarch, len(raw), sum[:6], info.Size, info.SHA256)
	}
	return raw, nil
}
