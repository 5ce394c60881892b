package probe

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

var errStalled = errors.New("stalled")

// copyBufSize is the read buffer per download; memory stays bounded by concurrency × this.
const copyBufSize = 256 << 10

// maxConfigBytes caps the config blob kept in memory to check its platform.
const maxConfigBytes = 16 << 20

type blobJob struct {
	idx    int
	desc   registry.Descriptor
	config bool
}

type blobResult struct {
	fail  *failure
	bytes int64
	done  bool // downloaded and verified, or with --no-download reached (first byte read)
}

// blobs downloads the config and every layer, bounded by Options.Concurrency, and returns the
// failure of the first blob in manifest order that failed (deterministic under concurrency).
func (w *walk) blobs(reg *endpoint, m *registry.Manifest) *failure {
	jobs := []blobJob{{idx: 0, desc: m.Config, config: true}}
	for i, l := range m.Layers {
		if w.opts.NoDownload && w.opts.Sample {
			break // the config's redirect reaches the blob host; the layers wait for a full round
		}
		jobs = append(jobs, blobJob{idx: i + 1, desc: l})
	}
	var total int64
	for _, j := range jobs {
		total += j.desc.Size
	}
	w.download.Expected = 1 + len(m.Layers)
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()

	results := make([]blobResult, len(jobs))
	var (
		done      atomic.Int64
		doneBlobs atomic.Int64
		g         errgroup.Group
	)
	g.SetLimit(w.opts.Concurrency) // Go waits for a free slot
	progress := func() {
		if w.opts.Progress != nil {
			w.opts.Progress(Progress{Blobs: len(jobs), DoneBlobs: int(doneBlobs.Load()), Bytes: total, DoneBytes: done.Load()})
		}
	}
	start := time.Now()
	for i, j := range jobs {
		g.Go(func() error {
			if ctx.Err() != nil { // cut, or another blob failed, while this one waited
				return nil
			}
			n, f := w.blob(ctx, reg, j, func(d int64) { done.Add(d); progress() })
			results[i] = blobResult{fail: f, bytes: n, done: f == nil && (n == j.desc.Size || (w.opts.NoDownload && !j.config))}
			if f != nil {
				cancel() // the verdict is known; stop the other downloads
				return nil
			}
			doneBlobs.Add(1)
			progress()
			return nil
		})
	}
	_ = g.Wait() // failures are in results
	secs := time.Since(start).Seconds()
	for i, r := range results {
		w.download.Bytes += r.bytes
		if r.done {
			w.download.Blobs++
			if !jobs[i].config {
				w.download.Layers++
			}
		}
	}
	w.download.Duration = report.Duration(secs * float64(time.Second))
	if secs > 0 {
		w.download.MBps = float64(w.download.Bytes) / 1e6 / secs
	}
	for _, r := range results {
		if r.fail != nil {
			return r.fail
		}
	}
	if w.download.Blobs != len(jobs) {
		// cancelled before every blob ran: only the overall timeout does that
		return &failure{ep: reg, step: report.StepBlob, code: report.CodeCanceled, cut: true,
			summary: fmt.Sprintf("cut after %d of %d blobs", w.download.Blobs, len(jobs))}
	}
	if w.opts.NoDownload && w.opts.Sample {
		w.download.Partial = "sample"
		w.warn(report.CodeNotDownloaded, reg.hostport, fmt.Sprintf("a quick round: the config blob read through every redirect, its %d layers NOT read: this is not a full pull", len(m.Layers)))
		return nil
	}
	if w.opts.NoDownload {
		w.download.Partial = "no-download"
		w.warn(report.CodeNotDownloaded, reg.hostport, fmt.Sprintf("--no-download: %d layers reached through every redirect and their first byte read, NOT downloaded: sizes and digests were not checked, and this is not a full pull", w.download.Layers))
		return nil
	}
	w.download.Verified = true
	return nil
}

// blob downloads one blob through every redirect and verifies its size and digest while reading.
func (w *walk) blob(ctx context.Context, reg *endpoint, j blobJob, progress func(int64)) (int64, *failure) {
	what := "layer " + short(j.desc.Digest)
	if j.config {
		what = "config " + short(j.desc.Digest)
	}
	u := w.apiURL(w.ref.Repository, "blobs", j.desc.Digest)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	resp, f := w.request(ctx, reg, http.MethodGet, u, nil, report.RoleBlob)
	if f != nil {
		if f.cancelled {
			return 0, nil // another blob's failure is the verdict
		}
		return 0, f
	}
	defer resp.Body.Close()
	ep := w.endpointOf(resp, reg)
	if resp.StatusCode != http.StatusOK {
		body, _, _ := registry.ReadCapped(resp.Body, registry.MaxErrorBody)
		return 0, w.statusFailure(ep, resp, body, report.StepBlob, "the download of "+what)
	}
	if w.opts.NoDownload && !j.config {
		return w.firstByte(ep, resp, what, progress)
	}
	var h hash.Hash
	switch {
	case strings.HasPrefix(j.desc.Digest, "sha256:"):
		h = sha256.New()
	default:
		h = sha512.New()
	}
	pr := &progressReader{r: resp.Body, onRead: progress}
	pr.last.Store(time.Now().UnixNano())
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(min(w.opts.StallTimeout/4, time.Second))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if time.Since(time.Unix(0, pr.last.Load())) > w.opts.StallTimeout {
					cancel(errStalled)
					return
				}
			}
		}
	}()
	var sink io.Writer = h
	var cfgBuf *capWriter
	if j.config {
		cfgBuf = &capWriter{max: maxConfigBytes}
		sink = io.MultiWriter(h, cfgBuf)
	}
	start := time.Now()
	buf := make([]byte, copyBufSize)
	// read one byte past the declared size: an endless or oversized body is a finding, not a hang
	n, err := io.CopyBuffer(sink, io.LimitReader(pr, j.desc.Size+1), buf)
	dur := time.Since(start)
	fail := func(code report.Code, summary string, lines ...string) (int64, *failure) {
		f := &failure{ep: ep, step: report.StepBlob, code: code, summary: summary, evidence: lines}
		return n, w.fail(f, f.lines(), report.Duration(dur))
	}
	hopLine := w.hopChain(resp)
	if err != nil {
		if context.Cause(ctx) == errStalled {
			return fail(report.CodeBlobStalled, fmt.Sprintf("the download of %s from %s stalled: no bytes for %s after %s of %s", what, ep.hostport, w.opts.StallTimeout, report.HumanBytes(n), report.HumanBytes(j.desc.Size)), hopLine)
		}
		if w.ctx.Err() != nil || ctx.Err() != nil {
			return n, nil // cancelled: another blob's failure or the overall timeout decides
		}
		return fail(report.CodeBlobFailed, fmt.Sprintf("the download of %s from %s broke after %s of %s: %v", what, ep.hostport, report.HumanBytes(n), report.HumanBytes(j.desc.Size), err), hopLine)
	}
	if n != j.desc.Size {
		return fail(report.CodeSizeMismatch, fmt.Sprintf("%s from %s has a different size than the manifest says", what, ep.hostport),
			fmt.Sprintf("manifest size %d, received %s%d bytes", j.desc.Size, map[bool]string{true: "more than ", false: ""}[n > j.desc.Size], min(n, j.desc.Size)), hopLine)
	}
	got := strings.SplitN(j.desc.Digest, ":", 2)[0] + ":" + hex.EncodeToString(h.Sum(nil))
	if got != j.desc.Digest {
		return fail(report.CodeDigestMismatch, fmt.Sprintf("%s from %s does not match its digest: the bytes were altered on the way or in storage", what, ep.hostport),
			"expected "+j.desc.Digest, "received "+got, hopLine)
	}
	if j.config && !w.fromIndex { // an index entry's platform was already matched
		if f := w.checkConfigPlatform(reg, cfgBuf.b); f != nil {
			return n, f
		}
	}
	mbps := 0.0
	if dur > 0 {
		mbps = float64(n) / 1e6 / dur.Seconds()
	}
	w.step(ep, report.StepBlob, report.Pass, "", fmt.Sprintf("%s: %s in %s (%.1f MB/s), digest verified; %s", what, report.HumanBytes(n), dur.Round(time.Millisecond), mbps, hopLine), report.Evidence{}, report.Duration(dur))
	return n, nil
}

// firstByte reads one byte of a layer and closes the body (--no-download): the host that serves the
// blob is proven to answer with data, and nothing more is transferred.
func (w *walk) firstByte(ep *endpoint, resp *registry.Response, what string, progress func(int64)) (int64, *failure) {
	start := time.Now()
	one := make([]byte, 1)
	n, err := io.ReadFull(resp.Body, one)
	dur := time.Since(start)
	hopLine := w.hopChain(resp)
	if err != nil && !(err == io.EOF && n == 0) { // an empty blob has no first byte
		f := &failure{ep: ep, step: report.StepBlob, code: report.CodeBlobFailed, evidence: []string{hopLine},
			summary: fmt.Sprintf("the first byte of %s from %s did not arrive: %v", what, ep.hostport, err)}
		return int64(n), w.fail(f, f.lines(), report.Duration(dur))
	}
	progress(int64(n))
	w.step(ep, report.StepBlob, report.Pass, "", fmt.Sprintf("%s: first byte received (--no-download: not downloaded, digest not checked); %s", what, hopLine), report.Evidence{}, report.Duration(dur))
	return int64(n), nil
}

func (w *walk) hopChain(resp *registry.Response) string {
	var parts []string
	for _, h := range resp.Hops {
		s := h.Snapshot()
		parts = append(parts, fmt.Sprintf("%s → %d", s.Host, s.Status))
	}
	return "via " + strings.Join(parts, ", ")
}

type progressReader struct {
	r      io.Reader
	last   atomic.Int64
	onRead func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.last.Store(time.Now().UnixNano())
		p.onRead(int64(n))
	}
	return n, err
}

type capWriter struct {
	b   []byte
	max int
}

func (c *capWriter) Write(p []byte) (int, error) {
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
