package credprovider

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// TestProviderGetsTheKubeletsEnvironment: a provider runs with the environment the kubelet's unit
// gives it and the provider config's env, never the probe's own (which may be a borrowed image's:
// HTTPS_PROXY, SSL_CERT_FILE, LD_PRELOAD); under a host root its CA bundle is the node's.
func TestProviderGetsTheKubeletsEnvironment(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:9")
	t.Setenv("LD_PRELOAD", "/evil/lib.so")
	fsys := fstest.MapFS{
		"lib/systemd/system/kubelet.service":                 {Data: []byte("[Service]\nExecStart=/usr/bin/kubelet\n")},
		"etc/systemd/system/kubelet.service.d/10-env.conf":   {Data: []byte("[Service]\nEnvironment=AWS_REGION=eu-west-1 NO_PROXY=169.254.169.254\n")},
		"etc/pki/tls/certs/ca-bundle.crt":                    {Data: []byte("-----BEGIN CERTIFICATE-----\n")},
		"etc/systemd/system/kubelet.service.d/20-certs.conf": {Data: []byte("[Service]\nEnvironment=SSL_CERT_DIR=/etc/corp/certs\n")},
	}
	s := ReadKubelet(runtimeconfig.Root{FS: fsys, Name: "/host"})
	env := kubeletEnv(s, &Provider{Env: []ProviderEnv{{Name: "AWS_PROFILE", Value: "node"}}})
	for _, want := range []string{"AWS_REGION=eu-west-1", "NO_PROXY=169.254.169.254", "PATH=" + systemdPath,
		"SSL_CERT_FILE=/host/etc/pki/tls/certs/ca-bundle.crt", "SSL_CERT_DIR=/host/etc/corp/certs"} {
		if !slices.Contains(env, want) {
			t.Errorf("env %q lacks %q", env, want)
		}
	}
	if env[len(env)-1] != "AWS_PROFILE=node" {
		t.Errorf("env %q: the provider config's env must come last (it wins)", env)
	}
	for _, e := range env {
		if strings.HasPrefix(e, "HTTPS_PROXY=") || strings.HasPrefix(e, "LD_PRELOAD=") {
			t.Errorf("env %q carries the probe's own %s", env, e)
		}
	}
	// on the node itself (root /) the paths stay as they are
	s.Root.Name = "/"
	if env := kubeletEnv(s, &Provider{}); slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "SSL_CERT_FILE=") }) ||
		!slices.Contains(env, "SSL_CERT_DIR=/etc/corp/certs") {
		t.Errorf("env under / = %q", env)
	}
}
