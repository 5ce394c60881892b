package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// DefaultAnswerTimeout bounds the wait for an API server's answer to one request, when the user
// sets none (kubectl's --request-timeout, 0 there: wait for ever).
const DefaultAnswerTimeout = 30 * time.Second

// SilentError is an API server that took a request and sent no answer in time: stopped behind a
// load balancer that still accepts connections, wedged, or a proxy holding the request.
type SilentError struct {
	Server string
	After  time.Duration
}

func (e *SilentError) Error() string {
	return fmt.Sprintf("the API server %s took the request and sent no answer within %s (--request-timeout)", e.Server, e.After)
}

// AnswerTimeout wraps a transport so that each request ends with a *SilentError when the server's
// response headers have not arrived within d. It bounds the answer, not the body: a watch or an
// attach stream lasts as long as it lasts once the server has answered (kubectl's
// --request-timeout, which bounds the whole request, would cut them).
func AnswerTimeout(d time.Duration, server string) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper { return &answerTimeout{rt: rt, d: d, server: server} }
}

type answerTimeout struct {
	rt     http.RoundTripper
	d      time.Duration
	server string
}

func (a *answerTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	silent := &SilentError{Server: a.server, After: a.d}
	t := time.AfterFunc(a.d, func() { cancel(silent) })
	resp, err := a.rt.RoundTrip(req.WithContext(ctx))
	t.Stop()
	if err != nil {
		if errors.Is(context.Cause(ctx), silent) {
			err = silent
		}
		cancel(nil)
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}
	return resp, nil
}

// cancelOnClose ends the request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
