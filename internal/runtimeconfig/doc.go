// Package runtimeconfig reads the node runtime's real pull configuration from a host root
// (containerd config.toml and certs.d/hosts.toml, CRI-O registries.conf, docker daemon.json, the
// runtime's systemd proxy environment, the resolver) and returns the ordered hosts the runtime will
// try for an image, with the trust, headers and proxy of each, and the traps it falls into.
// It executes nothing on the host.
package runtimeconfig
