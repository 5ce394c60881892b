package registrytest

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/miekg/dns"
)

// DNSMode is how the DNS server behaves.
type DNSMode int32

// DNS modes.
const (
	DNSNormal   DNSMode = iota
	DNSServFail         // answer SERVFAIL to everything
	DNSDrop             // never answer (the resolver times out)
)

// DNSServer is an authoritative server for one zone on loopback UDP and TCP.
type DNSServer struct {
	Addr string // 127.0.0.1:port, UDP and TCP
	zone string
	mode atomic.Int32

	mu     sync.Mutex
	a      map[string][]netip.Addr
	cname  map[string]string
	udp    *dns.Server
	tcp    *dns.Server
	Served atomic.Int64
}

// StartDNS serves zone (e.g. "demo.test") on a random loopback port.
func StartDNS(zone string) (*DNSServer, error) {
	// UDP and TCP on one port number: the UDP port is free, the same TCP port may not be (a
	// client's ephemeral port), so try a few
	var pc net.PacketConn
	var ln net.Listener
	var err error
	for range 20 {
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
	}
	if err != nil {
		return nil, err
	}
	s := &DNSServer{Addr: pc.LocalAddr().String(), zone: dns.Fqdn(strings.ToLower(zone)),
		a: map[string][]netip.Addr{}, cname: map[string]string{}}
	s.udp = &dns.Server{PacketConn: pc, Handler: s}
	s.tcp = &dns.Server{Listener: ln, Handler: s}
	started := make(chan struct{}, 2)
	s.udp.NotifyStartedFunc = func() { started <- struct{}{} }
	s.tcp.NotifyStartedFunc = func() { started <- struct{}{} }
	go func() { _ = s.udp.ActivateAndServe() }()
	go func() { _ = s.tcp.ActivateAndServe() }()
	<-started
	<-started
	return s, nil
}

// Close stops the server.
func (s *DNSServer) Close() {
	_ = s.udp.Shutdown()
	_ = s.tcp.Shutdown()
}

// SetMode switches the server's behaviour.
func (s *DNSServer) SetMode(m DNSMode) { s.mode.Store(int32(m)) }

// SetA sets the addresses of name (replacing any).
func (s *DNSServer) SetA(name string, addrs ...netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.a[dns.Fqdn(strings.ToLower(name))] = addrs
}

// SetCNAME makes name an alias of target.
func (s *DNSServer) SetCNAME(name, target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cname[dns.Fqdn(strings.ToLower(name))] = dns.Fqdn(strings.ToLower(target))
}

// Delete removes every record of name.
func (s *DNSServer) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.a, dns.Fqdn(strings.ToLower(name)))
	delete(s.cname, dns.Fqdn(strings.ToLower(name)))
}

// ServeDNS answers from the records: CNAME chains are followed inside the answer, unknown names in
// the zone (and outside it: this server knows nothing else) get NXDOMAIN.
func (s *DNSServer) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	s.Served.Add(1)
	mode := DNSMode(s.mode.Load())
	if mode == DNSDrop || len(r.Question) != 1 {
		return
	}
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if mode == DNSServFail {
		m.Rcode = dns.RcodeServerFailure
		_ = w.WriteMsg(m)
		return
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	s.mu.Lock()
	found := false
	for range 8 {
		if t, ok := s.cname[name]; ok {
			m.Answer = append(m.Answer, &dns.CNAME{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: 30}, Target: t})
			name, found = t, true
			continue
		}
		break
	}
	if addrs, ok := s.a[name]; ok {
		found = true
		for _, a := range addrs {
			switch {
			case a.Is4() && q.Qtype == dns.TypeA:
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: a.AsSlice()})
			case a.Is6() && q.Qtype == dns.TypeAAAA:
				m.Answer = append(m.Answer, &dns.AAAA{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: 30}, AAAA: a.AsSlice()})
			}
		}
	}
	s.mu.Unlock()
	if !found {
		m.Rcode = dns.RcodeNameError
	}
	_ = w.WriteMsg(m)
}
