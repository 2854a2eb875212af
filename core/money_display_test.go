package core_test

import (
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/testenv"
)

func TestCentsRounding(t *testing.T) {
	for _, c := range []struct{ micros, down, up int64 }{
		{0, 0, 0}, {1_000, 0, 1}, {9_999, 0, 1}, {10_000, 1, 1}, {10_001, 1, 2},
		{-1_000, -1, 0}, {-10_000, -1, -1}, {-10_001, -2, -1},
	} {
		if got := core.CentsDown(c.micros); got != c.down {
			t.Errorf("CentsDown(%d) = %d, want %d", c.micros, got, c.down)
		}
		if got := core.CentsUp(c.micros); got != c.up {
			t.Errorf("CentsUp(%d) = %d, want %d", c.micros, got, c.up)
		}
	}
}

// A 0.001 USD grant used to show balanceCents 1: money the owner does not
// have. Balances and credits are shown rounded down.
func TestBalanceCentsNeverRoundUp(t *testing.T) {
	e := testenv.New(t, testenv.WithoutCredits())
	if _, err := e.Svc.Credits.Grant(ctx, e.OwnerA.ID, core.ModeTest, 1_000, "a tenth of a cent"); err != nil {
		t.Fatal(err)
	}
	c, err := e.Svc.Credits.Get(ctx, e.Principal(t, e.KeyATest), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if c.Available != "0.001" || c.AvailableCents != 0 {
		t.Fatalf("balance %q / %d cents, want 0.001 / 0", c.Available, c.AvailableCents)
	}
	if len(c.Ledger) != 1 || c.Ledger[0].AmountCents != 0 {
		t.Fatalf("ledger %+v", c.Ledger)
	}
}
