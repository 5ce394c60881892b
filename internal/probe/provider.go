package probe

import (
	"context"
	"fmt"
	"strings"

	"github.com/pullpath/pullpath/internal/credprovider"
	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/report"
)

// useProviders takes what the kubelet's providers returned: each run is a step, the walk presents
// the credential the kubelet tries first, and a provider that failed while another answered, or
// further credentials the kubelet would try, are warnings. The failure that stands, when no
// provider gave a credential for the image, is returned.
func (w *walk) useProviders(all *credprovider.Combined) *credprovider.Failure {
	failed := w.recordProviders(all)
	if len(all.Creds) == 0 {
		w.provider = failed[0].Plan
		return failed[0].Failure
	}
	w.opts.Credential, w.provider = all.Creds[0], all.From[0]
	if len(failed) > 0 {
		var sums []string
		for _, o := range failed {
			sums = append(sums, o.Failure.Summary)
		}
		w.warn(failed[0].Failure.Code, w.ref.Registry, fmt.Sprintf("%s; the kubelet pulls with what %s returned, and so does the walk", strings.Join(sums, "; "), all.From[0].Provider.Name))
	}
	if len(all.Creds) > 1 {
		var srcs []string
		for _, c := range all.Creds {
			srcs = append(srcs, c.Source)
		}
		w.warn(report.CodeCredentialProviderMore, w.ref.Registry, fmt.Sprintf("the kubelet's providers gave %d credentials for this image and the kubelet tries them in turn until one pulls: %s; the walk presented the first", len(all.Creds), strings.Join(srcs, "; ")))
	}
	return nil
}

// providersAfter records the providers' runs when the walk presents a pull secret or the kubelet's
// docker config: the kubelet runs every provider for the image either way, and tries what they
// gave after the secrets (and its own docker config). A provider that failed is a warning: the
// kubelet pulls with the rest of its list, and never anonymously once it has a credential.
func (w *walk) providersAfter(all *credprovider.Combined) {
	for _, o := range w.recordProviders(all) {
		w.warn(o.Failure.Code, w.ref.Registry, o.Failure.Summary+"; the kubelet tries the pod's pull secrets and any other provider's answer, and makes no anonymous pull")
	}
}

// recordProviders makes each provider run a step and its secrets the walk's, and returns the runs
// that failed, in order.
func (w *walk) recordProviders(all *credprovider.Combined) (failed []credprovider.Outcome) {
	w.secrets = append(w.secrets, all.Secrets...)
	for _, o := range all.Outcomes {
		w.steps = append(w.steps, *providerStep(o.Plan, o.Cred, o.Failure, report.Duration(o.Took)))
		if o.Failure != nil {
			failed = append(failed, o)
		}
	}
	return failed
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

// tryInTurn does what the kubelet does when the pull with the first credential it has for the image
// fails (the pod's pull secrets, then its providers' answers): it pulls again with each further
// credential, in order, until one pulls; when none does, there is no anonymous pull. The report of
// the pull that held keeps the providers' steps and lists what each credential got; when none held,
// the first credential's report stands, with that list. secrets are scrubbed from the report as the
// walk's are.
func tryInTurn(parent context.Context, opts Options, by turns, all []creds.Credential, secrets []string, first *report.Probe) *report.Probe {
	if len(all) < 2 || first.Class == report.ClassOK || first.Interrupted != nil {
		return first
	}
	tried := []string{fmt.Sprintf("%s: %s (%s)", all[0].Source, first.Class, first.Code)}
	var provSteps []report.Step
	for _, s := range first.Steps {
		if strings.HasPrefix(s.Endpoint, "credential provider ") {
			provSteps = append(provSteps, s)
		}
	}
	for _, c := range all { // the report that held must not echo an earlier credential either
		secrets = append(secrets, credentialSecrets(c)...)
	}
	scrub := (&walk{secrets: secrets}).scrub
	for i := 1; i < len(all); i++ {
		o := opts
		o.Credential, o.Providers, o.More = all[i], nil, nil
		rep, err := Run(parent, o)
		if err != nil || rep.Interrupted != nil {
			break
		}
		tried = append(tried, fmt.Sprintf("%s: %s (%s)", all[i].Source, rep.Class, rep.Code))
		if rep.Class != report.ClassOK {
			continue
		}
		rep.Steps = append(provSteps, rep.Steps...)
		for _, x := range first.Warnings { // a provider that failed still failed
			if x.Code == report.CodeCredentialProviderFailed || x.Code == report.CodeCredentialProviderNoAuth {
				rep.Warnings = append(rep.Warnings, x)
			}
		}
		rep.Warnings = append(rep.Warnings, report.Warning{Code: by.code, Host: first.Reference.Registry,
			Message: fmt.Sprintf("the kubelet tries each credential %s until one pulls, and so did the probe: %s", by.whose, strings.Join(tried, "; "))})
		rep.Duration += first.Duration
		scrub(rep)
		return rep
	}
	msg := fmt.Sprintf("the kubelet tries each credential %s until one pulls; none did: %s", by.whose, strings.Join(tried, "; "))
	for i := range first.Warnings {
		if first.Warnings[i].Code == by.code {
			first.Warnings[i].Message = msg
			return first
		}
	}
	first.Warnings = append(first.Warnings, report.Warning{Code: by.code, Host: first.Reference.Registry, Message: msg})
	return first
}

// providerFailure decides what a failed kubelet credential provider means for the verdict. The
// kubelet logs the failure and pulls anonymously; so does the walk. When that anonymous pull is
// refused (auth, forbidden), the provider is the cause: the finding is the provider's, on the
// registry, and the registry's refusal is the alternative reading. When the pull fails earlier
// (dns, route, tls) that failure stands; when it holds, the image needs no identity. Both say
// what the provider did in a warning.
func (w *walk) providerFailure(f *failure, pf *credprovider.Failure) *failure {
	name := w.provider.Provider.Name
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
