package resolver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// Kind says how a lookup failed.
type Kind string

// Failure kinds, from the most to the least specific answer.
const (
	KindNXDomain    Kind = "nxdomain"    // a server answered: the name does not exist
	KindNoData      Kind = "nodata"      // the name exists but has no A/AAAA record
	KindServFail    Kind = "servfail"    // the server could not answer (often a broken forwarder or zone)
	KindRefused     Kind = "refused"     // the server refused to answer (ACL)
	KindTimeout     Kind = "timeout"     // no answer within the timeout
	KindUnreachable Kind = "unreachable" // the server's port or network is unreachable
	KindNoServers   Kind = "no-servers"  // no nameserver is configured
)

// Error is a failed lookup.
type Error struct {
	Kind   Kind
	Name   string
	Server string // the last server that was asked
	Detail string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("lookup %s", e.Name)
	if e.Server != "" {
		s += " on " + e.Server
	}
	return s + ": " + e.Detail
}

// Query is one question asked of one server.
type Query struct {
	Server string
	Name   string
	Type   string
	Rcode  string
	Err    string
	RTT    time.Duration
}

// Result is the outcome of resolving one name.
type Result struct {
	Name    string
	Source  string // "dns", "hosts file" or "literal"
	Server  string // the server whose answer was used
	CNAMEs  []string
	Addrs   []netip.Addr // IPv4 first, then IPv6, each in answer order
	Queries []Query
	Err     *Error
}

// Lookup resolves host the way the node's stub resolver would: a literal address as is, then the
// hosts file, then each candidate of the search list over every nameserver and attempt.
func (c Config) Lookup(ctx context.Context, host string) Result {
	host = strings.TrimSuffix(host, ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return Result{Name: host, Source: "literal", Addrs: []netip.Addr{a.Unmap()}}
	}
	if c.HostsFile != "" {
		if addrs, err := lookupHostsFile(c.HostsFile, host); err == nil && len(addrs) > 0 {
			return Result{Name: host, Source: "hosts file", Server: c.HostsFile, Addrs: addrs}
		}
	}
	res := Result{Name: host, Source: "dns"}
	if len(c.Nameservers) == 0 {
		res.Err = &Error{Kind: KindNoServers, Name: host, Detail: "no nameserver configured"}
		return res
	}
	var firstMiss *Error
	for _, cand := range c.candidates(host) {
		r := c.lookupName(ctx, cand, &res.Queries)
		if r.Err == nil {
			r.Queries = res.Queries
			r.Name = host
			return r
		}
		switch r.Err.Kind {
		case KindNXDomain, KindNoData:
			// the name is definitively absent here; the next search candidate may exist
			if firstMiss == nil || (firstMiss.Kind == KindNXDomain && r.Err.Kind == KindNoData) {
				firstMiss = r.Err
			}
			continue
		}
		// the resolver itself failed: glibc gives up too, and waiting on the rest only adds timeouts
		res.Err = r.Err
		res.Err.Name = host
		return res
	}
	res.Err = firstMiss
	res.Err.Name = host
	return res
}

// candidates lists the names to try, as res_search does with ndots and the search list.
func (c Config) candidates(host string) []string {
	abs := host + "."
	if len(c.Search) == 0 {
		return []string{abs}
	}
	var searched []string
	for _, d := range c.Search {
		if d == "" || d == "." {
			continue
		}
		searched = append(searched, host+"."+d+".")
	}
	if strings.Count(host, ".") >= c.Ndots {
		return append([]string{abs}, searched...)
	}
	return append(searched, abs)
}

type answer struct {
	msg    *dns.Msg
	server string
	err    *Error
}

func (c Config) lookupName(ctx context.Context, fqdn string, queries *[]Query) Result {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		a4, a6 answer
	)
	wg.Add(2)
	go func() { defer wg.Done(); a4 = c.exchange(ctx, fqdn, dns.TypeA, &mu, queries) }()
	go func() { defer wg.Done(); a6 = c.exchange(ctx, fqdn, dns.TypeAAAA, &mu, queries) }()
	wg.Wait()

	res := Result{Name: strings.TrimSuffix(fqdn, "."), Source: "dns"}
	for _, an := range []answer{a4, a6} {
		if an.msg == nil {
			continue
		}
		cn, addrs := chain(fqdn, an.msg)
		if len(cn) > len(res.CNAMEs) {
			res.CNAMEs = cn
		}
		if len(addrs) > 0 && res.Server == "" {
			res.Server = an.server
		}
		res.Addrs = append(res.Addrs, addrs...)
	}
	if len(res.Addrs) > 0 {
		return res
	}
	// No address: prefer what the A query said, it is the one every node asks.
	for _, an := range []answer{a4, a6} {
		if an.err != nil {
			res.Err = an.err
			return res
		}
	}
	server := a4.server
	if a4.msg != nil && a4.msg.Rcode == dns.RcodeNameError {
		res.Err = &Error{Kind: KindNXDomain, Server: server, Detail: "no such host (NXDOMAIN)"}
	} else {
		res.Err = &Error{Kind: KindNoData, Server: server, Detail: "the name exists but has no A or AAAA record"}
	}
	return res
}

// exchange asks every server, attempt by attempt, until one answers NOERROR or NXDOMAIN.
func (c Config) exchange(ctx context.Context, fqdn string, qtype uint16, mu *sync.Mutex, queries *[]Query) answer {
	m := new(dns.Msg)
	m.SetQuestion(fqdn, qtype)
	m.RecursionDesired = true
	m.SetEdns0(1232, false)

	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	attempts := max(c.Attempts, 1)
	var last *Error
	worst := func(e *Error) {
		// keep the most telling failure: an answer beats silence, silence beats refusal to connect
		if last == nil || rank(e.Kind) < rank(last.Kind) {
			last = e
		}
	}
	for range attempts {
		for _, server := range c.Nameservers {
			if ctx.Err() != nil {
				worst(&Error{Kind: KindTimeout, Server: server, Detail: ctx.Err().Error()})
				return answer{server: server, err: last}
			}
			resp, rtt, err := exchangeOne(ctx, m, server, timeout)
			q := Query{Server: server, Name: strings.TrimSuffix(fqdn, "."), Type: dns.TypeToString[qtype], RTT: rtt}
			if err != nil {
				kind, detail := classifyErr(err)
				q.Err = detail
				mu.Lock()
				*queries = append(*queries, q)
				mu.Unlock()
				worst(&Error{Kind: kind, Server: server, Detail: detail})
				continue
			}
			q.Rcode = dns.RcodeToString[resp.Rcode]
			mu.Lock()
			*queries = append(*queries, q)
			mu.Unlock()
			switch resp.Rcode {
			case dns.RcodeSuccess, dns.RcodeNameError:
				return answer{msg: resp, server: server}
			case dns.RcodeRefused:
				worst(&Error{Kind: KindRefused, Server: server, Detail: "server refused the query (REFUSED)"})
			default:
				worst(&Error{Kind: KindServFail, Server: server, Detail: "server failure (" + q.Rcode + ")"})
			}
		}
	}
	return answer{server: last.Server, err: last}
}

func rank(k Kind) int {
	switch k {
	case KindServFail:
		return 0
	case KindRefused:
		return 1
	case KindTimeout:
		return 2
	}
	return 3
}

func exchangeOne(ctx context.Context, m *dns.Msg, server string, timeout time.Duration) (*dns.Msg, time.Duration, error) {
	cl := &dns.Client{Net: "udp", Timeout: timeout, UDPSize: 1232}
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, rtt, err := cl.ExchangeContext(qctx, m, server)
	if err == nil && resp.Truncated {
		cl.Net = "tcp"
		resp, rtt, err = cl.ExchangeContext(qctx, m, server)
	}
	if err == nil && resp.Id != m.Id {
		err = errors.New("reply id mismatch")
	}
	return resp, rtt, err
}

func classifyErr(err error) (Kind, string) {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return KindUnreachable, "connection refused: nothing answers DNS at this address"
	case errors.Is(err, syscall.ENETUNREACH):
		return KindUnreachable, "network is unreachable: no route to the resolver"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return KindUnreachable, "no route to host: the resolver's address does not answer"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return KindTimeout, "i/o timeout: the resolver did not answer"
	}
	return KindUnreachable, err.Error()
}

// chain follows the CNAME chain from qname through the answer section and returns the
// CNAME targets in order and the addresses of the final name.
func chain(qname string, m *dns.Msg) ([]string, []netip.Addr) {
	var cnames []string
	cur := strings.ToLower(qname)
	for range 16 { // bounded: a hostile answer may loop
		next := ""
		for _, rr := range m.Answer {
			if c, ok := rr.(*dns.CNAME); ok && strings.ToLower(c.Hdr.Name) == cur {
				next = strings.ToLower(c.Target)
				break
			}
		}
		if next == "" {
			break
		}
		cnames = append(cnames, strings.TrimSuffix(next, "."))
		cur = next
	}
	var addrs []netip.Addr
	for _, rr := range m.Answer {
		if !strings.EqualFold(rr.Header().Name, cur) {
			continue
		}
		switch r := rr.(type) {
		case *dns.A:
			if a, ok := netip.AddrFromSlice(r.A); ok {
				addrs = append(addrs, a.Unmap())
			}
		case *dns.AAAA:
			if a, ok := netip.AddrFromSlice(r.AAAA); ok {
				addrs = append(addrs, a)
			}
		}
	}
	return cnames, addrs
}

// Scope says whether an address is private, public, loopback or link-local.
func Scope(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsPrivate(), cgnat.Contains(a):
		return "private"
	case a.IsUnspecified():
		return "unspecified"
	}
	return "public"
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")
