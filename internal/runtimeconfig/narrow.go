package runtimeconfig

// NarrowRoot is what a probe pod's narrow host mount (verify --host-mount narrow) shows of the node
// under its --host-root: the directories where runtimes, their systemd units and CA bundles live.
// The rest of the host stays out: /var/lib/kubelet (every pod's secrets and service-account
// tokens, the node's own credentials), /run (the runtime's socket, systemd's), /var/lib/containerd,
// /home, /root. Each exists on every Linux node: a hostPath of type Directory then never fails,
// and never makes the runtime create a missing source on the host, which containerd and CRI-O do
// for a hostPath without a type.
var NarrowRoot = []string{"/etc", "/usr", "/lib"}
