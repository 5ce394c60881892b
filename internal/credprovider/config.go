package credprovider

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// Provider is one entry of a CredentialProviderConfig.
type Provider struct {
	Name                 string        `json:"name"`
	MatchImages          []string      `json:"matchImages"`
	DefaultCacheDuration string        `json:"defaultCacheDuration"`
	APIVersion           string        `json:"apiVersion"`
	Args                 []string      `json:"args"`
	Env                  []ProviderEnv `json:"env"`

	Origin string `json:"-"` // "file:line" of its name
}

// ProviderEnv is one environment variable the kubelet sets for the provider.
type ProviderEnv struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Config is a parsed CredentialProviderConfig.
type Config struct {
	File      string
	Providers []Provider
}

var configVersions = map[string]bool{"kubelet.config.k8s.io/v1": true, "kubelet.config.k8s.io/v1beta1": true, "kubelet.config.k8s.io/v1alpha1": true}

var requestVersions = map[string]bool{"credentialprovider.kubelet.k8s.io/v1": true, "credentialprovider.kubelet.k8s.io/v1beta1": true, "credentialprovider.kubelet.k8s.io/v1alpha1": true}

// LoadConfig reads and checks a CredentialProviderConfig (YAML or JSON) under root, with the
// checks the kubelet applies at start (a config it rejects is an error here too).
func LoadConfig(root runtimeconfig.Root, file string) (*Config, error) {
	b, err := root.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("credential provider config: %w", err)
	}
	return ParseConfig(b, file)
}

// ParseConfig parses a CredentialProviderConfig already read; file names it in errors and origins.
func ParseConfig(b []byte, file string) (*Config, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("credential provider config %s: neither YAML nor JSON: %v", file, err)
	}
	var doc struct {
		APIVersion string     `json:"apiVersion"`
		Kind       string     `json:"kind"`
		Providers  []Provider `json:"providers"`
	}
	if err := json.Unmarshal(j, &doc); err != nil {
		return nil, fmt.Errorf("credential provider config %s: %v", file, err)
	}
	if doc.Kind != "CredentialProviderConfig" || !configVersions[doc.APIVersion] {
		return nil, fmt.Errorf("credential provider config %s: apiVersion %q kind %q is not a kubelet.config.k8s.io CredentialProviderConfig", file, doc.APIVersion, doc.Kind)
	}
	if len(doc.Providers) == 0 {
		return nil, fmt.Errorf("credential provider config %s: no providers", file)
	}
	seen := map[string]bool{}
	for i := range doc.Providers {
		p := &doc.Providers[i]
		switch {
		case p.Name == "" || strings.ContainsAny(p.Name, `/\`) || p.Name == "." || p.Name == "..":
			return nil, fmt.Errorf("credential provider config %s: provider %d: name %q is not a file name in the bin dir", file, i+1, p.Name)
		case seen[p.Name]:
			return nil, fmt.Errorf("credential provider config %s: provider %q twice", file, p.Name)
		case len(p.MatchImages) == 0:
			return nil, fmt.Errorf("credential provider config %s: provider %q has no matchImages", file, p.Name)
		case !requestVersions[p.APIVersion]:
			return nil, fmt.Errorf("credential provider config %s: provider %q: apiVersion %q is not credentialprovider.kubelet.k8s.io v1, v1beta1 or v1alpha1", file, p.Name, p.APIVersion)
		}
		if p.DefaultCacheDuration != "" {
			if _, err := time.ParseDuration(p.DefaultCacheDuration); err != nil {
				return nil, fmt.Errorf("credential provider config %s: provider %q: defaultCacheDuration %q: %v", file, p.Name, p.DefaultCacheDuration, err)
			}
		}
		for _, m := range p.MatchImages {
			if _, err := url.Parse("https://" + m); err != nil { // as the kubelet validates (plugin/config.go:189)
				return nil, fmt.Errorf("credential provider config %s: provider %q: matchImages %q: %v", file, p.Name, m, err)
			}
		}
		seen[p.Name] = true
		p.Origin = fmt.Sprintf("%s:%d", file, lineOf(b, "name", p.Name))
	}
	return &Config{File: file, Providers: doc.Providers}, nil
}

// MatchAll returns every provider, in the config's order, whose matchImages cover image, as the
// kubelet's isImageAllowed decides: the kubelet calls each and combines their answers (a key two
// providers return gives both, the earlier provider's first).
func (c *Config) MatchAll(image string) []*Provider {
	var out []*Provider
	for i := range c.Providers {
		for _, m := range c.Providers[i].MatchImages {
			if ok, _ := creds.URLsMatch(m, image); ok { // plugin/plugin.go:603-611
				out = append(out, &c.Providers[i])
				break
			}
		}
	}
	return out
}
