package core

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// GrantCredits adds credits to an owner's account by an operator, with a
// reason recorded in the ledger.
func (s *Service) GrantCredits(ctx context.Context, ownerID string, mode Mode, micros int64, reason string) (*LedgerEntry, error) {
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
	}
	if micros <= 0 {
		return nil, Errorf(KindInvalid, CodeInvalidRequest, "a grant must be positive")
	}
	if reason == "" {
		return nil, Errorf(KindInvalid, CodeInvalidRequest, "a grant needs a reason")
	}
	e := &LedgerEntry{ID: NewID(PrefixLedger), OwnerID: ownerID, Mode: mode, Kind: LedgerGrant, AmountMicros: micros, Reason: truncate(reason, 500), CreatedAt: s.now()}
	if err := s.d.Store.AppendLedger(ctx, e); err != nil {
		return nil, fmt.Errorf("grant credits: %w", err)
	}
	presentEntry(e)
	return e, nil
}

func presentEntry(e *LedgerEntry) {
	e.Amount, e.AmountCents = FormatUSD(e.AmountMicros), CentsUp(e.AmountMicros)
}

func presentBalance(b *Balance) {
	b.Currency = Currency
	b.Available, b.AvailableCents = FormatUSD(b.AvailableMicros), CentsUp(b.AvailableMicros)
	b.Held, b.HeldCents = FormatUSD(b.HeldMicros), CentsUp(b.HeldMicros)
}

// Credits is the response of getCredits: the balance and one page of the
// ledger, newest first.
type Credits struct {
	Balance
	Ledger  []LedgerEntry `json:"ledger"`
	HasMore bool          `json:"hasMore"`
	Next    string        `json:"nextCursor,omitempty"`
}

// GetCredits returns the principal's balance in its mode and a page of its
// ledger, newest first.
func (s *Service) GetCredits(ctx context.Context, p Principal, startingAfter string, limit int) (*Credits, error) {
	if err := Authorize(p, OpGetCredits); err != nil {
		return nil, err
	}
	limit, err := checkLimit(limit)
	if err != nil {
		return nil, err
	}
	b, err := s.d.Store.GetBalance(ctx, p.OwnerID, p.Mode)
	if err != nil {
		return nil, fmt.Errorf("get balance: %w", err)
	}
	presentBalance(b)
	entries, err := s.d.Store.ListLedger(ctx, LedgerFilter{OwnerID: p.OwnerID, Mode: p.Mode, StartingAfter: startingAfter, Limit: limit + 1})
	if errors.Is(err, ErrNoRows) {
		return nil, Errorf(KindInvalid, CodeInvalidRequest, "starting_after names no ledger entry of yours")
	} else if err != nil {
		return nil, fmt.Errorf("list ledger: %w", err)
	}
	c := &Credits{Balance: *b, Ledger: entries}
	if len(entries) > limit {
		c.Ledger, c.HasMore = entries[:limit], true
		c.Next = c.Ledger[limit-1].ID
	}
	for i := range c.Ledger {
		presentEntry(&c.Ledger[i])
	}
	if c.Ledger == nil {
		c.Ledger = []LedgerEntry{}
	}
	return c, nil
}

// Balance returns an owner's balance in one mode (for the console).
func (s *Service) Balance(ctx context.Context, ownerID string, mode Mode) (*Balance, error) {
	b, err := s.d.Store.GetBalance(ctx, ownerID, mode)
	if err != nil {
		return nil, fmt.Errorf("get balance: %w", err)
	}
	presentBalance(b)
	return b, nil
}

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

// CreditPacks lists the packs on sale.
func (s *Service) CreditPacks() []CreditPack { return s.d.Prices.Packs }

// CreateCreditCheckout starts a hosted checkout for a credit pack.
func (s *Service) CreateCreditCheckout(ctx context.Context, p Principal, packID string) (*CheckoutSession, error) {
	if err := Authorize(p, OpCreditCheckout); err != nil {
		return nil, err
	}
	pack, ok := s.d.Prices.Pack(packID)
	if !ok {
		ids := make([]string, len(s.d.Prices.Packs))
		for i, pk := range s.d.Prices.Packs {
			ids[i] = pk.ID
		}
		return nil, Errorf(KindInvalid, CodeUnknownPack, "unknown credit pack %q", packID).With("packs", ids)
	}
	c := &Checkout{
		ID: NewID(PrefixCheckout), OwnerID: p.OwnerID, Mode: p.Mode, Kind: CheckoutCreditPack, PackID: pack.ID,
		AmountMicros: pack.PriceMicros, CreditMicros: pack.CreditMicros, Status: CheckoutOpen,
	}
	cs, err := s.startCheckout(ctx, c, pack.Name)
	if err != nil {
		return nil, err
	}
	cs.PackID, cs.Credit = pack.ID, pack.Credit
	return cs, nil
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
			return s.faxFromDraft(ctx, tx, c)
		}
		return fmt.Errorf("checkout %s has unknown kind %q", c.ID, c.Kind)
	})
	return out, err
}
