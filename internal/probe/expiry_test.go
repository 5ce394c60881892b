package probe_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/demo"
	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/internal/report"
)

// expiryOf is the report's expiry of what, or fails the test.
func expiryOf(t *testing.T, rep *report.Probe, what report.ExpiryWhat) report.Expiry {
	t.Helper()
	for _, x := range rep.CredentialExpiry {
		if x.What == what {
			return x
		}
	}
	t.Fatalf("no %s expiry in %+v (class %s %s: %s)", what, rep.CredentialExpiry, rep.Class, rep.Code, rep.Summary)
	return report.Expiry{}
}

func texts(t *testing.T, rep *report.Probe) (js, txt string) {
	t.Helper()
	var j, x bytes.Buffer
	if err := report.WriteJSON(&j, rep); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteText(&x, rep, report.TextOptions{Width: 400}); err != nil {
		t.Fatal(err)
	}
	return j.String(), x.String()
}

// noJWTBytes checks that no part of a JWT reached the output: not the token, nor any segment of it
// (its payload alone would tell its claims).
func noJWTBytes(t *testing.T, rep *report.Probe, jwt string) {
	t.Helper()
	assertNoSecret(t, rep, append([]string{jwt}, strings.Split(jwt, ".")...)...)
}

// The realm's expires_in dates the registry token: 300 s from its answer, in JSON and in the text.
func TestExpiryOfTheRegistryTokenFromExpiresIn(t *testing.T) {
	e := lab(t)
	before := time.Now()
	rep, err := probe.Run(context.Background(), e.Options(e.Lab.Ref("team/app:1.4")))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK || len(rep.CredentialExpiry) != 1 {
		t.Fatalf("class %s, expiries %+v: want ok and the token's alone (the demo password is no JWT)", rep.Class, rep.CredentialExpiry)
	}
	x := expiryOf(t, rep, report.ExpiryRegistryToken)
	if x.Source != report.SourceExpiresIn || x.Remaining.Std() != 300*time.Second {
		t.Errorf("token expiry %+v, want expires_in with 300 s to go", x)
	}
	if lo, hi := before.Add(300*time.Second), time.Now().Add(300*time.Second); x.Expires.Before(lo.Truncate(time.Second)) || x.Expires.After(hi) {
		t.Errorf("expires %s, want between %s and %s", x.Expires, lo, hi)
	}
	js, txt := texts(t, rep)
	if !strings.Contains(js, `"what": "registry-token"`) || !strings.Contains(js, `"source": "expires_in"`) || !strings.Contains(js, `"remainingMs": 300000`) {
		t.Errorf("JSON lacks the expiry:\n%s", js)
	}
	if !strings.Contains(txt, "expiry    the registry token expires in 5m (expires_in, ") {
		t.Errorf("text lacks the expiry line:\n%s", txt)
	}
	assertNoSecret(t, rep, e.Lab.Token(), demo.Password)
}

// A token answer without expires_in, and no JWT: nothing is known, and nothing is said.
func TestNoExpiryWithoutEvidence(t *testing.T) {
	e := lab(t)
	e.Lab.SetFaults(registrytest.Faults{TokenNoExpiry: true})
	rep, err := probe.Run(context.Background(), e.Options(e.Lab.Ref("team/app:1.4")))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK || rep.CredentialExpiry != nil {
		t.Fatalf("class %s, expiries %+v: want ok and none", rep.Class, rep.CredentialExpiry)
	}
	js, txt := texts(t, rep)
	if strings.Contains(js, "credentialExpiry") || strings.Contains(txt, "expiry") {
		t.Errorf("an expiry without evidence:\n%s\n%s", js, txt)
	}
}

// A realm token that is a JWT, without expires_in, is dated by its exp claim; no byte of it is output.
func TestExpiryOfAJWTRegistryToken(t *testing.T) {
	e := lab(t)
	exp := time.Now().Add(90 * time.Minute).Unix()
	e.Lab.SetFaults(registrytest.Faults{TokenNoExpiry: true, TokenJWTExp: exp})
	rep, err := probe.Run(context.Background(), e.Options(e.Lab.Ref("team/app:1.4")))
	if err != nil {
		t.Fatal(err)
	}
	x := expiryOf(t, rep, report.ExpiryRegistryToken)
	if rep.Class != report.ClassOK || x.Source != report.SourceJWTExp || !x.Expires.Equal(time.Unix(exp, 0)) {
		t.Errorf("class %s, token expiry %+v, want jwt-exp at %s", rep.Class, x, time.Unix(exp, 0).UTC())
	}
	if d := x.Remaining.Std(); d < 89*time.Minute || d > 90*time.Minute {
		t.Errorf("remaining %s, want about 90m", d)
	}
	tok := e.Lab.Token()
	if strings.Count(tok, ".") != 2 {
		t.Fatalf("the lab issued %d-segment token, want a JWT", strings.Count(tok, ".")+1)
	}
	noJWTBytes(t, rep, tok)
}

// An identity token that is a JWT (an ACR refresh token) dates the credential; the text says so
// within a day, and an expired one says EXPIRED. The token never reaches the output.
func TestExpiryOfAJWTCredential(t *testing.T) {
	e := lab(t)
	const acrUser = "00000000-0000-0000-0000-000000000000"
	for _, c := range []struct {
		name string
		in   time.Duration
		text string
	}{
		{"two hours", 2 * time.Hour, "the credential expires in 2h0m (jwt-exp, "},
		{"expired", -3 * time.Minute, "the credential had EXPIRED (jwt-exp, "},
	} {
		t.Run(c.name, func(t *testing.T) {
			exp := time.Now().Add(c.in).Unix()
			jwt := registrytest.FakeJWT(exp, "acr-refresh-"+c.name)
			e.Lab.AddUser(acrUser, jwt) // the lab does not check exp: the registry is not the point
			o := e.Options(e.Lab.Ref("team/app:1.4"))
			o.Credential = creds.Credential{IdentityToken: jwt, Source: "docker config"}
			rep, err := probe.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Class != report.ClassOK {
				t.Fatalf("class %s %s: %s", rep.Class, rep.Code, rep.Summary)
			}
			x := expiryOf(t, rep, report.ExpiryCredential)
			if x.Source != report.SourceJWTExp || !x.Expires.Equal(time.Unix(exp, 0)) {
				t.Errorf("credential expiry %+v, want jwt-exp at %s", x, time.Unix(exp, 0).UTC())
			}
			if d := x.Remaining.Std() - max(c.in, 0); d < -2*time.Second || d > time.Second || x.Expired != (c.in < 0) {
				t.Errorf("remaining %s expired %t, want about %s", x.Remaining, x.Expired, c.in)
			}
			if _, txt := texts(t, rep); !strings.Contains(txt, c.text) {
				t.Errorf("text lacks %q:\n%s", c.text, txt)
			}
			noJWTBytes(t, rep, jwt)
		})
	}
}

// A provider's answer is cached by the kubelet for its cacheDuration, else the config's
// defaultCacheDuration; a JWT password it returns is dated too.
func TestExpiryOfAProviderCredential(t *testing.T) {
	e := lab(t)
	match := "*.pullpath.test:" + port(e.Lab.RegistryAddr())
	t.Run("defaultCacheDuration", func(t *testing.T) {
		plan, _ := nodeWithProvider(t, e, match, "ok", demo.User, demo.Password)
		before := time.Now()
		rep, err := probe.Run(context.Background(), providerOpts(e, plan))
		if err != nil {
			t.Fatal(err)
		}
		x := expiryOf(t, rep, report.ExpiryProviderCache)
		if x.Source != report.SourceDefaultCacheDuration || x.Expires.Before(before.Add(10*time.Minute)) || x.Expires.After(time.Now().Add(10*time.Minute)) {
			t.Errorf("provider cache %+v, want defaultCacheDuration, 10m from the run", x)
		}
		if len(rep.CredentialExpiry) != 2 { // and the realm's token
			t.Errorf("expiries %+v, want the cache's and the token's", rep.CredentialExpiry)
		}
	})
	t.Run("cacheDuration and a JWT", func(t *testing.T) {
		exp := time.Now().Add(3 * time.Hour).Unix()
		jwt := registrytest.FakeJWT(exp, "provider-jwt")
		e.Lab.AddUser("provider-user", jwt)
		plan, _ := nodeWithProvider(t, e, match, "cached", "provider-user", jwt, "12h0m0s")
		before := time.Now()
		rep, err := probe.Run(context.Background(), providerOpts(e, plan))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Class != report.ClassOK {
			t.Fatalf("class %s %s: %s", rep.Class, rep.Code, rep.Summary)
		}
		x := expiryOf(t, rep, report.ExpiryProviderCache)
		if x.Source != report.SourceCacheDuration || x.Expires.Before(before.Add(12*time.Hour)) || x.Expires.After(time.Now().Add(12*time.Hour)) {
			t.Errorf("provider cache %+v, want cacheDuration, 12h from the run", x)
		}
		if c := expiryOf(t, rep, report.ExpiryCredential); c.Source != report.SourceJWTExp || !c.Expires.Equal(time.Unix(exp, 0)) {
			t.Errorf("credential expiry %+v, want jwt-exp at %s", c, time.Unix(exp, 0).UTC())
		}
		_, txt := texts(t, rep)
		if !strings.Contains(txt, "the credential expires in 3h0m") || !strings.Contains(txt, "the kubelet's cache of the provider's credential expires in 12h0m (cacheDuration, ") {
			t.Errorf("text lacks the expiries:\n%s", txt)
		}
		noJWTBytes(t, rep, jwt)
	})
}
