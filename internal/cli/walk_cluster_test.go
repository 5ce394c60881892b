//go:build !probeonly

package cli

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// closedKubeconfig writes a kubeconfig whose server is a loopback port that answers nothing.
func closedKubeconfig(t *testing.T) (path, token string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	token = "walk-secret-token-4711"
	path = filepath.Join(t.TempDir(), "kubeconfig")
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://" + addr + "\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: " + token + "\n"
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, token
}

// Bad flags of the cluster commands are said before the API is asked (a closed port here), in
// one line, with exit 2; a cluster that does not answer is exit 2 too, never a report.
func TestClusterCommandsBadInputBeforeTheAPI(t *testing.T) {
	kc, token := closedKubeconfig(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pod", "web", "-o", "yaml"}, `--output "yaml"`},
		{[]string{"pod", "web", "-A"}, "-A/--all-namespaces goes with --all"},
		{[]string{"pod", "web", "--node-max-images", "0"}, "--node-max-images 0: want 1 or more"},
		{[]string{"pod", "web", "-n", "Bad_NS"}, `-n "Bad_NS": not a namespace name`},
		{[]string{"pod", "web", "--context", "nope"}, `--context "nope": no such context in the kubeconfig`},
		{[]string{"verify", "nginx:1", "--context", "nope"}, `--context "nope": no such context in the kubeconfig`},
		{[]string{"verify", "nginx:1", "--timeout", "0"}, "--timeout 0s: want a positive duration"},
		{[]string{"verify", "nginx:1", "--probe-timeout", "-1s"}, "--probe-timeout -1s: want a positive duration"},
		{[]string{"verify", "nginx:1", "--node-max-images", "0"}, "--node-max-images 0: want 1 or more"},
		{[]string{"verify", "nginx:1", "--junit", dir}, "--junit " + dir + " is a directory"},
		{[]string{"verify", "nginx:1", "--junit", filepath.Join(dir, "no", "j.xml")}, "does not exist"},
		{[]string{"verify", "nginx:1", "--probe-binary", filepath.Join(dir, "nosuch")}, "--probe-binary"},
		{[]string{"verify", "nginx:1", "--probe-binary", dir}, "--probe-binary " + dir + " is a directory"},
		{[]string{"verify", "nginx:1", "--probe-binary", empty}, "not a linux executable"},
		{[]string{"verify", "nginx:1", "--run-namespace", "Bad_NS"}, `--run-namespace "Bad_NS": not a namespace name`},
		{[]string{"verify", "nginx:1", "-n", "Bad_NS"}, `-n "Bad_NS": not a namespace name`},
		{[]string{"verify", "nginx:1", "--pool", ""}, "--pool: an empty pool name"},
		{[]string{"cleanup", "--run", "bad id!"}, `--run "bad id!": not a run id`},
		{[]string{"cleanup", "--run-namespace", "Bad_NS"}, `--run-namespace "Bad_NS": not a namespace name`},
		{[]string{"cleanup"}, "cannot reach the cluster"},
	} {
		args := append(tc.args, "--kubeconfig", kc)
		r := run(t, "", args...)
		oneLineUsage(t, r, args, tc.want)
		if strings.Contains(r.errOut+r.out, token) {
			t.Errorf("%q: the kubeconfig's token is echoed: %q", args, r.errOut)
		}
	}
}

// Commands that only group others, and the rest of the full build, refuse what they cannot do
// with exit 2 and one line, instead of printing help and exiting 0.
func TestGroupCommandsAndArgsOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"completion"}, "completion needs a shell: bash, zsh, fish or powershell"},
		{[]string{"completion", "tcsh"}, `completion: unknown shell "tcsh": want bash, zsh, fish or powershell`},
		{[]string{"image"}, "image needs a subcommand: push"},
		{[]string{"image", "frob"}, `image: unknown subcommand "frob": want push`},
		{[]string{"image", "push"}, "pullpath image push needs an IMAGE"},
		{[]string{"image", "push", "a", "b"}, "pullpath image push takes one IMAGE, got 2 arguments"},
		{[]string{"image", "push", "BAD REF"}, `invalid image reference "BAD REF"`},
		{[]string{"explain", "a", "b"}, "explain reads one FILE (or stdin), got 2 arguments: a b"},
		{[]string{"demo", "--only", "no such scenario"}, `--only "no such scenario" matches no scenario`},
	} {
		oneLineUsage(t, run(t, "", tc.args...), tc.args, tc.want)
	}
}

func TestClusterImageReferenceCredentialsNotEchoed(t *testing.T) {
	for _, args := range [][]string{
		{"verify", "https://admin:hunter2@reg.example/app:1"},
		{"verify", "nginx:1", "--probe-image", "admin:hunter2@reg.example/probe:1"},
		{"image", "push", "https://admin:hunter2@reg.example/probe:1"},
	} {
		r := run(t, "", args...)
		oneLineUsage(t, r, args, "credentials do not go in the image reference")
		if strings.Contains(r.errOut, "hunter2") {
			t.Errorf("%q: the password is echoed: %q", args, r.errOut)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

// A list that could not be written (a full disk, a closed pipe) is not a success.
func TestDemoListWriteError(t *testing.T) {
	err := Run(t.Context(), Streams{In: strings.NewReader(""), Out: failingWriter{}, ErrOut: failingWriter{}}, []string{"demo", "--list"})
	if Code(err, failingWriter{}) != ExitUsage {
		t.Errorf("demo --list into a failing writer: %v, want exit 2", err)
	}
}

// Pod names and NAMESPACE/NAME references are checked before the API is asked.
func TestPodReferencesBeforeTheAPI(t *testing.T) {
	kc, _ := closedKubeconfig(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pod", "shop/web-1"}, `pod "shop/web-1": give the namespace with -n: pullpath pod web-1 -n shop`},
		{[]string{"pod", "Web_1"}, `pod "Web_1": not a pod name`},
		{[]string{"verify", "nginx:1", "--pod", "a/b/c"}, `--pod "a/b/c": want NAMESPACE/NAME or NAME`},
		{[]string{"verify", "nginx:1", "--pod", "Shop/web"}, `--pod "Shop/web": not a namespace name`},
		{[]string{"verify", "nginx:1", "--pod", "shop/"}, `--pod "shop/": want NAMESPACE/NAME or NAME`},
		{[]string{"verify", "nginx:1", "--probe-image", "r.example/p:1", "--from-pod", "/web"}, `--from-pod "/web": want NAMESPACE/NAME or NAME`},
	} {
		args := append(tc.args, "--kubeconfig", kc)
		oneLineUsage(t, run(t, "", args...), args, tc.want)
	}
}

// apiStub is a loopback API server that knows no namespace: every namespace GET is the 404 Status
// kube-apiserver sends, every pod list is empty. Only what pod needs to tell a missing namespace.
func apiStub(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		switch {
		case len(parts) == 4 && parts[2] == "namespaces":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"namespaces %q not found","reason":"NotFound","details":{"name":%q,"kind":"namespaces"},"code":404}`, parts[3], parts[3])
		case len(parts) == 6 && parts[4] == "pods":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods %q not found","reason":"NotFound","details":{"name":%q,"kind":"pods"},"code":404}`, parts[5], parts[5])
		default:
			fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A namespace that does not exist (a typo at 3 a.m.) is said, not reported as "no pull failure".
func TestPodInAMissingNamespace(t *testing.T) {
	server := apiStub(t)
	for _, args := range [][]string{
		{"pod", "--all", "-n", "shpo"},
		{"pod", "web-1", "-n", "shpo"},
	} {
		args = append(args, "--server", server, "--token", "walk-secret-token-4711")
		r := run(t, "", args...)
		oneLineUsage(t, r, args, "namespace shpo does not exist")
		if strings.Contains(r.errOut, "walk-secret-token-4711") {
			t.Errorf("%q: token echoed", args)
		}
	}
}

// --server without a scheme would be spoken to in plain HTTP (client-go's default without TLS
// settings), the token with it; --request-timeout is a flag, not the kubeconfig.
func TestKubeConnectionFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pod", "web", "--server", "127.0.0.1:1", "--token", "walk-secret-token-4711"}, `--server "127.0.0.1:1": give the scheme, e.g. https://127.0.0.1:1`},
		{[]string{"verify", "nginx:1", "--server", "127.0.0.1:1"}, `--server "127.0.0.1:1": give the scheme`},
		{[]string{"pod", "web", "--server", "https://127.0.0.1:1", "--request-timeout", "abc"}, `--request-timeout "abc": want a duration such as 30s, or 0 for none`},
		{[]string{"cleanup", "--server", "https://127.0.0.1:1", "--request-timeout", "-5s"}, `--request-timeout "-5s": want a duration such as 30s, or 0 for none`},
	} {
		r := run(t, "", tc.args...)
		oneLineUsage(t, r, tc.args, tc.want)
		if strings.Contains(r.errOut, "walk-secret-token-4711") {
			t.Errorf("%q: token echoed", tc.args)
		}
	}
}

// image push checks its files before building anything, and a platform without a binary says how
// to push fewer.
func TestImagePushFilesFirst(t *testing.T) {
	bins := t.TempDir()
	if err := os.WriteFile(filepath.Join(bins, "pullpath-probe-linux-amd64"), minimalELF(t, "amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ca-file", "/nonexistent/ca.pem"}, "--ca-file: open /nonexistent/ca.pem"},
		{[]string{"--timeout", "0"}, "--timeout 0s: want a positive duration"},
		{[]string{"--probe-binary-dir", bins}, "no pullpath binary for linux/arm64 in " + bins + ": "},
		{[]string{"--probe-binary-dir", bins}, "or push only the platforms you have binaries for, e.g. --platform linux/amd64"},
	} {
		args := append([]string{"image", "push", "127.0.0.1:1/probe:1"}, tc.args...)
		oneLineUsage(t, run(t, "", args...), args, tc.want)
	}
}

// verify --pod and --secret naming what does not exist are one line and exit 2, before anything
// is created: the stub API server allows every access review, knows no namespace, pod or secret,
// and counts every write.
func TestVerifySourcesThatDoNotExist(t *testing.T) {
	var mu sync.Mutex
	var writes []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/selfsubjectaccessreviews") {
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{},"status":{"allowed":true}}`)
			return
		}
		if r.Method != http.MethodGet {
			mu.Lock()
			writes = append(writes, r.Method+" "+r.URL.Path)
			mu.Unlock()
		}
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if n := len(parts); n == 4 || n == 6 {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"%s %q not found","reason":"NotFound","details":{"name":%q,"kind":%q},"code":404}`, parts[n-2], parts[n-1], parts[n-1], parts[n-2])
			return
		}
		fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}`)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pod", "nosuchns/x"}, "pullpath: --pod nosuchns/x: namespace nosuchns does not exist (kubectl get namespaces lists them) — nothing was created\n"},
		{[]string{"--secret", "nosuch", "-n", "nosuchns"}, "pullpath: --secret nosuch: namespace nosuchns does not exist (kubectl get namespaces lists them) — nothing was created\n"},
	} {
		args := append([]string{"verify", "nginx:1", "--probe-image", "r.example/probe:1", "--server", srv.URL, "--token", "walk-secret-token-4711"}, tc.args...)
		r := run(t, "", args...)
		if r.code != ExitUsage || r.out != "" || r.errOut != tc.want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, r.code, r.out, r.errOut, tc.want)
		}
	}
	if len(writes) > 0 {
		t.Errorf("written before the sources were read: %q", writes)
	}
}

// --request-timeout takes what client-go takes (whole seconds, or a duration), never a negative.
func TestRequestTimeoutValues(t *testing.T) {
	for v, ok := range map[string]bool{
		"0": true, "-0": true, "5": true, "+5": true, "30s": true, "1m30s": true, "0s": true,
		"-5": false, "-5s": false, "abc": false, "1.5": false, "99999999999999999999": false,
	} {
		var k kubeFlags
		k.overrides.Timeout = v
		if err := k.validate(); (err == nil) != ok {
			t.Errorf("--request-timeout %q: %v, want accepted %v", v, err, ok)
		}
	}
}
