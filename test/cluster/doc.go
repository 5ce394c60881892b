// Package cluster is the root-only cluster tier: a small real Kubernetes cluster on this machine
// (etcd, kube-apiserver, and one kubelet with its own containerd and runc per node), the registry
// side of the lab, and a harness that tests of `pullpath pod` and `pullpath verify` use.
//
// Topology (10.78.0.0/24 and 10.81.0.0/16 up; the lab tier keeps 10.77, 10.79 and 10.80):
//
//	netns <id>-hub                                       netns <id>-<node>, one per node
//	┌────────────────────────────────────────────┐       ┌──────────────────────────────────────┐
//	│ br0 10.78.0.1  kube-apiserver :6443         │ veth  │ eth0 10.78.0.1x                       │
//	│                dnsmasq (zone cluster.test)  ├───────┤ routes: 10.81/24 and 10.82/24 via the │
//	│     10.78.0.2  dnsmasq without the zone     │       │   hub, only if the node may reach them│
//	│ 127.0.0.1      etcd :2379                   │       │ resolv.conf: 10.78.0.1 or 10.78.0.2   │
//	│ lo   10.81.0.2 registry.cluster.test :443   │       │ private mount + PID namespace: tmpfs  │
//	│                (blobs redirected), :5000,   │       │   /run, /var/lib, /var/log and        │
//	│                :5001 (basic auth), :5002    │       │   /etc/containerd bound from the test │
//	│                (plain HTTP)                 │       │   dir; containerd 1.6 + kubelet; pods │
//	│      10.81.0.3 mirror.cluster.test :5443    │       │   on a cni0 bridge (10.84.i.0/24)     │
//	│      10.82.0.3 blobs.cluster.test :443      │       └──────────────────────────────────────┘
//	└────────────────────────────────────────────┘
//
// A node's pods sit on a bridge inside the node's namespace and reach what the node reaches (the hub
// routes their replies back); on a node with PodOnlyRegistryRoute, a routing rule for the pods'
// source addresses also lets them reach the registry the node itself cannot (the VPN-sidecar case).
// No namespace has a default route, a bridge to a real interface or NAT; the bridge lives inside
// the hub. The test process reaches the apiserver by dialing inside the hub (client-go's Dial);
// Run executes the pullpath binary inside the hub with the admin kubeconfig; restrictedIdentity
// mints a ServiceAccount holding deploy/rbac.yaml's roles (less what a test takes away) and a
// kubeconfig with its TokenRequest token, for --kubeconfig. The apiserver's audit log records every
// request of the ServiceAccounts of namespace pullpath-audited, and only theirs. There is no scheduler: pods are pinned
// with nodeName; the harness creates each namespace's default ServiceAccount and kube-root-ca.crt,
// and removes the not-ready taint of Ready nodes.
//
// Each node gets a cgroupRoot of its own in every cgroup v1 hierarchy, a client certificate
// (O=system:nodes, CN=system:node:<name>) and a pool label (kubernetes.azure.com/agentpool). The
// sandbox image registry.k8s.io/pause:3.10 is built here (testdata/pause.c, static) and imported,
// never pulled; preloaded images are pushed to the registry and imported with their registry
// digest, as if pulled. A node with a SystemBundle shape trusts registry.cluster.test only through
// its system CA bundle: no certs.d entry, its /etc/ssl bound from the test dir (fieldSpec, issue
// 32); the field cluster's other shapes are a mirror of its own (the node routes to the mirror only),
// the kubelet's docker config, a runtime proxy with NO_PROXY (containerd's environment and a
// containerd.service.d drop-in) and a plain-HTTP registry. Each node's containerd and kubelet start
// from scripts of their own (containerd.sh, kubelet.sh in the node's dir), which restartDaemon runs
// again in the node's namespaces. Teardown kills each node's PID namespace, deletes the namespaces, removes the cgroups,
// restores the kernel settings the kubelet changed, and checks that nothing is left.
// Those settings are global: /run/pullpath-cluster-kernel.json (under a lock) keeps the values from
// before the first of the clusters running on the machine, and the last one to stop restores them.
// kube-controller-manager runs when the cached binaries include it (garbage collector, namespace
// and node lifecycle controllers, workload controllers); there is no scheduler.
//
// Binaries: scripts/kubebins.sh builds kube-apiserver, kubelet and etcd from the Go module proxy
// (about 20 min cold on 2 cores) and caches them; the tier reads $PULLPATH_KUBEBINS or that cache.
// PULLPATH_CLUSTER=0 skips the tier; PULLPATH_CLUSTER_KEEP=1 keeps the logs of a run.
package cluster
