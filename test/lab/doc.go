// Package lab is the root-only end-to-end tier: network namespaces as hosts, real runtimes
// (Debian's containerd 1.6 and containerd 2.x from the module proxy, through crictl; CRI-O's
// containers/image through skopeo), the distribution registry, dnsmasq, a blob host and a CONNECT
// proxy, with every failure of the pull path staged for real. For each case and each runtime the
// real pull, `pullpath explain` of the runtime's own error and `pullpath probe --host-root` of
// that runtime's root in the node's namespace must agree.
package lab
