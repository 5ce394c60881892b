package loader

import (
	"embed"
	"fmt"
	"path"
	"strconv"
)

//go:embed loader-linux-*
var binaries embed.FS

// PartSize is the default size of a part: one part per ConfigMap, whose data may not exceed
// 1,048,576 bytes; the rest is room for the key and the object's metadata.
const PartSize = 1_000_000

// File is the name of the loader inside the parts directory (the key of its ConfigMap).
const File = "loader"

// Exit statuses of the loader, each with one line on stderr and in the termination message.
const (
	ExitDigest = 119 // the bytes read are not the binary whose SHA-256 was given: refused, not run
	ExitUsage  = 120 // bad arguments, SIZE or SHA256
	ExitDir    = 121 // PARTS_DIR cannot be opened
	ExitPart   = 122 // a part cannot be opened or read (part-000 missing included)
	ExitOut    = 123 // OUT_FILE cannot be created or written
	ExitSize   = 124 // the joined size is not SIZE: a part is missing, truncated or stale
	ExitExec   = 125 // execve of OUT_FILE failed
)

// Binary returns the loader for linux/goarch ("amd64", "arm64"), or an error naming the ones built.
func Binary(goarch string) ([]byte, error) {
	b, err := binaries.ReadFile("loader-linux-" + goarch)
	if err != nil {
		return nil, fmt.Errorf("loader: none for linux/%q (built: %v)", goarch, Arches())
	}
	return b, nil
}

// Arches lists the architectures a loader was built for, sorted.
func Arches() []string {
	entries, _ := binaries.ReadDir(".")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name()[len("loader-linux-"):])
	}
	return out
}

// Part is one piece of a binary as the loader reads it: Name is part-000, part-001, ….
type Part struct {
	Name string
	Data []byte
}

// Split cuts bin into parts of partSize bytes (PartSize when partSize <= 0), the last one shorter.
// The parts share bin's memory. An empty bin gives one empty part, so the loader finds part-000.
func Split(bin []byte, partSize int) []Part {
	if partSize <= 0 {
		partSize = PartSize
	}
	parts := make([]Part, 0, len(bin)/partSize+1)
	for i := 0; i == 0 || len(bin) > 0; i++ {
		n := min(partSize, len(bin))
		parts = append(parts, Part{Name: fmt.Sprintf("part-%03d", i), Data: bin[:n:n]})
		bin = bin[n:]
	}
	return parts
}

// Stdin is the PARTS_DIR that makes the loader read the binary from its standard input, to its
// end: what verify streams through the attach API, so that nothing but the loader is stored.
const Stdin = "-"

// StreamCommand is the container command that runs the loader at loaderPath reading the binary
// from stdin, checks its size and SHA-256 (hex), and execs it as out with args.
func StreamCommand(loaderPath, out string, size int, sha256 string, args ...string) []string {
	cmd := []string{loaderPath, Stdin, out, strconv.Itoa(size), sha256, "--"}
	return append(cmd, args...)
}

// Command is the container command that runs the loader from partsDir (where the parts and the
// loader are projected): it joins the parts, checks their size and SHA-256 (hex), and execs them
// as out with args.
func Command(partsDir, out string, size int, sha256 string, args ...string) []string {
	cmd := []string{path.Join(partsDir, File), partsDir, out, strconv.Itoa(size), sha256, "--"}
	return append(cmd, args...)
}

// Failed reports whether a container exit status is the loader's own (the binary did not run).
func Failed(status int32) bool { return status >= ExitDigest && status <= ExitExec }

// Env is the prefix of the only environment variables the loader hands to the program.
const Env = "PULLPATH_"
