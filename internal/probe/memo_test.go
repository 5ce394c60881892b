package probe_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/internal/report"
)

func hopsByRole(rep *report.Probe) map[report.Role]int {
	out := map[report.Role]int{}
	for _, h := range rep.Hops {
		out[h.Role]++
	}
	return out
}

// A resident agent's rounds: the full one walks everything and keeps the token and the manifest;
// a quick one then costs the registry the manifest HEAD and the config blob through its redirect,
// and still proves every host's path; a full round again walks everything.
func TestMemoQuickRoundsCostThreeRequests(t *testing.T) {
	e := lab(t)
	memo := probe.NewMemo()
	round := func(quick bool) *report.Probe {
		t.Helper()
		o := e.Options(e.Lab.Ref("team/app:1.4"))
		o.NoDownload, o.Sample, o.Memo = quick, quick, memo
		rep, err := probe.Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Class != report.ClassOK {
			t.Fatalf("class %s (%s), want ok", rep.Class, rep.Summary)
		}
		return rep
	}
	full := round(false)
	if n := len(full.Hops); n != 12 {
		t.Errorf("the full round: %d requests, want 12 (%v)", n, hopsByRole(full))
	}
	quick := round(true)
	if n, by := len(quick.Hops), hopsByRole(quick); n != 3 || by[report.RoleToken] != 0 || by[report.RoleBlob] != 1 {
		t.Errorf("a quick round after it: %d requests %v, want 3: the HEAD, the config and its redirect, no token", n, by)
	}
	for _, ep := range quick.Endpoints {
		if ep.Role == report.RoleRegistry && (ep.Steps[report.StepHTTP] != report.Pass || ep.Steps[report.StepAuth] != report.Pass || ep.Steps[report.StepManifest] != report.Pass) {
			t.Errorf("the registry's steps in a quick round: %v", ep.Steps)
		}
	}
	// the kept token's death is still said, from its full round's evidence
	said := false
	for _, x := range quick.CredentialExpiry {
		said = said || (x.What == report.ExpiryRegistryToken && x.Expires.Equal(full.CredentialExpiry[0].Expires))
	}
	if len(full.CredentialExpiry) == 0 || !said {
		t.Errorf("the registry token's expiry: full round %+v, quick round %+v", full.CredentialExpiry, quick.CredentialExpiry)
	}
	if !strings.Contains(quick.Summary, "a quick round") {
		t.Errorf("summary %q", quick.Summary)
	}
	again := round(false)
	if n := len(again.Hops); n != 12 {
		t.Errorf("a full round after quick ones: %d requests, want 12 (%v)", n, hopsByRole(again))
	}
}

// A kept token the registry refuses (revoked, or expired early) is forgotten, and the round
// authenticates as the runtime would: still ok, with the token realm asked.
func TestMemoRefusedTokenAuthenticatesAgain(t *testing.T) {
	e := lab(t)
	memo := probe.NewMemo()
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	o.Memo = memo
	if _, err := probe.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	probe.SpoilTokens(memo)
	o = e.Options(e.Lab.Ref("team/app:1.4"))
	o.NoDownload, o.Sample, o.Memo = true, true, memo
	rep, err := probe.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK || hopsByRole(rep)[report.RoleToken] != 1 {
		t.Errorf("with a refused kept token: class %s (%s), %v requests; want ok after one token request", rep.Class, rep.Summary, hopsByRole(rep))
	}
	var text strings.Builder
	_ = report.WriteText(&text, rep, report.TextOptions{Verbose: true})
	if strings.Contains(text.String(), "spoiled") {
		t.Errorf("the spoiled token reached the report")
	}
}

// A quick round whose credential the registry now refuses is the same verdict as a full one.
func TestMemoQuickRoundStillSeesAForbiddenRepository(t *testing.T) {
	e := lab(t)
	memo := probe.NewMemo()
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	o.Memo = memo
	if _, err := probe.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	e.Lab.SetFaults(registrytest.Faults{Forbid: true})
	o = e.Options(e.Lab.Ref("team/app:1.4"))
	o.NoDownload, o.Sample, o.Memo = true, true, memo
	rep, err := probe.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassForbidden {
		t.Errorf("quick round on a forbidden repository: %s (%s), want forbidden", rep.Class, rep.Summary)
	}
}
