package core

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// CheckoutSession is what a caller gets to hand to a payer.
type CheckoutSession struct {
	ID          string    `json:"id"`
	CheckoutURL string    `json:"checkoutUrl"`
	ExpiresAt   time.Time `json:"expiresAt"`
	Amount      string    `json:"amount"`
	AmountCents int64     `json:"amountCents"`
	Currency    string    `json:"currency"`
	PackID      string    `json:"packId,omitempty"`
	Credit      string    `json:"credit,omitempty"`
	DraftID     string    `json:"draftId,omitempty"`
}

func (s *Service) startCheckout(ctx context.Context, c *Checkout, description string) (*CheckoutSession, error) {
	gw := s.d.Checkout[c.Mode]
	if gw == nil {
		return nil, Errorf(KindUnavailable, CodeCheckoutUnavailable, "%s-mode checkout is not configured on this server (set the Stripe settings to enable it)", c.Mode)
	}
	now := s.now()
	c.CreatedAt, c.ExpiresAt = now, now.Add(s.cfg.CheckoutTTL).Truncate(time.Second)
	url, ext, err := gw.Start(ctx, c, description)
	if err != nil {
		return nil, fmt.Errorf("start %s checkout: %w", c.Mode, err)
	}
	c.ExternalID = ext
	if err := s.d.Store.CreateCheckout(ctx, c); err != nil {
		return nil, fmt.Errorf("create checkout: %w", err)
	}
	cs := &CheckoutSession{
		ID: c.ID, CheckoutURL: url, ExpiresAt: c.ExpiresAt, Amount: FormatUSD(c.AmountMicros),
		AmountCents: CentsUp(c.AmountMicros), Currency: Currency,
	}
	if c.DraftID != nil {
		cs.DraftID = *c.DraftID
	}
	return cs, nil
}

// CheckoutPayable tells a payment page whether c can still be paid: a
// draft's checkout cannot once the draft was paid another way (sent with
// credits) or expired. A paid checkout is not an error (the page shows
// its receipt).
func (s *Service) CheckoutPayable(ctx context.Context, c *Checkout) error {
	if c.Status == CheckoutPaid {
		return nil
	}
	if !s.now().Before(c.ExpiresAt) {
		return Errorf(KindGone, CodeCheckoutState, "this checkout expired; start a new one")
	}
	if c.Kind == CheckoutDraft && c.DraftID != nil {
		d, err := s.d.Store.GetDraft(ctx, c.OwnerID, c.Mode, *c.DraftID)
		if err != nil {
			return storeErr(err, "draft")
		}
		return s.draftPayable(d)
	}
	return nil
}

// GetCheckout reads a checkout for its payment page.
func (s *Service) GetCheckout(ctx context.Context, id string) (*Checkout, error) {
	c, err := s.d.Store.GetCheckout(ctx, id)
	return c, storeErr(err, "checkout")
}

// CompleteCheckout records that a checkout was paid (by the test page or a
// verified payment webhook) and delivers what it bought: credits for a pack,
// a queued fax for a draft. It is idempotent: a second completion of the
// same checkout changes nothing and reports the first result.
func (s *Service) CompleteCheckout(ctx context.Context, id string) (*Checkout, error) {
	var out *Checkout
	err := s.d.Store.InTx(ctx, func(tx Tx) error {
		c, err := tx.GetCheckout(ctx, id)
		if err != nil {
			return storeErr(err, "checkout")
		}
		now := s.now()
		if c.Status == CheckoutPaid {
			out = c
			return nil
		}
		if now.After(c.ExpiresAt) {
			return Errorf(KindGone, CodeCheckoutState, "this checkout expired; start a new one")
		}
		if err := tx.MarkCheckoutPaid(ctx, c.ID, now); err != nil {
			if errors.Is(err, ErrConflict) {
				out = c
				return nil
			}
			return err
		}
		c.Status, c.PaidAt = CheckoutPaid, &now
		out = c
		switch c.Kind {
		case CheckoutCreditPack:
			return tx.AppendLedger(ctx, &LedgerEntry{
				ID: NewID(PrefixLedger), OwnerID: c.OwnerID, Mode: c.Mode, Kind: LedgerPurchase, AmountMicros: c.CreditMicros,
				Reason: "credit pack " + c.PackID + " (checkout " + c.ID + ")", CreatedAt: now,
			})
		case CheckoutDraft:
			return s.payDraftAtCheckout(ctx, tx, c)
		}
		return fmt.Errorf("checkout %s has unknown kind %q", c.ID, c.Kind)
	})
	return out, err
}
