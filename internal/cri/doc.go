// Package cri asks the node's container runtime, over the CRI v1 socket, to check, remove and pull
// an image: the runtime's own verdict beside the probe's.
package cri
