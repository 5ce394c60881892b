package credprovider

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

func TestDistributionConfigs(t *testing.T) {
	for _, c := range []struct {
		file, provider, image, other string
		args                         []string
	}{
		{"aks-credential-provider-config.yaml", "acr-credential-provider", "myreg.azurecr.io/team/app", "myreg.azurecr.io.evil.com/x", []string{"/etc/kubernetes/azure.json"}},
		{"eks-config.json", "ecr-credential-provider", "111122223333.dkr.ecr.us-east-1.amazonaws.com/app", "public.ecr.aws/app", nil},
		{"gke-cri_auth_config.yaml", "auth-provider-gcp", "us-docker.pkg.dev/p/r/app", "docker.io/library/nginx", []string{"get-credentials", "--v=3"}},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ParseConfig(b, "/etc/"+c.file)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		all := cfg.MatchAll(c.image)
		if len(all) != 1 {
			t.Fatalf("%s: %s matched %d providers, want 1", c.file, c.image, len(all))
		}
		p := all[0]
		if p.Name != c.provider || strings.Join(p.Args, " ") != strings.Join(c.args, " ") || p.APIVersion != "credentialprovider.kubelet.k8s.io/v1" {
			t.Errorf("%s: %s matched %+v", c.file, c.image, p)
		}
		if !strings.HasPrefix(p.Origin, "/etc/"+c.file+":") || strings.HasSuffix(p.Origin, ":0") {
			t.Errorf("%s: origin %q", c.file, p.Origin)
		}
		if len(cfg.MatchAll(c.other)) != 0 {
			t.Errorf("%s: %s should match no provider", c.file, c.other)
		}
	}
}

func TestParseConfigRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"kind":        "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\nproviders: []\n",
		"no match":    "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: p\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n",
		"path name":   "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: ../p\n  matchImages: [x]\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n",
		"api version": "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: p\n  matchImages: [x]\n  apiVersion: v9\n",
		"not yaml":    "\t{{",
	} {
		if _, err := ParseConfig([]byte(doc), "/c.yaml"); err == nil || !strings.Contains(err.Error(), "/c.yaml") {
			t.Errorf("%s: err %v, want an error naming the file", name, err)
		}
	}
}

func TestReadKubeletFlags(t *testing.T) {
	cfg := "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: acr-credential-provider\n  matchImages: [\"*.azurecr.io\"]\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
	for name, c := range map[string]struct {
		fs             fstest.MapFS
		config, binDir string
		origin         string
	}{
		"kubeadm drop-in and kubeadm-flags.env": {fs: fstest.MapFS{
			"lib/systemd/system/kubelet.service":                   {Data: []byte("[Service]\nExecStart=/usr/bin/kubelet\n")},
			"etc/systemd/system/kubelet.service.d/10-kubeadm.conf": {Data: []byte("[Service]\nEnvironment=\"KUBELET_KUBECONFIG_ARGS=--kubeconfig=/etc/kubernetes/kubelet.conf\"\nEnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\nEnvironmentFile=-/etc/default/kubelet\nExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n")},
			"var/lib/kubelet/kubeadm-flags.env":                    {Data: []byte("KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/containerd/containerd.sock\"\n")},
			"etc/default/kubelet":                                  {Data: []byte("KUBELET_EXTRA_ARGS=\"--image-credential-provider-config=/var/lib/kubelet/credential-provider-config.yaml --image-credential-provider-bin-dir /var/lib/kubelet/credential-provider\"\n")},
		}, config: "/var/lib/kubelet/credential-provider-config.yaml", binDir: "/var/lib/kubelet/credential-provider", origin: "/etc/default/kubelet:1"},
		"AKS KUBELET_FLAGS in /etc/default/kubelet, no unit": {fs: fstest.MapFS{
			"etc/default/kubelet": {Data: []byte("KUBELET_NODE_LABELS=agentpool=a\nKUBELET_FLAGS=--address=0.0.0.0 --image-credential-provider-config=/var/lib/kubelet/credential-provider-config.yaml --image-credential-provider-bin-dir=/var/lib/kubelet/credential-provider --max-pods=30\n")},
		}, config: "/var/lib/kubelet/credential-provider-config.yaml", binDir: "/var/lib/kubelet/credential-provider", origin: "/etc/default/kubelet:2"},
		"KubeletConfiguration fields, bin dir flag in ExecStart": {fs: fstest.MapFS{
			"etc/systemd/system/kubelet.service": {Data: []byte("[Service]\nExecStart=/usr/bin/kubelet --config /etc/kubernetes/kubelet/config.json \\\n  --image-credential-provider-bin-dir=/etc/eks/image-credential-provider\n")},
			"etc/kubernetes/kubelet/config.json": {Data: []byte("{\n  \"kind\": \"KubeletConfiguration\",\n  \"imageCredentialProviderConfigPath\": \"/etc/eks/image-credential-provider/config.json\"\n}\n")},
		}, config: "/etc/eks/image-credential-provider/config.json", binDir: "/etc/eks/image-credential-provider", origin: "/etc/kubernetes/kubelet/config.json:3"},
	} {
		c.fs[strings.TrimPrefix(c.config, "/")] = &fstest.MapFile{Data: []byte(cfg)}
		s := ReadKubelet(runtimeconfig.Root{FS: c.fs, Name: "/host"})
		k, ok, err := s.Kubelet, s.Providers(), s.Err
		if err != nil || !ok || k.ConfigPath != c.config || k.BinDir != c.binDir || !strings.HasPrefix(k.ConfigOrigin, c.origin) {
			t.Errorf("%s: %+v %v %v", name, k, ok, err)
		}
	}
	if s := ReadKubelet(runtimeconfig.Root{FS: fstest.MapFS{"etc/hostname": {Data: []byte("n")}}, Name: "/host"}); s.Providers() || s.Err != nil {
		t.Errorf("no kubelet: providers %v err %v", s.Providers(), s.Err)
	}
}

// The CRI endpoint the kubelet pulls through: the image service endpoint before the runtime's, the
// flags before the KubeletConfiguration's fields, each with where it was set.
func TestReadKubeletImageEndpoint(t *testing.T) {
	for name, c := range map[string]struct {
		fs             fstest.MapFS
		endpoint, from string
	}{
		"runtime endpoint in the config file": {fstest.MapFS{
			"etc/default/kubelet": {Data: []byte("KUBELET_FLAGS=--config=/etc/kubelet.yaml\n")},
			"etc/kubelet.yaml":    {Data: []byte("kind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/x/containerd.sock\n")},
		}, "unix:///run/x/containerd.sock", "/etc/kubelet.yaml:2"},
		"image endpoint in the file wins over the runtime flag": {fstest.MapFS{
			"etc/default/kubelet": {Data: []byte("KUBELET_FLAGS=--config=/etc/kubelet.yaml --container-runtime-endpoint=unix:///run/rt.sock\n")},
			"etc/kubelet.yaml":    {Data: []byte("kind: KubeletConfiguration\nimageServiceEndpoint: unix:///run/img.sock\n")},
		}, "unix:///run/img.sock", "/etc/kubelet.yaml:2"},
		"flag wins over the file": {fstest.MapFS{
			"etc/default/kubelet": {Data: []byte("KUBELET_FLAGS=--config /etc/kubelet.yaml --container-runtime-endpoint unix:///run/flag.sock\n")},
			"etc/kubelet.yaml":    {Data: []byte("kind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/file.sock\n")},
		}, "unix:///run/flag.sock", "/etc/default/kubelet:1"},
		"config file unreadable: the flags still count": {fstest.MapFS{
			"etc/default/kubelet": {Data: []byte("KUBELET_FLAGS=--container-runtime-endpoint=unix:///run/flag.sock --config=/gone.yaml\n")},
		}, "unix:///run/flag.sock", "/etc/default/kubelet:1"},
	} {
		k := ReadKubelet(runtimeconfig.Root{FS: c.fs, Name: "/host"}).Kubelet
		if k.ImageEndpoint != c.endpoint || k.ImageEndpointOrigin != c.from {
			t.Errorf("%s: %q from %q, want %q from %q", name, k.ImageEndpoint, k.ImageEndpointOrigin, c.endpoint, c.from)
		}
	}
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// providerBin builds testdata/provider once.
func providerBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "credprovider-test")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "provider")
		out, err := exec.Command("go", "build", "-o", built, "./testdata/provider").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building the test provider: %v", buildErr)
	}
	return built
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built != "" {
		os.RemoveAll(filepath.Dir(built))
	}
	os.Exit(code)
}

func plan(t *testing.T, args ...string) *Plan {
	return &Plan{Provider: Provider{Name: "fake", APIVersion: "credentialprovider.kubelet.k8s.io/v1", Args: args, Origin: "/c.yaml:3",
		Env: []ProviderEnv{{Name: "FROM_CONFIG", Value: "1"}}}, Image: "reg.test:5000/team/app", HostBin: "/bin/fake", Bin: providerBin(t), Timeout: 5 * time.Second}
}

// runOne runs one provider through RunAll: its own credential, the secrets, its failure.
func runOne(p *Plan) (creds.Credential, []string, *Failure) {
	all := RunAll(context.Background(), []*Plan{p})
	return all.Outcomes[0].Cred, all.Secrets, all.Outcomes[0].Failure
}

func TestRunModes(t *testing.T) {
	t.Setenv("PROVIDER_NEED_ENV", "FROM_CONFIG") // the configured env reaches the provider
	p := plan(t, "ok", "u", "provider-pass-1")
	c, secrets, f := runOne(p)
	if f != nil || c.Username != "u" || c.Password != "provider-pass-1" || !strings.HasPrefix(c.Source, "credential provider fake (/c.yaml:3)") || len(secrets) != 1 {
		t.Fatalf("ok: %v %v %+v", c, secrets, f)
	}
	// a glob key and a more specific key: the reverse-sorted first match wins, as the keyring's
	p = plan(t, "ok", "u", "provider-pass-2", "*.test:5000")
	if c, _, f := runOne(p); f != nil || c.Password != "provider-pass-2" {
		t.Fatalf("glob key: %v %+v", c, f)
	}
	for _, m := range []struct {
		mode   string
		code   report.Code
		status string
		timeo  time.Duration
	}{
		{"fail", report.CodeCredentialProviderFailed, "exit status 1", 0},
		{"badjson", report.CodeCredentialProviderFailed, "exit status 0", 0},
		{"noauth", report.CodeCredentialProviderNoAuth, "exit status 0", 0},
		{"sleep", report.CodeCredentialProviderFailed, "killed after 300ms", 300 * time.Millisecond},
	} {
		p := plan(t, m.mode)
		if m.timeo > 0 {
			p.Timeout = m.timeo
		}
		start := time.Now()
		_, _, f := runOne(p)
		if f == nil || f.Code != m.code {
			t.Fatalf("%s: %+v", m.mode, f)
		}
		ev := strings.Join(f.Evidence, "\n")
		if !strings.Contains(ev, "exit: "+m.status) || !strings.Contains(ev, "/c.yaml:3") || !strings.Contains(ev, "fake") {
			t.Errorf("%s: evidence %q", m.mode, ev)
		}
		if m.mode == "fail" && (!strings.Contains(ev, "managed identity endpoint said 400") || strings.Contains(ev, "leaked-provider-token-42") || strings.Contains(ev, "eyJhbGci")) {
			t.Errorf("fail: stderr must be evidence, redacted: %q", ev)
		}
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("%s took %s", m.mode, d)
		}
	}
}

// Two providers' answers go into one keyring, their keys normalised as a pod's pull secrets' are
// (kubernetes v1.37.2 plugin/plugins.go:92-103, keyring.go:143-181): "https://reg.test:5000/team"
// is the more specific key, so its credential comes first, though its raw key sorts after
// "reg.test:5000" (and, matched raw, "https://…" matched nothing).
func TestRunAllNormalisesProviderKeys(t *testing.T) {
	host := plan(t, "ok", "u", "provider-host-pass", "reg.test:5000")
	team := plan(t, "ok", "u", "provider-team-pass", "https://reg.test:5000/team")
	host.Provider.Name, team.Provider.Name = "host", "team"
	all := RunAll(context.Background(), []*Plan{host, team})
	var got []string
	for _, c := range all.Creds {
		got = append(got, c.Password)
	}
	if strings.Join(got, ",") != "provider-team-pass,provider-host-pass" || all.From[0] != team {
		t.Errorf("credentials in order %v, want the team key's first", got)
	}
	if all.Outcomes[1].Failure != nil || all.Outcomes[1].Cred.Password != "provider-team-pass" {
		t.Errorf("the team provider's own answer: %+v", all.Outcomes[1])
	}
}
