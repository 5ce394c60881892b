package resolver

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/pullpath/pullpath/internal/capped"
)

// Config is a resolver configuration as read from resolv.conf (resolv.conf(5)).
type Config struct {
	Source      string        // where it came from, for the report
	Nameservers []string      // host:port, in order
	Search      []string      // search domains, in order
	Ndots       int           // default 1
	Timeout     time.Duration // per query and server; default 5s
	Attempts    int           // rounds over all servers; default 2
	Rotate      bool
	HostsFile   string // consulted before DNS when set, like nsswitch "files dns"
}

// Defaults of glibc's resolver (resolv.conf(5)).
const (
	DefaultNdots    = 1
	DefaultTimeout  = 5 * time.Second
	DefaultAttempts = 2
	maxLineBytes    = 4096
	maxNameservers  = 3 // glibc uses at most three
)

// ReadConfFile reads a resolv.conf file.
func ReadConfFile(path string) (Config, error) {
	b, err := capped.ReadFile(path, capped.Max)
	if err != nil {
		return Config{}, fmt.Errorf("resolver configuration: %w", err)
	}
	c, err := ParseConf(bytes.NewReader(b))
	if err != nil {
		return Config{}, fmt.Errorf("resolver configuration %s: %w", path, err)
	}
	c.Source = path
	return c, nil
}

// ParseConf parses resolv.conf text. Unknown keywords and options are ignored, as glibc does;
// at most three nameservers are kept. An empty file yields no nameservers (glibc would then use
// 127.0.0.1; the probe reports that instead of guessing).
func ParseConf(r io.Reader) (Config, error) {
	c := Config{Ndots: DefaultNdots, Timeout: DefaultTimeout, Attempts: DefaultAttempts}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1024), maxLineBytes)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) < 2 || len(c.Nameservers) >= maxNameservers {
				continue
			}
			// glibc accepts an IPv6 zone; netip parses "fe80::1%eth0" too.
			a, err := netip.ParseAddr(f[1])
			if err != nil {
				continue
			}
			c.Nameservers = append(c.Nameservers, net.JoinHostPort(a.String(), "53"))
		case "search", "domain":
			// the last of "search" and "domain" wins
			c.Search = nil
			for _, d := range f[1:] {
				c.Search = append(c.Search, strings.TrimSuffix(d, "."))
			}
		case "options":
			for _, o := range f[1:] {
				k, v, _ := strings.Cut(o, ":")
				n, nerr := strconv.Atoi(v)
				switch k {
				case "ndots":
					if nerr == nil && n >= 0 {
						c.Ndots = min(n, 15)
					}
				case "timeout":
					if nerr == nil && n >= 1 {
						c.Timeout = time.Duration(min(n, 30)) * time.Second
					}
				case "attempts":
					if nerr == nil && n >= 1 {
						c.Attempts = min(n, 5)
					}
				case "rotate":
					c.Rotate = true
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// ParseServer accepts "1.2.3.4", "1.2.3.4:5353", "[::1]:53" or "::1" and returns host:port.
func ParseServer(s string) (string, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return net.JoinHostPort(a.String(), "53"), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return "", fmt.Errorf("dns server %q: want an IP address with an optional :port", s)
	}
	return ap.String(), nil
}

// lookupHostsFile returns the addresses the hosts file gives name, if any.
func lookupHostsFile(path, name string) ([]netip.Addr, error) {
	b, err := capped.ReadFile(path, capped.Max)
	if err != nil {
		return nil, err
	}
	return parseHosts(bytes.NewReader(b), name), nil
}

func parseHosts(r io.Reader, name string) []netip.Addr {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	var out []netip.Addr
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1024), 64*1024)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil {
			continue
		}
		for _, h := range f[1:] {
			if strings.ToLower(strings.TrimSuffix(h, ".")) == name {
				out = append(out, a.Unmap())
				break
			}
		}
	}
	return out
}
