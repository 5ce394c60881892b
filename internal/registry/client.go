package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/pullpath/pullpath/internal/hoptrace"
	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/report"
)

// Client sends distribution requests and follows redirects itself, one hop at a time.
type Client struct {
	// Transport carries every request; give it a hoptrace.Transport to record hops.
	Transport http.RoundTripper
	// Visit, when set, runs before the first request to each host:port a redirect leads to;
	// an error stops the request. The probe checks DNS and routes of the new host there.
	Visit func(ctx context.Context, u *url.URL, role report.Role, via string) error
	// MaxRedirects bounds a redirect chain; default 10, Go's and therefore containerd's limit.
	MaxRedirects int
	// UserAgent is sent on every request; default "pullpath".
	UserAgent string
}

// Response is the final response of a request and every hop it took.
type Response struct {
	*http.Response
	Hops []*hoptrace.Hop // in order; the last one produced Response
	Role report.Role     // the role of the host that answered
	// Downgraded is set when a redirect led from https to plain http.
	Downgraded bool
}

// HopError is a request that failed below HTTP (DNS, dial, TLS, timeout) at one hop.
type HopError struct {
	Hop  *hoptrace.Hop
	Role report.Role
	URL  *url.URL
	Err  error
}

func (e *HopError) Error() string {
	return fmt.Sprintf("%s %s: %v", e.Hop.Method, redact.URL(e.URL), e.Err)
}
func (e *HopError) Unwrap() error { return e.Err }

// VisitError is a failure of the Visit callback for a redirect target.
type VisitError struct {
	URL  *url.URL
	Role report.Role
	Err  error
}

func (e *VisitError) Error() string {
	return fmt.Sprintf("redirect to %s: %v", ShownHost(e.URL.Hostname()), e.Err)
}
func (e *VisitError) Unwrap() error { return e.Err }

// RedirectError is a redirect chain that cannot be followed.
type RedirectError struct {
	Host   string // host:port that sent the bad redirect
	Role   report.Role
	Reason string
	Hops   []*hoptrace.Hop
}

func (e *RedirectError) Error() string { return fmt.Sprintf("redirect from %s: %s", e.Host, e.Reason) }

// ErrRedirect is matched by every *RedirectError.
var ErrRedirect = errors.New("redirect")

// Is makes errors.Is(err, ErrRedirect) true.
func (e *RedirectError) Is(t error) bool { return t == ErrRedirect }

// Do sends one request and follows redirects. hdr is sent to the first host and to any later hop on
// the same host; a hop to another host gets no Authorization (as net/http and containerd do), because
// object stores reject a second credential next to their signed URL. redirectRole is the role of
// hosts reached by redirect (blob, for blob requests). The caller closes the final body.
func (c *Client) Do(ctx context.Context, method string, u *url.URL, hdr http.Header, role, redirectRole report.Role) (*Response, error) {
	maxRedirects := c.MaxRedirects
	if maxRedirects <= 0 {
		maxRedirects = 10
	}
	out := &Response{Role: role}
	seen := map[string]bool{}
	origin := hostPort(u)
	cur := u
	curRole := role
	for i := 0; ; i++ {
		req, err := http.NewRequestWithContext(ctx, method, cur.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("build request: %w", err)
		}
		if hostPort(cur) == origin {
			for k, v := range hdr {
				req.Header[k] = v
			}
		} else if a := hdr.Get("Accept"); a != "" {
			req.Header.Set("Accept", a)
		}
		ua := c.UserAgent
		if ua == "" {
			ua = "pullpath"
		}
		req.Header.Set("User-Agent", ua)
		hctx, hop := hoptrace.Start(ctx, curRole)
		resp, err := c.Transport.RoundTrip(req.WithContext(hctx))
		out.Hops = append(out.Hops, hop)
		if err != nil {
			return out, &HopError{Hop: hop, Role: curRole, URL: cur, Err: err}
		}
		if !isRedirect(resp.StatusCode) {
			out.Response = resp
			out.Role = curRole
			return out, nil
		}
		loc := resp.Header.Get("Location")
		drain(resp.Body)
		from := hostPort(cur)
		if loc == "" {
			return out, &RedirectError{Host: from, Role: curRole, Reason: fmt.Sprintf("%d without a Location header", resp.StatusCode), Hops: out.Hops}
		}
		next, err := cur.Parse(loc)
		if err != nil || (next.Scheme != "https" && next.Scheme != "http") || next.Host == "" {
			return out, &RedirectError{Host: from, Role: curRole, Reason: fmt.Sprintf("unusable Location %q", redact.Untrusted(redact.URLString(loc), 300)), Hops: out.Hops}
		}
		if err := CheckHost(next.Hostname()); err != nil {
			// refused where it is read: a Visit or a report would otherwise carry it whole
			role := curRole
			if hostPort(next) != origin {
				role = redirectRole
			}
			return out, &VisitError{URL: next, Role: role, Err: err}
		}
		key := method + " " + next.String()
		if seen[key] || next.String() == cur.String() {
			return out, &RedirectError{Host: from, Role: curRole, Reason: "redirect loop: " + redact.Untrusted(redact.URL(next), 300) + " was already visited", Hops: out.Hops}
		}
		seen[key] = true
		if i+1 >= maxRedirects {
			return out, &RedirectError{Host: from, Role: curRole, Reason: fmt.Sprintf("more than %d redirects", maxRedirects), Hops: out.Hops}
		}
		if cur.Scheme == "https" && next.Scheme == "http" {
			out.Downgraded = true
		}
		if hostPort(next) != hostPort(cur) {
			if hostPort(next) != origin {
				curRole = redirectRole
			} else {
				curRole = role
			}
			if c.Visit != nil {
				if err := c.Visit(ctx, next, curRole, fmt.Sprintf("%d from %s", resp.StatusCode, from)); err != nil {
					return out, &VisitError{URL: next, Role: curRole, Err: err}
				}
			}
		}
		cur = next
	}
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// MaxErrorBody caps how much of an error body is read (64 KiB, as ggcr and containerd do).
const MaxErrorBody = 64 << 10

// ReadCapped reads at most n bytes of r and reports whether more was available.
func ReadCapped(r io.Reader, n int64) ([]byte, bool, error) {
	b, err := io.ReadAll(io.LimitReader(r, n+1))
	if int64(len(b)) > n {
		return b[:n], true, err
	}
	return b, false, err
}

func drain(rc io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(rc, MaxErrorBody))
	_ = rc.Close()
}

func hostPort(u *url.URL) string { return hoptrace.HostPort(u) }
