// Package creds finds the pull credentials for a registry: explicit flags, a Kubernetes pull
// secret file, or the docker config and its credential helpers.
package creds

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/pullpath/pullpath/internal/capped"
)

// Credential is what the probe presents. It is never printed; String shows only its source.
type Credential struct {
	Username      string
	Password      string
	IdentityToken string // OAuth2 refresh token (ACR, docker login with identity tokens)
	RegistryToken string // a bearer token to send as is
	Source        string // "--username", "pull secret x.yaml (key myreg.io)", "docker config", "anonymous"
	// CacheUntil is when the kubelet drops a credential provider's answer and asks again;
	// CacheFrom says from what ("cacheDuration", "defaultCacheDuration"). Zero for other credentials.
	CacheUntil time.Time
	CacheFrom  string
}

// Anonymous reports whether there is nothing to present.
func (c Credential) Anonymous() bool {
	return c.Username == "" && c.Password == "" && c.IdentityToken == "" && c.RegistryToken == ""
}

// String never shows the secret.
func (c Credential) String() string {
	if c.Anonymous() {
		return "anonymous"
	}
	if c.Username != "" {
		return fmt.Sprintf("user %q from %s", c.Username, c.Source)
	}
	return "token from " + c.Source
}

// GoString keeps %#v from printing the secret too.
func (c Credential) GoString() string { return "creds.Credential{" + c.String() + "}" }

type dockerEntry struct {
	Username      string `json:"username"`
	Password      string `json:"password"`
	Auth          string `json:"auth"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// maxSecretFile caps a pull secret file.
const maxSecretFile = capped.Max

// ReadPullSecretFile reads a kubernetes.io/dockerconfigjson Secret (YAML or JSON; data or
// stringData), a legacy .dockercfg or a bare config.json from file, for FromPullSecrets; the file
// names it.
func ReadPullSecretFile(file string) (NamedSecret, error) {
	b, err := capped.ReadFile(file, maxSecretFile)
	if err != nil {
		return NamedSecret{}, fmt.Errorf("pull secret: %w", err)
	}
	return NamedSecret{Label: file, Data: b}, nil
}

func parsePullSecret(b []byte) (map[string]dockerEntry, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("neither YAML nor JSON: %v", err)
	}
	var doc struct {
		Kind       string                 `json:"kind"`
		Type       string                 `json:"type"`
		Data       map[string]string      `json:"data"`
		StringData map[string]string      `json:"stringData"`
		Auths      map[string]dockerEntry `json:"auths"`
	}
	if err := json.Unmarshal(j, &doc); err != nil {
		return nil, fmt.Errorf("not a Secret or docker config: %v", err)
	}
	if doc.Auths != nil {
		return doc.Auths, nil
	}
	if doc.Kind == "" && doc.Type == "" && doc.Data == nil && doc.StringData == nil {
		// a bare legacy .dockercfg (the value of a kubernetes.io/dockercfg secret's key, as
		// verify --from-pod hands it over): the auths map without the wrapper
		var m map[string]dockerEntry
		if json.Unmarshal(j, &m) == nil && len(m) > 0 {
			return m, nil
		}
	}
	if doc.Kind != "" && doc.Kind != "Secret" {
		return nil, fmt.Errorf("kind %q is not a Secret", doc.Kind)
	}
	var cfg []byte
	switch {
	case doc.StringData[".dockerconfigjson"] != "":
		cfg = []byte(doc.StringData[".dockerconfigjson"])
	case doc.Data[".dockerconfigjson"] != "":
		cfg, err = base64.StdEncoding.DecodeString(doc.Data[".dockerconfigjson"])
		if err != nil {
			return nil, fmt.Errorf("data[.dockerconfigjson] is not base64")
		}
	case doc.Data[".dockercfg"] != "":
		// legacy kubernetes.io/dockercfg: the auths map without the wrapper
		raw, err := base64.StdEncoding.DecodeString(doc.Data[".dockercfg"])
		if err != nil {
			return nil, fmt.Errorf("data[.dockercfg] is not base64")
		}
		var m map[string]dockerEntry
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf(".dockercfg is not JSON")
		}
		return m, nil
	default:
		return nil, fmt.Errorf("no .dockerconfigjson in data or stringData (type %q)", doc.Type)
	}
	var dc struct {
		Auths map[string]dockerEntry `json:"auths"`
	}
	if err := json.Unmarshal(cfg, &dc); err != nil {
		return nil, fmt.Errorf(".dockerconfigjson is not JSON")
	}
	if len(dc.Auths) == 0 {
		return nil, fmt.Errorf(".dockerconfigjson has no auths")
	}
	return dc.Auths, nil
}

func (e dockerEntry) credential() (Credential, error) {
	c := Credential{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken}
	if e.Auth != "" && c.Username == "" {
		raw, err := base64.StdEncoding.DecodeString(e.Auth)
		if err != nil {
			return Credential{}, fmt.Errorf("auth is not base64")
		}
		u, p, ok := strings.Cut(string(raw), ":")
		if !ok {
			return Credential{}, fmt.Errorf("auth is not user:password")
		}
		c.Username, c.Password = u, p
	}
	if c.Anonymous() {
		return Credential{}, fmt.Errorf("entry has no username, password, auth or token")
	}
	return c, nil
}

// SecretKeys returns the registry keys of a pull secret's docker config (never the values).
func SecretKeys(secret []byte) ([]string, error) {
	auths, err := parsePullSecret(secret)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(auths))
	for k := range auths {
		keys = append(keys, k)
	}
	return keys, nil
}

// NoEntryError is a pull secret without an entry for the image: the kubelet skips it.
type NoEntryError struct {
	Secrets, Image string
	Keys           []string
}

func (e *NoEntryError) Error() string {
	return fmt.Sprintf("pull secret %s has no entry for %s (it has: %s)", e.Secrets, e.Image, strings.Join(e.Keys, ", "))
}

// NamedSecret is one pull secret's content (a Secret, a config.json or a bare .dockercfg) and the
// label that names it in errors and in a credential's Source.
type NamedSecret struct {
	Label string
	Data  []byte
}

// FromPullSecrets returns every entry of secrets that covers the image name (Keyring.Lookup), in the order the kubelet's
// keyring tries them (a Keyring of the pull secrets alone). An unusable secret is an error, as it
// fails the kubelet's keyring; no entry for the image is a *NoEntryError naming the keys.
func FromPullSecrets(secrets []NamedSecret, name string) ([]Credential, error) {
	var k Keyring
	if err := k.AddPullSecrets(secrets); err != nil {
		return nil, err
	}
	out, err := k.Credentials(name)
	if err == nil && len(out) == 0 {
		labels := make([]string, 0, len(secrets))
		for _, s := range secrets {
			labels = append(labels, s.Label)
		}
		return nil, &NoEntryError{Secrets: strings.Join(labels, ", "), Image: name, Keys: k.Keys(PullSecrets)}
	}
	return out, err
}
