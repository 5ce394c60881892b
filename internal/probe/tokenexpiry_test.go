package probe

import (
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

// expires_in counts from issued_at when the realm gives it, else from the answer's arrival.
func TestTokenExpiryFromIssuedAt(t *testing.T) {
	now := time.Date(2026, 12, 2, 9, 1, 0, 0, time.UTC)
	x := tokenExpiry(registry.Token{Token: "t", ExpiresIn: 300, IssuedAt: now.Add(-time.Minute)}, now)
	if x == nil || x.Source != report.SourceExpiresIn || !x.Expires.Equal(now.Add(4*time.Minute)) || x.Remaining.Std() != 4*time.Minute {
		t.Errorf("with issued_at: %+v", x)
	}
	x = tokenExpiry(registry.Token{Token: "t", ExpiresIn: 60, IssuedAt: now.Add(-2 * time.Minute)}, now)
	if x == nil || !x.Expired || x.Remaining != 0 {
		t.Errorf("issued long ago: %+v, want expired", x)
	}
	if x := tokenExpiry(registry.Token{Token: "t"}, now); x != nil {
		t.Errorf("no evidence: %+v, want nil", x)
	}
}
