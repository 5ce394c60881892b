package probe

import (
	"fmt"
	"strings"

	"github.com/pullpath/pullpath/internal/credprovider"
	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/report"
)

// providerFailure decides what a failed kubelet credential provider means for the verdict. The
// kubelet logs the failure and pulls anonymously; so does the walk. When that anonymous pull is
// refused (auth, forbidden), the provider is the cause: the finding is the provider's, on the
// registry, and the registry's refusal is the alternative reading. When the pull fails earlier
// (dns, route, tls) that failure stands; when it holds, the image needs no identity. Both say
// what the provider did in a warning.
func (w *walk) providerFailure(f *failure, pf *credprovider.Failure) *failure {
	name := w.opts.Provider.Provider.Name
	if f == nil || f.cut {
		w.warn(pf.Code, w.ref.Registry, pf.Summary+"; the walk went on anonymously, as the kubelet does")
		return f
	}
	class := w.classOf(f)
	if class != report.ClassAuth && class != report.ClassForbidden {
		w.warn(pf.Code, w.ref.Registry, fmt.Sprintf("%s (and the pull fails first at %s anyway)", pf.Summary, f.step))
		return f
	}
	ep := w.regEp
	if ep == nil {
		ep = f.ep
	}
	return &failure{ep: ep, step: report.StepAuth, code: pf.Code, class: report.ClassAuth,
		summary:  pf.Summary + "; the kubelet then pulls anonymously, and the registry refuses",
		evidence: append(pf.Evidence, fmt.Sprintf("the anonymous pull without %s's credentials: %s %s at %s on %s: %s", name, class, f.code, f.step, f.ep.hostport, f.summary)),
		alt:      fmt.Sprintf("%s at %s on %s (%s), if the image should be pulled without %s", class, f.step, f.ep.hostport, f.code, name)}
}

// providerStep records the provider run as the first exchange of the pull: the node's identity
// traded for registry credentials (role token: it hands out credentials, like a realm; endpoint:
// the provider, which is a process on the node, not a host). Its secrets are never in it.
func providerStep(p *credprovider.Plan, c creds.Credential, pf *credprovider.Failure, d report.Duration) *report.Step {
	st := &report.Step{Step: report.StepAuth, Endpoint: "credential provider " + p.Provider.Name, Role: report.RoleToken, Verdict: report.Pass,
		Summary: fmt.Sprintf("the node's identity exchanged for registry credentials by %s: %s", p.Source(), c), Duration: d}
	if pf != nil {
		st.Verdict, st.Code, st.Summary, st.Evidence = report.Fail, pf.Code, pf.Summary, report.Evidence{Lines: pf.Evidence}
	}
	return st
}

// credentialSource names the identity the walk presented: "flag", "pull secret FILE", "docker
// config", "credential provider NAME (file:line)", "runtime config", "anonymous".
func (w *walk) credentialSource(pf *credprovider.Failure) string {
	if p := w.opts.Provider; p != nil && w.opts.Credential.Anonymous() && pf != nil {
		return p.Source() + ": failed (" + string(pf.Code) + "), so anonymous"
	}
	if p := w.opts.Provider; p != nil && strings.HasPrefix(w.opts.Credential.Source, p.Source()) {
		return p.Source()
	}
	c := w.cred
	src := c.Source
	switch {
	case c.Anonymous() && w.opts.Credential.Anonymous():
		src = w.opts.Credential.Source
		if strings.HasPrefix(src, "anonymous") {
			return src
		}
		if src != "" {
			return "anonymous (" + src + ")"
		}
		return "anonymous"
	case w.opts.Credential.Anonymous():
		return "runtime config (" + src + ")"
	case strings.HasPrefix(src, "--"):
		return "flag (" + src + ")"
	}
	return src
}
