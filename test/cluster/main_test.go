package cluster

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pullpath/pullpath/test/internal/kubeapi"
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
func kubeBins() (string, error) { return kubeapi.Bins("kubelet") }

// helperRole runs this test binary as the blob host when PULLPATH_CLUSTER_ROLE is blobs: an HTTPS
// file server over the registry's storage, which is what a redirect target is; as attach, it
// streams a file into a pod's stdin from inside the hub (attachRole).
func helperRole() bool {
	if os.Getenv("PULLPATH_CLUSTER_ROLE") == "attach" {
		attachRole()
	}
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
