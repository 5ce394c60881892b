// Package runtimeconfig reads the node runtime's real pull configuration from a host root
// (containerd config.toml and certs.d/hosts.toml, CRI-O registries.conf, docker daemon.json, the
// runtime's systemd proxy environment, the resolver) and returns the ordered hosts the runtime will
// try for an image, with the trust, headers and proxy of each, and the traps it falls into.
// It executes nothing on the host.
//
// Rules that hold for some containerd versions only (read from containerd's tags; see ctrdload.go):
//
//	hosts.toml without [host] rejected (getSortedHosts)   1.6.x, 1.7.0–1.7.31        HOSTS_TOML_REJECTED
//	config version 3+ refused, daemon does not start      1.x                        CONFIG_INVALID
//	an import replaces a plugin's whole table             1.x (2.0+ merges by key)   CONFIG_PATH_UNSET, …
//	2.x plugin tables read, files migrated per version    2.0+ (target 3; 4 from 2.3) REGISTRY_TABLE_SHADOWED
//	transfer service reads a ':' config_path as one dir   2.1+ unless a setting forces the local pull  TRANSFER_CONFIG_PATH_LIST
//	default config_path /etc/containerd/certs.d:/etc/docker/certs.d   2.2+ (no mirrors set; lab: 2.4.2)  TRANSFER_CONFIG_PATH_LIST
//	localhost without a server: plain HTTP, unverified    ≤1.6.24, 1.7.0–1.7.7
//	localhost without a server: HTTPS unverified, HTTP fallback (port ≠ 443, 80)   1.6.25+, 1.7.8+, 2.x
//	registry.mirrors, configs.auth, auths read            1.x, 2.x through 2.4.2 (removal announced for 2.7)  LEGACY_REGISTRY_CONFIG
//	registry.configs.*.tls read (without config_path)     1.x only: 2.x keeps auth only   LEGACY_TLS_IGNORED
//
// The config file is the one the CRI's containerd starts with (locate.go): the unit's --config, else
// /etc/containerd/config.toml unless it disables the CRI, else k3s's, rke2's, k0s's, MicroK8s's or Talos's.
//
// Warnings have a severity: "error" when the pull breaks or silently does not go as configured,
// "info" when it does not change the pull.
package runtimeconfig
