// Package kubeapi runs etcd and kube-apiserver on loopback for the tiers that need only a control
// plane (the fleet tier): random ports on 127.0.0.1, bearer tokens, RBAC, an audit log of the users
// whose requests are measured, and a teardown that kills what it started, by PID.
package kubeapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Version is the Kubernetes version scripts/kubebins.sh builds.
const Version = "v1.37.2"

// Bins is the directory holding kube-apiserver and etcd: $PULLPATH_KUBEBINS, else the newest cache
// entry scripts/kubebins.sh made (under $PULLPATH_CACHE, default /var/cache/pullpath); want names
// more binaries that must be there.
func Bins(want ...string) (string, error) {
	want = append([]string{"kube-apiserver", "etcd"}, want...)
	has := func(dir string) bool {
		for _, b := range want {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.Mode()&0o111 == 0 {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv("PULLPATH_KUBEBINS"); dir != "" {
		if !has(dir) {
			return "", fmt.Errorf("PULLPATH_KUBEBINS=%s lacks one of %s", dir, strings.Join(want, ", "))
		}
		return dir, nil
	}
	if d := Newest("kubebins-"+Version+"-*", has); d != "" {
		return d, nil
	}
	return "", fmt.Errorf("no kube binaries: run scripts/kubebins.sh (a cold build takes about 20 min) and set PULLPATH_KUBEBINS to the directory it prints")
}

// Cache is where the tiers' cached builds live: $PULLPATH_CACHE, default /var/cache/pullpath.
func Cache() string {
	if c := os.Getenv("PULLPATH_CACHE"); c != "" {
		return c
	}
	return "/var/cache/pullpath"
}

// Newest is the most recently made cache entry matching pattern for which ok holds, or "".
func Newest(pattern string, ok func(dir string) bool) string {
	dirs, _ := filepath.Glob(filepath.Join(Cache(), pattern))
	sort.Slice(dirs, func(i, j int) bool { return modTime(dirs[i]) > modTime(dirs[j]) })
	for _, d := range dirs {
		if ok(d) {
			return d
		}
	}
	return ""
}

func modTime(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.ModTime().UnixNano()
}

// User is one identity of the static token file.
type User struct {
	Name   string
	Groups []string
}

// MeasuredGroup is the group whose requests the audit log records (level Metadata); nothing else
// is recorded.
const MeasuredGroup = "pullpath:measured"

// Server is a running etcd and kube-apiserver.
type Server struct {
	Dir      string
	URL      string
	AuditLog string
	tokens   map[string]string // user → token
	procs    []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs etcd and kube-apiserver in dir (which it fills: logs/, etcd/, pki/) and returns once
// the API server is ready. users get static bearer tokens; "admin" is always there, in
// system:masters. extra are more kube-apiserver flags.
func Start(bins, dir string, users []User, extra ...string) (s *Server, err error) {
	s = &Server{Dir: dir, AuditLog: filepath.Join(dir, "audit.log"), tokens: map[string]string{}}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (logs in %s)", err, filepath.Join(dir, "logs"))
			_ = s.Close()
			s = nil
		}
	}()
	for _, d := range []string{"logs", "etcd", "pki"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return s, err
		}
	}
	ports, err := freePorts(3)
	if err != nil {
		return s, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	if _, err := s.Run("etcd", nil, filepath.Join(bins, "etcd"), "--name=fleet", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", ports[1]), fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--initial-cluster=fleet=http://127.0.0.1:%d", ports[1]), "--unsafe-no-fsync", "--log-level=warn",
		"--quota-backend-bytes=8589934592"); err != nil {
		return s, err
	}
	var lines []string
	for i, u := range append([]User{{Name: "admin", Groups: []string{"system:masters"}}}, users...) {
		tok := randomHex(16)
		s.tokens[u.Name] = tok
		lines = append(lines, fmt.Sprintf("%s,%s,%d,%q", tok, u.Name, 1000+i, strings.Join(u.Groups, ",")))
	}
	pki := filepath.Join(dir, "pki")
	files := map[string]string{
		"tokens.csv":        strings.Join(lines, "\n") + "\n",
		"audit-policy.yaml": "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  userGroups: [\"" + MeasuredGroup + "\"]\n- level: None\n",
	}
	key, pub, err := serviceAccountKey()
	if err != nil {
		return s, err
	}
	files["sa.key"], files["sa.pub"] = key, pub
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(pki, name), []byte(body), 0o600); err != nil {
			return s, err
		}
	}
	s.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	args := append([]string{filepath.Join(bins, "kube-apiserver"), "--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[2]), "--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none", "--cert-dir=" + pki, "--token-auth-file=" + filepath.Join(pki, "tokens.csv"),
		"--authorization-mode=RBAC", "--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(pki, "sa.pub"), "--service-account-signing-key-file=" + filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24", "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--audit-policy-file=" + filepath.Join(pki, "audit-policy.yaml"), "--audit-log-path=" + s.AuditLog, "--audit-log-format=json",
		"--profiling=false"}, extra...)
	apiserver, err := s.Run("kube-apiserver", nil, args...)
	if err != nil {
		return s, err
	}
	return s, s.waitReady(apiserver)
}

func (s *Server) waitReady(apiserver *proc) error {
	cs, err := kubernetes.NewForConfig(s.Config("admin"))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-apiserver.done:
			return fmt.Errorf("kube-apiserver exited: %s", s.LogTail("kube-apiserver"))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready after 90 s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Config is a client configuration for user, with no client-side rate limit.
func (s *Server) Config(user string) *rest.Config {
	return &rest.Config{Host: s.URL, BearerToken: s.tokens[user], QPS: -1, Timeout: 2 * time.Minute,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

// Kubeconfig writes a kubeconfig for user and returns its path.
func (s *Server) Kubeconfig(user string) (string, error) {
	path := filepath.Join(s.Dir, user+".kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fleet
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: %s
  user: {token: %q}
contexts:
- name: fleet
  context: {cluster: fleet, user: %s}
current-context: fleet
`, s.URL, user, s.tokens[user], user)
	return path, os.WriteFile(path, []byte(body), 0o600)
}

// Run starts a long-lived process, its output in logs/<name>.log; Close kills it by PID.
func (s *Server) Run(name string, env []string, args ...string) (*proc, error) {
	logf, err := os.Create(filepath.Join(s.Dir, "logs", name+".log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	s.procs = append(s.procs, p)
	return p, nil
}

// Exited says whether the named process has ended.
func (s *Server) Exited(name string) bool {
	for _, p := range s.procs {
		if p.name == name {
			select {
			case <-p.done:
				return true
			default:
			}
		}
	}
	return false
}

// PID is the named process's PID (0 when not started).
func (s *Server) PID(name string) int {
	for _, p := range s.procs {
		if p.name == name {
			return p.cmd.Process.Pid
		}
	}
	return 0
}

// LogTail is the end of a process's log.
func (s *Server) LogTail(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "logs", name+".log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Close kills every process it started (its process group), last started first, and says which
// did not exit.
func (s *Server) Close() error {
	var errs []error
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Process.Kill()
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			errs = append(errs, fmt.Errorf("%s (pid %d) did not exit", p.name, p.cmd.Process.Pid))
		}
	}
	s.procs = nil
	return errors.Join(errs...)
}

// AuditOffset is where the audit log ends now: Requests counts from there.
func (s *Server) AuditOffset() int64 {
	st, err := os.Stat(s.AuditLog)
	if err != nil {
		return 0
	}
	return st.Size()
}

// Requests counts the measured users' requests in the audit log after offset, by "verb resource"
// ("list pods", "get nodes/proxy"), for user ("" for every measured user).
func (s *Server) Requests(offset int64, user string) (map[string]int, error) {
	b, err := os.ReadFile(s.AuditLog)
	if err != nil {
		return nil, err
	}
	if offset > int64(len(b)) {
		offset = 0
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(b[offset:]), "\n") {
		if line == "" {
			continue
		}
		var ev struct {
			Verb       string `json:"verb"`
			User       struct{ Username string }
			ObjectRef  *struct{ Resource, Subresource string }
			RequestURI string `json:"requestURI"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || (user != "" && ev.User.Username != user) {
			continue
		}
		what, _, _ := strings.Cut(ev.RequestURI, "?")
		if ev.ObjectRef != nil {
			what = ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				what += "/" + ev.ObjectRef.Subresource
			}
		}
		out[ev.Verb+" "+what]++
	}
	return out, nil
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

func serviceAccountKey() (key, pub string, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return "", "", err
	}
	pder, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return "", "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pder})), nil
}
