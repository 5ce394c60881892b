package probe

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

// manifests fetches the manifest for the reference and, for an index, the one for the platform.
func (w *walk) manifests(reg *endpoint) (*registry.Manifest, *failure) {
	u := w.apiURL(w.ref.Repository, "manifests", w.ref.Identifier())
	hdr := http.Header{"Accept": {registry.AcceptManifests}}
	// containerd resolves with HEAD; the body of a HEAD 4xx is empty, so a GET reads the reason.
	head, f := w.requestAuth(reg, http.MethodHead, u, hdr)
	if f != nil {
		return nil, f
	}
	head.Body.Close()
	w.resolved = head.StatusCode >= 200 && head.StatusCode < 300
	if w.noPing {
		// GET /v2/ was skipped: the HEAD is this round's proof that the registry API answers
		w.step(reg, report.StepHTTP, report.Pass, "", fmt.Sprintf("HEAD %s → %d: the registry API answers (GET /v2/ is a full round's)", u.Path, head.StatusCode), report.Evidence{}, lastHop(head).Duration)
		if w.fromMemo && head.StatusCode != http.StatusUnauthorized && head.StatusCode != http.StatusForbidden {
			w.step(reg, report.StepAuth, report.Pass, "", "the authorization of an earlier round, kept while it is valid", report.Evidence{}, 0)
		}
	}
	digest := head.Header.Get("Docker-Content-Digest")
	if w.ref.Digest != "" {
		digest = w.ref.Digest
	}
	if head.StatusCode == http.StatusOK && registry.ValidDigest(digest) {
		u = w.apiURL(w.ref.Repository, "manifests", digest)
	} else {
		digest = w.ref.Digest
	}
	memoKey := reg.hostport + "/" + w.ref.Repository + "@" + digest + " " + w.platform.String()
	if w.opts.Memo != nil && w.opts.NoDownload && w.opts.Sample && w.resolved && registry.ValidDigest(digest) {
		if m := w.opts.Memo.manifest(memoKey); m != nil {
			w.step(reg, report.StepManifest, report.Pass, "", fmt.Sprintf("%s: %s, unchanged since an earlier round: its manifest kept", w.ref.Identifier(), short(digest)), report.Evidence{}, 0)
			return m, nil
		}
	}
	m, f := w.manifestsAt(reg, u, digest)
	if f == nil && registry.ValidDigest(digest) {
		w.opts.Memo.keepManifest(memoKey, m)
	}
	return m, f
}

// manifestsAt fetches the manifest at u (of digest) and, for an index, the platform's.
func (w *walk) manifestsAt(reg *endpoint, u *url.URL, digest string) (*registry.Manifest, *failure) {
	m, f := w.fetchManifest(reg, u, digest, -1, w.ref.Identifier())
	if f != nil || !m.Index {
		return m, f
	}
	var avail []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			continue
		}
		if w.platform.Match(*d.Platform) {
			cu := w.apiURL(w.ref.Repository, "manifests", d.Digest)
			w.fromIndex = true
			return w.fetchManifest(reg, cu, d.Digest, d.Size, d.Platform.String()+" manifest "+short(d.Digest))
		}
		avail = append(avail, d.Platform.String())
	}
	f = &failure{ep: reg, step: report.StepManifest, code: report.CodePlatformMismatch,
		summary:  fmt.Sprintf("the image index has no manifest for this node's platform %s (it has: %s)", w.platform, strings.Join(avail, ", ")),
		evidence: []string{"index " + short(digest) + " lists " + strings.Join(avail, ", "), "node platform: " + w.platform.String()}}
	return nil, w.fail(f, f.lines(), 0)
}

func (w *walk) fetchManifest(reg *endpoint, u *url.URL, wantDigest string, wantSize int64, what string) (*registry.Manifest, *failure) {
	resp, f := w.requestAuth(reg, http.MethodGet, u, http.Header{"Accept": {registry.AcceptManifests}})
	if f != nil {
		return nil, f
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _, _ := registry.ReadCapped(resp.Body, registry.MaxErrorBody)
		return nil, w.statusFailure(w.endpointOf(resp, reg), resp, body, report.StepManifest, "the manifest request for "+what)
	}
	body, more, err := registry.ReadCapped(resp.Body, registry.MaxManifestBytes)
	fail := func(code report.Code, summary string, lines ...string) (*registry.Manifest, *failure) {
		f := &failure{ep: w.endpointOf(resp, reg), step: report.StepManifest, code: code, summary: summary, evidence: lines}
		return nil, w.fail(f, f.lines(), lastHop(resp).Duration)
	}
	if err != nil {
		return fail(report.CodeHTTPFailed, "reading the manifest failed: "+err.Error())
	}
	if more {
		return fail(report.CodeManifestTooLarge, fmt.Sprintf("the manifest for %s is larger than %d bytes; the runtime refuses it", what, registry.MaxManifestBytes))
	}
	sum := sha256.Sum256(body)
	got := "sha256:" + hex.EncodeToString(sum[:])
	if strings.HasPrefix(wantDigest, "sha256:") && got != wantDigest {
		return fail(report.CodeManifestDigest, fmt.Sprintf("the manifest for %s does not match its digest", what),
			"expected "+wantDigest, "received "+got+fmt.Sprintf(" (%d bytes)", len(body)))
	}
	if wantSize >= 0 && int64(len(body)) != wantSize {
		return fail(report.CodeSizeMismatch, fmt.Sprintf("the manifest for %s has %d bytes, the index says %d", what, len(body), wantSize))
	}
	m, err := registry.ParseManifest(resp.Header.Get("Content-Type"), body)
	if err != nil {
		code := report.CodeManifestInvalid
		if errors.Is(err, registry.ErrUnsupportedManifest) {
			code = report.CodeManifestUnsupported
		}
		return fail(code, fmt.Sprintf("the manifest for %s cannot be used: %v", what, err))
	}
	kind := "image manifest"
	if m.Index {
		kind = fmt.Sprintf("index of %d manifests", len(m.Manifests))
	} else {
		var total int64
		for _, l := range m.Layers {
			total += l.Size
		}
		kind += fmt.Sprintf(", %d layers, %s", len(m.Layers), report.HumanBytes(total))
	}
	w.step(reg, report.StepManifest, report.Pass, "", fmt.Sprintf("%s: %s %s (%s)", what, short(got), kind, shortMedia(m.MediaType)), report.Evidence{}, lastHop(resp).Duration)
	return m, nil
}

// checkConfigPlatform verifies a single-manifest image's config platform, as containerd does.
func (w *walk) checkConfigPlatform(reg *endpoint, cfg []byte) *failure {
	var c registry.ImageConfig
	if err := json.Unmarshal(cfg, &c); err != nil || c.OS == "" {
		return nil // not an image config containerd can match on; it would not reject it either
	}
	p := registry.Platform{OS: c.OS, Architecture: c.Architecture, Variant: c.Variant}
	if w.platform.Match(p) {
		return nil
	}
	f := &failure{ep: reg, step: report.StepManifest, code: report.CodePlatformMismatch,
		summary:  fmt.Sprintf("the image is built for %s, this node is %s", p, w.platform),
		evidence: []string{"image config: os=" + c.OS + " architecture=" + c.Architecture + " variant=" + c.Variant}}
	return w.fail(f, f.lines(), 0)
}

func short(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

func shortMedia(mt string) string {
	switch mt {
	case registry.MediaOCIIndex:
		return "OCI index"
	case registry.MediaDockerList:
		return "Docker manifest list"
	case registry.MediaOCIManifest:
		return "OCI manifest"
	case registry.MediaDockerManifest:
		return "Docker v2 manifest"
	}
	return mt
}
