package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/services"
)

// testCharges: a charge is recorded once per idempotency key (also under
// concurrency), read back exactly, and refunded once.
func testCharges(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	f := newFax(t, s, newDocument(t, s, o, core.ModeTest))
	c := &credits.Charge{
		ID: core.NewID(core.PrefixCharge), Mode: core.ModeTest, Method: "stripe", Purpose: credits.ChargeMachineFax,
		IdempotencyKey: "mpp_ch1_spt1", AmountMicros: 500_000, Currency: "usd", Reference: "pi_1", Status: credits.ChargeSucceeded,
		FaxID: &f.ID, Subject: "ch1", CreatedAt: at(1),
	}
	must(t, s.CreateCharge(ctx, c))
	got, err := s.GetCharge(ctx, c.ID)
	must(t, err)
	wantEqual(t, "GetCharge", got, c)
	got, err = s.GetChargeByKey(ctx, "mpp_ch1_spt1")
	must(t, err)
	wantEqual(t, "GetChargeByKey", got, c)
	_, err = s.GetChargeByKey(ctx, "nope")
	wantErr(t, "unknown key", err, core.ErrNoRows)

	dup := *c
	dup.ID = core.NewID(core.PrefixCharge)
	wantErr(t, "second charge under one key", s.CreateCharge(ctx, &dup), core.ErrExists)

	must(t, s.MarkChargeRefunded(ctx, c.ID, "re_1", at(2)))
	wantErr(t, "refund twice", s.MarkChargeRefunded(ctx, c.ID, "re_2", at(3)), core.ErrConflict)
	wantErr(t, "refund a missing charge", s.MarkChargeRefunded(ctx, "chg_missing", "re_3", at(3)), core.ErrNoRows)
	got, err = s.GetCharge(ctx, c.ID)
	must(t, err)
	if got.Status != credits.ChargeRefunded || got.RefundReference != "re_1" || got.RefundedAt == nil || !got.RefundedAt.Equal(at(2)) {
		t.Fatalf("refunded charge = %+v", got)
	}

	// A charge of an owner's credit pack; a machine's has no owner.
	pack := &credits.Charge{ID: core.NewID(core.PrefixCharge), OwnerID: o.ID, Mode: core.ModeLive, Method: "card", Purpose: credits.ChargeCreditPack,
		IdempotencyKey: "ap2_apr1", AmountMicros: 20_000_000, Currency: "usd", Reference: "pi_2", Status: credits.ChargeSucceeded,
		PackID: "pack_20", Subject: "apr_1", CreatedAt: at(4)}
	must(t, s.CreateCharge(ctx, pack))

	// Fifty concurrent recordings of one charge: one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range 50 {
		wg.Go(func() {
			c := &credits.Charge{ID: core.NewID(core.PrefixCharge), Mode: core.ModeTest, Method: "stripe", Purpose: credits.ChargeMachineFax,
				IdempotencyKey: "race", AmountMicros: 1, Currency: "usd", Status: credits.ChargeSucceeded, CreatedAt: at(5)}
			err := s.CreateCharge(ctx, c)
			if err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			} else if !errors.Is(err, core.ErrExists) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d concurrent recordings won, want 1", won)
	}
}
