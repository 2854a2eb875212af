// Package credits is the owner's prepaid account: an append-only ledger
// per mode whose sum is the balance (grants, purchases, holds for faxes in
// flight and their capture or release, refunds, reversals), the credit
// packs on sale, and the record of charges taken through a payment method.
package credits

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
)

// Grant adds credits to an owner's account by an operator, with a
// reason recorded in the ledger.
func (s *Service) Grant(ctx context.Context, ownerID string, mode core.Mode, micros int64, reason string) (*LedgerEntry, error) {
	if _, err := core.ParseMode(string(mode)); err != nil {
		return nil, err
	}
	if micros <= 0 {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "a grant must be positive")
	}
	if reason == "" {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "a grant needs a reason")
	}
	e := &LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: ownerID, Mode: mode, Kind: LedgerGrant, AmountMicros: micros, Reason: core.CutUTF8(reason, 500), CreatedAt: s.now()}
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
	e.Amount, e.AmountCents = core.FormatUSD(e.AmountMicros), core.CentsDown(e.AmountMicros)
}

func presentBalance(b *Balance) {
	b.Currency = core.Currency
	b.Available, b.AvailableCents = core.FormatUSD(b.AvailableMicros), core.CentsDown(b.AvailableMicros)
	b.Held, b.HeldCents = core.FormatUSD(b.HeldMicros), core.CentsUp(b.HeldMicros)
}

// Account is the response of getCredits: the balance and one page of the
// ledger, newest first.
type Account struct {
	Balance
	Ledger  []LedgerEntry `json:"ledger"`
	HasMore bool          `json:"hasMore"`
	Next    string        `json:"nextCursor,omitempty"`
}

// Get returns the principal's balance in its mode and a page of its
// ledger, newest first.
func (s *Service) Get(ctx context.Context, p core.Principal, startingAfter string, limit int) (*Account, error) {
	if err := core.Authorize(p, core.OpGetCredits); err != nil {
		return nil, err
	}
	limit, err := core.CheckLimit(limit)
	if err != nil {
		return nil, err
	}
	b, err := s.d.Store.GetBalance(ctx, p.OwnerID, p.Mode)
	if err != nil {
		return nil, fmt.Errorf("get balance: %w", err)
	}
	presentBalance(b)
	entries, err := s.d.Store.ListLedger(ctx, LedgerFilter{OwnerID: p.OwnerID, Mode: p.Mode, StartingAfter: startingAfter, Limit: limit + 1})
	if errors.Is(err, core.ErrNoRows) {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "starting_after names no ledger entry of yours")
	} else if err != nil {
		return nil, fmt.Errorf("list ledger: %w", err)
	}
	c := &Account{Balance: *b, Ledger: entries}
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

// BalanceFor returns the principal's balance in its mode, without the
// ledger (scope credits:read).
func (s *Service) BalanceFor(ctx context.Context, p core.Principal) (*Balance, error) {
	if err := core.Authorize(p, core.OpGetCredits); err != nil {
		return nil, err
	}
	return s.Balance(ctx, p.OwnerID, p.Mode)
}

// Balance returns an owner's balance in one mode (for the console).
func (s *Service) Balance(ctx context.Context, ownerID string, mode core.Mode) (*Balance, error) {
	b, err := s.d.Store.GetBalance(ctx, ownerID, mode)
	if err != nil {
		return nil, fmt.Errorf("get balance: %w", err)
	}
	presentBalance(b)
	return b, nil
}

// Packs lists the packs on sale.
func (s *Service) Packs() []core.CreditPack { return s.d.Prices.Packs }

// unknownPack refuses a pack id that is not on sale, listing those that are.
func (s *Service) UnknownPack(packID string) error {
	ids := make([]string, len(s.d.Prices.Packs))
	for i, pk := range s.d.Prices.Packs {
		ids[i] = pk.ID
	}
	return core.Errorf(core.KindInvalid, CodeUnknownPack, "unknown credit pack %q", packID).With("packs", ids)
}

// Store keeps the ledger and the charges.
type Store interface {
	Tx
}

// Tx is a transaction of the ledger; the features that charge or pay back
// credits (faxes, numbers, checkouts, purchases) include it in theirs.
type Tx interface {
	core.Tx
	LedgerStore
	ChargeStore
	events.Queries
}

// Deps are the ports credits drive.
type Deps struct {
	Store  Store
	Prices *core.PriceTable
}

// Service keeps the credit accounts.
type Service struct {
	cfg core.Config
	d   Deps
}

// New returns the service; cfg is the kernel's configuration with its
// defaults applied.
func New(cfg core.Config, d Deps) *Service {
	if d.Prices == nil {
		d.Prices = core.DefaultPriceTable()
	}
	return &Service{cfg: cfg, d: d}
}

func (s *Service) now() time.Time { return core.Clock(s.cfg.Now).Now() }
