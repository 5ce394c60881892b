// Package events turns the text of kubelet, containerd, CRI-O and docker pull errors into findings
// of the class taxonomy. It is the only package that matches error strings, because these come from
// another process.
package events
