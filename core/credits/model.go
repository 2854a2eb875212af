package credits

import (
	"time"

	"github.com/faxhub/faxhub/core"
)

// LedgerKind names a ledger entry's purpose.
type LedgerKind string

const (
	// LedgerGrant adds credits by an operator (admin credits grant).
	LedgerGrant LedgerKind = "grant"
	// LedgerPurchase adds credits bought through a checkout.
	LedgerPurchase LedgerKind = "purchase"
	// LedgerHold reserves credits for a fax (negative amount).
	LedgerHold LedgerKind = "hold"
	// LedgerCapture makes a hold final (zero amount; references the hold).
	LedgerCapture LedgerKind = "capture"
	// LedgerRelease returns a hold (positive amount; references the hold).
	LedgerRelease LedgerKind = "release"
	// LedgerRefund returns what was paid for a fax (positive amount): the
	// pages a partial delivery did not send, or the whole price of a fax
	// paid at its checkout that was canceled or failed.
	LedgerRefund LedgerKind = "refund"
	// LedgerReversal takes back credits of a credit pack whose payment was
	// refunded at the processor (negative amount), at most what is
	// available (docs/payments.md).
	LedgerReversal LedgerKind = "reversal"
)

// LedgerEntry is one append-only line of an owner's credit account in one
// mode. The available balance is the sum of AmountMicros.
type LedgerEntry struct {
	ID           string     `json:"id" db:"id"`
	OwnerID      string     `json:"-" db:"owner_id"`
	Mode         core.Mode  `json:"mode" db:"mode"`
	Kind         LedgerKind `json:"kind" db:"kind"`
	AmountMicros int64      `json:"-" db:"amount_micros"`
	FaxID        *string    `json:"faxId,omitempty" db:"fax_id"`
	HoldID       *string    `json:"holdId,omitempty" db:"hold_id"`
	Reason       string     `json:"reason" db:"reason"`
	CreatedAt    time.Time  `json:"createdAt" db:"created_at"`

	Amount      string `json:"amount" db:"-"`
	AmountCents int64  `json:"amountCents" db:"-"`

	// After is set by the store on an entry that lowered the available
	// balance (a hold, a reversal): the balance it left and the owner's
	// low-balance threshold, read by the statement that wrote the entry.
	After *Position `json:"-" db:"-"`
}

// Position is an account's available balance right after one ledger
// entry, with its low-balance threshold at that moment (nil: no alert):
// what the balance row held then. The amount held is not on that row (it
// is the sum of the open holds); credits.low reads it when it is written.
type Position struct {
	AvailableMicros int64
	ThresholdMicros *int64
}

// Balance is an owner's credit position in one mode.
type Balance struct {
	Mode            core.Mode `json:"mode"`
	Currency        string    `json:"currency"`
	AvailableMicros int64     `json:"-"`
	HeldMicros      int64     `json:"-"`
	// Available (JSON "balance") is what can be spent now; Held is
	// reserved for faxes in flight (captured when delivered, returned when
	// they fail).
	Available      string `json:"balance"`
	AvailableCents int64  `json:"balanceCents"`
	Held           string `json:"held"`
	HeldCents      int64  `json:"heldCents"`
	// ThresholdMicros is the low-balance alert of the mode (nil: off).
	ThresholdMicros *int64 `json:"-"`
}
