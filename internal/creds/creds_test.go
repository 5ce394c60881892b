package creds

import (
	"encoding/base64"
	"fmt"
	"github.com/pullpath/pullpath/internal/registry"
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

// fromFile is what probe --pull-secret FILE does: the file read, every covering entry in the
// kubelet's order; the first is presented.
func fromFile(file, image string) (Credential, error) {
	s, err := ReadPullSecretFile(file)
	if err != nil {
		return Credential{}, err
	}
	ref, err := registry.ParseReference(image)
	if err != nil {
		return Credential{}, err
	}
	all, err := FromPullSecrets([]NamedSecret{s}, ref.Name())
	if err != nil {
		return Credential{}, err
	}
	return all[0], nil
}

func TestFromPullSecretFile(t *testing.T) {
	cfg := fmt.Sprintf(`{"auths":{"https://index.docker.io/v1/":{"auth":%q},"*.azurecr.io":{"username":"sp","password":"pw2"},"reg.example:5000":{"identitytoken":"idt"}}}`, b64("hub:pw1"))
	yamlSecret := "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: " + b64(cfg) + "\n"
	jsonSecret := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","stringData":{".dockerconfigjson":%q}}`, cfg)
	for name, body := range map[string]string{"yaml": yamlSecret, "json": jsonSecret, "config.json": cfg} {
		p := write(t, body)
		for reg, want := range map[string]string{"docker.io/library/nginx": "hub:pw1", "myreg.azurecr.io/app": "sp:pw2", "reg.example:5000/app": ":"} {
			c, err := fromFile(p, reg)
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
		if _, err := fromFile(p, "other.example/app"); err == nil || !strings.Contains(err.Error(), "no entry for other.example/app") {
			t.Errorf("%s: unmatched registry error = %v", name, err)
		}
	}
	// a wildcard matches one label, not several (kubelet semantics)
	if _, err := fromFile(write(t, cfg), "a.b.azurecr.io/app"); err == nil {
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
		if _, err := fromFile(write(t, body), "r.example/app"); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	if _, err := fromFile("/nonexistent/x", "r.example/app"); err == nil || !strings.Contains(err.Error(), "/nonexistent/x") {
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
			_, _ = KeyringKey(k)
		}
	})
}

func TestFirstKeyAsTheKubelet(t *testing.T) {
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
		got := ""
		if o := order(PullSecrets, tc.keys, tc.image); len(o) > 0 {
			got = tc.keys[o[0]]
		}
		if got != tc.want {
			t.Errorf("first key of %q for %s = %q; want %q", tc.keys, tc.image, got, tc.want)
		}
	}
}

func FuzzKeyringLookup(f *testing.F) {
	f.Add("*.azurecr.io", "myreg.azurecr.io/team/app:1")
	f.Add("https://index.docker.io/v1/", "nginx")
	f.Add("reg.example:5000/team", "reg.example:5000/team/app@sha256:"+strings.Repeat("a", 64))
	f.Fuzz(func(t *testing.T, key, image string) {
		var k Keyring
		k.Add(PullSecrets, key, Credential{Source: key}, 0)
		for _, m := range k.Lookup(image) {
			if m.Key != key || m.Credential.Source != key {
				t.Fatalf("Lookup(%q) with key %q = %+v", image, key, m)
			}
		}
	})
}

// The value of a kubernetes.io/dockercfg secret's key (.dockercfg), as verify --from-pod hands it
// over: the auths map without its wrapper. The kubelet reads it; so must the probe.
func TestBareDockercfg(t *testing.T) {
	cfg := fmt.Sprintf(`{"reg.example:5000":{"auth":%q,"email":"x@example.com"}}`, b64("legacy:pw9"))
	cs, err := FromPullSecrets([]NamedSecret{{Label: "shop/old key .dockercfg", Data: []byte(cfg)}}, "reg.example:5000/team/app")
	if err != nil || len(cs) != 1 || cs[0].Username != "legacy" || cs[0].Password != "pw9" || cs[0].Source != "pull secret shop/old key .dockercfg (entry reg.example:5000)" {
		t.Fatalf("FromPullSecrets(.dockercfg) = %v, %v", cs, err)
	}
	if _, err := FromPullSecrets([]NamedSecret{{Label: "empty", Data: []byte(`{}`)}}, "reg.example:5000/team/app"); err == nil {
		t.Error("an empty document parsed as a .dockercfg")
	}
}

// Every entry of every secret that covers the image, in the kubelet keyring's order: keys in
// reverse string order (the repository-specific key before the host's), secrets in the pod's order
// for a key they share; entries for other registries or repositories are left out.
func TestFromPullSecretsKubeletOrder(t *testing.T) {
	first := fmt.Sprintf(`{"auths":{"reg.example":{"auth":%q},"other.example":{"auth":%q}}}`, b64("a:1"), b64("o:0"))
	second := fmt.Sprintf(`{"auths":{"reg.example":{"auth":%q},"reg.example/team":{"auth":%q},"reg.example/else":{"auth":%q}}}`, b64("b:2"), b64("c:3"), b64("d:4"))
	legacy := fmt.Sprintf(`{"*.example":{"auth":%q}}`, b64("e:5"))
	cs, err := FromPullSecrets([]NamedSecret{{"one", []byte(first)}, {"two", []byte(second)}, {"three", []byte(legacy)}}, "reg.example/team/app")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.Username+" from "+c.Source)
	}
	want := []string{"c from pull secret two (entry reg.example/team)", "a from pull secret one (entry reg.example)",
		"b from pull secret two (entry reg.example)", "e from pull secret three (entry *.example)"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("FromPullSecrets order\n got %q\nwant %q", got, want)
	}
	if _, err := FromPullSecrets([]NamedSecret{{"one", []byte(first)}}, "elsewhere.example/app"); err == nil || !strings.Contains(err.Error(), "no entry for elsewhere.example/app") {
		t.Errorf("no covering entry: %v", err)
	}
	if _, err := FromPullSecrets([]NamedSecret{{"one", []byte(first)}, {"bad", []byte("::: [")}}, "reg.example/app"); err == nil || !strings.Contains(err.Error(), "pull secret bad") {
		t.Errorf("an unusable secret fails the kubelet's keyring: %v", err)
	}
}

// Two keys of one secret that the keyring normalises alike keep the secret's keys in string order
// (the kubelet ranges over a map; pullpath fixes one order): "https://reg.test" before "reg.test".
func TestFromPullSecretsOneSecretSameKey(t *testing.T) {
	s := fmt.Sprintf(`{"auths":{"reg.test":{"auth":%q},"https://reg.test":{"auth":%q}}}`, b64("bare:1"), b64("scheme:2"))
	cs, err := FromPullSecrets([]NamedSecret{{"one", []byte(s)}}, "reg.test/app")
	if err != nil || len(cs) != 2 || cs[0].Username != "scheme" || cs[1].Username != "bare" {
		t.Fatalf("FromPullSecrets = %v, %v; want the https:// key's entry, then the bare key's", cs, err)
	}
}
