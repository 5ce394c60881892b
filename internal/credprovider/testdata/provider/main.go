// Command provider is a kubelet credential provider for tests. Its first argument is the mode:
//
//	ok USER PASS [KEY]  answer USER/PASS under auth key KEY (default: the requested image's host)
//	fail                write a message with a token to stderr, exit 1
//	sleep               sleep for a minute
//	badjson             write something that is not JSON
//	noauth              answer with credentials for another registry only
//
// It checks the request like a real provider: apiVersion and kind, an image; and, when
// PROVIDER_NEED_ENV is set, that the named variable reached it. When PROVIDER_LOG names a file it
// appends "<caller> <image>" there (the caller is the parent process's name, kubelet or pullpath,
// or "-" when the parent is not in this PID namespace's /proc),
// so a test can show who ran it; a file it cannot write (a read-only root) is no error.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	var req struct{ APIVersion, Kind, Image string }
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil || req.Kind != "CredentialProviderRequest" || req.Image == "" ||
		!strings.HasPrefix(req.APIVersion, "credentialprovider.kubelet.k8s.io/") {
		fmt.Fprintf(os.Stderr, "bad request: %+v %v\n", req, err)
		os.Exit(3)
	}
	if v := os.Getenv("PROVIDER_NEED_ENV"); v != "" && os.Getenv(v) == "" {
		fmt.Fprintf(os.Stderr, "environment variable %s not set\n", v)
		os.Exit(4)
	}
	if log := os.Getenv("PROVIDER_LOG"); log != "" {
		caller := "-" // a parent outside this PID namespace's /proc
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", os.Getppid())); err == nil && len(b) > 1 {
			caller = strings.TrimSpace(string(b))
		}
		if f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "%s %s\n", caller, req.Image)
			f.Close()
		}
	}
	mode := "ok"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	host, _, _ := strings.Cut(req.Image, "/")
	cacheDuration := ""
	answer := func(key, user, pass string) {
		resp := map[string]any{
			"apiVersion": req.APIVersion, "kind": "CredentialProviderResponse", "cacheKeyType": "Registry",
			"auth": map[string]any{key: map[string]string{"username": user, "password": pass}},
		}
		if cacheDuration != "" {
			resp["cacheDuration"] = cacheDuration
		}
		json.NewEncoder(os.Stdout).Encode(resp)
	}
	switch mode {
	case "ok":
		key := host
		if len(os.Args) > 4 {
			key = os.Args[4]
		}
		answer(key, os.Args[2], os.Args[3])
	case "cached": // cached USER PASSWORD CACHEDURATION
		cacheDuration = os.Args[4]
		answer(host, os.Args[2], os.Args[3])
	case "fail":
		fmt.Fprintln(os.Stderr, "E1202 failed to get token: managed identity endpoint said 400, token=leaked-provider-token-42 Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJub2RlIn0.c2lnbmF0dXJl")
		os.Exit(1)
	case "sleep":
		time.Sleep(time.Minute)
	case "badjson":
		fmt.Println("<html>not json</html>")
	case "noauth":
		answer("other.example.com", "u", "provider-other-secret")
	}
}
