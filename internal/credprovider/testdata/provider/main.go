// Command provider is a kubelet credential provider for tests. Its first argument is the mode:
//
//	ok USER PASS [KEY]  answer USER/PASS under auth key KEY (default: the requested image's host)
//	fail                write a message with a token to stderr, exit 1
//	sleep               sleep for a minute
//	badjson             write something that is not JSON
//	noauth              answer with credentials for another registry only
//
// It checks the request like a real provider: apiVersion and kind, an image; and, when
// PROVIDER_NEED_ENV is set, that the named variable reached it.
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
	mode := "ok"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	host, _, _ := strings.Cut(req.Image, "/")
	answer := func(key, user, pass string) {
		json.NewEncoder(os.Stdout).Encode(map[string]any{
			"apiVersion": req.APIVersion, "kind": "CredentialProviderResponse", "cacheKeyType": "Registry",
			"auth": map[string]any{key: map[string]string{"username": user, "password": pass}},
		})
	}
	switch mode {
	case "ok":
		key := host
		if len(os.Args) > 4 {
			key = os.Args[4]
		}
		answer(key, os.Args[2], os.Args[3])
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
