//go:build !probeonly

package creds

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// FromKeychain asks the docker config ($DOCKER_CONFIG or ~/.docker/config.json) and its
// credential helpers, through go-containerregistry's default keychain. No entry is anonymous.
func FromKeychain(registry string) (Credential, error) {
	reg, err := name.NewRegistry(registry)
	if err != nil {
		return Credential{}, fmt.Errorf("registry %q: %v", registry, err)
	}
	a, err := authn.DefaultKeychain.Resolve(reg)
	if err != nil {
		return Credential{}, fmt.Errorf("docker config: %w", err)
	}
	cfg, err := a.Authorization()
	if err != nil {
		return Credential{}, fmt.Errorf("docker config credential for %s: %w", registry, err)
	}
	c := Credential{Username: cfg.Username, Password: cfg.Password, IdentityToken: cfg.IdentityToken, RegistryToken: cfg.RegistryToken, Source: "docker config"}
	if cfg.Auth != "" && c.Username == "" {
		if raw, err := base64.StdEncoding.DecodeString(cfg.Auth); err == nil {
			c.Username, c.Password, _ = strings.Cut(string(raw), ":")
		}
	}
	if c.Anonymous() {
		c.Source = "anonymous (no docker config entry)"
	}
	return c, nil
}
