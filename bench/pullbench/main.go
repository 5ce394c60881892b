// Command pullbench measures full-layer download throughput and peak memory of `pullpath probe`,
// in the full build and the probe-only build (-tags probeonly, what verify ships to the nodes),
// against go-containerregistry's remote layer download (the path `crane pull` takes), on the same
// loopback registry, side by side in one run. Each client runs in its own process so that its
// peak RSS is its own: the two pullpath builds as the binaries users run (built by the benchmark
// unless -full and -probeonly name them), ggcr in a child of the benchmark.
//
//	go run ./bench/pullbench                 # 256 MiB and 1 GiB images, 3 rounds each
//	go run ./bench/pullbench -sizes 256 -rounds 1
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sync/errgroup"

	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/internal/resolver"
)

const chunk = 1 << 20

// synthetic serves images whose layers are generated on the fly from a seed, so the server's own
// memory does not grow with the image and does not blur the clients' figures.
type synthetic struct {
	block    []byte
	images   map[string]*img // tag → image
	blobs    map[string]blob
	blobHost string
}

type img struct {
	manifest []byte
	digest   string
}

type blob struct {
	size int64
	seed uint64
	data []byte // small blobs (config) are kept
}

func (s *synthetic) stream(w io.Writer, b blob) error {
	if b.data != nil {
		_, err := w.Write(b.data)
		return err
	}
	buf := make([]byte, chunk)
	for off := int64(0); off < b.size; off += chunk {
		n := min(int64(chunk), b.size-off)
		copy(buf, s.block)
		// make every MiB of every layer distinct: a cheap twist of the shared random block
		x := b.seed ^ uint64(off)
		for i := 0; i < 64; i += 8 {
			buf[i] ^= byte(x >> (i % 56))
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
	}
	return nil
}

func (s *synthetic) add(tag string, layers int, layerSize int64) error {
	cfg := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)
	cd := sha256.Sum256(cfg)
	cfgDigest := "sha256:" + hex.EncodeToString(cd[:])
	s.blobs[cfgDigest] = blob{size: int64(len(cfg)), data: cfg}
	type desc struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int64  `json:"size"`
	}
	var ls []desc
	for i := range layers {
		b := blob{size: layerSize, seed: rand.Uint64()}
		h := sha256.New()
		if err := s.stream(h, b); err != nil {
			return err
		}
		d := "sha256:" + hex.EncodeToString(h.Sum(nil))
		s.blobs[d] = b
		ls = append(ls, desc{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Digest: d, Size: layerSize})
		_ = i
	}
	m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": desc{MediaType: "application/vnd.oci.image.config.v1+json", Digest: cfgDigest, Size: int64(len(cfg))}, "layers": ls})
	md := sha256.Sum256(m)
	s.images[tag] = &img{manifest: m, digest: "sha256:" + hex.EncodeToString(md[:])}
	return nil
}

var manifestRE = regexp.MustCompile(`^/v2/bench/manifests/(.+)$`)
var blobRE = regexp.MustCompile(`^/v2/bench/blobs/(sha256:[a-f0-9]{64})$`)

func (s *synthetic) registry(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v2/":
		w.WriteHeader(http.StatusOK)
	case manifestRE.MatchString(r.URL.Path):
		id := manifestRE.FindStringSubmatch(r.URL.Path)[1]
		var im *img
		for t, x := range s.images {
			if t == id || x.digest == id {
				im = x
			}
		}
		if im == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", im.digest)
		w.Header().Set("Content-Length", strconv.Itoa(len(im.manifest)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(im.manifest)
		}
	case blobRE.MatchString(r.URL.Path):
		d := blobRE.FindStringSubmatch(r.URL.Path)[1]
		if _, ok := s.blobs[d]; !ok {
			http.NotFound(w, r)
			return
		}
		// like a registry backed by object storage: every blob is a redirect to the blob host
		http.Redirect(w, r, "https://"+s.blobHost+"/data/"+d+"?sig=bench-signature", http.StatusTemporaryRedirect)
	default:
		http.NotFound(w, r)
	}
}

func (s *synthetic) blobServer(w http.ResponseWriter, r *http.Request) {
	b, ok := s.blobs[strings.TrimPrefix(r.URL.Path, "/data/")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(b.size, 10))
	if r.Method == http.MethodGet {
		_ = s.stream(w, b)
	}
}

type env struct {
	CAFile, DNS, Registry, BlobHost string
}

func main() {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "child-") {
		os.Exit(child(os.Args[1], os.Args[2:]))
	}
	sizes := flag.String("sizes", "256,1024", "image sizes in MiB, comma-separated")
	rounds := flag.Int("rounds", 3, "rounds per client and size; the median is shown")
	full := flag.String("full", "", "the full pullpath build to measure (default: built from this module)")
	probeOnly := flag.String("probeonly", "", "the probe-only pullpath build to measure (default: built with -tags probeonly)")
	flag.Parse()
	if err := bench(*sizes, *rounds, *full, *probeOnly); err != nil {
		fmt.Fprintln(os.Stderr, "pullbench:", err)
		os.Exit(1)
	}
}

func bench(sizes string, rounds int, full, probeOnly string) error {
	ca, err := registrytest.NewCA("pullbench CA")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "pullbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bins := map[string]*string{"full": &full, "probeonly": &probeOnly}
	for _, b := range []string{"full", "probeonly"} {
		if *bins[b] != "" {
			// measured from a copy, as build below: see copyFile
			c := dir + "/given-" + b
			if err := copyFile(*bins[b], c); err != nil {
				return err
			}
			*bins[b] = c
			continue
		}
		*bins[b] = dir + "/pullpath-" + b
		// as scripts/build.sh builds the releases: static, trimmed, stripped
		args := []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", *bins[b]}
		if b == "probeonly" {
			args = append(args, "-tags", "probeonly")
		}
		start := time.Now()
		cmd := exec.Command("go", append(args, "github.com/pullpath/pullpath/cmd/pullpath")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building the %s build: %w", b, err)
		}
		fmt.Fprintf(os.Stderr, "built the %s build in %s\n", b, time.Since(start).Round(time.Second))
		if err := copyFile(*bins[b], *bins[b]+".copy"); err != nil {
			return err
		}
		*bins[b] += ".copy"
	}
	caFile := dir + "/ca.pem"
	if err := os.WriteFile(caFile, ca.PEM, 0o644); err != nil {
		return err
	}
	block := make([]byte, chunk)
	for i := range block {
		block[i] = byte(rand.Uint32())
	}
	s := &synthetic{block: block, images: map[string]*img{}, blobs: map[string]blob{}}
	serve := func(h http.HandlerFunc, host string) (*httptest.Server, error) {
		cert, err := ca.Leaf([]string{host}, time.Now().Add(-time.Hour), time.Now().Add(time.Hour*24))
		if err != nil {
			return nil, err
		}
		srv := httptest.NewUnstartedServer(h)
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		srv.StartTLS()
		return srv, nil
	}
	reg, err := serve(s.registry, "registry.bench.test")
	if err != nil {
		return err
	}
	defer reg.Close()
	blobs, err := serve(s.blobServer, "blobs.bench.test")
	if err != nil {
		return err
	}
	defer blobs.Close()
	_, rp, _ := net.SplitHostPort(reg.Listener.Addr().String())
	_, bp, _ := net.SplitHostPort(blobs.Listener.Addr().String())
	s.blobHost = "blobs.bench.test:" + bp
	dns, err := registrytest.StartDNS("bench.test")
	if err != nil {
		return err
	}
	defer dns.Close()
	lo := netip.MustParseAddr("127.0.0.1")
	dns.SetA("registry.bench.test", lo)
	dns.SetA("blobs.bench.test", lo)
	e := env{CAFile: caFile, DNS: dns.Addr, Registry: "registry.bench.test:" + rp, BlobHost: s.blobHost}

	var mbs []int
	for _, f := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("-sizes: %q is not a size in MiB", f)
		}
		mbs = append(mbs, n)
	}
	sizeOf := func(b string) string {
		if fi, err := os.Stat(b); err == nil {
			return fmt.Sprintf("%.1f MB", float64(fi.Size())/1e6)
		}
		return "?"
	}
	fmt.Printf("pullpath full build %s, probe-only build %s\n", sizeOf(full), sizeOf(probeOnly))
	// what each build costs before it does anything: the runtime's start and every package's init
	for _, b := range []string{"full", "probeonly"} {
		cmd := exec.Command(*bins[b], "version")
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s version: %w", b, err)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			fmt.Printf("  %s build, `pullpath version` alone: peak RSS %.0f MiB\n", b, float64(ru.Maxrss)/1024)
		}
	}
	fmt.Printf("pullbench: %s/%s, GOMAXPROCS=%d, %d round(s); TLS on loopback, every blob a 307 to a blob host\n\n", goos(), goarch(), nproc(), rounds)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "image\tlayers\tclient\tseconds\tMB/s\tpeak RSS MiB\thops recorded\t")
	for _, mb := range mbs {
		layers := 4
		if mb >= 800 {
			layers = 8
		}
		layerSize := int64(mb) << 20 / int64(layers)
		tag := fmt.Sprintf("%dmib", mb)
		start := time.Now()
		if err := s.add(tag, layers, layerSize); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "generated %s (%d × %d bytes) in %s\n", tag, layers, layerSize, time.Since(start).Round(time.Millisecond))
		for _, client := range []string{"full", "probeonly", "child-ggcr"} {
			var runs []measure
			for range rounds {
				bin := ""
				if b := bins[client]; b != nil {
					bin = *b
				}
				m, err := runClient(client, bin, e, tag)
				if err != nil {
					return fmt.Errorf("%s %s: %w", client, tag, err)
				}
				runs = append(runs, m)
			}
			sort.Slice(runs, func(i, j int) bool { return runs[i].Seconds < runs[j].Seconds })
			m := runs[len(runs)/2]
			label := map[string]string{"full": "pullpath probe, full build (3 jobs)",
				"probeonly": "pullpath probe, probe-only build (3 jobs)", "child-ggcr": "ggcr remote, as crane (4 jobs)"}[client]
			hops := "-"
			if m.Hops > 0 {
				hops = strconv.Itoa(m.Hops)
			}
			fmt.Fprintf(tw, "%d MiB\t%d\t%s\t%.2f\t%.0f\t%.0f\t%s\t\n", mb, layers, label, m.Seconds, float64(m.Bytes)/1e6/m.Seconds, float64(m.MaxRSSKB)/1024, hops)
		}
	}
	return tw.Flush()
}

// copyFile copies a binary with plain writes. A process's RSS counts the pages of its executable
// it touched, and how many a page fault maps depends on how the file sits in the page cache: the
// same full build started 34-35 MiB from a copy, 41-42 MiB straight from the linker's output (larger
// folios). Installed binaries are copies (downloaded, unpacked, krew), so they are measured so.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

type measure struct {
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
	Hops     int     `json:"hops"`
	MaxRSSKB int64   `json:"-"`
}

// runClient runs one client in its own process: a pullpath build (bin) as a user runs it, or
// ggcr in a child of this benchmark. Its peak RSS is the process's.
func runClient(client, bin string, e env, tag string) (measure, error) {
	if client == "child-ggcr" {
		self, err := os.Executable()
		if err != nil {
			return measure{}, err
		}
		return run(exec.Command(self, client, e.CAFile, e.DNS, e.Registry, tag), func(out []byte) (measure, error) {
			var m measure
			return m, json.Unmarshal(out, &m)
		})
	}
	cmd := exec.Command(bin, "probe", e.Registry+"/bench:"+tag, "-o", "json", "--host-root", "none", "--anonymous",
		"--platform", "linux/amd64", "--ca-file", e.CAFile, "--dns-server", e.DNS, "--hosts-file", "")
	start := time.Now()
	return run(cmd, func(out []byte) (measure, error) {
		var rep struct {
			Class    string `json:"class"`
			Summary  string `json:"summary"`
			Download struct {
				Bytes    int64 `json:"bytes"`
				Verified bool  `json:"verified"`
			} `json:"download"`
			Hops []json.RawMessage `json:"hops"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			return measure{}, err
		}
		if !rep.Download.Verified {
			return measure{}, fmt.Errorf("probe: %s: %s", rep.Class, rep.Summary)
		}
		return measure{Bytes: rep.Download.Bytes, Seconds: time.Since(start).Seconds(), Hops: len(rep.Hops)}, nil
	})
}

func run(cmd *exec.Cmd, parse func([]byte) (measure, error)) (measure, error) {
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return measure{}, err
	}
	m, err := parse(out)
	if err != nil {
		return measure{}, fmt.Errorf("output %.200q: %w", out, err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.MaxRSSKB = ru.Maxrss
	}
	return m, nil
}

func child(kind string, args []string) int {
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: pullbench child-ggcr CAFILE DNS REGISTRY TAG")
		return 2
	}
	caFile, dnsAddr, registry, tag := args[0], args[1], args[2], args[3]
	image := registry + "/bench:" + tag
	var m measure
	var err error
	switch kind {
	case "child-ggcr":
		m, err = runGGCR(image, caFile, dnsAddr)
	default:
		err = fmt.Errorf("unknown child %s", kind)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, kind+":", err)
		return 1
	}
	_ = json.NewEncoder(os.Stdout).Encode(m)
	return 0
}

// runGGCR does what crane pull does to fetch layers: remote.Image, then every layer's compressed
// stream, digest-verified by ggcr while reading, with ggcr's default of 4 concurrent jobs.
func runGGCR(image, caFile, dnsAddr string) (measure, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return measure{}, err
	}
	pool := x509Pool(pem)
	res := resolver.Config{Nameservers: []string{dnsAddr}, Ndots: 1, Timeout: 2 * time.Second, Attempts: 1}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, _ := net.SplitHostPort(addr)
		r := res.Lookup(ctx, host)
		if r.Err != nil {
			return nil, r.Err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(r.Addrs[0].String(), port))
	}
	start := time.Now()
	ref, err := name.ParseReference(image)
	if err != nil {
		return measure{}, err
	}
	img, err := remote.Image(ref, remote.WithTransport(tr))
	if err != nil {
		return measure{}, err
	}
	layers, err := img.Layers()
	if err != nil {
		return measure{}, err
	}
	var mu sync.Mutex
	var total int64
	var g errgroup.Group
	g.SetLimit(4)
	for _, l := range layers {
		g.Go(func() error {
			rc, err := l.Compressed()
			if err != nil {
				return err
			}
			defer rc.Close()
			n, err := io.Copy(io.Discard, rc)
			mu.Lock()
			total += n
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return measure{}, err
	}
	if _, err := img.RawConfigFile(); err != nil {
		return measure{}, err
	}
	return measure{Bytes: total, Seconds: time.Since(start).Seconds()}, nil
}
