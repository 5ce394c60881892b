package cluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// prepareNodes writes each node's files, starts its containerd in the node's own namespaces and
// imports the images it must already have (the sandbox image, preloads, fillers), all nodes at once
// in the background. startKubelets starts each kubelet, in order, once its node is prepared.
func (c *cluster) prepareNodes(spec clusterSpec) {
	c.cgroupMounts = cgroupMounts()
	pause := c.pauseImage()
	preloads := map[string]pushedImage{}
	for _, s := range spec.Nodes {
		for _, repoTag := range s.PreloadImages {
			if _, ok := preloads[repoTag]; !ok {
				preloads[repoTag] = c.push(repoTag)
			}
		}
	}
	for i, n := range c.nodes {
		c.nodeFiles(i, n)
		c.startNode(n)
	}
	for _, n := range c.nodes {
		n.prepared = make(chan struct{})
		go func() {
			defer close(n.prepared)
			n.prepErr = catch(func() {
				c.waitContainerd(n)
				imgs := []namedImage{{pause.Image, []string{pauseRef}}}
				for _, repoTag := range n.spec.PreloadImages {
					im := preloads[repoTag]
					imgs = append(imgs, namedImage{im.Image, []string{im.Ref, im.DigestRef}})
				}
				if n.spec.FillImages > 0 {
					imgs = append(imgs, c.fillers(n)...)
				}
				c.importImages(n, imgs)
			})
		}()
	}
}

// fillers are distinct images (one config each) that share one small layer, so that importing
// dozens costs one unpack: they only fill status.images.
func (c *cluster) fillers(n *node) []namedImage {
	base, err := random.Image(2<<10, 1)
	c.check(err, "filler image")
	var out []namedImage
	for j := 0; j < n.spec.FillImages; j++ {
		img, err := withConfig(base, "")
		c.check(err, "filler image")
		cf, err := img.ConfigFile()
		c.check(err, "filler image")
		cf = cf.DeepCopy()
		cf.Config.Labels = map[string]string{"pullpath.test/filler": fmt.Sprint(j)}
		img, err = mutate.ConfigFile(img, cf)
		c.check(err, "filler image")
		out = append(out, namedImage{img, []string{fmt.Sprintf("%s/filler/%s-%02d:v1", registry, n.spec.Name, j)}})
	}
	return out
}

func (c *cluster) nodeFiles(i int, n *node) {
	s := n.spec
	pki := filepath.Join(n.dir, "pki")
	n.sock = filepath.Join(n.dir, "containerd.sock")
	n.cgroup = "/" + c.id + "-" + s.Name

	cert, err := c.ca.Client("system:node:"+s.Name, "system:nodes")
	c.check(err, "node certificate")
	certPEM, keyPEM := c.pairIn(pki, "client", cert)
	c.write(filepath.Join(n.dir, "kubelet.kubeconfig"), kubeconfig("https://"+hubIP+":6443", c.ca.PEM, certPEM, keyPEM, "system:node:"+s.Name), 0o600)
	serving, err := c.ca.Leaf([]string{s.Name, n.ip}, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	c.check(err, "kubelet serving certificate")
	c.pairIn(pki, "serving", serving)
	c.write(filepath.Join(pki, "ca.pem"), c.ca.PEM, 0o644)

	// /etc/containerd, /var/lib, /var/log and /etc/resolv.conf of the node: bound over the machine's in
	// the node's mount namespace, so the files containerd runs with are where pullpath --host-root
	// looks, and nothing lands on the machine
	etc := filepath.Join(n.dir, "etc-containerd")
	c.write(filepath.Join(etc, "config.toml"), fmt.Appendf(nil, `version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = "/var/lib/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # root here lacks CAP_SYS_RESOURCE: without this every sandbox fails (shared/notes/kubelet.md)
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "/etc/containerd/certs.d"
`, n.sock, pauseRef, cniBin, filepath.Join(n.dir, "cni")), 0o644)
	c.write(filepath.Join(etc, "ca.pem"), c.ca.PEM, 0o644)
	for _, h := range []string{registry, authRegistry} {
		if h == registry && s.SystemBundle != "" {
			continue // no certs.d entry: the system bundle decides
		}
		c.write(filepath.Join(etc, "certs.d", h, "hosts.toml"),
			fmt.Appendf(nil, "server = \"https://%s\"\nca = \"/etc/containerd/ca.pem\"\n\n[host]\n", h), 0o644)
	}
	switch s.HostsToml {
	case hostsTomlDocs:
		c.write(filepath.Join(etc, "certs.d", registry, "hosts.toml"),
			fmt.Appendf(nil, "server = \"https://%[1]s\"\n\n[host.\"https://%[1]s\"]\n  ca = \"/etc/containerd/ca.pem\"\n", registry), 0o644)
	case hostsTomlMirror:
		c.write(filepath.Join(etc, "certs.d", registry, "hosts.toml"), mirrorHostsToml(mirrorHost), 0o644)
	case hostsTomlKubespray:
		c.write(filepath.Join(etc, "certs.d", registry, "hosts.toml"), fmt.Appendf(nil, `server = "https://%[1]s"
[host."https://%[1]s"]
  capabilities = ["pull","resolve"]
  skip_verify = false
  override_path = false
  ca = ["/etc/containerd/ca.pem"]
`, registry), 0o644)
	}
	if s.SystemBundle != "" {
		c.systemBundle(n)
	}
	if s.PlainHTTP {
		c.write(filepath.Join(etc, "certs.d", plainRegistry, "hosts.toml"), plainHostsToml(), 0o644)
	}
	if s.RuntimeProxy {
		c.write(filepath.Join(n.dir, "containerd.env"), proxyEnv(true), 0o644)
		c.write(filepath.Join(n.dir, "etc-systemd-system", "containerd.service.d", "http-proxy.conf"), proxyDropIn(true), 0o644)
	}
	if s.KubeletDockerConfig {
		c.write(filepath.Join(n.dir, "var-lib", "kubelet", "config.json"), kubeletDockerConfig(true), 0o600)
	}
	// pods get a bridge inside the node's namespace, attached to nothing else
	c.write(filepath.Join(n.dir, "cni", "10-pullpath.conflist"), fmt.Appendf(nil, `{"cniVersion": "0.4.0", "name": "pullpath", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}}
]}
`, podCIDR(i)), 0o644)
	resolver := hubIP
	if s.Resolver == resolverNoZone {
		resolver = noZoneDNSIP
	}
	c.write(filepath.Join(n.dir, "resolv.conf"), []byte("nameserver "+resolver+"\n"), 0o644)
	for _, d := range []string{"var-lib", "var-log"} {
		c.check(os.MkdirAll(filepath.Join(n.dir, d), 0o755), "mkdir")
	}
	if st, err := os.ReadFile("/var/lib/dpkg/status"); err == nil { // the installed containerd's version, for --host-root
		c.write(filepath.Join(n.dir, "var-lib", "dpkg", "status"), st, 0o644)
	}

	if s.CredentialProvider {
		c.credentialProvider(n)
	}

	maxImages := ""
	if s.MaxImages != 0 {
		maxImages = fmt.Sprintf("nodeStatusMaxImages: %d\n", s.MaxImages)
	}
	c.write(filepath.Join(n.dir, "kubelet.yaml"), fmt.Appendf(nil, `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
readOnlyPort: 0
healthzPort: 0
tlsCertFile: %s
tlsPrivateKeyFile: %s
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %s}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://%s
imageServiceEndpoint: unix://%s
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: true
cgroupRoot: %s
failSwapOn: false
protectKernelDefaults: false
resolvConf: /etc/resolv.conf
serializeImagePulls: false
maxPods: 30
nodeStatusUpdateFrequency: 4s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi"}
%s`, n.ip, filepath.Join(pki, "serving.pem"), filepath.Join(pki, "serving.key"), filepath.Join(pki, "ca.pem"),
		n.sock, n.sock, n.cgroup, maxImages), 0o644)

	// the kubelet checks that cgroupRoot exists in every hierarchy; cpuset needs its CPUs and memory
	// nodes before anything can join it
	for _, m := range c.cgroupMounts {
		if strings.HasSuffix(m, "/unified") {
			continue
		}
		d := filepath.Join(m, n.cgroup)
		c.check(os.MkdirAll(d, 0o755), "cgroup %s", d)
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(m, f)); err == nil {
				c.check(os.WriteFile(filepath.Join(d, f), v, 0o644), "cgroup %s", f)
			}
		}
	}
}

// systemBundle writes the node's /etc/ssl for its SystemBundle shape, from the machine's bundle
// (real CAs, so the lab CA is one among many) and the lab CA.
func (c *cluster) systemBundle(n *node) {
	machine, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt") // absent: the lab CA alone
	withLab := append(append(slices.Clip(machine), '\n'), c.ca.PEM...)
	dir := filepath.Join(n.dir, "etc-ssl")
	switch n.spec.SystemBundle {
	case bundleDebian:
		c.write(filepath.Join(dir, "certs", "ca-certificates.crt"), withLab, 0o644)
	case bundleSUSE:
		c.write(filepath.Join(dir, "ca-bundle.pem"), withLab, 0o644)
		// later in Go's file order than SUSE's: read by nobody who follows it
		c.write(filepath.Join(dir, "cert.pem"), machine, 0o644)
	case bundleWithoutLabCA:
		c.write(filepath.Join(dir, "certs", "ca-certificates.crt"), machine, 0o644)
	default:
		c.fail("node %s: unknown system bundle %q", n.spec.Name, n.spec.SystemBundle)
	}
}

// credentialProvider gives the node's kubelet the tests' credential provider, as AKS configures
// acr-credential-provider: a CredentialProviderConfig and a bin dir named by flags in
// /etc/default/kubelet. Two providers, one binary: pullpath-good answers with the registry's
// credentials, pullpath-bad with a password the registry rejects. Both log who ran them.
func (c *cluster) credentialProvider(n *node) {
	dir := filepath.Join(n.dir, "var-lib", "kubelet-credential-provider")
	c.providerOnce.Do(func() {
		build := exec.Command("go", "build", "-trimpath", "-o", c.path("bin", "credential-provider"), "../../internal/credprovider/testdata/provider")
		build.Env = append(os.Environ(), "CGO_ENABLED=0") // static: verify's probe pod runs it from the node's disk
		out, err := build.CombinedOutput()
		c.check(err, "build the test credential provider: %s", out)
	})
	bin, err := os.ReadFile(c.path("bin", "credential-provider"))
	c.check(err, "credential provider")
	for _, name := range []string{"pullpath-good", "pullpath-bad"} {
		c.write(filepath.Join(dir, "bin", name), bin, 0o755)
	}
	c.write(filepath.Join(dir, "config.yaml"), fmt.Appendf(nil, `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: pullpath-good
  matchImages: [%q]
  defaultCacheDuration: "0s"
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [ok, %s, %s]
  env: [{name: PROVIDER_LOG, value: /var/lib/kubelet-credential-provider/calls.log}]
- name: pullpath-bad
  matchImages: [%q]
  defaultCacheDuration: "0s"
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [ok, %s, rejected-by-the-registry]
  env: [{name: PROVIDER_LOG, value: /var/lib/kubelet-credential-provider/calls.log}]
`, providerGood, registryUser, registryPass, providerBad, registryUser), 0o644)
	c.write(filepath.Join(n.dir, "etc-default", "kubelet"), []byte("KUBELET_FLAGS=--config="+filepath.Join(n.dir, "kubelet.yaml")+
		" --image-credential-provider-config=/var/lib/kubelet-credential-provider/config.yaml --image-credential-provider-bin-dir=/var/lib/kubelet-credential-provider/bin\n"), 0o644)
}

// startNode runs the node: its network namespace, a private mount and PID namespace (one kill ends
// every process of the node), a tmpfs on /run, the node's files bound over the machine's, containerd,
// and the kubelet once the file kubelet.go appears.
func (c *cluster) startNode(n *node) {
	s := n.spec
	labels := []string{poolLabel + "=" + s.Pool}
	for k, v := range s.Labels {
		labels = append(labels, k+"="+v)
	}
	mounts, env, kubeletEnv := "", "", ""
	if s.CredentialProvider {
		// the kubelet's flags come from the file pullpath probe --host-root reads: /etc/default/kubelet
		// (an EnvironmentFile, as systemd reads it for AKS's kubelet.service: not shell syntax)
		mounts = "mount --bind " + filepath.Join(n.dir, "etc-default") + " /etc/default"
		kubeletEnv = "KUBELET_FLAGS=$(sed -n 's/^KUBELET_FLAGS=//p' /etc/default/kubelet)"
	}
	if s.SystemBundle != "" {
		// the node's bundle is the only trust: not the test's SSL_CERT_* (Go's containerd would read
		// them first), nor a machine's /etc/pki (Fedora's path comes before SUSE's in Go's order)
		env = "unset SSL_CERT_FILE SSL_CERT_DIR"
		mounts += "\nmount --bind " + filepath.Join(n.dir, "etc-ssl") + " /etc/ssl" +
			"\n[ ! -e /etc/pki ] || mount -t tmpfs -o mode=0755 pullpath-pki /etc/pki"
	}
	if s.RuntimeProxy {
		// the drop-in pullpath --host-root reads; containerd.sh hands containerd.env to containerd,
		// as systemd would hand it the drop-in's Environment=
		mounts += "\nmount --bind " + filepath.Join(n.dir, "etc-systemd-system") + " /etc/systemd/system"
	}
	kubelet := strings.Join([]string{filepath.Join(c.bins, "kubelet"), "$KUBELET_FLAGS", "--config=" + filepath.Join(n.dir, "kubelet.yaml"),
		"--kubeconfig=" + filepath.Join(n.dir, "kubelet.kubeconfig"), "--hostname-override=" + s.Name, "--node-ip=" + n.ip,
		"--node-labels=" + strings.Join(labels, ","), "--v=2"}, " ")
	// each daemon's start is a script of its own: restartDaemon runs it again in the node's
	// namespaces, as systemctl restart would (a changed environment, a kubelet's fresh caches)
	c.write(filepath.Join(n.dir, "containerd.sh"), fmt.Appendf(nil, "%s\n[ ! -e %[2]s/containerd.env ] || { set -a; . %[2]s/containerd.env; set +a; }\nexec containerd --config /etc/containerd/config.toml >>%[3]s-containerd.log 2>&1\n",
		env, n.dir, c.path("logs", s.Name)), 0o755)
	c.write(filepath.Join(n.dir, "kubelet.sh"), fmt.Appendf(nil, "%s\n%s\nexec %s >>%s-kubelet.log 2>&1\n", env, kubeletEnv, kubelet, c.path("logs", s.Name)), 0o755)
	script := fmt.Sprintf(`set -e
readlink /proc/self/ns/pid > %[1]s/pidns
mount -t tmpfs -o mode=0755 pullpath-run /run
mount --bind %[1]s/var-lib /var/lib
mount --bind %[1]s/var-log /var/log
mount --bind %[1]s/etc-containerd /etc/containerd
mount --bind %[1]s/resolv.conf /etc/resolv.conf
%[2]s
sh %[1]s/containerd.sh &
while [ ! -e %[1]s/kubelet.go ]; do sleep 0.05; done
sh %[1]s/kubelet.sh &
wait
`, n.dir, mounts)
	n.proc = c.start(s.Name, nil, "nsenter", "--net=/run/netns/"+n.netns, "--", "unshare", "--mount", "--propagation", "slave",
		"--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c", script)
}

// waitContainerd waits for the node's containerd to answer on its socket.
func (c *cluster) waitContainerd(n *node) {
	s := n.spec
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := exec.Command("ctr", "--address", n.sock, "--timeout", "2s", "version").Run()
		if err == nil {
			break
		}
		select {
		case <-n.proc.done:
			c.fail("node %s exited:\n%s\n%s", s.Name, c.logTail(s.Name), c.logTail(s.Name+"-containerd"))
		default:
		}
		if time.Now().After(deadline) {
			c.fail("containerd of %s did not answer: %v\n%s", s.Name, err, c.logTail(s.Name+"-containerd"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, err := os.ReadFile(filepath.Join(n.dir, "pidns"))
	c.check(err, "PID namespace of %s", s.Name)
	n.pidNS = strings.TrimSpace(string(b))
}

// startKubelets starts the kubelets one after the other; each node registers at least a second after
// the previous one, so creation timestamps order them. Each node's Ready time is measured from its
// kubelet's start.
func (c *cluster) startKubelets() {
	ctx := context.Background()
	for _, n := range c.nodes {
		<-n.prepared
		c.check(n.prepErr, "node %s", n.spec.Name)
		n.started = time.Now()
		n.readyDone = make(chan struct{})
		c.write(filepath.Join(n.dir, "kubelet.go"), nil, 0o644)
		go func() {
			defer close(n.readyDone)
			for time.Since(n.started) < 3*time.Minute {
				if no, err := c.Client.CoreV1().Nodes().Get(ctx, n.spec.Name, metav1.GetOptions{}); err == nil && nodeReady(no) {
					n.ready = time.Since(n.started)
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		deadline := time.Now().Add(60 * time.Second)
		for {
			no, err := c.Client.CoreV1().Nodes().Get(ctx, n.spec.Name, metav1.GetOptions{})
			if err == nil {
				if wait := time.Until(no.CreationTimestamp.Add(time.Second)); wait > 0 {
					time.Sleep(wait)
				}
				break
			}
			select {
			case <-n.proc.done:
				c.fail("node %s exited:\n%s", n.spec.Name, c.logTail(n.spec.Name+"-kubelet"))
			default:
			}
			if time.Now().After(deadline) {
				c.fail("node %s did not register: %v\n%s", n.spec.Name, err, c.logTail(n.spec.Name+"-kubelet"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// waitReady waits until every node is Ready, then removes the not-ready taint that admission put on
// each new node, as the node lifecycle controller (which this cluster does not run) would.
func (c *cluster) waitReady() {
	var late []string
	for _, n := range c.nodes {
		<-n.readyDone
		if n.ready == 0 {
			late = append(late, n.spec.Name+":\n"+c.logTail(n.spec.Name+"-kubelet"))
		}
	}
	if len(late) > 0 {
		c.fail("nodes not Ready: %s", strings.Join(late, "\n"))
	}
	for _, n := range c.nodes {
		c.check(c.untaint(context.Background(), n.spec.Name), "untaint %s", n.spec.Name)
	}
}

func (c *cluster) untaint(ctx context.Context, name string) error {
	for attempt := 0; ; attempt++ {
		no, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var keep []corev1.Taint
		for _, t := range no.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady {
				keep = append(keep, t)
			}
		}
		if len(keep) == len(no.Spec.Taints) {
			return nil
		}
		no.Spec.Taints = keep
		_, err = c.Client.CoreV1().Nodes().Update(ctx, no, metav1.UpdateOptions{})
		if err == nil || attempt == 5 {
			return err
		}
	}
}

func nodeReady(no *corev1.Node) bool {
	for _, cond := range no.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// mirrorHostsToml is the mirror node's certs.d/registry.cluster.test/hosts.toml: a mirror [host]
// (its own name and port) with the lab CA, then the server, without one.
func mirrorHostsToml(mirror string) []byte {
	return fmt.Appendf(nil, `server = "https://%s"

[host."https://%s"]
  capabilities = ["pull", "resolve"]
  ca = "/etc/containerd/ca.pem"
`, registry, mirror)
}

// plainHostsToml allows plain HTTP to registry.cluster.test:5002, as containerd's docs do for an
// insecure registry.
func plainHostsToml() []byte {
	return fmt.Appendf(nil, "server = \"http://%[1]s\"\n\n[host.\"http://%[1]s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", plainRegistry)
}

// proxyNoProxy covers the registry, its blob host and the mirror: the runtime goes direct.
const proxyNoProxy = "." + zone + ",10.81.0.0/16"

// proxyEnv is containerd's environment on the RuntimeProxy node; proxyDropIn says the same as
// systemd would read it. Without noProxy every pull goes to the proxy, where nothing listens.
func proxyEnv(noProxy bool) []byte {
	b := "HTTPS_PROXY=" + deadProxy + "\n"
	if noProxy {
		b += "NO_PROXY=" + proxyNoProxy + "\n"
	}
	return []byte(b)
}

func proxyDropIn(noProxy bool) []byte {
	b := "[Service]\nEnvironment=\"HTTPS_PROXY=" + deadProxy + "\"\n"
	if noProxy {
		b += "Environment=\"NO_PROXY=" + proxyNoProxy + "\"\n"
	}
	return []byte(b)
}

// kubeletDockerConfig is the kubelet's own docker config: the credential of registry.cluster.test:5001,
// or (without it) none.
func kubeletDockerConfig(withCredential bool) []byte {
	if !withCredential {
		return []byte(`{"auths":{}}` + "\n")
	}
	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + registryPass))
	return fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`+"\n", authRegistry, auth)
}

// daemonPID is the PID of the node's process named comm (containerd, kubelet), or "".
func (c *cluster) daemonPID(n *node, comm string) string {
	for _, p := range pids() {
		name, _ := os.ReadFile("/proc/" + p + "/comm")
		if ns, err := os.Readlink("/proc/" + p + "/ns/pid"); err == nil && ns == n.pidNS && strings.TrimSpace(string(name)) == comm {
			return p
		}
	}
	return ""
}

// restartDaemon stops the node's containerd or kubelet (SIGTERM, as systemctl restart does) and
// starts it again from its script, in the node's network, mount and PID namespaces: it reads its
// environment and files afresh. It returns once the new one answers (containerd) or the node is
// Ready again (kubelet).
func (c *cluster) restartDaemon(t *testing.T, nodeName, daemon string) {
	t.Helper()
	n := c.node(nodeName)
	other := map[string]string{"containerd": "kubelet", "kubelet": "containerd"}[daemon]
	pid, host := c.daemonPID(n, daemon), c.daemonPID(n, other)
	if pid == "" || host == "" {
		t.Fatalf("%s: no %s or %s in its namespaces", nodeName, daemon, other)
	}
	var p int
	fmt.Sscan(pid, &p)
	if err := syscall.Kill(p, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat("/proc/" + pid); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's %s (pid %s) did not stop within 30 s of SIGTERM", nodeName, daemon, pid)
		}
	}
	stopped := time.Now()
	var err error
	c.restarts++
	if perr := catch(func() {
		c.start(fmt.Sprintf("%s-%s-%d", nodeName, daemon, c.restarts), nil,
			"nsenter", "--target", host, "--net", "--mount", "--pid", "--", "sh", filepath.Join(n.dir, daemon+".sh"))
	}); perr != nil {
		t.Fatal(perr)
	}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if daemon == "containerd" {
			err = exec.Command("ctr", "--address", n.sock, "--timeout", "2s", "version").Run()
		} else if no, gerr := c.Client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{}); gerr != nil {
			err = gerr
		} else if cond := readyCondition(no); cond == nil || cond.Status != corev1.ConditionTrue || c.daemonPID(n, daemon) == "" ||
			!cond.LastHeartbeatTime.Time.After(stopped) {
			err = fmt.Errorf("not Ready with a heartbeat of the new kubelet: %+v", cond)
		} else {
			err = nil
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's %s did not come back: %v\n%s", nodeName, daemon, err, c.logTail(nodeName+"-"+daemon))
		}
	}
}

func readyCondition(no *corev1.Node) *corev1.NodeCondition {
	for i := range no.Status.Conditions {
		if no.Status.Conditions[i].Type == corev1.NodeReady {
			return &no.Status.Conditions[i]
		}
	}
	return nil
}
