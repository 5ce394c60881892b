// Package hoptrace is an instrumented http.RoundTripper: it records one Hop (dials, TLS, HTTP) per
// round trip, with URLs redacted at capture time, so every attempt of a pull is visible.
package hoptrace
