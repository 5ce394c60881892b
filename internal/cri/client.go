package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultDialTimeout bounds connecting to the socket and the first (Version) call.
const DefaultDialTimeout = 5 * time.Second

// maxMsgSize matches the kubelet's CRI client (16 MiB): a node with many containers answers
// ListContainers with a large message.
const maxMsgSize = 16 << 20

// Sockets are the runtimes' CRI sockets, relative to the host root, in the order they are tried.
var Sockets = []string{
	"run/containerd/containerd.sock",
	"run/k3s/containerd/containerd.sock",
	"var/run/crio/crio.sock",
}

// FindSocket returns the CRI socket under root the kubelet pulls through — its image service
// endpoint (endpoint, set at origin; "" when the kubelet's flags were not found) — else the first
// of Sockets that exists, or an error naming every path tried.
func FindSocket(root, endpoint, origin string) (string, error) {
	var tried []string
	if p, ok := strings.CutPrefix(endpoint, "unix://"); ok || strings.HasPrefix(endpoint, "/") {
		if !ok {
			p = endpoint
		}
		full := filepath.Join(root, p)
		if isSocket(full) {
			return full, nil
		}
		tried = append(tried, full+" (the kubelet's endpoint, "+origin+")")
	}
	for _, s := range Sockets {
		p := filepath.Join(root, s)
		if isSocket(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("no CRI socket found (tried %s): is the runtime running, and is its socket mounted? give it with --cri=SOCKET", strings.Join(tried, ", "))
}

func isSocket(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&fs.ModeSocket != 0
}

// Client talks to one runtime's ImageService and RuntimeService.
type Client struct {
	Socket string
	conn   *grpc.ClientConn
	image  runtimeapi.ImageServiceClient
	rt     runtimeapi.RuntimeServiceClient
}

// Dial connects to the CRI socket and checks that it answers Version within timeout
// (DefaultDialTimeout when zero). A missing socket is an error that says so.
func Dial(ctx context.Context, socket string, timeout time.Duration) (*Client, error) {
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	fi, err := os.Stat(socket)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("CRI socket %s does not exist: is the runtime running, and is its socket mounted?", socket)
	case err != nil:
		return nil, fmt.Errorf("CRI socket: %w", err)
	case fi.Mode()&fs.ModeSocket == 0:
		return nil, fmt.Errorf("CRI socket %s is not a socket", socket)
	}
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}
	// passthrough: the target is a path, not a name for grpc's resolver
	conn, err := grpc.NewClient("passthrough:///cri", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialer),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("CRI socket %s: %w", socket, err)
	}
	c := &Client{Socket: socket, conn: conn, image: runtimeapi.NewImageServiceClient(conn), rt: runtimeapi.NewRuntimeServiceClient(conn)}
	vctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := c.Version(vctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("CRI socket %s does not answer: %w", socket, err)
	}
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Version returns the runtime's name and version ("containerd v1.6.20").
func (c *Client) Version(ctx context.Context) (string, error) {
	r, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		return "", err
	}
	return r.RuntimeName + " " + r.RuntimeVersion, nil
}

// Image is what the runtime holds for a reference.
type Image struct {
	ID       string   // the image ID (config digest)
	RepoTags []string // tags that name it
}

// ImageStatus returns the image the runtime holds for ref, or nil when it has none.
func (c *Client) ImageStatus(ctx context.Context, ref string) (*Image, error) {
	r, err := c.image.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		return nil, err
	}
	if r.Image == nil {
		return nil, nil
	}
	return &Image{ID: r.Image.Id, RepoTags: r.Image.RepoTags}, nil
}

// Auth is what the runtime presents to the registry; it is never logged or printed.
type Auth struct {
	Username, Password string
	IdentityToken      string
	RegistryToken      string
	ServerAddress      string
}

func (a Auth) empty() bool {
	return a.Username == "" && a.Password == "" && a.IdentityToken == "" && a.RegistryToken == ""
}

// String never shows the secret.
func (a Auth) String() string {
	if a.empty() {
		return "anonymous"
	}
	return "credentials for " + a.ServerAddress
}

// GoString keeps %#v from printing the secret too.
func (a Auth) GoString() string { return "cri.Auth{" + a.String() + "}" }

// PullImage asks the runtime to pull ref with auth (none when empty: the runtime then uses its own
// configured credentials) and returns the image reference it reports.
func (c *Client) PullImage(ctx context.Context, ref string, auth Auth) (string, error) {
	req := &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}
	if !auth.empty() {
		req.Auth = &runtimeapi.AuthConfig{Username: auth.Username, Password: auth.Password, IdentityToken: auth.IdentityToken,
			RegistryToken: auth.RegistryToken, ServerAddress: auth.ServerAddress}
	}
	r, err := c.image.PullImage(ctx, req)
	if err != nil {
		return "", err
	}
	return r.ImageRef, nil
}

// ContainersUsing lists the containers, in any state, whose image is img (by ID or by name): an
// exited container still holds its image, and the kubelet would restart it from there.
func (c *Client) ContainersUsing(ctx context.Context, ref string, img *Image) ([]string, error) {
	r, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, err
	}
	names := map[string]bool{ref: true}
	if img != nil {
		names[img.ID] = true
		for _, t := range img.RepoTags {
			names[t] = true
		}
	}
	var out []string
	for _, ct := range r.Containers {
		spec := ""
		if ct.Image != nil {
			spec = ct.Image.Image
		}
		if names[spec] || names[ct.ImageRef] || (ct.ImageId != "" && names[ct.ImageId]) {
			name := ct.Id
			if ct.Metadata != nil && ct.Metadata.Name != "" {
				name = ct.Metadata.Name + " (" + shortID(ct.Id) + ")"
			}
			out = append(out, name)
		}
	}
	return out, nil
}

// RemoveImage removes ref from the runtime's store.
func (c *Client) RemoveImage(ctx context.Context, ref string) error {
	_, err := c.image.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	return err
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
