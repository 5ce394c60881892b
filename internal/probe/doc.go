// Package probe walks the pull path of one image from this network namespace, in the runtime's
// order (reference, DNS, route, TCP, TLS, registry API, token realm, manifest, every blob), and
// names the first layer that breaks, on which host, with evidence. It never imports client-go.
package probe
