package probe

import (
	"net/http"

	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// hostTry is one host the walk tried and saw fail, with what its attempt established.
type hostTry struct {
	t        target
	f        *failure
	i        int  // its index among the targets
	resolved bool // the manifest HEAD succeeded: the runtime's resolve ended on this host
	attempt  *hostAttempt
}

// policy is how the runtime on the node treats the hosts of one pull, decided once per run from
// its configuration (policyOf): which host's error it reports when every host failed, where it
// gives up before the last host, and whether it sends containerd's ?ns= to a mirror.
type policy struct {
	rule resolverRule
	// keepsResolved: containers/image keeps the first source whose manifest loads and pulls every
	// blob from it (CRI-O), so a host that resolved ends the walk
	keepsResolved bool
	// stopsAtRealmTimeout: dockerd's own puller from 28.0 gives up at a mirror whose token realm's
	// connection timed out (stops)
	stopsAtRealmTimeout bool
	// sendsNS: containerd's resolver sends ?ns=<registry> to a host not named as the registry
	// (isProxy), dockerd's with the containerd image store too (it vendors it); CRI-O's client and
	// dockerd's own puller do not
	sendsNS bool
	// words says in a few words which host's error the runtime reports, for the warnings
	words string
}

// policyOf decides the policy of the runtime rt (nil: no runtime read).
func policyOf(rt *runtimeconfig.Config) policy {
	p := policy{rule: ruleOf(rt), words: reportRule(rt)}
	if rt == nil {
		return p
	}
	p.keepsResolved = rt.Runtime == runtimeconfig.CRIO
	p.sendsNS = rt.Runtime == runtimeconfig.Containerd || dockerStore(rt, runtimeconfig.StoreContainerd)
	if dockerStore(rt, runtimeconfig.StoreGraphdriver) {
		n, ok := runtimeconfig.DockerMajor(rt.Version)
		p.stopsAtRealmTimeout = ok && n >= 28
	}
	return p
}

// resolverRule is whose code picks the error when every host failed.
type resolverRule int

const (
	lastHost    resolverRule = iota // CRI-O, dockerd's own puller, or nothing read
	containerd1                     // containerd 1.x's resolver
	containerd2                     // containerd 2.x's resolver
)

// ruleOf says which code pulls on the node. dockerd with the containerd image store pulls with the
// containerd resolver it vendors (moby daemon/containerd/resolver.go:26 docker.NewResolver,
// image_pull.go:209 client.Pull at v28.5.2): 1.x in docker 24–27 (vendor.mod: containerd v1.6.22 at
// v24.0.9, v1.7.24 at v27.5.1), 2.x from 28 (v2.0.2 at v28.0.0, v2.1.4 at v28.5.2, v2.2.0 at
// docker-v29.1.0), whatever containerd daemon runs beside it.
func ruleOf(rt *runtimeconfig.Config) resolverRule {
	switch {
	case rt == nil:
		return lastHost
	case rt.Runtime == runtimeconfig.Containerd:
		if n, _ := runtimeconfig.ContainerdMajor(rt.Version); n == 1 {
			return containerd1
		}
		return containerd2
	case dockerStore(rt, runtimeconfig.StoreContainerd):
		if n, ok := runtimeconfig.DockerMajor(rt.Version); ok && n < 28 {
			return containerd1
		}
		return containerd2
	}
	return lastHost
}

// dockerStore says whether the runtime is dockerd running with the image store store
// (runtimeconfig.StoreContainerd: it pulls through containerd's resolver; StoreGraphdriver: its own
// puller).
func dockerStore(rt *runtimeconfig.Config, store string) bool {
	return rt != nil && rt.Runtime == runtimeconfig.Docker && rt.ImageStore != nil && rt.ImageStore.Store == store
}

// stops says whether the runtime gives up at this failed host rather than try the next. From
// 28.0, dockerd's own puller does not fall back on an error that is a context deadline
// (continueOnError, distribution/errors.go:121 at v28.5.2, added by moby commit 52774154c9), and
// Go's dial timeout is one (net's timeoutError Is context.DeadlineExceeded). The mirror's /v2/ ping
// always falls back (registry.go:106), so it is a timeout past it: its token realm's, met at the
// tag's HEAD. A layer's timeout stops the pull too, but only once the config came through (a config
// error is wrapped and falls back, pull_v2.go:525); the probe does not say which blob failed first,
// so a blob host keeps the fallback.
func (p policy) stops(t target, f *failure) bool {
	return p.stopsAtRealmTimeout && t.role == report.RoleMirror && f.ep.role == report.RoleToken && f.code == report.CodeTCPTimeout
}

// reported returns which of the failed hosts (all failed, in the runtime's order) names the
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
//   - dockerd's own puller (graph drivers: docker 20.10, and 24–28 without the containerd image
//     store): the last endpoint's. pullEndpoints (moby distribution/pull.go:98-151 at v28.5.2;
//     Pull, pull.go:91-159 at v20.10.24) keeps lastErr = the latest fallback error and returns it
//     once the endpoints run out. A mirror's failure falls back (continueOnError, errors.go:119 at
//     v28.5.2, :147 at v20.10.24: a registry error on a mirror, an image config error on a mirror,
//     any other error unless it says "no such process"), its ping too (registry.go:99-110), and so
//     does a mirror that served the manifest and then failed a config or layer download: the
//     upstream is pulled from the start. Only an unsupported media type, a cancelled pull, and from
//     28.0 a timeout past the ping (stops: the walk then ends at that mirror) stop at the mirror.
//   - dockerd with the containerd image store: containerd's rule, by the version it vendors (ruleOf).
//   - docker whose image store is unknown, or no runtime read: the last host, as before.
func (p policy) reported(tried []hostTry) int {
	last := len(tried) - 1
	rule := p.rule
	if rule == lastHost || last == 0 {
		return last
	}
	for _, x := range tried {
		if x.resolved {
			return 0
		}
	}
	if rule == containerd1 {
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

// reportRule says in a few words which host's error the runtime reports (policy.words).
func reportRule(rt *runtimeconfig.Config) string {
	docker := rt != nil && rt.Runtime == runtimeconfig.Docker
	switch rule := ruleOf(rt); {
	case rule == lastHost && dockerStore(rt, runtimeconfig.StoreGraphdriver):
		return "dockerd without the containerd image store falls back from a failed mirror and reports the last endpoint's error"
	case rule == lastHost:
		return "the last host's"
	case rule == containerd1 && docker:
		return "dockerd's containerd image store resolves with containerd 1.x, which reports the first host's error that is not a 404"
	case rule == containerd1:
		return "containerd 1.x reports the first host's error that is not a 404"
	case docker:
		return "dockerd's containerd image store resolves with containerd 2.x, which reports the first error of the highest priority: an HTTP status, then a 404, then a connection error"
	}
	return "containerd 2.x reports the first error of the highest priority: an HTTP status, then a 404, then a connection error"
}
