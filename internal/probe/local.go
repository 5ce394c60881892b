package probe

import (
	"fmt"
	"net/netip"

	"github.com/pullpath/pullpath/internal/report"
)

// localScope is "loopback" or "link-local" for an address of those scopes, else "".
func localScope(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast(): // 169.254.0.0/16 (cloud metadata services), fe80::/10
		return "link-local"
	}
	return ""
}

// localRefusal says why no credential is presented to a token host, and none of its tokens used:
// it names or resolves to a loopback or link-local address while the registry is not on one of the
// same scope ("" when it may have them). A registry on the node's loopback may keep its realm
// there (a node-local registry, the test labs); a registry elsewhere that sends the pull's
// credentials to the node itself, or to a metadata service at 169.254.169.254, is not followed.
func localRefusal(realm, registry []netip.Addr) string {
	regScope := ""
	for i, a := range registry {
		s := localScope(a)
		if i > 0 && s != regScope {
			s = "" // a registry on several scopes is on none of them alone
		}
		regScope = s
	}
	for _, a := range realm {
		if s := localScope(a); s != "" && s != regScope {
			return fmt.Sprintf("%s address %s", s, a)
		}
	}
	return ""
}

// endpointAddrs are the addresses an endpoint names or resolved to: its literal, or what the
// node's resolver answered (none for a name the runtime's proxy resolves).
func endpointAddrs(ep *endpoint) []netip.Addr {
	if a, err := netip.ParseAddr(ep.host); err == nil {
		return []netip.Addr{a}
	}
	return ep.addrs
}

// refuseLocal warns, once per host, that the walk withholds credentials from tok, and records it.
func (w *walk) refuseLocal(tok *endpoint, why, what string) {
	w.withheld = tok.hostport
	w.warn(report.CodeRealmLocal, tok.hostport, fmt.Sprintf("the token host %s (%s) is a %s, and the registry %s is not: pullpath %s; "+
		"the runtime (containerd) would follow it, present the pull's credentials there and send its token to the registry", tok.hostport, tok.via, why, w.regEp.hostport, what))
	w.step(tok, report.StepAuth, report.Warn, report.CodeRealmLocal, fmt.Sprintf("no credentials presented to %s (%s); %s", tok.hostport, why, what), report.Evidence{}, 0)
}
