package probe

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

// tlsOnlyPort is a web server's answer to plain HTTP on its TLS port (Go's net/http, nginx).
var tlsOnlyPort = regexp.MustCompile(report.TLSOnlyPortAnswer)

// statusFailure maps an unexpected HTTP status on ep to a failure, reading registry error codes.
func (w *walk) statusFailure(ep *endpoint, resp *registry.Response, body []byte, layer report.StepName, what string) *failure {
	ev := report.Evidence{HTTP: w.httpEvidence(resp, body)}
	codes := strings.Join(ev.HTTP.ErrorCodes, ", ")
	st := fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if codes != "" {
		st += " (" + codes + ")"
	}
	f := &failure{ep: ep, step: layer, ev: ev}
	if ep.role == report.RoleRegistry || ep.role == report.RoleMirror {
		f.status = resp.StatusCode
	}
	f.evidence = []string{fmt.Sprintf("%s %s → %s", ev.HTTP.Method, ev.HTTP.URL, st)}
	if ev.HTTP.Message != "" {
		f.evidence = append(f.evidence, "message: "+ev.HTTP.Message)
	}
	if ev.HTTP.Challenge != "" {
		f.evidence = append(f.evidence, "WWW-Authenticate: "+ev.HTTP.Challenge)
	}
	if resp.StatusCode == http.StatusBadRequest && tlsOnlyPort.Match(body) {
		// the runtime spoke plain HTTP (as this host is configured for it) to a port that speaks TLS
		f.step, f.code = report.StepTLS, report.CodeTLSRequired
		f.summary = fmt.Sprintf("%s speaks only TLS, and the runtime sends it plain HTTP: %s answered %s", ep.hostport, what, st)
		f.evidence = append(f.evidence, "the answer is a web server's to plain HTTP on its TLS port; containerd before 1.6.25 and 1.7.8 speaks plain HTTP to a localhost registry with no server configured")
		return w.fail(f, ev, lastHop(resp).Duration)
	}
	has := func(c string) bool { return strings.Contains(codes, c) }
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		f.code = report.CodeAuth401
		ch, chErr := registry.ParseChallenge(ev.HTTP.Challenge)
		if chErr == nil && ((ch.Scheme == "basic" && w.anonymous) || (ch.Scheme == "bearer" && ch.Params["error"] != "")) {
			// containerd's authorizer turns these into an error, not a status: no basic auth
			// credentials, or the token refused again ("server message: …")
			f.status = 0
		}
		if chErr == nil && ch.Params["error"] == "insufficient_scope" {
			f.code = report.CodeAuthInsufficientScope
			f.summary = fmt.Sprintf("%s: the identity (%s) may not pull repository %s (insufficient_scope)", what, w.cred, w.ref.Repository)
			break
		}
		if w.withheld != "" {
			f.summary = fmt.Sprintf("%s was refused (401): pullpath withheld the credentials from the token host %s, on a local address (see the warning)", what, w.withheld)
		} else if w.anonymous {
			f.summary = fmt.Sprintf("%s was refused (401): the registry requires credentials and none were presented", what)
			f.alt = "some registries (Docker Hub among them) answer an anonymous pull of a repository that does not exist with 401: check the name too"
		} else {
			f.summary = fmt.Sprintf("%s was refused (401): the credentials (%s) were not accepted", what, w.cred)
		}
	case http.StatusForbidden:
		f.code = report.CodeAuth403
		f.summary = fmt.Sprintf("%s was denied (403) for %s", what, w.cred)
		if ep.role == report.RoleBlob {
			f.code = report.CodeBlobForbidden
			f.summary = fmt.Sprintf("the blob host %s refused the download (403): an expired or rejected signed URL, or a storage firewall / private endpoint rule", ep.hostport)
		} else if layer == report.StepHTTP && ep.role == report.RoleRegistry {
			f.summary = fmt.Sprintf("%s was denied (403) before any credential was presented: a registry network rule (firewall, private-endpoint-only) rejects this node's address", what)
		}
	case http.StatusNotFound:
		switch {
		case layer == report.StepHTTP && ep.role == report.RoleRegistry:
			f.code = report.CodeHTTPNotRegistry
			f.summary = fmt.Sprintf("%s answered 404: %s does not serve the registry API (a web server, a wrong port or path)", what, ep.hostport)
		case has("NAME_UNKNOWN"):
			f.code = report.CodeNameUnknown
			f.summary = fmt.Sprintf("repository %s does not exist on %s", w.ref.Repository, w.ref.Registry)
		case layer == report.StepBlob:
			f.code = report.CodeBlobUnknown
			f.summary = fmt.Sprintf("%s: %s answered 404 for a blob the manifest lists", what, ep.hostport)
		default:
			f.code = report.CodeManifestUnknown
			f.summary = fmt.Sprintf("%s:%s is not in the registry (manifest unknown)", w.ref.Repository, w.ref.Identifier())
		}
	case http.StatusTooManyRequests:
		f.code = report.CodeRateLimited
		f.summary = fmt.Sprintf("%s was throttled (429) by %s", what, ep.hostport)
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			f.evidence = append(f.evidence, "Retry-After: "+w.untrusted(ra, 40))
		}
	default:
		f.code = report.CodeHTTPStatus
		f.summary = fmt.Sprintf("%s answered %s on %s", what, st, ep.hostport)
	}
	return w.fail(f, ev, lastHop(resp).Duration)
}
