// Package registrytest runs a registry lab on loopback for tests and the demo: a TLS registry under
// any hostname, a token realm on a second host, a redirecting blob host on a third, a DNS server
// that maps those names, and fault injectors for every class of the taxonomy.
package registrytest
