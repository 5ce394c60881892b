// Package registry is a minimal, explicit client of the OCI distribution protocol: references,
// challenges, tokens, manifests and blob requests with redirects followed hop by hop. It never
// retries or falls back silently; the caller sees every response.
package registry
