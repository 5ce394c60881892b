package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/test/internal/netnsdial"
)

const kubeVersion = "v1.37.2"

// Addresses. The lab tier uses 10.77/10.79/10.80; this tier 10.78 and 10.81 up. Nothing outside the
// tier's namespaces is ever a target: no namespace has a default route, a bridge to a real
// interface or NAT.
const (
	hubIP       = "10.78.0.1" // apiserver, the resolver with the private zone
	noZoneDNSIP = "10.78.0.2" // a resolver without the private zone
	registryIP  = "10.81.0.2" // registry.cluster.test: :443 redirects blobs, :5000 serves them (pushes), :5001 wants credentials
	blobsIP     = "10.82.0.3" // blobs.cluster.test, the redirect target
	mirrorIP    = "10.81.0.3" // mirror.cluster.test:5443, a mirror of the registry (same storage, blobs served directly)
	serviceCIDR = "10.83.0.0/24"
	zone        = "cluster.test"
	registry    = "registry." + zone
	poolLabel   = "kubernetes.azure.com/agentpool"
	pauseRef    = "registry.k8s.io/pause:3.10" // the sandbox image: imported, never pulled
	cniBin      = "/usr/lib/cni"
	progCache   = "/var/cache/pullpath/cluster-programs"
	// the credentials registry.cluster.test:5001 accepts (basic auth; blobs redirected like :443)
	registryUser = "puller"
	registryPass = "cluster-tier-not-secret"
	authRegistry = registry + ":5001"
	// registry.cluster.test:5002 serves the same content over plain HTTP (no TLS, no redirect)
	plainRegistry = registry + ":5002"
	mirrorHost    = "mirror." + zone + ":5443"
	// deadProxy is where a node's runtime proxy points: an address of the hub where nothing listens
	deadProxy = "http://" + hubIP + ":3128"
	// the repositories the credential provider node's kubelet asks its providers about: one answers
	// with the registry's credentials, the other with a password the registry rejects
	providerGood = authRegistry + "/provider/good"
	providerBad  = authRegistry + "/provider/bad"
)

// Resolvers a node's resolv.conf can point at.
const (
	resolverZone   = ""       // the hub's dnsmasq, which knows cluster.test
	resolverNoZone = "nozone" // a dnsmasq that answers NXDOMAIN for cluster.test
)

// kernelSettings are the global sysctls the kubelet changes at start (container_manager_linux's
// kernel tunables): saved before the first kubelet and restored after the last.
var kernelSettings = []string{"kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory", "vm/panic_on_oom",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

type clusterSpec struct {
	Nodes []nodeSpec
}

type nodeSpec struct {
	Name             string
	Pool             string            // the value of kubernetes.azure.com/agentpool
	Labels           map[string]string // more node labels
	CanReachRegistry bool              // a route to registry.cluster.test (10.81.0.0/24)
	CanReachBlobs    bool              // a route to the blob host the registry redirects to (10.82.0.0/24)
	Resolver         string            // resolverZone or resolverNoZone
	// PodOnlyRegistryRoute: the node's pods reach the registry and the blob host, the node itself
	// does not (a route only pod traffic takes, as a VPN sidecar gives a pod)
	PodOnlyRegistryRoute bool
	MaxImages            int      // nodeStatusMaxImages; 0 keeps the kubelet's default (50)
	FillImages           int      // images imported before the kubelet starts, to fill status.images
	PreloadImages        []string // repo:tag under registry.cluster.test, pushed and imported before the kubelet starts
	// CredentialProvider: the kubelet runs the tests' credential provider (an exec plugin) for
	// images under providerGood and providerBad, its flags in /etc/default/kubelet as AKS writes them
	CredentialProvider bool
	// HostsToml is how the node's containerd trusts registry.cluster.test's CA: "" server and ca at
	// the top with an empty [host], or one of the self-mirror files (a [host] that repeats the server)
	HostsToml string
	// SystemBundle: the node trusts registry.cluster.test through its system CA bundle alone (no
	// certs.d entry for it), as nodes trust ACR, ECR or Docker Hub; one of the bundle* shapes
	SystemBundle string
	// KubeletDockerConfig: the kubelet's docker config (/var/lib/kubelet/config.json, its root dir)
	// holds the credential of registry.cluster.test:5001
	KubeletDockerConfig bool
	// RuntimeProxy: containerd runs with HTTPS_PROXY=deadProxy and a NO_PROXY that covers the
	// registry, written as well in a containerd.service.d drop-in (where pullpath reads it)
	RuntimeProxy bool
	// PlainHTTP: certs.d/registry.cluster.test:5002/hosts.toml lets containerd pull over plain HTTP
	PlainHTTP bool
}

// The system CA bundles a node may have instead of a certs.d entry for registry.cluster.test: its
// /etc/ssl is the test's (bound over the machine's in the node's mount namespace), holding the
// machine's CAs, and the lab CA where the shape trusts it.
const (
	bundleDebian       = "debian"         // /etc/ssl/certs/ca-certificates.crt with the lab CA
	bundleSUSE         = "suse"           // no Debian file: /etc/ssl/ca-bundle.pem with it (Alpine's cert.pem without)
	bundleWithoutLabCA = "without-lab-ca" // the Debian file without it: the node cannot pull
)

// The self-mirror hosts.toml files a node may have for registry.cluster.test: the [host] is the
// registry itself (docs/taxonomy.md#endpoint-roles), never a mirror.
const (
	hostsTomlDocs      = "docs"      // containerd's docs/cri/config.md:742-750: the ca on the [host] only
	hostsTomlKubespray = "kubespray" // kubespray's hosts.toml.j2 (@46dbdd39) with a ca list
	// hostsTomlMirror: a [host] that is a mirror (mirror.cluster.test:5443, pull and resolve, the lab
	// CA), the server without ca; without CanReachRegistry the node routes to the mirror alone
	hostsTomlMirror = "mirror"
)

// scenario is the cluster the package's tests share (issues 9 and 10): pool A healthy, its newest
// node's image list full (status.images at the kubelet's cap of 50); pool B's old node has the image cached and its newer node cannot reach
// the registry (neither can the old one: its pods run from cache); pool C cannot reach the blob
// host; pool D's resolver lacks the private zone. poolb-2 trusts the registry's CA through
// containerd's documented hosts.toml, poolb-1 and poola-2 through kubespray's (issue 19 item 5).
var scenario = clusterSpec{Nodes: []nodeSpec{
	{Name: "poola-1", Pool: "poola", CanReachRegistry: true, CanReachBlobs: true},
	{Name: "poolb-1", Pool: "poolb", PreloadImages: []string{cachedImage}, Labels: map[string]string{nodeImageLabel: "AKSUbuntu-2204gen2containerd-202510.01.0"}, HostsToml: hostsTomlKubespray},
	{Name: "poolb-2", Pool: "poolb", PodOnlyRegistryRoute: true, Labels: map[string]string{nodeImageLabel: "AKSUbuntu-2204gen2containerd-202511.15.0"}, HostsToml: hostsTomlDocs},
	{Name: "poolc-1", Pool: "poolc", CanReachRegistry: true},
	{Name: "poold-1", Pool: "poold", CanReachRegistry: true, CanReachBlobs: true, Resolver: resolverNoZone},
	// the newest node: its import takes longest, and overlaps the others' registration
	// and its kubelet trades the node's identity for registry credentials through a credential provider
	{Name: "poola-2", Pool: "poola", CanReachRegistry: true, CanReachBlobs: true, FillImages: 52, CredentialProvider: true, HostsToml: hostsTomlKubespray},
}}

const (
	cachedImage    = "cached/app:v1"
	nodeImageLabel = "kubernetes.azure.com/node-image-version"
)

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

type node struct {
	spec      nodeSpec
	ip        string
	netns     string
	dir       string
	sock      string // containerd's socket, reachable from the test's namespace
	cgroup    string // cgroupRoot, as the kubelet is given it
	proc      *proc
	pidNS     string // the node's PID namespace ("pid:[inode]"): every process of the node lives in it
	started   time.Time
	ready     time.Duration // kubelet start → Ready
	readyDone chan struct{}
	prepared  chan struct{} // containerd answers and the node's images are imported
	prepErr   error
}

// cluster is a running cluster and the handles tests use.
type cluster struct {
	id, dir, hub string
	bins         string
	ca           *registrytest.CA
	nodes        []*node
	procs        []*proc
	sysctls      map[string]string // the kernel settings from before the first running cluster
	kernelHeldBy []string          // after Close: other clusters still holding them changed
	cgroupMounts []string
	progs        map[string]string // the static programs built from testdata/, by name
	pauseLayer   v1.Layer          // /pause, the entrypoint of every image the tier makes

	Client     *kubernetes.Clientset
	Config     *rest.Config
	Kubeconfig string // admin kubeconfig for the CLI under test; its server is only reachable from the hub
	Images     map[string]pushedImage
	// Controllers says kube-controller-manager runs (controllerSet): owner references cascade,
	// namespaces can be deleted, NotReady nodes are tainted.
	Controllers bool

	buildOnce    sync.Once
	providerOnce sync.Once // the test credential provider, built for the nodes that run it
	pullpath     string
	buildErr     error

	restarts int // daemons restartDaemon started, for their process names

	closeOnce sync.Once
	closeErr  error

	mu      sync.Mutex // guards Images and figures
	upTime  time.Duration
	figures []string
}

var seq int

// setupError carries a bring-up failure out of the nested steps to startCluster.
type setupError struct{ err error }

func (c *cluster) check(err error, format string, args ...any) {
	if err != nil {
		panic(setupError{fmt.Errorf(format+": %w", append(args, err)...)})
	}
}

func (c *cluster) fail(format string, args ...any) {
	panic(setupError{fmt.Errorf(format, args...)})
}

// startCluster brings up the hub (etcd, kube-apiserver, resolvers, registry, blob host) and the
// nodes (containerd + kubelet each), and returns once every node is Ready.
func startCluster(spec clusterSpec) (c *cluster, err error) {
	begin := time.Now()
	seq++
	id := fmt.Sprintf("ppk%dc%d", os.Getpid(), seq)
	removeStale()
	bins, err := kubeBins()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", id+"-")
	if err != nil {
		return nil, err
	}
	c = &cluster{id: id, dir: dir, hub: id + "-hub", bins: bins, Images: map[string]pushedImage{}}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(setupError)
			if !ok {
				panic(r)
			}
			if cerr := c.Close(); cerr != nil {
				se.err = fmt.Errorf("%w (and teardown: %v)", se.err, cerr)
			}
			c, err = nil, fmt.Errorf("%w; logs were in %s (PULLPATH_CLUSTER_KEEP=1 keeps them)", se.err, dir)
		}
	}()
	for _, d := range []string{"logs", "pki", "bin", "registry/data", "dns", "nodes"} {
		c.check(os.MkdirAll(filepath.Join(dir, d), 0o755), "mkdir")
	}
	var phases []string
	mark := time.Now()
	phase := func(name string) {
		phases = append(phases, fmt.Sprintf("%s %s", name, time.Since(mark).Round(100*time.Millisecond)))
		mark = time.Now()
	}
	c.buildPrograms()
	c.pki()
	c.network(spec)
	phase("programs, PKI, namespaces")
	c.services()
	phase("hub services")
	c.prepareNodes(spec)
	c.waitAPI()
	c.controllers()
	phase("apiserver ready")
	c.saveKernelSettings()
	c.startKubelets()
	phase("nodes prepared (containerd, image imports) and registered one by one")
	c.waitReady()
	phase("last Ready")
	c.upTime = time.Since(begin)
	c.figures = append(c.figures, fmt.Sprintf("bring-up (%d nodes, from nothing to every node Ready): %s (%s)", len(c.nodes),
		c.upTime.Round(100*time.Millisecond), strings.Join(phases, ", ")))
	for _, n := range c.nodes {
		c.figures = append(c.figures, fmt.Sprintf("  %s Ready %s after its kubelet started", n.spec.Name, n.ready.Round(100*time.Millisecond)))
	}
	return c, nil
}

func (c *cluster) run(args ...string) string {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	c.check(err, "%s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	return string(out)
}

func (c *cluster) inHub(args ...string) []string {
	return append([]string{"nsenter", "--net=/run/netns/" + c.hub, "--"}, args...)
}

func (c *cluster) write(path string, body []byte, mode os.FileMode) {
	c.check(os.MkdirAll(filepath.Dir(path), 0o755), "mkdir")
	c.check(os.WriteFile(path, body, mode), "write %s", path)
}

// start runs a long-lived process, its output in logs/<name>.log; teardown kills it by PID.
func (c *cluster) start(name string, env []string, args ...string) *proc {
	logf, err := os.Create(filepath.Join(c.dir, "logs", name+".log"))
	c.check(err, "log file")
	defer logf.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	c.check(cmd.Start(), "start %s", name)
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.procs = append(c.procs, p)
	return p
}

// logTail is the end of a process's log, for error messages.
func (c *cluster) logTail(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "logs", name+".log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// buildPrograms compiles testdata/*.c statically (the pause program, the ConfigMap payloads), once
// per source and compiler: the binaries are cached beside the kube binaries.
func (c *cluster) buildPrograms() {
	c.progs = map[string]string{}
	gcc, err := exec.Command("gcc", "--version").Output()
	c.check(err, "gcc")
	gccVersion, _, _ := strings.Cut(string(gcc), "\n")
	for _, p := range []string{"pause", "exitwith", "tcpconnect", "credhelper"} {
		src, err := os.ReadFile(filepath.Join("testdata", p+".c"))
		c.check(err, "source of %s", p)
		sum := sha256.Sum256(append([]byte(gccVersion+"\n"), src...))
		cached := filepath.Join(progCache, fmt.Sprintf("%s-%x", p, sum[:8]))
		if _, err := os.Stat(cached); err != nil {
			c.check(os.MkdirAll(progCache, 0o755), "cache")
			tmp := fmt.Sprintf("%s.tmp.%d", cached, os.Getpid())
			c.run("gcc", "-static", "-Os", "-s", "-o", tmp, filepath.Join("testdata", p+".c"))
			c.check(os.Rename(tmp, cached), "cache %s", p)
		}
		c.progs[p] = cached
	}
	c.pauseLayer, err = fileLayer(c.progs["pause"], "/pause")
	c.check(err, "pause layer")
}

func (c *cluster) pki() {
	var err error
	c.ca, err = registrytest.NewCA("pullpath cluster tier CA")
	c.check(err, "CA")
	c.write(c.path("pki", "ca.pem"), c.ca.PEM, 0o644)
	c.leaf("apiserver", "kubernetes", "kubernetes.default", "kubernetes.default.svc", hubIP, "127.0.0.1", "10.83.0.1")
	c.leaf("registry", registry)
	c.leaf("blobs", "blobs."+zone)
	c.leaf("mirror", "mirror."+zone)
	c.client("apiserver-kubelet", "kube-apiserver-kubelet-client", "system:masters")
	certPEM, keyPEM := c.client("admin", "pullpath-admin", "system:masters")
	c.Kubeconfig = c.path("admin.kubeconfig")
	c.write(c.Kubeconfig, kubeconfig("https://"+hubIP+":6443", c.ca.PEM, certPEM, keyPEM, "pullpath-admin"), 0o600)
	c.Config = &rest.Config{Host: "https://" + hubIP + ":6443", QPS: 100, Burst: 200, Timeout: 30 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.ca.PEM, CertData: certPEM, KeyData: keyPEM},
		Dial:            netnsdial.In(c.hub)}
	c.Client, err = kubernetes.NewForConfig(c.Config)
	c.check(err, "client")

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	c.check(err, "service account key")
	der, err := x509.MarshalECPrivateKey(key)
	c.check(err, "service account key")
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	c.check(err, "service account key")
	c.write(c.path("pki", "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
	c.write(c.path("pki", "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

func (c *cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.dir}, elem...)...)
}

func (c *cluster) leaf(base string, names ...string) {
	cert, err := c.ca.Leaf(names, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	c.check(err, "certificate %s", base)
	c.pair(base, cert)
}

func (c *cluster) client(base, cn string, orgs ...string) (certPEM, keyPEM []byte) {
	cert, err := c.ca.Client(cn, orgs...)
	c.check(err, "client certificate %s", base)
	return c.pair(base, cert)
}

func (c *cluster) pair(base string, cert tls.Certificate) (certPEM, keyPEM []byte) {
	return c.pairIn(c.path("pki"), base, cert)
}

func (c *cluster) pairIn(dir, base string, cert tls.Certificate) (certPEM, keyPEM []byte) {
	certPEM, keyPEM, err := registrytest.PEM(cert)
	c.check(err, "PEM %s", base)
	c.write(filepath.Join(dir, base+".pem"), certPEM, 0o644)
	c.write(filepath.Join(dir, base+".key"), keyPEM, 0o600)
	return certPEM, keyPEM
}

func kubeconfig(server string, ca, cert, key []byte, user string) []byte {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: pullpath-cluster-tier
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: pullpath-cluster-tier
  context:
    cluster: pullpath-cluster-tier
    user: %s
current-context: pullpath-cluster-tier
`, server, b64(ca), user, b64(cert), b64(key), user)
}

// network builds the hub (a bridge that is attached to nothing real; the registry's and the blob
// host's addresses on its loopback) and one namespace per node on a veth into the hub's bridge. A
// node reaches the registry or the blob host only if it has the route; its pods (on a bridge in the
// node's namespace, forwarded by the node) reach what the node reaches, and the registry too when
// PodOnlyRegistryRoute gives their source addresses a routing table of their own.
func (c *cluster) network(spec clusterSpec) {
	c.run("ip", "netns", "add", c.hub)
	h := func(args ...string) { c.run(append([]string{"ip", "-n", c.hub}, args...)...) }
	h("link", "set", "lo", "up")
	h("link", "add", "br0", "type", "bridge")
	h("addr", "add", hubIP+"/24", "dev", "br0")
	h("addr", "add", noZoneDNSIP+"/24", "dev", "br0")
	h("link", "set", "br0", "up")
	// the registry's and the blob host's addresses are the hub's own (no dummy links in this kernel)
	h("addr", "add", registryIP+"/32", "dev", "lo")
	h("addr", "add", blobsIP+"/32", "dev", "lo")
	h("addr", "add", mirrorIP+"/32", "dev", "lo")
	for i, s := range spec.Nodes {
		n := &node{spec: s, ip: fmt.Sprintf("10.78.0.%d", 10+i), netns: c.id + "-" + s.Name, dir: c.path("nodes", s.Name)}
		c.nodes = append(c.nodes, n)
		c.run("ip", "netns", "add", n.netns)
		hubEnd, nodeEnd := fmt.Sprintf("%sh%d", c.id, i), fmt.Sprintf("%sn%d", c.id, i)
		c.run("ip", "link", "add", "name", nodeEnd, "type", "veth", "peer", "name", hubEnd)
		c.run("ip", "link", "set", nodeEnd, "netns", n.netns)
		c.run("ip", "link", "set", hubEnd, "netns", c.hub)
		h("link", "set", hubEnd, "master", "br0", "up")
		nn := func(args ...string) { c.run(append([]string{"ip", "-n", n.netns}, args...)...) }
		nn("link", "set", nodeEnd, "name", "eth0")
		nn("addr", "add", n.ip+"/24", "dev", "eth0")
		nn("link", "set", "eth0", "up")
		nn("link", "set", "lo", "up")
		if s.CanReachRegistry {
			nn("route", "add", "10.81.0.0/24", "via", hubIP)
		}
		if s.CanReachBlobs {
			nn("route", "add", "10.82.0.0/24", "via", hubIP)
		}
		if s.HostsToml == hostsTomlMirror && !s.CanReachRegistry {
			nn("route", "add", mirrorIP+"/32", "via", hubIP) // the mirror, and nothing else of the registry's
		}
		c.run("ip", "netns", "exec", n.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
		h("route", "add", podCIDR(i), "via", n.ip) // replies to the node's pods
		if s.PodOnlyRegistryRoute {
			nn("rule", "add", "from", podCIDR(i), "table", "100", "priority", "100")
			nn("route", "add", "10.81.0.0/24", "via", hubIP, "table", "100")
			nn("route", "add", "10.82.0.0/24", "via", hubIP, "table", "100")
		}
		if out := c.run("ip", "-n", n.netns, "route"); strings.Contains(out, "default") {
			c.fail("node %s must have no default route:\n%s", s.Name, out)
		}
	}
}

// podCIDR is the pod subnet of the i-th node (the CNI bridge's range).
func podCIDR(i int) string { return fmt.Sprintf("10.84.%d.0/24", i) }

func (c *cluster) services() {
	// etcd and the apiserver
	c.start("etcd", nil, c.inHub(filepath.Join(c.bins, "etcd"), "--name=hub", "--data-dir="+c.path("etcd"),
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=hub=http://127.0.0.1:2380", "--unsafe-no-fsync", "--log-level=warn")...)
	c.waitTCP("etcd", "127.0.0.1:2379")
	pki := func(f string) string { return c.path("pki", f) }
	// the audit log records every request of the ServiceAccounts of namespace auditedNS, and only
	// theirs: TestRBACRolesPerCommand compares what each command asked with deploy/rbac.yaml
	c.write(c.path("apiserver", "audit-policy.yaml"), []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts:`+auditedNS+`"]
- level: None
`), 0o644)
	c.start("kube-apiserver", nil, c.inHub(filepath.Join(c.bins, "kube-apiserver"),
		"--audit-policy-file="+c.path("apiserver", "audit-policy.yaml"), "--audit-log-path="+c.path("apiserver", "audit.log"), "--audit-log-format=json",
		"--etcd-servers=http://127.0.0.1:2379", "--bind-address=0.0.0.0", "--secure-port=6443",
		"--advertise-address="+hubIP, "--endpoint-reconciler-type=none",
		"--tls-cert-file="+pki("apiserver.pem"), "--tls-private-key-file="+pki("apiserver.key"),
		"--client-ca-file="+pki("ca.pem"), "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+pki("sa.pub"),
		"--service-account-signing-key-file="+pki("sa.key"), "--service-cluster-ip-range="+serviceCIDR,
		"--kubelet-client-certificate="+pki("apiserver-kubelet.pem"), "--kubelet-client-key="+pki("apiserver-kubelet.key"),
		"--kubelet-certificate-authority="+pki("ca.pem"), "--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true", "--profiling=false", "--cert-dir="+c.path("apiserver"))...)

	// resolvers: one with the private zone, one without
	hosts := fmt.Sprintf("%s %s\n%s blobs.%s\n%s mirror.%s\n", registryIP, registry, blobsIP, zone, mirrorIP, zone)
	c.write(c.path("dns", "hosts"), []byte(hosts), 0o644)
	dnsmasq := func(listen, local string, extra ...string) []string {
		return c.inHub(append([]string{"dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
			"--no-poll", "--local=/" + local + "/", "--listen-address=" + listen, "--bind-interfaces", "--user=root", "--pid-file=",
			"--log-queries", "--log-facility=-"}, extra...)...)
	}
	c.start("dnsmasq", nil, dnsmasq(hubIP, zone, "--addn-hosts="+c.path("dns", "hosts"))...)
	c.start("dnsmasq-nozone", nil, dnsmasq(noZoneDNSIP, "test")...)

	// the registry (blobs redirected to the blob host on :443; served directly on :5000, where the
	// test pushes, and on :5002 over plain HTTP), its mirror and the blob host, sharing one storage
	htpasswd, err := exec.Command("htpasswd", "-Bbn", registryUser, registryPass).Output()
	c.check(err, "htpasswd")
	c.write(c.path("registry", "htpasswd"), htpasswd, 0o644)
	for _, r := range []struct {
		name, addr, redirect, cert string
		auth                       bool
	}{
		{"registry", registryIP + ":443", "https://blobs." + zone + "/", "registry", false},
		{"registry-direct", registryIP + ":5000", "", "registry", false},
		{"registry-auth", registryIP + ":5001", "https://blobs." + zone + "/", "registry", true},
		{"registry-plain", registryIP + ":5002", "", "", false},
		{"mirror", mirrorIP + ":5443", "", "mirror", false},
	} {
		cfg := fmt.Sprintf("version: 0.1\nlog: {level: info, formatter: text}\nstorage:\n  filesystem: {rootdirectory: %s}\n  delete: {enabled: true}\nhttp:\n  addr: %s\n  secret: cluster-tier-not-secret\n",
			c.path("registry", "data"), r.addr)
		if r.cert != "" {
			cfg += fmt.Sprintf("  tls: {certificate: %s, key: %s}\n", pki(r.cert+".pem"), pki(r.cert+".key"))
		}
		if r.auth {
			cfg += fmt.Sprintf("auth:\n  htpasswd: {realm: cluster-tier, path: %s}\n", c.path("registry", "htpasswd"))
		}
		if r.redirect != "" {
			cfg += fmt.Sprintf("middleware:\n  storage:\n    - name: redirect\n      options: {baseurl: %q}\n", r.redirect)
		}
		c.write(c.path("registry", r.name+".yml"), []byte(cfg), 0o644)
		c.start(r.name, nil, c.inHub("docker-registry", "serve", c.path("registry", r.name+".yml"))...)
	}
	self, err := os.Executable()
	c.check(err, "test binary")
	c.start("blobs", []string{"PULLPATH_CLUSTER_ROLE=blobs", "PULLPATH_CLUSTER_ADDR=" + blobsIP + ":443", "PULLPATH_CLUSTER_CERT=" + pki("blobs.pem"),
		"PULLPATH_CLUSTER_KEY=" + pki("blobs.key"), "PULLPATH_CLUSTER_DIR=" + c.path("registry", "data")}, c.inHub(self)...)
	for _, a := range []string{hubIP + ":53", noZoneDNSIP + ":53", registryIP + ":443", registryIP + ":5000", registryIP + ":5001", registryIP + ":5002", mirrorIP + ":5443", blobsIP + ":443"} {
		c.waitTCP(a, a)
	}
}

// waitTCP polls until addr accepts connections inside the hub.
func (c *cluster) waitTCP(what, addr string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		conn, err := netnsdial.In(c.hub)(context.Background(), "tcp", addr)
		if err == nil {
			conn.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.fail("%s (%s) did not start listening in the hub", what, addr)
}

// waitAPI waits for the apiserver's /readyz, then creates what a controller-manager would have
// made and this cluster has not: the default ServiceAccount.
func (c *cluster) waitAPI() {
	var apiserver *proc
	for _, p := range c.procs {
		if p.name == "kube-apiserver" {
			apiserver = p
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-apiserver.done:
			c.fail("kube-apiserver exited:\n%s", c.logTail("kube-apiserver"))
		default:
		}
		if time.Now().After(deadline) {
			c.fail("kube-apiserver not ready: %v\n%s", err, c.logTail("kube-apiserver"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.check(c.prepareNamespace(context.Background(), "default"), "default namespace")
}

// controllerSet is what kube-controller-manager runs here: owners' garbage collection, namespace
// deletion, the not-ready taints and node conditions, and the workload controllers whose pods a
// template pins with nodeName (there is no scheduler). Namespaces get their ServiceAccount and CA
// from Namespace, so that every pod is built the same way with or without the controllers.
var controllerSet = []string{"garbage-collector-controller", "namespace-controller", "node-lifecycle-controller",
	"replicaset-controller", "deployment-controller", "job-controller", "daemonset-controller"}

// controllers starts kube-controller-manager when scripts/kubebins.sh built it (older caches lack it).
func (c *cluster) controllers() {
	bin := filepath.Join(c.bins, "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		return
	}
	c.Controllers = true
	c.start("kube-controller-manager", nil, c.inHub(bin, "--kubeconfig="+c.Kubeconfig, "--leader-elect=false",
		"--secure-port=0", "--use-service-account-credentials=false", "--root-ca-file="+c.path("pki", "ca.pem"),
		"--controllers="+strings.Join(controllerSet, ","))...)
}

// Close stops everything of the cluster and says what, if anything, it could not remove.
func (c *cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.teardown() })
	return c.closeErr
}

func (c *cluster) teardown() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // its process group: nsenter/unshare + the daemon
		_ = p.cmd.Process.Kill()
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			errs = append(errs, fmt.Errorf("%s (pid %d) did not exit", p.name, p.cmd.Process.Pid))
		}
	}
	// a node's processes die with its PID namespace's init, asynchronously
	deadline := time.Now().Add(15 * time.Second)
	for len(c.nodeProcesses()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	for _, n := range c.nodes {
		_ = exec.Command("ip", "netns", "del", n.netns).Run()
	}
	_ = exec.Command("ip", "netns", "del", c.hub).Run()
	for _, n := range c.nodes {
		if n.cgroup != "" {
			if err := removeCgroup(c.cgroupMounts, n.cgroup); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := c.restoreKernelSettings(); err != nil {
		errs = append(errs, fmt.Errorf("kernel settings: %w", err))
	}
	errs = append(errs, c.leftovers()...)
	if os.Getenv("PULLPATH_CLUSTER_KEEP") == "" {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// leftovers lists what of the cluster still exists: processes, namespaces, mounts, cgroups, and
// kernel settings that differ from before.
func (c *cluster) leftovers() []error {
	var errs []error
	for _, p := range c.nodeProcesses() {
		errs = append(errs, fmt.Errorf("process %s is still running", p))
	}
	for _, p := range processesMentioning(c.dir) {
		errs = append(errs, fmt.Errorf("process %s is still running", p))
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, c.id+"-") {
			errs = append(errs, fmt.Errorf("network namespace %s is still there", strings.Fields(line)[0]))
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, c.dir) || strings.Contains(line, "/run/netns/"+c.id+"-") {
			errs = append(errs, fmt.Errorf("mount still there: %s", line))
		}
	}
	for _, m := range cgroupMounts() {
		matches, _ := filepath.Glob(filepath.Join(m, c.id+"-*"))
		for _, d := range matches {
			errs = append(errs, fmt.Errorf("cgroup %s is still there", d))
		}
	}
	for k, v := range c.sysctls {
		if len(c.kernelHeldBy) > 0 {
			break // another cluster still runs kubelets: the settings stay changed until it ends
		}
		if now := readSysctl(k); now != v {
			errs = append(errs, fmt.Errorf("%s is %s, was %s", strings.ReplaceAll(k, "/", "."), now, v))
		}
	}
	return errs
}

// nodeProcesses lists the live processes in the nodes' PID namespaces, as "pid (comm)".
func (c *cluster) nodeProcesses() []string {
	want := map[string]bool{}
	for _, n := range c.nodes {
		if n.pidNS != "" {
			want[n.pidNS] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	var out []string
	for _, pid := range pids() {
		if ns, err := os.Readlink("/proc/" + pid + "/ns/pid"); err == nil && want[ns] {
			out = append(out, describe(pid))
		}
	}
	return out
}

func processesMentioning(s string) []string {
	var out []string
	self := fmt.Sprint(os.Getpid())
	for _, pid := range pids() {
		if pid == self {
			continue
		}
		if cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline"); err == nil && strings.Contains(string(cmdline), s) {
			out = append(out, describe(pid))
		}
	}
	return out
}

func pids() []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if e.Name()[0] >= '0' && e.Name()[0] <= '9' {
			out = append(out, e.Name())
		}
	}
	return out
}

func describe(pid string) string {
	comm, _ := os.ReadFile("/proc/" + pid + "/comm")
	return pid + " (" + strings.TrimSpace(string(comm)) + ")"
}

func readSysctl(key string) string {
	b, _ := os.ReadFile("/proc/sys/" + key)
	return strings.TrimSpace(string(b))
}

// The kernel settings are global while clusters are not: several clusters (of this process or of
// other test processes) may run at once. A state file under a lock records the settings from before
// the first of them and who holds them; the last to leave restores them, and a run whose holders all
// died (a killed test binary) restores them on the next start.
const (
	kernelStateFile = "/run/pullpath-cluster-kernel.json"
	kernelLockFile  = "/run/pullpath-cluster-kernel.lock"
)

type kernelState struct {
	Originals map[string]string `json:"originals"`
	Holders   []string          `json:"holders"` // "<pid>/<cluster id>"
}

// withKernelState runs f on the state under the machine-wide lock and writes back what f leaves
// (nothing when f returns nil).
func withKernelState(f func(st *kernelState) *kernelState) error {
	lock, err := os.OpenFile(kernelLockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	st := &kernelState{}
	if b, err := os.ReadFile(kernelStateFile); err == nil {
		_ = json.Unmarshal(b, st)
	}
	var live []string // holders whose process still runs
	for _, h := range st.Holders {
		var pid int
		if _, err := fmt.Sscanf(h, "%d/", &pid); err == nil {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
				live = append(live, h)
			}
		}
	}
	st.Holders = live
	if st = f(st); st == nil {
		return os.Remove(kernelStateFile)
	}
	b, _ := json.Marshal(st)
	return os.WriteFile(kernelStateFile, b, 0o644)
}

func (c *cluster) saveKernelSettings() {
	holder := fmt.Sprintf("%d/%s", os.Getpid(), c.id)
	c.check(withKernelState(func(st *kernelState) *kernelState {
		if len(st.Holders) == 0 {
			writeSysctls(st.Originals) // left changed by runs that were killed
			st.Originals = map[string]string{}
			for _, k := range kernelSettings {
				st.Originals[k] = readSysctl(k)
			}
		}
		st.Holders = append(st.Holders, holder)
		c.sysctls = st.Originals
		return st
	}), "kernel settings")
}

// restoreKernelSettings gives up this cluster's hold; the last holder restores the settings, and
// only then are they checked by leftovers.
func (c *cluster) restoreKernelSettings() error {
	if c.sysctls == nil {
		return nil
	}
	holder := fmt.Sprintf("%d/%s", os.Getpid(), c.id)
	return withKernelState(func(st *kernelState) *kernelState {
		st.Holders = slices.DeleteFunc(st.Holders, func(h string) bool { return h == holder })
		if len(st.Holders) > 0 {
			c.kernelHeldBy = st.Holders
			return st
		}
		writeSysctls(st.Originals)
		c.kernelHeldBy = nil
		return nil
	})
}

func writeSysctls(values map[string]string) {
	for k, v := range values {
		if readSysctl(k) != v {
			_ = os.WriteFile("/proc/sys/"+k, []byte(v), 0o644)
		}
	}
}

// cgroupMounts lists the mount points of every cgroup hierarchy (v1 and the hybrid unified one).
func cgroupMounts() []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, " - ", 2)
		f := strings.Fields(parts[0])
		if len(parts) == 2 && len(f) > 4 && (strings.HasPrefix(parts[1], "cgroup ") || strings.HasPrefix(parts[1], "cgroup2 ")) {
			out = append(out, f[4])
		}
	}
	return out
}

// removeCgroup removes the cgroup root of a node, children first, in every hierarchy.
func removeCgroup(mounts []string, root string) error {
	var errs []error
	for _, m := range mounts {
		top := filepath.Join(m, root)
		deadline := time.Now().Add(10 * time.Second)
		for {
			var dirs []string
			_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			if len(dirs) == 0 {
				break
			}
			var last error
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
					last = fmt.Errorf("rmdir %s: %w", dirs[i], err)
				}
			}
			if last == nil {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, last)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

// removeStale removes what a killed earlier run left (t.Cleanup and TestMain do not run when the test
// binary is killed; its processes die with it through Pdeathsig): namespaces, cgroups and temp dirs
// of runs whose process is gone. saveKernelSettings restores the kernel settings such a run left.
func removeStale() {
	dead := func(name string) bool {
		var pid, n int
		if _, err := fmt.Sscanf(name, "ppk%dc%d", &pid, &n); err != nil || pid == os.Getpid() {
			return false
		}
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return err != nil
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "ppk") && dead(f[0]) {
			_ = exec.Command("ip", "netns", "del", f[0]).Run()
		}
	}
	mounts := cgroupMounts()
	for _, m := range mounts {
		matches, _ := filepath.Glob(filepath.Join(m, "ppk*"))
		for _, d := range matches {
			if dead(filepath.Base(d)) {
				_ = removeCgroup([]string{m}, filepath.Base(d))
			}
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "ppk*"))
	for _, d := range dirs {
		if dead(filepath.Base(d)) {
			_ = os.RemoveAll(d)
		}
	}
}
