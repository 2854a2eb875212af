package faxes_test

import (
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// TestCheckDestination: the number check of the console's send page says
// what a send would (the same refusals), with the country, the number type
// and the tariff's prices; it needs the quote scope and is counted per
// owner.
func TestCheckDestination(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitDestinationCheck, core.Rate{Interval: time.Hour, Burst: 6})
	}))
	p := e.Principal(t, e.KeyATest)
	d, err := e.Svc.Faxes.CheckDestination(ctx, p, "+12125550100")
	if err != nil {
		t.Fatal(err)
	}
	if d.E164 != "+12125550100" || d.Country != "US" || d.Type != "fixed_line_or_mobile" || d.Tariff != "nanp" || d.PerPage != "0.07" || d.Cover != "0.07" || d.Currency != core.Currency {
		t.Fatalf("check %+v", d)
	}
	for _, tc := range []struct{ to, code string }{
		{"+19005550123", core.CodePremiumDestination},
		{"+1 212 555 0100", core.CodeInvalidDestination},
		{"+8613800138000", core.CodeUnsupportedDestination}, // a valid number where faxhub does not send
	} {
		_, err := e.Svc.Faxes.CheckDestination(ctx, p, tc.to)
		testenv.WantCode(t, err, tc.code)
		if tc.code == core.CodePremiumDestination && core.AsError(err).Fields["numberType"] != "premium-rate" {
			t.Errorf("premium refusal without its type: %+v", core.AsError(err))
		}
	}
	_, err = e.Svc.Faxes.CheckDestination(ctx, core.Principal{OwnerID: e.OwnerA.ID, Mode: core.ModeTest, Scopes: []core.Scope{core.ScopeFaxRead}}, "+12125550100")
	testenv.WantCode(t, err, core.CodeInsufficientScope)
	// Four checks so far, refusals included (the one without the scope
	// was not counted): two more are the rest of the burst.
	for range 2 {
		if _, err := e.Svc.Faxes.CheckDestination(ctx, p, "+12125550100"); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.Svc.Faxes.CheckDestination(ctx, p, "+12125550100")
	testenv.WantCode(t, err, core.CodeRateLimited)
	// Per owner: another owner is not slowed down.
	if _, err := e.Svc.Faxes.CheckDestination(ctx, e.Principal(t, e.KeyBTest), "+12125550100"); err != nil {
		t.Fatal(err)
	}
}
