package cluster

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// listPage is how many objects one list request asks for: few requests on a large cluster (30,000
// pods are six pages), one page at a time in memory.
const listPage = 5000

// maxListed bounds what one paged list reads: past it the list stops and the answer says it is
// partial. A real cluster stays far below (150,000 pods is Kubernetes' documented limit, and
// events live an hour); a million-entry event list stops here instead of running for minutes.
var maxListed = 300_000

// listed is how a paged list ended: cut says why it stopped before the end ("" when it read
// everything), read how many entries it read.
type listed struct {
	read int
	cut  string
}

// paged reads a list page by page (Limit and Continue) and hands every page to page, which returns
// the page's ListMeta and how many entries it held. The first page's error is returned; a later one
// ends the list early, with the reason in cut, so that what was read still answers. A continue
// token that expired (410, the list took longer than etcd keeps its revision) is followed once with
// the inconsistent token the API server offers in its answer, and the second expiry stops the
// list: it never restarts from the beginning, which on a list that always expires would loop.
func paged(ctx context.Context, opts metav1.ListOptions, page func(context.Context, metav1.ListOptions) (metav1.ListMeta, int, error)) (listed, error) {
	opts.Limit = listPage
	var l listed
	resumed := false
	for {
		meta, n, err := page(ctx, opts)
		if err != nil {
			switch {
			case opts.Continue == "":
				return l, err
			case expired(err) && !resumed && inconsistentToken(err) != "":
				resumed = true
				opts.Continue = inconsistentToken(err)
				l.cut = fmt.Sprintf("its continue token expired after %d entries (the list outlived etcd's compaction); it went on with the API server's inconsistent token, so entries changed meanwhile may be missing or seen twice", l.read)
				continue
			case expired(err):
				l.cut = fmt.Sprintf("its continue token expired after %d entries, twice (the list outlived etcd's compaction): the rest was not read", l.read)
			default:
				l.cut = fmt.Sprintf("stopped after %d entries: %s", l.read, ShortErr(err))
			}
			return l, nil
		}
		l.read += n
		if meta.Continue == "" {
			return l, nil
		}
		if l.read >= maxListed {
			l.cut = fmt.Sprintf("stopped after %d entries (pullpath reads at most %d per list)", l.read, maxListed)
			return l, nil
		}
		opts.Continue = meta.Continue
	}
}

func expired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// inconsistentToken is the continue token a 410 for an expired token carries, to go on with the
// list at the current revision.
func inconsistentToken(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().ListMeta.Continue
	}
	return ""
}
