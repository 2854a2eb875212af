package credits

import (
	"context"
	"time"

	"github.com/faxhub/faxhub/core"
)

// LedgerStore keeps the credit ledger.
type LedgerStore interface {
	// AppendLedger appends a credit (grant, purchase) or a capture or
	// release. Holds go through PlaceHold.
	AppendLedger(ctx context.Context, e *LedgerEntry) error
	// PlaceHold appends a hold entry (negative amount) only if the available
	// balance covers it, atomically; ErrInsufficientFunds otherwise. It sets
	// e.After. Features place holds with credits.PlaceHold, which writes
	// credits.low when the hold crosses the owner's threshold.
	PlaceHold(ctx context.Context, e *LedgerEntry) error
	// SettleHold appends a capture or release for the fax's open hold, once:
	// ErrConflict if the hold is already settled, ErrNoRows if none exists.
	SettleHold(ctx context.Context, faxID string, kind LedgerKind, at time.Time) (*LedgerEntry, error)
	GetBalance(ctx context.Context, ownerID string, mode core.Mode) (*Balance, error)
	ListLedger(ctx context.Context, f LedgerFilter) ([]LedgerEntry, error)

	// ReverseCredits takes back up to -e.AmountMicros (e is a reversal,
	// negative) of the available balance, never below zero, and appends
	// e with what it took (setting e.After); it returns that (positive)
	// amount, 0 (and no entry) when nothing was available. Features reverse
	// with credits.Reverse.
	ReverseCredits(ctx context.Context, e *LedgerEntry) (int64, error)
	// SetLowBalanceThreshold sets (nil: clears) the low-balance alert of
	// an owner's mode.
	SetLowBalanceThreshold(ctx context.Context, ownerID string, mode core.Mode, thresholdMicros *int64) error
}

// LedgerFilter selects ledger entries, newest first.
type LedgerFilter struct {
	OwnerID       string
	Mode          core.Mode
	StartingAfter string
	Limit         int
}
