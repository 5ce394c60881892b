package cluster

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
)

// skipReason is set once by TestMain; every test of the tier skips with it.
var skipReason string

// shared is the package's one cluster: bring-up takes seconds, so tests share it and use their own
// namespaces. TestMain tears it down and fails the run if anything of it is left.
var shared struct {
	once sync.Once
	c    *cluster
	err  error
}

func TestMain(m *testing.M) {
	if helperRole() {
		return
	}
	skipReason = prerequisites()
	code := m.Run()
	if shared.c != nil {
		if err := shared.c.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "cluster tier: teardown left something behind:", err)
			code = 1
		}
		shared.c.writeReport()
	}
	os.Exit(code)
}

// sharedCluster brings the scenario cluster up on first use and returns it.
func sharedCluster(t *testing.T) *cluster {
	t.Helper()
	if skipReason != "" {
		t.Skip("cluster tier skipped: " + skipReason)
	}
	shared.once.Do(func() { shared.c, shared.err = startCluster(scenario) })
	if shared.err != nil {
		t.Fatalf("cluster bring-up: %v", shared.err)
	}
	return shared.c
}

// prerequisites says why the tier cannot run here, or "".
func prerequisites() string {
	switch {
	case os.Getenv("PULLPATH_CLUSTER") == "0":
		return "PULLPATH_CLUSTER=0"
	case os.Geteuid() != 0:
		return "not root: run the README's test command as root (scripts/test.sh) for the cluster tier"
	}
	for _, tool := range []string{"containerd", "ctr", "runc", "docker-registry", "dnsmasq", "htpasswd", "nsenter", "unshare", "ip", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is missing: scripts/test.sh installs the tier's packages"
		}
	}
	if _, err := os.Stat(filepath.Join(cniBin, "bridge")); err != nil {
		return "the CNI plugins are missing (" + cniBin + "): apt-get install containernetworking-plugins"
	}
	if _, err := kubeBins(); err != nil {
		return err.Error()
	}
	return ""
}

// kubeBins is the directory holding kube-apiserver, kubelet and etcd: $PULLPATH_KUBEBINS, else the
// newest cache entry scripts/kubebins.sh made.
func kubeBins() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"kube-apiserver", "kubelet", "etcd"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.Mode()&0o111 == 0 {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv("PULLPATH_KUBEBINS"); dir != "" {
		if !has(dir) {
			return "", fmt.Errorf("PULLPATH_KUBEBINS=%s lacks kube-apiserver, kubelet or etcd", dir)
		}
		return dir, nil
	}
	dirs, _ := filepath.Glob("/var/cache/pullpath/kubebins-" + kubeVersion + "-*")
	sort.Slice(dirs, func(i, j int) bool { return modTime(dirs[i]) > modTime(dirs[j]) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no kube binaries: run scripts/kubebins.sh (a cold build takes about 20 min) and set PULLPATH_KUBEBINS to the directory it prints")
}

func modTime(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.ModTime().UnixNano()
}

// helperRole runs this test binary as the blob host when PULLPATH_CLUSTER_ROLE is set: an HTTPS
// file server over the registry's storage, which is what a redirect target is.
func helperRole() bool {
	if os.Getenv("PULLPATH_CLUSTER_ROLE") != "blobs" {
		return false
	}
	srv := &http.Server{Addr: os.Getenv("PULLPATH_CLUSTER_ADDR"), Handler: http.FileServer(http.Dir(os.Getenv("PULLPATH_CLUSTER_DIR"))),
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12}}
	err := srv.ListenAndServeTLS(os.Getenv("PULLPATH_CLUSTER_CERT"), os.Getenv("PULLPATH_CLUSTER_KEY"))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
	return true
}
