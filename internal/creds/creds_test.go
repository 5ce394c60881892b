package creds

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestFromPullSecretFile(t *testing.T) {
	cfg := fmt.Sprintf(`{"auths":{"https://index.docker.io/v1/":{"auth":%q},"*.azurecr.io":{"username":"sp","password":"pw2"},"reg.example:5000":{"identitytoken":"idt"}}}`, b64("hub:pw1"))
	yamlSecret := "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: " + b64(cfg) + "\n"
	jsonSecret := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","stringData":{".dockerconfigjson":%q}}`, cfg)
	for name, body := range map[string]string{"yaml": yamlSecret, "json": jsonSecret, "config.json": cfg} {
		p := write(t, body)
		for reg, want := range map[string]string{"docker.io": "hub:pw1", "myreg.azurecr.io": "sp:pw2", "reg.example:5000": ":"} {
			c, err := FromPullSecretFile(p, reg)
			if err != nil {
				t.Errorf("%s %s: %v", name, reg, err)
				continue
			}
			if got := c.Username + ":" + c.Password; got != want {
				t.Errorf("%s %s = %q, want %q", name, reg, got, want)
			}
			if strings.Contains(c.String(), "pw") || strings.Contains(fmt.Sprintf("%v %+v %#v", c, c, c), "pw1") {
				t.Errorf("String() leaks the password: %v", c)
			}
		}
		if _, err := FromPullSecretFile(p, "other.example"); err == nil || !strings.Contains(err.Error(), "no entry for other.example") {
			t.Errorf("%s: unmatched registry error = %v", name, err)
		}
	}
	// a wildcard matches one label, not several (kubelet semantics)
	if _, err := FromPullSecretFile(write(t, cfg), "a.b.azurecr.io"); err == nil {
		t.Error("*.azurecr.io matched a.b.azurecr.io")
	}
}

func TestFromPullSecretFileErrors(t *testing.T) {
	for name, body := range map[string]string{
		"garbage":         "::: not yaml [",
		"wrong kind":      "kind: ConfigMap\ndata: {}\n",
		"no data":         "kind: Secret\ntype: Opaque\n",
		"bad base64":      "kind: Secret\ndata:\n  .dockerconfigjson: '%%%'\n",
		"inner not json":  "kind: Secret\ndata:\n  .dockerconfigjson: " + b64("nope") + "\n",
		"empty entry":     `{"auths":{"r.example":{}}}`,
		"auth not base64": `{"auths":{"r.example":{"auth":"%%"}}}`,
		"auth no colon":   fmt.Sprintf(`{"auths":{"r.example":{"auth":%q}}}`, b64("nocolon")),
	} {
		if _, err := FromPullSecretFile(write(t, body), "r.example"); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	if _, err := FromPullSecretFile("/nonexistent/x", "r.example"); err == nil || !strings.Contains(err.Error(), "/nonexistent/x") {
		t.Errorf("missing file error = %v", err)
	}
}

func TestFromKeychain(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(fmt.Sprintf(`{"auths":{"reg.example":{"auth":%q}}}`, b64("u:p"))), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := FromKeychain("reg.example")
	if err != nil || c.Username != "u" || c.Password != "p" {
		t.Errorf("FromKeychain = %v, %v", c, err)
	}
	c, err = FromKeychain("other.example")
	if err != nil || !c.Anonymous() {
		t.Errorf("FromKeychain(other) = %v, %v; want anonymous", c, err)
	}
}

func FuzzParsePullSecret(f *testing.F) {
	f.Add([]byte(`{"auths":{"r":{"auth":"dTpw"}}}`))
	f.Add([]byte("kind: Secret\ndata:\n  .dockerconfigjson: e30=\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		auths, err := parsePullSecret(b)
		if err != nil {
			return
		}
		for k, e := range auths {
			_, _ = e.credential()
			_ = normalizeKey(k)
		}
	})
}

func TestMatchImageAsTheKubelet(t *testing.T) {
	for _, tc := range []struct {
		keys  []string
		image string
		want  string
	}{
		{[]string{"myreg.azurecr.io"}, "myreg.azurecr.io/team/app:1", "myreg.azurecr.io"},
		{[]string{"*.azurecr.io"}, "myreg.azurecr.io/team/app:1", "*.azurecr.io"},
		{[]string{"*.azurecr.io"}, "a.b.azurecr.io/app:1", ""},  // label count differs
		{[]string{"reg.example:5000"}, "reg.example/app:1", ""}, // port must match
		{[]string{"reg.example:5000"}, "reg.example:5000/app:1", "reg.example:5000"},
		{[]string{"reg.example/team"}, "reg.example/team/app:1", "reg.example/team"},
		{[]string{"reg.example/team"}, "reg.example/other/app:1", ""},
		{[]string{"https://index.docker.io/v1/"}, "nginx:1.25", "https://index.docker.io/v1/"},
		{[]string{"other.example", "https://myreg.io"}, "myreg.io/app@sha256:" + strings.Repeat("a", 64), "https://myreg.io"},
		{[]string{"other.example"}, "myreg.io/app:1", ""},
	} {
		got, ok := MatchImage(tc.keys, tc.image)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("MatchImage(%q, %s) = %q, %t; want %q", tc.keys, tc.image, got, ok, tc.want)
		}
	}
}

func FuzzMatchImage(f *testing.F) {
	f.Add("*.azurecr.io", "myreg.azurecr.io/team/app:1")
	f.Add("https://index.docker.io/v1/", "nginx")
	f.Add("reg.example:5000/team", "reg.example:5000/team/app@sha256:"+strings.Repeat("a", 64))
	f.Fuzz(func(t *testing.T, key, image string) {
		k, ok := MatchImage([]string{key}, image)
		if (ok && k != key) || (!ok && k != "") {
			t.Fatalf("MatchImage(%q, %q) = %q, %t", key, image, k, ok)
		}
	})
}
