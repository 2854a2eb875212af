package checkout

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
)

// StartCreditPack starts a hosted checkout for a credit pack.
func (s *Service) StartCreditPack(ctx context.Context, p core.Principal, packID string) (*Session, error) {
	if err := core.Authorize(p, core.OpCreditCheckout); err != nil {
		return nil, err
	}
	pack, ok := s.d.Prices.Pack(packID)
	if !ok {
		return nil, s.credits.UnknownPack(packID)
	}
	c := &Checkout{
		ID: core.NewID(core.PrefixCheckout), OwnerID: p.OwnerID, Mode: p.Mode, Kind: KindCreditPack, PackID: pack.ID,
		AmountMicros: pack.PriceMicros, CreditMicros: pack.CreditMicros, Status: Open,
	}
	cs, err := s.startCheckout(ctx, c, pack.Name)
	if err != nil {
		return nil, err
	}
	cs.PackID, cs.Credit = pack.ID, pack.Credit
	return cs, nil
}

// StartDraft starts the hosted checkout that pays for exactly this
// draft and queues it.
func (s *Service) StartDraft(ctx context.Context, p core.Principal, draftID string) (*Session, error) {
	if err := core.Authorize(p, core.OpGetDraft); err != nil {
		return nil, err
	}
	d, err := s.d.Store.GetDraft(ctx, p.OwnerID, p.Mode, draftID)
	if err != nil {
		return nil, core.StoreErr(err, "draft")
	}
	if err := s.faxes.DraftPayable(d); err != nil {
		return nil, err
	}
	c := &Checkout{
		ID: core.NewID(core.PrefixCheckout), OwnerID: p.OwnerID, Mode: p.Mode, Kind: KindDraft, DraftID: &d.ID,
		AmountMicros: d.PriceMicros, Status: Open,
	}
	return s.startCheckout(ctx, c, fmt.Sprintf("Fax of %d page(s) to %s", d.Pages, d.To))
}

// StartNumber starts the hosted checkout of an awaiting_payment
// number's first month (the console's pay button). The reservation is
// held for as long as the checkout is open.
func (s *Service) StartNumber(ctx context.Context, p core.Principal, id string) (*Session, error) {
	if err := core.Authorize(p, core.OpBuyNumber); err != nil {
		return nil, err
	}
	n, err := s.numbers.Own(ctx, p, id)
	if err != nil {
		return nil, core.StoreErr(err, "number")
	}
	if err := s.numbers.Payable(n); err != nil {
		return nil, err
	}
	c := &Checkout{
		ID: core.NewID(core.PrefixCheckout), OwnerID: p.OwnerID, Mode: p.Mode, Kind: KindNumber, NumberID: &n.ID,
		AmountMicros: n.MonthlyMicros, Status: Open,
	}
	cs, err := s.startCheckout(ctx, c, fmt.Sprintf("Fax number %s, first month", n.E164))
	if err != nil {
		return nil, err
	}
	if err := s.numbers.ReserveUntil(ctx, n, c.ExpiresAt); err != nil {
		return nil, err
	}
	cs.NumberID = n.ID
	return cs, nil
}

// creditUnpayableNumber credits a payment the processor took for a number
// that can no longer be paid (its reservation lapsed meanwhile).
func (s *Service) creditUnpayableNumber(ctx context.Context, tx Tx, c *Checkout, cents int64, now time.Time) error {
	s.d.Logger.WarnContext(ctx, "checkout paid after its number could no longer be bought: credited to the account",
		slog.String("checkout", c.ID), slog.String("number", *c.NumberID))
	return tx.AppendLedger(ctx, &credits.LedgerEntry{
		ID: core.NewID(core.PrefixLedger), OwnerID: c.OwnerID, Mode: c.Mode, Kind: credits.LedgerRefund, AmountMicros: cents * core.MicrosPerCent,
		Reason: "checkout " + c.ID + " was paid after number " + *c.NumberID + " could no longer be bought: the payment is credited here", CreatedAt: now,
	})
}
