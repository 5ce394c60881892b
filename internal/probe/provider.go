package probe

import (
	"fmt"
	"strings"

	"github.com/pullpath/pullpath/internal/credprovider"
	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/report"
)

// useProviders takes what the kubelet's providers returned when the keyring has nothing else for
// the image: each run is a step, the first walk presents the credential the kubelet tries first,
// and a provider that failed while another answered, or further credentials the kubelet would
// try, are warnings. When no provider gave a credential for the image, the failure that stands is
// the first provider's.
func (r *run) useProviders() {
	all := r.provs
	failed := r.recordProviders()
	if len(all.Creds) == 0 {
		r.provider, r.provFail = failed[0].Plan, failed[0].Failure
		return
	}
	r.provider = all.From[0]
	if len(failed) > 0 {
		var sums []string
		for _, o := range failed {
			sums = append(sums, o.Failure.Summary)
		}
		r.warn(failed[0].Failure.Code, fmt.Sprintf("%s; the kubelet pulls with what %s returned, and so does the walk", strings.Join(sums, "; "), all.From[0].Provider.Name))
	}
	if len(all.Creds) > 1 {
		var srcs []string
		for _, c := range all.Creds {
			srcs = append(srcs, c.Source)
		}
		r.warn(report.CodeCredentialProviderMore, fmt.Sprintf("the kubelet's providers gave %d credentials for this image and the kubelet tries them in turn until one pulls: %s; the walk presented the first", len(all.Creds), strings.Join(srcs, "; ")))
	}
}

// providersAfter records the providers' runs when the walk presents a pull secret or the kubelet's
// docker config: the kubelet runs every provider for the image either way, and tries what they
// gave after the secrets (and its own docker config). A provider that failed is a warning: the
// kubelet pulls with the rest of its list, and never anonymously once it has a credential.
func (r *run) providersAfter() {
	for _, o := range r.recordProviders() {
		r.warn(o.Failure.Code, o.Failure.Summary+"; the kubelet tries the pod's pull secrets and any other provider's answer, and makes no anonymous pull")
	}
}

// recordProviders makes each provider run a step, and returns the runs that failed, in order.
func (r *run) recordProviders() (failed []credprovider.Outcome) {
	for _, o := range r.provs.Outcomes {
		r.steps = append(r.steps, *providerStep(o.Plan, o.Cred, o.Failure, report.Duration(o.Took)))
		if o.Failure != nil {
			failed = append(failed, o)
		}
	}
	return failed
}

// warn keeps a warning on the registry for the first walk's report, once per code.
func (r *run) warn(code report.Code, msg string) {
	for _, x := range r.warnings {
		if x.Code == code && x.Host == r.ref.Registry {
			return
		}
	}
	r.warnings = append(r.warnings, report.Warning{Code: code, Host: r.ref.Registry, Message: msg})
}

// turns names whose credentials the kubelet tries in turn, and the warning code that says so.
type turns struct {
	code  report.Code
	whose string
}

var (
	providerTurns = turns{report.CodeCredentialProviderMore, "its providers gave"}
	// the pod's pull secrets, the kubelet's docker config, its providers' answers: whichever it has
	keyringTurns = turns{report.CodePullSecretMore, "it has for the image, in its keyring's order (the pod's pull secrets, its own docker config, then what its credential providers gave)"}
)

// providerFailure decides what a failed kubelet credential provider means for the verdict. The
// kubelet logs the failure and pulls anonymously; so does the walk. When that anonymous pull is
// refused (auth, forbidden), the provider is the cause: the finding is the provider's, on the
// registry, and the registry's refusal is the alternative reading. When the pull fails earlier
// (dns, route, tls) that failure stands; when it holds, the image needs no identity. Both say
// what the provider did in a warning.
func (w *walk) providerFailure(f *failure, pf *credprovider.Failure) *failure {
	name := w.provider.Provider.Name
	if f == nil || f.cut {
		w.warn(pf.Code, w.image.Registry, pf.Summary+"; the walk went on anonymously, as the kubelet does")
		return f
	}
	class := w.classOf(f)
	if class != report.ClassAuth && class != report.ClassForbidden {
		w.warn(pf.Code, w.image.Registry, fmt.Sprintf("%s (and the pull fails first at %s anyway)", pf.Summary, f.step))
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
	if p := w.provider; p != nil && w.opts.Credential.Anonymous() && pf != nil {
		return p.Source() + ": failed (" + string(pf.Code) + "), so anonymous"
	}
	if p := w.provider; p != nil && strings.HasPrefix(w.opts.Credential.Source, p.Source()) {
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
