package probe

import (
	"net/http"

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// hostTry is one host the walk tried and saw fail, with what its attempt established.
type hostTry struct {
	t        target
	f        *failure
	i        int  // its index among the targets
	resolved bool // the manifest HEAD succeeded: the runtime's resolve ended on this host
	cred     creds.Credential
	download report.Download
}

// pickReported returns which of the failed hosts (all failed, in the runtime's order) names the
// error the runtime reports. Each runtime keeps a different one:
//
//   - containerd 1.x (remotes/docker/resolver.go Resolve at v1.6.20): the first error that is not a
//     404; only when every host answered 404, not found.
//   - containerd 2.x (core/remotes/docker/resolver.go Resolve at v2.4.2): the first error of the
//     highest priority: an HTTP status other than 404, then a 404, then a transport error (an error
//     of its authorizer or token realm is one too).
//   - both: once a host resolved, blobs are fetched from every host in order and the first error is
//     kept (fetcher.go), so the first host's failure.
//   - CRI-O (containers/image docker_image_src.go newImageSource at v5.23.1): the primary location,
//     tried last; the mirrors' errors only prefix it ("Mirrors also failed").
//   - docker, or no runtime read: the last host, as before.
func pickReported(rt *runtimeconfig.Config, tried []hostTry) int {
	last := len(tried) - 1
	if rt == nil || rt.Runtime != runtimeconfig.Containerd || last == 0 {
		return last
	}
	for _, x := range tried {
		if x.resolved {
			return 0
		}
	}
	if isContainerd1(rt.Version) {
		for i, x := range tried {
			if x.f.status != http.StatusNotFound {
				return i
			}
		}
		return 0
	}
	best, bestRank := 0, -1
	for i, x := range tried {
		if r := resolveRank(x.f); r > bestRank {
			best, bestRank = i, r
		}
	}
	return best
}

// resolveRank is containerd 2.x's priority of a resolve error: a status answer outranks a 404,
// which outranks an error.
func resolveRank(f *failure) int {
	switch {
	case f.status == http.StatusNotFound:
		return 2
	case f.status >= 400:
		return 3
	}
	return 1
}

// reportRule says in a few words which host's error the runtime reports, for the warnings.
func reportRule(rt *runtimeconfig.Config) string {
	switch {
	case rt == nil || rt.Runtime != runtimeconfig.Containerd:
		return "the last host's"
	case isContainerd1(rt.Version):
		return "containerd 1.x reports the first host's error that is not a 404"
	}
	return "containerd 2.x reports the first error of the highest priority: an HTTP status, then a 404, then a connection error"
}

// isContainerd1 says whether containerd 1.x's rule applies: a detected 1.x version; unknown is 2.x's.
func isContainerd1(version string) bool {
	n, _ := runtimeconfig.ContainerdMajor(version)
	return n == 1
}
