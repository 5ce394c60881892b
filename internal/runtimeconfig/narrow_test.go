package runtimeconfig

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// onlyFS shows the top-level directories keep of a host root and nothing else, as a pod that
// mounts only those host directories under its --host-root sees the node.
type onlyFS struct {
	fsys fs.FS
	keep []string // "etc", "usr"
}

func (o onlyFS) allowed(name string) bool {
	top, _, _ := strings.Cut(name, "/")
	return name == "." || slices.Contains(o.keep, top)
}

func (o onlyFS) Open(name string) (fs.File, error) {
	if !o.allowed(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return o.fsys.Open(name)
}

func (o onlyFS) Stat(name string) (fs.FileInfo, error) {
	if !o.allowed(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fs.Stat(o.fsys, name)
}

func (o onlyFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !o.allowed(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	es, err := fs.ReadDir(o.fsys, name)
	if name == "." {
		es = slices.DeleteFunc(es, func(e fs.DirEntry) bool { return !o.allowed(e.Name()) })
	}
	return es, err
}

// Lstat and ReadLink see a kept top-level symlink (lib -> usr/lib) as the directory a bind mount
// of it shows; deeper symlinks stay symlinks.
func (o onlyFS) Lstat(name string) (fs.FileInfo, error) {
	if !o.allowed(name) {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
	}
	if !strings.Contains(name, "/") {
		return fs.Stat(o.fsys, name)
	}
	return fs.Lstat(o.fsys, name)
}

func (o onlyFS) ReadLink(name string) (string, error) {
	if !o.allowed(name) || !strings.Contains(name, "/") {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return fs.ReadLink(o.fsys, name)
}

// narrowLosses are the corpus nodes whose runtime report differs under the narrow host mount, and
// what differs; docs/rbac.md gives the figures. A change here changes what --host-mount narrow costs.
var narrowLosses = map[string]string{
	"containerd-docs-private-ca":        "version, versionSource, warnings",
	"aks-http-proxy":                    "version, versionSource",
	"aks-network-isolated-ubuntu2404":   "version, versionSource",
	"aks-ubuntu2204":                    "version, versionSource",
	"aks-ubuntu2404-artifact-streaming": "version, versionSource",
	"azurelinux3-kata":                  "version, versionSource",
	"crio-kubeadm-blocked-source":       "resolver, version, versionSource, warnings",
	"crio-kubeadm-dropin-mirror":        "resolver, version, versionSource, warnings",
	"eks-al2-docker-certs-d":            "version, versionSource",
	"eks-al2-import-replaces-cri":       "configPath, version, versionSource",
	"flatcar-certs-d-default-path":      "resolver, warnings",
	"gke-ubuntu-legacy-mirror":          "version, versionSource",
	"k3s-registries-yaml":               "configPath, hosts, proxy, warnings",
	"k3s-wildcard-mirror":               "configPath, hosts",
	"mariner2-hostless-toml":            "hosts, version, versionSource, warnings",
	"microk8s-docker-hub":               "configPath, hosts, resolver, warnings",
	"microk8s-local-registry":           "configPath, hosts, resolver, warnings",
	"microk8s-proxy":                    "configPath, hosts, proxy, resolver, warnings",
	"minikube-insecure-registry":        "version, versionSource",
	"rke2-agent-proxy":                  "configPath, hosts, proxy, warnings",
}

// The narrow host mount against the whole root, on every node of the distribution corpus: the
// runtime's report (the JSON of `pullpath runtime`) read from NarrowRoot alone, compared with the
// report read from /. What differs, node by node, is what --host-mount narrow loses.
func TestNarrowRootAgainstTheWholeRoot(t *testing.T) {
	dirs, err := filepath.Glob("testdata/corpus/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var keep []string
	for _, d := range NarrowRoot {
		keep = append(keep, strings.TrimPrefix(d, "/"))
	}
	same, sameHosts := 0, 0
	got := map[string]string{}
	for _, dir := range dirs {
		c := readCase(t, dir)
		root := os.DirFS(filepath.Join(dir, "root"))
		whole, err := Load(Options{Root: root, Name: "/", Image: c.image})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		narrow, err := Load(Options{Root: onlyFS{root, keep}, Name: "/", Image: c.image})
		if err != nil {
			got[c.name] = "could not read: " + err.Error()
			continue
		}
		diff := configDiff(t, whole, narrow)
		if len(diff) == 0 {
			same++
		} else {
			got[c.name] = strings.Join(diff, ", ")
		}
		if !slices.Contains(diff, "hosts") {
			sameHosts++
		}
	}
	for _, name := range sortedKeys(got) {
		t.Logf("%-40s %s", name, got[name])
	}
	t.Logf("narrow host mount %v: %d/%d nodes give the same runtime report as the whole root, %d/%d the same hosts in the same order", NarrowRoot, same, len(dirs), sameHosts, len(dirs))
	for _, name := range sortedKeys(got) {
		if narrowLosses[name] != got[name] {
			t.Errorf("%s: the narrow mount loses %q, want %q (update narrowLosses and docs/rbac.md)", name, got[name], narrowLosses[name])
		}
	}
	for name, want := range narrowLosses {
		if _, ok := got[name]; !ok {
			t.Errorf("%s: the narrow mount no longer loses %q (update narrowLosses and docs/rbac.md)", name, want)
		}
	}
}

// configDiff names the top-level fields of the runtime report that differ (files read aside: they
// differ whenever a file is out of reach, and the fields say what that changed).
func configDiff(t *testing.T, a, b *Config) []string {
	t.Helper()
	fields := func(c *Config) map[string]json.RawMessage {
		raw, err := json.Marshal(c.Report())
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	fa, fb := fields(a), fields(b)
	var out []string
	for _, k := range sortedKeys(fa) {
		if k != "files" && string(fa[k]) != string(fb[k]) {
			out = append(out, k)
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
