package registry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/report"
)

func TestCheckHost(t *testing.T) {
	for _, ok := range []string{"registry.example", strings.Repeat("a", 63) + ".example", strings.Repeat("abcdefg.", 31) + "abcd", "127.0.0.1", "fe80::1%eth0", "::1", "reg.example."} {
		if err := CheckHost(ok); err != nil {
			t.Errorf("CheckHost(%.40q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{strings.Repeat("a", 64) + ".example", strings.Repeat("abcdefg.", 32) + "a", strings.Repeat("a", 200_000)} {
		if err := CheckHost(bad); !errors.Is(err, ErrHostName) {
			t.Errorf("CheckHost(%.40q…) = %v, want ErrHostName", bad, err)
		}
	}
	if got := ShownHost(strings.Repeat("a", 200_000)); len(got) > 63 || !strings.HasSuffix(got, "…") {
		t.Errorf("ShownHost = %q", got)
	}
}

// A Location naming a host longer than a DNS name is refused where it is read: no Visit (which
// would resolve and record it), and an error that names it cut.
func TestRedirectToAHostLongerThanADNSName(t *testing.T) {
	huge := strings.Repeat("a", 200_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "https://"+huge+"/blob")
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	visited := 0
	c := &Client{Transport: http.DefaultTransport, Visit: func(context.Context, *url.URL, report.Role, string) error { visited++; return nil }}
	u, _ := url.Parse(srv.URL + "/v2/a/blobs/x")
	_, err := c.Do(context.Background(), http.MethodGet, u, nil, report.RoleRegistry, report.RoleBlob)
	var ve *VisitError
	if !errors.As(err, &ve) || !errors.Is(err, ErrHostName) || ve.Role != report.RoleBlob {
		t.Fatalf("Do() error = %.200v, want a VisitError for the blob host with ErrHostName", err)
	}
	if visited != 0 || len(err.Error()) > 200 {
		t.Errorf("visited %d times, error of %d bytes", visited, len(err.Error()))
	}
}
