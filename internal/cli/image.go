//go:build !probeonly

package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/spf13/cobra"

	"github.com/pullpath/pullpath/internal/capped"
)

// ProbePath is where the probe binary sits in the probe image; verify --probe-image runs it.
const ProbePath = "/pullpath"

type imagePushOptions struct {
	base
	ref       string
	platforms []string
	binDir    string
	insecure  bool
	caFile    string
	addCAs    []string
	noSysCAs  bool
	timeout   time.Duration
	watcher   bool
	fullDir   string                 // --binary-dir: the full builds, for --watcher
	self      func() (string, error) // this program, the watcher's binary for its own platform

	platformsChanged bool // --platform given: a missing binary is not the defaults' fault
}

// caBundlePath is where Go (and most TLS stacks) look for the system roots on Linux.
const caBundlePath = "/etc/ssl/certs/ca-certificates.crt"

// systemBundles are the usual places of the building machine's CA bundle (Go's own list, cut).
var systemBundles = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem", "/etc/ssl/ca-bundle.pem"}

func newImageCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build and push the probe image (verify --probe-image) or the watcher image (--watcher)",
	}
	onlySubcommands(cmd, "subcommand", "push")
	cmd.AddCommand(newImagePushCmd(s))
	return cmd
}

func newImagePushCmd(s Streams) *cobra.Command {
	o := &imagePushOptions{base: base{streams: s}, self: os.Executable}
	cmd := &cobra.Command{
		Use:   "push REF",
		Short: "Build the probe or watcher image (a static binary, one layer per platform, an OCI index) and push it",
		Long: `Build the probe image in-process and push it to REF: per platform, one layer with
the static probe-only pullpath at /pullpath (the entrypoint) and a CA bundle,
under an OCI index; the same contents give the same digest. Prints the digest
reference, for 'pullpath verify IMAGE --probe-image <digest reference>'.
--watcher: the full pullpath instead, run as 65532, for 'watch manifests'.

Exit codes: 0 pushed, 2 could not build or push.
` + manual("image.md"),
		Example: `  pullpath image push myreg.azurecr.io/tools/pullpath-probe:v1
  pullpath image push registry.corp.example/pullpath-probe:v1 --platform linux/amd64 --probe-binary-dir dist
  pullpath image push --watcher myreg.azurecr.io/tools/pullpath:v1 --binary-dir dist`,
		Args: oneImage("pullpath image push myreg.azurecr.io/tools/pullpath-probe:v1"),
	}
	lifecycle(cmd, o)
	f := cmd.Flags()
	f.StringSliceVar(&o.platforms, "platform", []string{"linux/amd64", "linux/arm64"}, "platforms of the index (comma-separated linux/<arch>)")
	f.StringVar(&o.binDir, "probe-binary-dir", "", "directory holding pullpath-probe-linux-<arch> (default: next to this program)")
	f.BoolVar(&o.watcher, "watcher", false, "build the watcher image: the full pullpath, for the Deployment of 'watch manifests'")
	f.StringVar(&o.fullDir, "binary-dir", "", "with --watcher: directory holding pullpath-linux-<arch> or scripts/build.sh's output (default: this program, for its platform)")
	f.BoolVar(&o.insecure, "insecure", false, "allow plain HTTP and unverified TLS (test registries only)")
	f.StringVar(&o.caFile, "ca-file", "", "also trust the CA certificates in this PEM file")
	f.StringArrayVar(&o.addCAs, "add-ca", nil, "add the CA certificates of this PEM file to the image's bundle (repeatable)")
	f.BoolVar(&o.noSysCAs, "no-system-cas", false, "leave this machine's CA bundle out of the image")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the push")
	groupFlags(f, "Trust", "ca-file", "insecure", "add-ca", "no-system-cas")
	return cmd
}

// Complete takes REF.
func (o *imagePushOptions) Complete(args []string) error {
	o.ref = args[0]
	o.platformsChanged = o.flagChanged("platform")
	return nil
}

// Validate checks the flags.
func (o *imagePushOptions) Validate() error {
	// the probe's parser first: it says what is wrong with the reference
	if _, err := parseImage(o.ref); err != nil {
		return err
	}
	if _, err := o.parseRef(); err != nil {
		return fmt.Errorf("image reference %q: %w", o.ref, err)
	}
	if len(o.platforms) == 0 {
		return errors.New("--platform: give at least one linux/<arch>")
	}
	seen := map[string]bool{}
	for _, p := range o.platforms {
		goos, arch, ok := strings.Cut(p, "/")
		if !ok || goos != "linux" || arch == "" || strings.Contains(arch, "/") {
			return fmt.Errorf("--platform %q: want linux/<arch> (the probe runs on Linux nodes)", p)
		}
		if seen[arch] {
			return fmt.Errorf("--platform %q given twice", p)
		}
		seen[arch] = true
	}
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout %s: want a positive duration, e.g. 5m", o.timeout)
	}
	switch {
	case o.watcher && o.binDir != "":
		return errors.New("--probe-binary-dir: the watcher image holds the full pullpath, not the probe-only build: give --binary-dir")
	case !o.watcher && o.fullDir != "":
		return errors.New("--binary-dir: only with --watcher (the probe image's binaries: --probe-binary-dir)")
	}
	return nil
}

func (o *imagePushOptions) parseRef() (name.Reference, error) {
	var opts []name.Option
	if o.insecure {
		opts = append(opts, name.Insecure)
	}
	return name.ParseReference(o.ref, opts...)
}

// Run builds the index and pushes it.
func (o *imagePushOptions) Run(ctx context.Context) error {
	ref, err := o.parseRef()
	if err != nil {
		return err
	}
	// the files given first (--ca-file, --add-ca), then the binaries: nothing built for a bad flag
	tr, err := o.transport()
	if err != nil {
		return err
	}
	cas, err := o.caBundle()
	if err != nil {
		return err
	}
	idx, err := imageIndex(o.platforms, func(arch string) (v1.Image, error) {
		var b []byte
		var err error
		if o.watcher {
			b, _, err = watcherBinary(o.fullDir, arch, o.self)
		} else {
			b, _, err = probeBinary("", o.binDir, arch)
		}
		if err != nil && !o.platformsChanged {
			err = fmt.Errorf("%w; or push only the platforms you have binaries for, e.g. --platform linux/amd64", err)
		}
		if err != nil {
			return nil, err
		}
		build, what := probeImage, "probe"
		if o.watcher {
			build, what = watcherImage, "watcher"
		}
		img, err := build(arch, b, cas)
		if err != nil {
			return nil, fmt.Errorf("%s image for linux/%s: %w", what, arch, err)
		}
		return img, nil
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithTransport(tr), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(o.streams.Out, ref.Context().Name()+"@"+d.String())
	return err
}

// caBundle is the image's CA bundle: the system one unless refused, then every --add-ca.
func (o *imagePushOptions) caBundle() ([]byte, error) {
	var b []byte
	if !o.noSysCAs {
		paths := systemBundles
		if f := os.Getenv("SSL_CERT_FILE"); f != "" {
			paths = []string{f}
		}
		for _, p := range paths {
			if data, err := capped.ReadFile(p, capped.Max); err == nil {
				b = append(b, data...)
				break
			}
		}
		if b == nil {
			fmt.Fprintln(o.streams.ErrOut, "image push: no CA bundle on this machine: the image trusts only --add-ca")
		}
	}
	for _, f := range o.addCAs {
		data, err := capped.ReadFile(f, capped.Max)
		if err != nil {
			return nil, fmt.Errorf("--add-ca: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("--add-ca %s: no PEM certificate in it", f)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		b = append(b, data...)
	}
	return b, nil
}

func (o *imagePushOptions) transport() (http.RoundTripper, error) {
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.caFile != "" {
		pem, err := capped.ReadFile(o.caFile, capped.Max)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", o.caFile)
		}
		cfg.RootCAs = pool
	}
	if o.insecure {
		cfg.InsecureSkipVerify = true
	}
	tr.TLSClientConfig = cfg
	return tr, nil
}

// imageIndex builds an OCI index of one image per linux/<arch> platform.
func imageIndex(platforms []string, image func(arch string) (v1.Image, error)) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		_, arch, _ := strings.Cut(p, "/")
		img, err := image(arch)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return idx, nil
}

// tarEntry is one entry of an image's single layer; a path ending in / is a directory.
type tarEntry struct {
	path string
	mode int64
	data []byte
}

// caFiles are the CA bundle's entries, its parents first (an unpacker need not invent them);
// none without a bundle.
func caFiles(cas []byte) []tarEntry {
	if len(cas) == 0 {
		return nil
	}
	return []tarEntry{{"/etc/", 0o755, nil}, {"/etc/ssl/", 0o755, nil}, {"/etc/ssl/certs/", 0o755, nil}, {caBundlePath, 0o644, cas}}
}

// probeImage is one layer with bin at ProbePath, its entrypoint, and the CA bundle cas (when
// any), run as root (the probe reads the node's files).
func probeImage(arch string, bin, cas []byte) (v1.Image, error) {
	files := append([]tarEntry{{ProbePath, 0o755, bin}}, caFiles(cas)...)
	return singleLayerImage(arch, files, "pullpath probe", "")
}

// watcherImage is the full pullpath at ProbePath (the manifests run /pullpath watch and
// /pullpath cleanup) and the CA bundle, entries in name order, run as watcherUser. The files
// belong to root and are not writable by the user: the binary is the image's, not the watcher's.
func watcherImage(arch string, bin, cas []byte) (v1.Image, error) {
	files := append(caFiles(cas), tarEntry{ProbePath, 0o755, bin})
	slices.SortFunc(files, func(a, b tarEntry) int { return strings.Compare(a.path, b.path) })
	return singleLayerImage(arch, files, "pullpath watch", watcherUser)
}

// singleLayerImage is an OCI image of one layer holding files (in this order), with ProbePath
// as the entrypoint. Fixed times, owners and modes keep the digest a function of the contents
// alone.
func singleLayerImage(arch string, files []tarEntry, title, user string) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.path, "/"), Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch, Uid: 0, Gid: 0, Format: tar.FormatPAX}
		if strings.HasSuffix(f.path, "/") {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: v1.History{CreatedBy: "pullpath image push", Created: v1.Time{Time: epoch}}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{ProbePath}
	cf.Config.User = user
	cf.Config.Labels = map[string]string{"org.opencontainers.image.title": title}
	return mutate.ConfigFile(img, cf)
}
