package probe

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/pullpath/pullpath/internal/credprovider"
	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/hoptrace"
	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/runtimeconfig"
)

// run is one probe: what holds for every credential it presents in turn.
type run struct {
	opts        Options
	parent, ctx context.Context
	ref         registry.Reference
	platform    registry.Platform
	roots       systemRoots
	policy      policy // the runtime's, decided once

	// the kubelet's credentials for the image in its order (Options.Keyring and the providers'
	// answers); when it has none, Options.Credential alone
	list []creds.Credential
	// the providers the kubelet runs for the image, their runs, and what the first walk reports of
	// them: the plan of the credential it presents first (or of the failure that stands)
	provs    *credprovider.Combined
	provider *credprovider.Plan
	provFail *credprovider.Failure
	// the providers' runs, first in every walk's steps; what they mean, in the first walk's warnings
	steps    []report.Step
	warnings []report.Warning
	secrets  []string // every credential value handled, scrubbed from every report
	turns    turns
}

// Run probes the pull path of opts.Ref (or opts.Image). An error means the probe could not run (bad input,
// unreadable CA file); a broken path is a report with a class other than ok.
//
// As the kubelet, it presents the credentials its keyring gives for the image in turn (the pod's
// pull secrets, the node's docker config, then what the credential providers answered), one
// walk each, until one pulls; no anonymous pull follows (kubelet v1.37 kuberuntime_image.go:50).
// The report is that walk's, or the first walk's when none held, with what each got.
//
// The run is bounded by opts.Timeout, and ends at once when ctx is cancelled (a signal): the report
// then says what was established so far and which step was cut (Interrupted), never a guess.
func Run(parent context.Context, opts Options) (*report.Probe, error) {
	opts.setDefaults()
	ref := opts.Ref
	if ref.Registry == "" {
		var err error
		if ref, err = registry.ParseReference(opts.Image); err != nil {
			return nil, err
		}
	}
	opts.Ref, opts.Image = ref, ref.Original
	plat := registry.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}.Normalize()
	if opts.Platform != "" {
		var err error
		if plat, err = registry.ParsePlatform(opts.Platform); err != nil {
			return nil, err
		}
	}
	roots, err := trustRoots(opts)
	if err != nil {
		return nil, err
	}
	if opts.Node == "" {
		opts.Node, _ = os.Hostname()
	}
	ctx, cancel := context.WithTimeout(parent, opts.Timeout)
	defer cancel()
	r := &run{opts: opts, parent: parent, ctx: ctx, ref: ref, platform: plat, roots: roots, policy: policyOf(opts.Runtime)}
	r.credentials()

	first, err := r.walk(0)
	if err != nil || len(r.list) < 2 || first.Class == report.ClassOK || first.Interrupted != nil {
		return first, err
	}
	tried := []string{fmt.Sprintf("%s: %s (%s)", r.list[0].Source, first.Class, first.Code)}
	for i := 1; i < len(r.list); i++ {
		rep, err := r.walk(i)
		if err != nil || rep.Interrupted != nil {
			break
		}
		tried = append(tried, fmt.Sprintf("%s: %s (%s)", r.list[i].Source, rep.Class, rep.Code))
		if rep.Class != report.ClassOK {
			continue
		}
		for _, x := range first.Warnings { // a provider that failed still failed
			if x.Code == report.CodeCredentialProviderFailed || x.Code == report.CodeCredentialProviderNoAuth {
				rep.Warnings = append(rep.Warnings, x)
			}
		}
		rep.Warnings = append(rep.Warnings, report.Warning{Code: r.turns.code, Host: ref.Registry,
			Message: fmt.Sprintf("the kubelet tries each credential %s until one pulls, and so did the probe: %s", r.turns.whose, strings.Join(tried, "; "))})
		rep.Duration += first.Duration
		return rep, nil
	}
	msg := fmt.Sprintf("the kubelet tries each credential %s until one pulls; none did: %s", r.turns.whose, strings.Join(tried, "; "))
	for i := range first.Warnings {
		if first.Warnings[i].Code == r.turns.code {
			first.Warnings[i].Message = msg
			return first, nil
		}
	}
	first.Warnings = append(first.Warnings, report.Warning{Code: r.turns.code, Host: ref.Registry, Message: msg})
	return first, nil
}

// credentials makes the kubelet's list for the image: the keyring's credentials, then what the
// providers answer. The providers run before the pull, as in the kubelet, whether or not the
// keyring holds a credential: the kubelet looks the image up in one keyring that unions them. What
// they return is never output (their secrets join the scrub list even when unused).
func (r *run) credentials() {
	kr := r.opts.Keyring.Clone()
	static := kr.Lookup(r.ref.Name())
	r.turns = keyringTurns
	if len(r.opts.Providers) > 0 {
		all := credprovider.RunAll(r.ctx, r.opts.Providers)
		all.AddTo(kr)
		r.provs = &all
		r.secrets = append(r.secrets, all.Secrets...)
		if len(static) == 0 {
			r.turns = providerTurns
			r.useProviders()
		} else {
			r.providersAfter()
		}
	}
	// the CLI refuses a pull secret's unusable entry; a provider's has none
	r.list = kr.Turns(r.ref.Name(), r.opts.Credential)
	for _, c := range r.list {
		r.secrets = append(r.secrets, credentialSecrets(c)...)
	}
}

// walk walks the pull path presenting the i-th credential of the list, and reports.
func (r *run) walk(i int) (*report.Probe, error) {
	opts := r.opts
	opts.Credential = r.list[i]
	w := &walk{opts: opts, policy: r.policy, roots: r.roots, ctx: r.ctx, image: r.ref, platform: r.platform, rec: &hoptrace.Recorder{},
		endpoints: map[string]*endpoint{}, hostAttempt: &hostAttempt{ref: r.ref}}
	w.steps = append(w.steps, r.steps...)
	w.secrets = append(w.secrets, r.secrets...)
	var provFail *credprovider.Failure
	if i == 0 {
		w.warnings = append(w.warnings, r.warnings...)
		w.provider, provFail = r.provider, r.provFail
	}
	targets, err := w.targets(r.roots)
	if err != nil {
		return nil, err
	}
	if opts.Runtime != nil {
		w.proxyFunc = opts.Runtime.ProxyFunc()
	}
	start := time.Now()
	f, results := w.hosts(targets)
	if provFail != nil {
		f = w.providerFailure(f, provFail)
	}
	if f != nil && f.cut {
		w.interrupted(r.parent, f)
	}
	w.proxiedWarnings()
	rep := w.report(f, start)
	rep.CredentialSource = w.credentialSource(provFail)
	rep.CredentialExpiry = w.expiries(time.Now())
	if rt := opts.Runtime; rt != nil {
		rep.Runtime = &report.Runtime{Name: string(rt.Runtime), Version: rt.Version, HostRoot: rt.HostRoot, Detected: rt.Detected, Hosts: []report.RuntimeHost{}}
		for i, t := range targets {
			rep.Runtime.Hosts = append(rep.Runtime.Hosts, report.RuntimeHost{URL: t.desc, Role: t.role, Source: t.source, Trust: t.trust, Result: results[i]})
		}
		for _, h := range w.skipped {
			rep.Runtime.Hosts = append(rep.Runtime.Hosts, h)
		}
	}
	return rep, nil
}

// hosts walks the targets in the runtime's order; the first that holds decides, as containerd's
// resolver falls back host by host. When every host fails, the runtime names one host's error
// (policy.reported); the others are warnings with their evidence. results says what each host gave.
func (w *walk) hosts(targets []target) (*failure, []string) {
	opts, ref := w.opts, w.image
	var f *failure
	if len(targets) == 0 {
		code := report.CodeUnknown
		for _, x := range runtimeWarnings(opts.Runtime) {
			if x.Code == runtimeconfig.WarnRegistryBlocked {
				code = report.CodeRegistryBlocked // explain's code for the runtime's own refusal
			}
		}
		f = &failure{ep: &endpoint{hostport: ref.Host, host: ref.Host, role: report.RoleRegistry, layers: map[report.StepName]report.Verdict{}},
			step: report.StepConfig, code: code, class: report.ClassOther,
			summary: "the runtime's configuration leaves no host to pull " + ref.Registry + " from (blocked, or no host with the pull capability)"}
	}
	results := make([]string, len(targets))
	for i := range results {
		results[i] = "not tried: an earlier host held"
	}
	var tried []hostTry
	for i, t := range targets {
		f = w.attemptFallback(t)
		if f == nil {
			results[i] = "ok"
			break
		}
		if f.cut || w.ctx.Err() != nil {
			results[i] = "cut: " + f.summary
			f.cut = true
			break
		}
		results[i] = fmt.Sprintf("%s %s at %s on %s", w.classOf(f), f.code, f.step, f.ep.hostport)
		tried = append(tried, hostTry{t: t, f: f, i: i, resolved: w.resolved, attempt: w.hostAttempt})
		if w.resolved && w.policy.keepsResolved {
			break
		}
		if w.policy.stops(t, f) {
			for k := i + 1; k < len(results); k++ {
				results[k] = "not tried: dockerd stops at " + t.desc + "'s timeout"
			}
			break
		}
	}
	reported := -1
	if f != nil && !f.cut && len(tried) > 0 {
		reported = w.policy.reported(tried)
		pick := tried[reported]
		// the runtime's error is that host's, with its credential and download; the endpoint the
		// walk ends on stays the last host's
		f = pick.f
		w.cred, w.download, w.tokenExpiry = pick.attempt.cred, pick.attempt.download, pick.attempt.tokenExpiry
		if len(tried) > 1 {
			results[pick.i] += " (the error the runtime reports)"
		}
	}
	for j, x := range tried {
		if j == reported {
			continue
		}
		then := "the runtime falls back to the next host"
		if reported >= 0 && j > reported {
			then = "it failed too; the runtime reports " + f.ep.hostport + "'s error (" + w.policy.words + ")"
		}
		w.warn(x.f.code, x.f.ep.hostport, fmt.Sprintf("%s %s failed at %s (%s): %s; %s", x.t.role, x.t.desc, x.f.step, x.f.code, x.f.summary, then))
	}
	return f, results
}
