package checkout_test

import (
	"context"
	"testing"

	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/internal/testenv"
)

var ctx = context.Background()

func TestCreditPackCheckout(t *testing.T) {
	e := testenv.New(t, testenv.WithoutCredits())
	p := e.Principal(t, e.KeyATest)
	_, err := e.Svc.Checkout.StartCreditPack(ctx, p, "pack_1000000")
	testenv.WantCode(t, err, credits.CodeUnknownPack)
	cs, err := e.Svc.Checkout.StartCreditPack(ctx, p, "pack_100")
	if err != nil {
		t.Fatal(err)
	}
	if cs.Amount != "100.00" || cs.Credit != "105.00" {
		t.Fatalf("pack checkout: %+v", cs)
	}
	for range 3 {
		if _, err := e.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
			t.Fatal(err)
		}
	}
	if c := e.Credits(t, p); c.Available != "105.00" || len(c.Ledger) != 1 || c.Ledger[0].Kind != credits.LedgerPurchase {
		t.Fatalf("after purchase: %+v", c)
	}
	_, err = e.Svc.Checkout.StartCreditPack(ctx, e.Principal(t, e.KeyALive), "pack_10")
	testenv.WantCode(t, err, checkout.CodeCheckoutUnavailable)
}
