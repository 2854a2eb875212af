package credits_test

import (
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/testenv"
)

// A 0.001 USD grant used to show balanceCents 1: money the owner does not
// have. Balances and credits are shown rounded down.
func TestBalanceCentsNeverRoundUp(t *testing.T) {
	e := testenv.New(t, testenv.WithoutCredits())
	if _, err := e.Svc.Credits.Grant(t.Context(), e.OwnerA.ID, core.ModeTest, 1_000, "a tenth of a cent"); err != nil {
		t.Fatal(err)
	}
	c, err := e.Svc.Credits.Get(t.Context(), e.Principal(t, e.KeyATest), "", 10)
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
