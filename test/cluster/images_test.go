package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/pullpath/pullpath/test/internal/netnsdial"
)

// pushedImage is an image in the tier's registry.
type pushedImage struct {
	Ref       string // registry.cluster.test/repo:tag
	DigestRef string // registry.cluster.test/repo@sha256:…
	Digest    string
	Image     v1.Image
}

// namedImage is an image with the names a runtime should list it under.
type namedImage struct {
	img   v1.Image
	names []string
}

// newImage is a fresh image (random layers: in no runtime's content store) whose entrypoint is the
// pause program, so a container of it runs until stopped.
func newImage(pause v1.Layer, layers int, layerBytes int64) (v1.Image, error) {
	img := empty.Image
	if layers > 0 {
		var err error
		if img, err = random.Image(layerBytes, int64(layers)); err != nil {
			return nil, err
		}
	}
	img, err := mutate.AppendLayers(img, pause)
	if err != nil {
		return nil, err
	}
	return withConfig(img, "/pause")
}

// withConfig makes an image runnable here: this machine's platform, and entrypoint as its command.
func withConfig(img v1.Image, entrypoint string) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Cmd = nil
	if entrypoint != "" {
		cf.Config.Entrypoint = []string{entrypoint}
	}
	return mutate.ConfigFile(img, cf)
}

// fileLayer is a layer holding the file prog at path (mode 0755), compressed once.
func fileLayer(prog, path string) (v1.Layer, error) {
	body, err := os.ReadFile(prog)
	if err != nil {
		return nil, err
	}
	return filesLayer(layerFile{path, body, 0o755})
}

// layerFile is one regular file of a layer.
type layerFile struct {
	path string
	body []byte
	mode int64
}

// filesLayer is a layer holding the files and their parent directories, compressed once.
func filesLayer(files ...layerFile) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		name := strings.TrimPrefix(f.path, "/")
		var parents []string
		for d := filepath.Dir(name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil },
		tarball.WithCompressedCaching)
}

func (c *cluster) pauseImage() pushedImage {
	img, err := newImage(c.pauseLayer, 0, 0)
	c.check(err, "pause image")
	return pushedImage{Ref: pauseRef, Image: img}
}

// Push writes a fresh image to the registry as registry.cluster.test/repoTag (":v1" when no tag).
func (c *cluster) Push(t testing.TB, repoTag string) pushedImage {
	t.Helper()
	var im pushedImage
	err := catch(func() { im = c.push(repoTag) })
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func (c *cluster) push(repoTag string) pushedImage {
	if !strings.Contains(repoTag, ":") {
		repoTag += ":v1"
	}
	img, err := newImage(c.pauseLayer, 2, 64<<10)
	c.check(err, "image")
	return c.pushImage(repoTag, img)
}

// pushImage writes img to the registry as registry.cluster.test/repoTag (tag required).
func (c *cluster) pushImage(repoTag string, img v1.Image) pushedImage {
	// pushed through the registry that serves blobs itself, dialing inside the hub
	ref, err := name.ParseReference(registry + ":5000/" + repoTag)
	c.check(err, "reference")
	dial := netnsdial.In(c.hub)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.ca.Pool()}, DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dial(ctx, network, registryIP+":5000")
	}}
	c.check(remote.Write(ref, img, remote.WithTransport(tr)), "push %s", repoTag)
	d, err := img.Digest()
	c.check(err, "digest")
	repo := registry + "/" + repoTag[:strings.LastIndex(repoTag, ":")]
	im := pushedImage{Ref: registry + "/" + repoTag, DigestRef: repo + "@" + d.String(), Digest: d.String(), Image: img}
	c.mu.Lock()
	c.Images[repoTag] = im
	c.mu.Unlock()
	return im
}

// ImportImage puts img into a node's runtime under names (as if it had been pulled: give the tag
// and the digest reference), without any pull.
func (c *cluster) ImportImage(t testing.TB, nodeName string, img v1.Image, names ...string) {
	t.Helper()
	n := c.node(nodeName)
	if n == nil {
		t.Fatalf("no node %s", nodeName)
	}
	if err := catch(func() { c.importImages(n, []namedImage{{img, names}}) }); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) node(name string) *node {
	for _, n := range c.nodes {
		if n.spec.Name == name {
			return n
		}
	}
	return nil
}

// importImages writes the images as one OCI archive, each manifest annotated with the names
// containerd gives it (io.containerd.image.name), and imports it into the node's k8s.io namespace,
// where the kubelet sees it. The manifests stay byte for byte the registry's, so digests match.
func (c *cluster) importImages(n *node, imgs []namedImage) {
	dir, err := os.MkdirTemp(c.dir, "oci-")
	c.check(err, "temp dir")
	defer os.RemoveAll(dir)
	p, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
	c.check(err, "OCI layout")
	for _, im := range imgs {
		for _, nm := range im.names {
			c.check(p.AppendImage(im.img, layout.WithAnnotations(map[string]string{"io.containerd.image.name": nm})), "OCI layout")
		}
	}
	archive := filepath.Join(dir, "images.tar")
	c.check(tarDir(filepath.Join(dir, "layout"), archive), "OCI archive")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ctr", "--address", n.sock, "-n", "k8s.io", "images", "import", archive).CombinedOutput()
	c.check(err, "import into %s: %s", n.spec.Name, out)
}

func tarDir(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(body)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// catch turns a setup failure of a harness step into an error, for helpers tests call.
func catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(setupError)
			if !ok {
				panic(r)
			}
			err = se.err
		}
	}()
	f()
	return nil
}
