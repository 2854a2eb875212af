package testcheckout_test

import (
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/payments/testcheckout"
)

func packCheckout(id string) *checkout.Checkout {
	return &checkout.Checkout{
		ID: id, OwnerID: "own_1", Mode: core.ModeTest, Kind: checkout.KindCreditPack, PackID: "pack_100",
		AmountMicros: 100_000_000, CreditMicros: 105_000_000, Status: checkout.Open,
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour),
	}
}

func TestGateway(t *testing.T) {
	g := testcheckout.NewTestGateway("https://fax.example/", nil)
	u, ext, err := g.Start(t.Context(), packCheckout("chk_abc"), "25 USD of fax credits")
	if err != nil {
		t.Fatal(err)
	}
	if u != "https://fax.example/checkout/test/chk_abc" || ext != "" {
		t.Fatalf("Start = %q, %q", u, ext)
	}
	live := packCheckout("chk_live")
	live.Mode = core.ModeLive
	if _, _, err := g.Start(t.Context(), live, "x"); err == nil {
		t.Fatal("the test gateway started a live checkout")
	}
}
