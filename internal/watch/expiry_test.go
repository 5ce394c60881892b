package watch

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pullpath/pullpath/internal/report"
)

// The credential expiry series is per pool and registry: the earliest over the pool's nodes and
// images, cleared when a node's probe no longer sees it, and gone with the node.
func TestCredentialExpiryMetric(t *testing.T) {
	m := newMetrics(time.Minute, nil, "test")
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	v := report.ProbeSummary{Class: report.ClassOK}
	probe := func(cred time.Time, token bool) *report.PoolResult {
		p := &report.Probe{CredentialExpiry: []report.Expiry{report.NewExpiry(report.ExpiryCredential, cred, report.SourceJWTExp, now)}}
		if token {
			p.CredentialExpiry = append(p.CredentialExpiry, report.NewExpiry(report.ExpiryRegistryToken, now.Add(5*time.Minute), report.SourceExpiresIn, now))
		}
		return &report.PoolResult{Probe: p}
	}
	img := ImageResult{Image: "registry.example/app:1", Verdict: &v}
	m.observe("n1", "pool-a", img, probe(now.Add(3*time.Hour), true), now)
	m.observe("n2", "pool-a", img, probe(now.Add(2*time.Hour), false), now)
	m.observe("n3", "pool-b", img, probe(now.Add(9*time.Hour), false), now)
	gauge := func(pool, source string) float64 {
		return testutil.ToFloat64(m.credExpiry.WithLabelValues(pool, "registry.example", source))
	}
	if got, want := gauge("pool-a", "credential"), float64(now.Add(2*time.Hour).Unix()); got != want {
		t.Errorf("pool-a credential = %v, want the earlier node's %v", got, want)
	}
	if got, want := gauge("pool-a", "registry-token"), float64(now.Add(5*time.Minute).Unix()); got != want {
		t.Errorf("pool-a registry-token = %v, want %v", got, want)
	}
	if got, want := gauge("pool-b", "credential"), float64(now.Add(9*time.Hour).Unix()); got != want {
		t.Errorf("pool-b credential = %v, want %v", got, want)
	}
	// n2 renewed its credential: the pool's earliest is n1's again
	m.observe("n2", "pool-a", img, probe(now.Add(12*time.Hour), false), now)
	if got, want := gauge("pool-a", "credential"), float64(now.Add(3*time.Hour).Unix()); got != want {
		t.Errorf("after n2 renewed: pool-a credential = %v, want %v", got, want)
	}
	// n1 is deleted: its token series goes with it
	m.forget("n1", map[string]bool{"pool-a": true, "pool-b": true})
	if got, want := gauge("pool-a", "credential"), float64(now.Add(12*time.Hour).Unix()); got != want {
		t.Errorf("after n1 went: pool-a credential = %v, want %v", got, want)
	}
	m.credExpiry.DeleteLabelValues("pool-a", "registry.example", "credential") // what gauge() made
	m.credExpiry.DeleteLabelValues("pool-b", "registry.example", "credential")
	if n := testutil.CollectAndCount(m.credExpiry); n != 0 {
		t.Errorf("%d series left; the registry token's should have gone with n1", n)
	}
	// a probe that sees no expiry clears the node's
	m.observe("n2", "pool-a", img, &report.PoolResult{Probe: &report.Probe{}}, now)
	m.observe("n3", "pool-b", img, &report.PoolResult{Probe: &report.Probe{}}, now)
	if n := testutil.CollectAndCount(m.credExpiry); n != 0 {
		t.Errorf("%d series after probes without expiry, want 0", n)
	}
	m.observe("n2", "pool-a", img, probe(now.Add(time.Hour), false), now)
	if err := testutil.CollectAndCompare(m.credExpiry, strings.NewReader(`
# HELP pullpath_watch_credential_expiry_timestamp_seconds When the pool's pull credentials die, earliest over its nodes (Unix time), where the probe saw evidence (a JWT's exp, the token answer's expires_in, a provider's cacheDuration); source: credential, registry-token (renewed at every pull), provider-cache.
# TYPE pullpath_watch_credential_expiry_timestamp_seconds gauge
pullpath_watch_credential_expiry_timestamp_seconds{pool="pool-a",registry="registry.example",source="credential"} 1.7962056e+09
`)); err != nil {
		t.Error(err)
	}
}
