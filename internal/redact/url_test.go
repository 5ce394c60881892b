package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	cases := map[string]string{
		"https://s3.example/bucket/blob?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIA%2F1&X-Amz-Signature=deadbeef&X-Amz-Expires=300": "https://s3.example/bucket/blob?X-Amz-Algorithm=REDACTED&X-Amz-Credential=REDACTED&X-Amz-Expires=REDACTED&X-Amz-Signature=REDACTED",
		"https://acct.blob.core.windows.net/c/b?sv=2020&se=2026-01-01&sig=c2VjcmV0":                                                "https://acct.blob.core.windows.net/c/b?se=REDACTED&sig=REDACTED&sv=REDACTED",
		"https://auth.example/token?scope=repository%3Aa%3Apull&service=reg.example&account=bob":                                   "https://auth.example/token?account=REDACTED&scope=repository%3Aa%3Apull&service=reg.example",
		"https://user:pass@reg.example/v2/":                             "https://reg.example/v2/",
		"https://cdn.example/x?Policy=p&Signature=s&Key-Pair-Id=k#frag": "https://cdn.example/x?Key-Pair-Id=REDACTED&Policy=REDACTED&Signature=REDACTED",
	}
	for in, want := range cases {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := URL(u); got != want {
			t.Errorf("URL(%s)\n got %s\nwant %s", in, got, want)
		}
	}
	if got := URLString("::not a url?sig=secret"); strings.Contains(got, "secret") {
		t.Errorf("URLString kept the secret: %s", got)
	}
}

func FuzzURL(f *testing.F) {
	f.Add("https://h/p?sig=SECRETVALUE&service=x")
	f.Add("https://h/p?a=1;SECRETVALUE")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil || u.RawQuery == "" {
			return
		}
		out := URL(u)
		_, rawq, _ := strings.Cut(out, "?")
		if rawq == Redacted {
			return
		}
		q, err := url.ParseQuery(rawq)
		if err != nil {
			t.Fatalf("redacted query does not parse: %q", rawq)
		}
		// every value outside the allow-list must be the placeholder
		for k, vs := range q {
			for _, v := range vs {
				if !safeQueryKeys[strings.ToLower(k)] && v != Redacted {
					t.Fatalf("value %q of %q survived in %s", v, k, out)
				}
			}
		}
	})
}
