// Package nodeprobe is the probe-pod engine verify and watch share: a run and its objects (the
// owner, the probe binary's delivery by attach stream or ConfigMap parts, the loader, the copies
// of pull secrets), the probe pods on the nodes chosen, the canary of a runtime pull, and their
// cleanup. It reads the cluster through internal/cluster; internal/cluster never imports it.
package nodeprobe
