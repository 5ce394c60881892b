// Package resolver resolves names the way the node does (hosts file, then the resolv.conf nameservers,
// search list and ndots), keeping every query so the report can say which server answered what.
package resolver
