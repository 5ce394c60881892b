//go:build !probeonly

package report

// verify's renderers serve only the full build: the probe-only build that verify ships to every
// node has no verify command, and leaves them out, encoding/xml with them.

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pullpath/pullpath/internal/redact"
)

// verifySteps are the columns of the pool × step matrix.
var verifySteps = []struct {
	name  string
	steps []StepName
}{
	{"DNS", []StepName{StepDNS}}, {"ROUTE", []StepName{StepRoute}}, {"TCP", []StepName{StepTCP}},
	{"TLS", []StepName{StepTLS}}, {"AUTH", []StepName{StepHTTP, StepAuth}},
	{"MANIFEST", []StepName{StepManifest}}, {"BLOBS", []StepName{StepBlob}},
}

// cell is one pool's verdict on a step, over every endpoint the pull touched.
func cell(p *Probe, steps []StepName) string {
	if p == nil {
		return "·"
	}
	seen, fail, skip := false, false, false
	for _, e := range p.Endpoints {
		for _, s := range steps {
			switch e.Steps[s] {
			case Fail:
				fail = true
			case Pass, Warn:
				seen = true
			case Skip:
				skip = true
			}
		}
	}
	switch {
	case fail:
		return "FAIL"
	case seen:
		return "pass"
	case skip:
		return "skip"
	}
	return "·"
}

// finished counts the pools whose probe reached a verdict (a report, or a verdict in its
// termination message), not cut by the signal.
func finished(pools []PoolResult) int {
	n := 0
	for _, p := range pools {
		if p.Probe != nil && p.Probe.Interrupted == nil || p.Summary != nil {
			n++
		}
	}
	return n
}

// WriteVerifyText renders a verification for a person: the verdict, the pool × step matrix, then
// each pool's verdict, identity and runtime pull, the probe from inside a pod, the notes and what
// the run left behind.
func WriteVerifyText(w io.Writer, v *Verification) error {
	b := &strings.Builder{}
	failing := 0
	for _, p := range v.Pools {
		if p.Class != ClassOK {
			failing++
		}
	}
	switch {
	case v.Interrupted != "":
		// a signal is no verdict: the pools cut short were never finished, not found broken
		fmt.Fprintf(b, "INTERRUPTED  %s: verify ended by %s after %d of %d pools finished; the others are not verified\n\n",
			v.Image, v.Interrupted, finished(v.Pools), len(v.Pools))
	case v.Class == ClassOK:
		fmt.Fprintf(b, "OK  %s pulls completely on a node of every pool (%d)\n\n", v.Image, len(v.Pools))
	default:
		fmt.Fprintf(b, "BROKEN  %s: %d of %d pools fail (first: class %s)\n\n", v.Image, failing, len(v.Pools), v.Class)
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "POOL\tNODE")
	for _, s := range verifySteps {
		fmt.Fprint(tw, "\t"+s.name)
	}
	fmt.Fprintln(tw, "\tCLASS\tFAILING HOST (ROLE)")
	for _, p := range v.Pools {
		node := p.Node
		if node == "" {
			node = "-"
		}
		fmt.Fprintf(tw, "%s\t%s", p.Pool, node)
		for _, s := range verifySteps {
			fmt.Fprint(tw, "\t"+cell(p.Probe, s.steps))
		}
		host, cause := "-", p.PodCause()
		switch {
		case p.Probe != nil && p.Probe.Failing != nil:
			host = p.Probe.Failing.Host + " (" + string(p.Probe.Failing.Role) + ")"
		case p.Summary != nil && p.Summary.Host != "":
			host = p.Summary.Host + " (" + string(p.Summary.Role) + ")"
		case cause != nil && cause.Host != "":
			host = cause.Host + " (" + string(cause.Role) + ")"
		}
		fmt.Fprintf(tw, "\t%s\t%s\n", p.Class, host)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range v.Pools {
		fmt.Fprintf(b, "\npool %s", p.Pool)
		if p.Node != "" {
			cache := "unknown (image list full)"
			if p.ImagePresentBefore != nil {
				cache = map[bool]string{true: "cached", false: "not cached"}[*p.ImagePresentBefore]
			}
			fmt.Fprintf(b, " · node %s (created %s, image %s before) · %s", p.Node, p.NodeCreated.Format("2006-01-02 15:04Z"), cache, p.Choice)
		}
		b.WriteString("\n")
		cause := p.PodCause()
		switch {
		case p.Probe != nil && p.Probe.Class == ClassOK:
			fmt.Fprintf(b, "  OK      %s\n", p.Probe.Summary)
		case p.Probe != nil:
			f := p.Probe.Failing
			where := ""
			if f != nil {
				where = fmt.Sprintf(" · %s (%s) · step %s", f.Host, f.Role, f.Step)
			}
			fmt.Fprintf(b, "  BROKEN  class %s%s · %s\n          %s\n", p.Probe.Class, where, p.Probe.Code, p.Probe.Summary)
			if p.Probe.WhereToLook != "" {
				fmt.Fprintf(b, "          look at: %s\n", p.Probe.WhereToLook)
			}
		case p.Summary != nil:
			writeTermVerdict(b, p.Summary)
		case cause != nil:
			fmt.Fprintf(b, "  NOT VERIFIED  class %s%s · %s · the probe pod could not pull its own image: %s was not probed on this node\n          %s\n          %s\n",
				cause.Class, hostRole(cause), cause.Code, v.Image, cause.Reason, p.Error)
		default:
			fmt.Fprintf(b, "  NO PROBE  %s\n", p.Error)
			for _, f := range p.Findings {
				fmt.Fprintf(b, "          %s %s: %s\n", f.Class, f.Code, f.Reason)
			}
		}
		if len(v.PullSecrets) > 0 || triedInTurn(p.Probe) {
			writeIdentity(b, p.Probe)
		}
		if rp := p.RuntimePull; rp != nil && rp.Result != "skipped" {
			agree := "—"
			if rp.Agrees != nil {
				agree = map[bool]string{true: "agrees with the probe", false: "DISAGREES with the probe"}[*rp.Agrees]
			}
			line := rp.Result
			if rp.Result == "failed" {
				line = fmt.Sprintf("failed: class %s · %s (%s) · %s", rp.Class, rp.Host, rp.Role, rp.Code)
			}
			fmt.Fprintf(b, "  runtime pull (kubelet)  %s · %s · %s\n", line, rp.Took.Std().Round(time.Millisecond), agree)
			if rp.Note != "" {
				fmt.Fprintf(b, "          %s\n", rp.Note)
			}
		}
	}
	if len(v.PullSecrets) > 0 {
		b.WriteString("\nnode probes and canaries\n")
		writeSecrets(b, v.PullSecrets, "they pull with the node's own configuration")
	}
	if fp := v.FromPod; fp != nil {
		fmt.Fprintf(b, "\nfrom pod %s (node %s, pool %s, ephemeral container %s)\n", fp.Pod, fp.Node, fp.Pool, fp.Container)
		switch {
		case fp.Probe == nil && fp.Summary != nil:
			writeTermVerdict(b, fp.Summary)
		case fp.Probe == nil:
			fmt.Fprintf(b, "  NO PROBE  %s\n", fp.Error)
			if f := Cause(fp.Findings); f != nil {
				fmt.Fprintf(b, "            the probe image's pull, as explain reads it: class %s%s · %s\n", f.Class, hostRole(f), f.Code)
			}
		case fp.Probe.Class == ClassOK:
			fmt.Fprintf(b, "  OK      %s\n", fp.Probe.Summary)
		default:
			where := ""
			if f := fp.Probe.Failing; f != nil {
				where = fmt.Sprintf(" · %s (%s) · step %s", f.Host, f.Role, f.Step)
			}
			fmt.Fprintf(b, "  BROKEN  class %s%s · %s\n          %s\n", fp.Probe.Class, where, fp.Probe.Code, fp.Probe.Summary)
		}
		writeSecrets(b, fp.PullSecrets, "the probe in the pod is anonymous")
		writeIdentity(b, fp.Probe)
		fmt.Fprintf(b, "  => %s\n", fp.Comparison)
	}
	for _, n := range v.Notes {
		fmt.Fprintf(b, "\nnote  %s", n)
	}
	if len(v.Notes) > 0 {
		b.WriteString("\n")
	}
	if len(v.LeftBehind) > 0 {
		fmt.Fprintf(b, "\nLEFT BEHIND (run 'pullpath cleanup --run %s'): %s\n", v.Run, strings.Join(v.LeftBehind, ", "))
	} else {
		fmt.Fprintf(b, "\nrun %s in namespace %s: every object it made is deleted (%s)\n", v.Run, v.Namespace, v.Duration.Std().Round(time.Millisecond))
	}
	_, err := io.WriteString(w, redact.Clean(b.String())) // no colours of its own: every escape came with the data
	return err
}

// writeTermVerdict renders a probe's compact verdict, all that is left when its log (the full report)
// could not be read: it is the probe's verdict, not a missing one.
func writeTermVerdict(b *strings.Builder, s *ProbeSummary) {
	verdict, where := "BROKEN", ""
	if s.Class == ClassOK {
		verdict = "OK    "
	}
	if s.Host != "" {
		where = fmt.Sprintf(" · %s (%s) · step %s", s.Host, s.Role, s.Step)
	}
	fmt.Fprintf(b, "  %s  class %s%s · %s · from the probe's termination message (its log could not be read)\n          %s\n", verdict, s.Class, where, s.Code, s.Summary)
}

// writeSecrets says which pull secrets a probe presented, which it could not and why.
func writeSecrets(b *strings.Builder, secrets []PodPullSecret, none string) {
	var given, not []string
	for _, ps := range secrets {
		if ps.HandedOver {
			given = append(given, ps.Name)
		} else {
			not = append(not, ps.Name+" ("+ps.Problem+")")
		}
	}
	switch {
	case len(given) == 1:
		fmt.Fprintf(b, "  pull secrets  presented: %s\n", given[0])
	case len(given) > 1:
		fmt.Fprintf(b, "  pull secrets  presented, tried in turn as the kubelet does: %s\n", strings.Join(given, ", "))
	case len(secrets) > 0:
		fmt.Fprintf(b, "  pull secrets  none presented: %s\n", none)
	}
	if len(not) > 0 {
		fmt.Fprintf(b, "  not presented %s\n", strings.Join(not, "; "))
	}
}

// triedInTurn reports whether a probe had several credentials for the image (the kubelet tries each).
func triedInTurn(p *Probe) bool {
	if p == nil {
		return false
	}
	return slices.ContainsFunc(p.Warnings, inTurn)
}

// inTurn reports whether w tells what each of several credentials got.
func inTurn(w Warning) bool {
	return w.Code == CodePullSecretMore || w.Code == CodeCredentialProviderMore
}

// writeIdentity says what a probe pulled with, and what each credential got when it tried several
// in turn: the pod's pull secrets, the kubelet's docker config and its providers' answers
// (PULL_SECRET_MORE), or several answers of its providers alone (CREDENTIAL_PROVIDER_MORE).
func writeIdentity(b *strings.Builder, p *Probe) {
	if p == nil {
		return
	}
	if p.CredentialSource != "" {
		fmt.Fprintf(b, "  identity  %s\n", p.CredentialSource)
	}
	for _, w := range p.Warnings {
		if inTurn(w) {
			fmt.Fprintf(b, "  in turn   %s\n", w.Message)
		}
	}
}

// JUnit XML: a test suite per run, a test case per pool.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junitVerdict is a pool's broken path as a JUnit failure: its class as the type, and the class,
// code and failing host in the message.
func junitVerdict(v ProbeSummary, text string) *junitFailure {
	msg := fmt.Sprintf("class %s %s", v.Class, v.Code)
	if v.Host != "" {
		msg += fmt.Sprintf(" on %s (%s) at %s", v.Host, v.Role, v.Step)
	}
	return &junitFailure{Message: msg, Type: string(v.Class), Text: text}
}

// junitFinding is a pool whose probe pod could not pull its own image (PoolResult.PodCause):
// the class as the type, the class, code and host in the message, as junitVerdict.
func junitFinding(f *Finding, why string) *junitFailure {
	msg := fmt.Sprintf("class %s %s", f.Class, f.Code)
	if f.Host != "" {
		msg += fmt.Sprintf(" on %s (%s)", f.Host, f.Role)
	}
	return &junitFailure{Message: msg, Type: string(f.Class), Text: why + " (the probe pod's events, as explain reads them; the image under test was not probed)\n" + f.Reason + "\n" + f.Message}
}

// WriteJUnit renders a verification as JUnit XML: one test suite, a test case per pool. A broken
// path is a failure whose type is its class; a pool without any verdict is an error of type
// no-probe.
func WriteJUnit(w io.Writer, v *Verification) error {
	s := junitSuite{Name: "pullpath verify " + v.Image, Time: fmt.Sprintf("%.3f", v.Duration.Std().Seconds())}
	for _, p := range v.Pools {
		c := junitCase{Name: "pool " + p.Pool + " node " + p.Node, Classname: "pullpath.verify", Time: "0"}
		cause := p.PodCause()
		switch {
		case p.Probe != nil:
			c.Time = fmt.Sprintf("%.3f", p.Probe.Duration.Std().Seconds())
			if p.Probe.Class != ClassOK {
				c.Failure = junitVerdict(Summarize(p.Probe), p.Probe.Summary+"\n"+p.Probe.WhereToLook)
				s.Failures++
			} else {
				c.SystemOut = p.Probe.Summary
			}
		case p.Summary != nil:
			// the probe ran and gave its verdict; only its full report (the log) is missing
			const from = " (from the probe's termination message: its log could not be read)"
			if p.Summary.Class != ClassOK {
				c.Failure = junitVerdict(*p.Summary, p.Summary.Summary+from)
				s.Failures++
			} else {
				c.SystemOut = p.Summary.Summary + from
			}
		case cause != nil:
			// the probe pod could not pull its own image: the pool's class (PodCause's rule)
			c.Failure = junitFinding(cause, p.Error)
			s.Failures++
		default:
			text := p.Error
			for _, f := range p.Findings {
				text += "\n" + f.Message
			}
			c.Error = &junitFailure{Message: p.Error, Type: "no-probe", Text: text}
			s.Errors++
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	out, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, xml.Header+string(out)+"\n")
	return err
}

// hostRole is " · HOST (ROLE)" for a finding that names its host, else "".
func hostRole(f *Finding) string {
	if f.Host == "" {
		return ""
	}
	return fmt.Sprintf(" · %s (%s)", f.Host, f.Role)
}
