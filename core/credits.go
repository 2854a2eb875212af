package core

import (
	"context"
	"errors"
	"fmt"
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
	e := &LedgerEntry{ID: NewID(PrefixLedger), OwnerID: ownerID, Mode: mode, Kind: LedgerGrant, AmountMicros: micros, Reason: CutUTF8(reason, 500), CreatedAt: s.now()}
	if err := s.d.Store.AppendLedger(ctx, e); err != nil {
		return nil, fmt.Errorf("grant credits: %w", err)
	}
	presentEntry(e)
	return e, nil
}

// presentEntry and presentBalance fill the display fields. Money the owner
// has (the available balance, a credit to the ledger) is rounded down to
// the cent and money taken (a hold, what is held) up, so the cents never
// show more to spend than there is.
func presentEntry(e *LedgerEntry) {
	e.Amount, e.AmountCents = FormatUSD(e.AmountMicros), CentsDown(e.AmountMicros)
}

func presentBalance(b *Balance) {
	b.Currency = Currency
	b.Available, b.AvailableCents = FormatUSD(b.AvailableMicros), CentsDown(b.AvailableMicros)
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
	limit, err := CheckLimit(limit)
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

// CreditBalance returns the principal's balance in its mode, without the
// ledger (scope credits:read).
func (s *Service) CreditBalance(ctx context.Context, p Principal) (*Balance, error) {
	if err := Authorize(p, OpGetCredits); err != nil {
		return nil, err
	}
	return s.Balance(ctx, p.OwnerID, p.Mode)
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

// CreditPacks lists the packs on sale.
func (s *Service) CreditPacks() []CreditPack { return s.d.Prices.Packs }

// unknownPack refuses a pack id that is not on sale, listing those that are.
func (s *Service) UnknownPack(packID string) error {
	ids := make([]string, len(s.d.Prices.Packs))
	for i, pk := range s.d.Prices.Packs {
		ids[i] = pk.ID
	}
	return Errorf(KindInvalid, CodeUnknownPack, "unknown credit pack %q", packID).With("packs", ids)
}
