package credits

import (
	"context"
	"fmt"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
)

// Crossed is the low-balance rule: an entry that took the available
// balance from before to after crossed the threshold when before was at or
// above it and after is below it. Entries below it already, or that stay
// at or above it, do not cross; a top-up back to the threshold re-arms it,
// so the next fall below crosses again. No threshold (nil) never crosses.
func Crossed(before, after int64, threshold *int64) bool {
	return threshold != nil && before >= *threshold && after < *threshold
}

// PlaceHold places hold e in tx (tx.PlaceHold, ErrInsufficientFunds when
// the balance does not cover it) and writes credits.low in tx when it took
// the balance below the owner's threshold. Every hold is placed here.
func PlaceHold(ctx context.Context, tx Tx, e *LedgerEntry) error {
	if err := tx.PlaceHold(ctx, e); err != nil {
		return err
	}
	return noteLow(ctx, tx, e)
}

// Reverse takes back what it can of reversal e in tx (tx.ReverseCredits)
// and writes credits.low in tx when that crossed the owner's threshold.
// Every reversal is made here.
func Reverse(ctx context.Context, tx Tx, e *LedgerEntry) (int64, error) {
	took, err := tx.ReverseCredits(ctx, e)
	if err != nil || took == 0 {
		return took, err
	}
	return took, noteLow(ctx, tx, e)
}

// LowBalance is the data of credits.low: the balance as getCredits shows
// it right after the entry that crossed, the threshold, and that entry.
type LowBalance struct {
	Balance
	Threshold      string      `json:"threshold"`
	ThresholdCents int64       `json:"thresholdCents"`
	LedgerEntry    LedgerEntry `json:"ledgerEntry"`
}

// noteLow writes credits.low for e, an entry that lowered the balance, if
// it crossed: e.After is what the store read in the entry's own statement,
// so of concurrent entries exactly the one that crossed writes it. The
// amount held it shows is read in tx after e, only when e crossed.
func noteLow(ctx context.Context, tx Tx, e *LedgerEntry) error {
	if e.After == nil {
		return fmt.Errorf("credits: ledger entry %s has no balance after it", e.ID)
	}
	after := e.After.AvailableMicros
	if !Crossed(after-e.AmountMicros, after, e.After.ThresholdMicros) {
		return nil
	}
	now, err := tx.GetBalance(ctx, e.OwnerID, e.Mode)
	if err != nil {
		return fmt.Errorf("credits: the amount held after %s: %w", e.ID, err)
	}
	b := Balance{Mode: e.Mode, AvailableMicros: after, HeldMicros: now.HeldMicros}
	presentBalance(&b)
	entry := *e
	presentEntry(&entry)
	th := *e.After.ThresholdMicros
	data := LowBalance{Balance: b, Threshold: core.FormatUSD(th), ThresholdCents: core.CentsDown(th), LedgerEntry: entry}
	return events.Append(ctx, tx, e.OwnerID, e.Mode, events.CreditsLow, e.OwnerID, data, e.CreatedAt)
}

// Purchase says what bought a credit pack, for credits.purchased.
type Purchase struct {
	PackID      string `json:"packId"`
	PriceMicros int64  `json:"-"`
	// CheckoutID is the hosted checkout that was paid; CartID the AP2
	// cart an agent bought with the owner's approval.
	CheckoutID string `json:"checkoutId,omitempty"`
	CartID     string `json:"cartId,omitempty"`
}

// Purchased is the data of credits.purchased.
type Purchased struct {
	Purchase
	Price       string      `json:"price"`
	PriceCents  int64       `json:"priceCents"`
	Credit      string      `json:"credit"`
	CreditCents int64       `json:"creditCents"`
	LedgerEntry LedgerEntry `json:"ledgerEntry"`
}

// GrantPurchase appends e, the purchase entry of a paid credit pack, and
// writes credits.purchased, both in tx. Every path that grants bought
// credits (a hosted checkout, an AP2 purchase) goes through it.
func GrantPurchase(ctx context.Context, tx Tx, e *LedgerEntry, p Purchase) error {
	if e.Kind != LedgerPurchase {
		return fmt.Errorf("grant purchase: a %s entry is not a purchase", e.Kind)
	}
	if err := tx.AppendLedger(ctx, e); err != nil {
		return fmt.Errorf("grant purchased credits: %w", err)
	}
	entry := *e
	presentEntry(&entry)
	data := Purchased{Purchase: p, Price: core.FormatUSD(p.PriceMicros), PriceCents: core.CentsUp(p.PriceMicros),
		Credit: core.FormatUSD(e.AmountMicros), CreditCents: core.CentsDown(e.AmountMicros), LedgerEntry: entry}
	return events.Append(ctx, tx, e.OwnerID, e.Mode, events.CreditsPurchased, e.OwnerID, data, e.CreatedAt)
}
