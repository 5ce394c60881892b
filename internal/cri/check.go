package cri

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pullpath/pullpath/internal/events"
	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/report"
)

// Request is one runtime pull to set beside a probe's verdict.
type Request struct {
	Image   string
	Auth    Auth          // the credentials the walk used; empty: the runtime's own configuration
	Fresh   bool          // remove a present image first, when no container uses it
	Probe   *report.Probe // the probe's verdict to compare with; nil: no comparison
	Timeout time.Duration // bound on the pull; 0: ctx's
}

// Check asks the runtime for the image and, when that proves something, to pull it:
//  1. ImageStatus: a present image is not pulled (a pull of a cached image proves nothing about
//     the network) unless Fresh;
//  2. with Fresh, the image is removed only when ListContainers shows no container using it;
//  3. PullImage with the walk's credentials, timed; the error text is classified as explain does.
//
// A runtime that does not answer is a skipped result with a note, never an error: the probe's
// own verdict stands.
func Check(ctx context.Context, c *Client, req Request) *report.CRIResult {
	res := &report.CRIResult{Socket: c.Socket, Result: "skipped"}
	if v, err := c.Version(ctx); err == nil {
		res.Runtime = v
	}
	img, err := c.ImageStatus(ctx, req.Image)
	if err != nil {
		res.Note = "the runtime did not answer ImageStatus: " + redactErr(err)
		return res
	}
	if img != nil {
		res.PresentBefore = true
		if !req.Fresh {
			res.Note = "the image is already in the runtime's store: a pull of a cached image proves nothing about the network (the cached-image lie); not pulled (--cri-fresh removes it first when no container uses it)"
			return res
		}
		users, err := c.ContainersUsing(ctx, req.Image, img)
		if err != nil {
			res.Note = "--cri-fresh: the runtime did not list its containers, so the image was not removed: " + redactErr(err)
			return res
		}
		if len(users) > 0 {
			res.Note = fmt.Sprintf("--cri-fresh: not removed, %d container(s) use the image (%s); an image in use is never evicted, and a pull of a cached image proves nothing about the network, so no pull was tried",
				len(users), strings.Join(users, ", "))
			return res
		}
		if err := c.RemoveImage(ctx, req.Image); err != nil {
			res.Note = "--cri-fresh: the runtime refused to remove the image, so no pull was tried: " + redactErr(err)
			return res
		}
		res.Removed = true
	}
	pctx := ctx
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	t0 := time.Now()
	_, err = c.PullImage(pctx, req.Image, req.Auth)
	res.Duration = report.Duration(time.Since(t0))
	if err == nil {
		res.Result, res.Class = "ok", report.ClassOK
	} else {
		// the text the kubelet would show in its event: "rpc error: code = … desc = …"
		fd := events.Classify(err.Error())
		res.Result, res.Class, res.Code, res.Host, res.Role, res.Message = "failed", fd.Class, fd.Code, fd.Host, fd.Role, fd.Message
	}
	if req.Probe != nil {
		agree := res.Class == req.Probe.Class
		res.Agrees = &agree
		if !agree {
			res.Note = fmt.Sprintf("the runtime's pull says %s, the probe %s: they disagree", res.Class, req.Probe.Class)
		}
	}
	if res.Removed && res.Result == "failed" {
		res.Note = strings.TrimPrefix(res.Note+"; ", "; ") + "the image was removed by --cri-fresh and the runtime could not pull it back: this node no longer holds it"
	}
	return res
}

// redactErr keeps credentials and control characters out of a runtime's error text.
func redactErr(err error) string { return redact.Evidence(err.Error()) }
