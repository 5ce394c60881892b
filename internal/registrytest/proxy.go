package registrytest

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// ConnectProxy is an HTTP CONNECT proxy on loopback for tests. It sends every tunnel to 127.0.0.1
// at the requested port, whatever the name: traffic never leaves loopback.
type ConnectProxy struct {
	Addr    string // 127.0.0.1:port
	Refuse  atomic.Bool
	srv     *http.Server
	ln      net.Listener
	mu      sync.Mutex
	targets []string
	wg      sync.WaitGroup
}

// StartConnectProxy starts the proxy.
func StartConnectProxy() (*ConnectProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &ConnectProxy{Addr: ln.Addr().String(), ln: ln}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve)}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Targets returns the host:port of every CONNECT received.
func (p *ConnectProxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

// Close stops the proxy and its tunnels.
func (p *ConnectProxy) Close() {
	_ = p.srv.Close()
	p.wg.Wait()
}

func (p *ConnectProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	p.mu.Lock()
	p.targets = append(p.targets, r.Host)
	p.mu.Unlock()
	if p.Refuse.Load() {
		http.Error(w, "blocked by policy", http.StatusForbidden)
		return
	}
	_, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		http.Error(w, "bad target", http.StatusBadRequest)
		return
	}
	up, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		return
	}
	w.WriteHeader(http.StatusOK)
	conn, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		if buf.Reader.Buffered() > 0 {
			_, _ = io.CopyN(up, buf, int64(buf.Reader.Buffered()))
		}
		_, _ = io.Copy(up, conn)
		up.Close()
	}()
	go func() { defer p.wg.Done(); _, _ = io.Copy(conn, up); conn.Close() }()
}
