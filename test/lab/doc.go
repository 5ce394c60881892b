// Package lab is the root-only end-to-end tier: network namespaces as hosts, the real containerd
// (through crictl), the distribution registry, dnsmasq, a blob host and a CONNECT proxy, with every
// failure of the pull path staged for real. For each case the real pull, `pullpath explain` of
// containerd's own error and `pullpath probe` in the node's namespace must agree.
package lab
