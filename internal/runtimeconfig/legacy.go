package runtimeconfig

import (
	"net/url"
	"strings"
)

// The CRI's legacy registry.mirrors endpoints are read differently from hosts.toml
// (internal/cri/server/images/image_pull.go registryHosts and registryEndpoints; the same in v1.6.20,
// v1.7.20 and v2.2.5).

// legacyEndpointHost is one registry.mirrors endpoint: https:// when no scheme is given, and "/v2"
// only when the endpoint has no path; a path is the API root as written ("https://mirror/v2/ghcr"
// is asked for /v2/ghcr/<repo>/manifests/…, not /v2/ghcr/v2/…).
func legacyEndpointHost(ep string) Host {
	if !strings.Contains(ep, "://") {
		ep = "https://" + ep
	}
	if u, err := url.Parse(ep); err != nil || u.Path == "" {
		return defaultHost(ep)
	}
	h, err := hostEntry(ep, map[string]any{"override_path": true}, "/", "default")
	if err != nil {
		return defaultHost(ep)
	}
	h.Role, h.Source = "registry", "default"
	return h
}

// legacyListsRegistry reports whether containerd leaves out the default endpoint: only when an
// endpoint's host is the registry's own name ("docker.io"), not its API host, so a list that ends in
// https://registry-1.docker.io still gets https://registry-1.docker.io appended and tried twice.
func legacyListsRegistry(hosts []Host, reg string) bool {
	for _, h := range hosts {
		if u, err := url.Parse(h.URL); err == nil && u.Host == reg {
			return true
		}
	}
	return false
}
