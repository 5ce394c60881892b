// Package route asks the kernel which route it would use to reach an address, so "no route" is
// evident before any dial waits for a timeout.
package route
