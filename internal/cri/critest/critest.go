// Package critest is an in-process CRI runtime for tests: ImageService and the RuntimeService
// calls pullpath makes, served over gRPC on a unix socket.
package critest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is a fake runtime: an image store, a container list and a scripted pull result.
type Runtime struct {
	runtimeapi.UnimplementedImageServiceServer
	runtimeapi.UnimplementedRuntimeServiceServer

	Socket string

	mu         sync.Mutex
	images     map[string]string // reference -> image ID
	containers []*runtimeapi.Container
	pullErr    error
	pulls      []*runtimeapi.PullImageRequest
	removed    []string
}

// Start serves a fake runtime on a socket in t.TempDir(); it stops when the test ends.
func Start(t testing.TB) *Runtime {
	t.Helper()
	// unix socket paths are limited to 108 bytes: a long test name makes TempDir too long
	dir, err := shortDir(t)
	if err != nil {
		t.Fatal(err)
	}
	return StartAt(t, filepath.Join(dir, "cri.sock"))
}

// StartAt serves a fake runtime on the socket path sock (its directory is created).
func StartAt(t testing.TB, sock string) *Runtime {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runtime{Socket: sock, images: map[string]string{}}
	s := grpc.NewServer()
	runtimeapi.RegisterImageServiceServer(s, r)
	runtimeapi.RegisterRuntimeServiceServer(s, r)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return r
}

// AddImage puts ref in the store with the given ID.
func (r *Runtime) AddImage(ref, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images[ref] = id
}

// AddContainer records a container (any state) using image ref.
func (r *Runtime) AddContainer(name, ref string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.containers = append(r.containers, &runtimeapi.Container{Id: name + "-0123456789abcdef", Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image: &runtimeapi.ImageSpec{Image: r.images[ref]}, ImageRef: r.images[ref], State: runtimeapi.ContainerState_CONTAINER_EXITED})
}

// FailPulls makes every pull fail with the runtime's error text (code Unknown, as containerd does).
func (r *Runtime) FailPulls(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pullErr = status.Error(codes.Unknown, text)
}

// Pulls returns the pull requests received, credentials included.
func (r *Runtime) Pulls() []*runtimeapi.PullImageRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*runtimeapi.PullImageRequest(nil), r.pulls...)
}

// Removed returns the references removed.
func (r *Runtime) Removed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.removed...)
}

// Has reports whether ref is in the store.
func (r *Runtime) Has(ref string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.images[ref]
	return ok
}

func (r *Runtime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "containerd", RuntimeVersion: "v1.6.20-fake", RuntimeApiVersion: "v1"}, nil
}

func (r *Runtime) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.images[req.GetImage().GetImage()]
	if !ok {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: id, RepoTags: []string{req.Image.Image}}}, nil
}

func (r *Runtime) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pulls = append(r.pulls, req)
	if r.pullErr != nil {
		return nil, r.pullErr
	}
	id := "sha256:" + "fa4e" + "0000000000000000000000000000000000000000000000000000000000"
	r.images[req.GetImage().GetImage()] = id
	return &runtimeapi.PullImageResponse{ImageRef: id}, nil
}

func (r *Runtime) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := req.GetImage().GetImage()
	delete(r.images, ref)
	r.removed = append(r.removed, ref)
	return &runtimeapi.RemoveImageResponse{}, nil
}

func (r *Runtime) ListContainers(context.Context, *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &runtimeapi.ListContainersResponse{Containers: r.containers}, nil
}
