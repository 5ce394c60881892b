// Package cluster reads the cluster through client-go: the failing pod, its events, the nodes and
// their pools, the image caches of every node and the pull credentials as the kubelet sees them.
// It never creates anything; the probe itself stays free of client-go.
package cluster
