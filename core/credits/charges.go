package credits

import (
	"context"
	"time"

	"github.com/faxhub/faxhub/core"
)

// ChargePurpose says what a charge paid for.
type ChargePurpose string

const (
	ChargeMachineFax ChargePurpose = "machine_fax"
	ChargeCreditPack ChargePurpose = "credit_pack"
)

// ChargeStatus is where a charge stands.
type ChargeStatus string

const (
	ChargeSucceeded ChargeStatus = "succeeded"
	ChargeRefunded  ChargeStatus = "refunded"
)

// Charge is one settled payment.
type Charge struct {
	ID string `db:"id" json:"id"`
	// OwnerID is empty for a paying machine, which has no account.
	OwnerID string        `db:"owner_id" json:"-"`
	Mode    core.Mode     `db:"mode" json:"mode"`
	Method  string        `db:"method" json:"method"`
	Purpose ChargePurpose `db:"purpose" json:"purpose"`
	// IdempotencyKey is what the method settled under (unique): a charge
	// is recorded once however often it is retried.
	IdempotencyKey string       `db:"idempotency_key" json:"-"`
	AmountMicros   int64        `db:"amount_micros" json:"-"`
	Currency       string       `db:"currency" json:"currency"`
	Reference      string       `db:"reference" json:"reference"`
	Status         ChargeStatus `db:"status" json:"status"`
	FaxID          *string      `db:"fax_id" json:"faxId,omitempty"`
	PackID         string       `db:"pack_id" json:"packId,omitempty"`
	// Subject is what authorised the charge: a payment challenge id, an
	// approval id.
	Subject         string     `db:"subject" json:"-"`
	CreatedAt       time.Time  `db:"created_at" json:"createdAt"`
	RefundedAt      *time.Time `db:"refunded_at" json:"refundedAt,omitempty"`
	RefundReference string     `db:"refund_reference" json:"refundReference,omitempty"`
	// Machine charges: the request_id paid for, the amount in the
	// method's units (cents, token base units), and what a failed or
	// partial fax is owed back (RefundState: "", due, refunded,
	// not_refundable) with a lease so one replica performs it.
	RequestID        string     `db:"request_id" json:"-"`
	AmountUnits      int64      `db:"amount_units" json:"-"`
	RefundState      string     `db:"refund_state" json:"-"`
	RefundDueUnits   int64      `db:"refund_due_units" json:"-"`
	RefundLeaseUntil *time.Time `db:"refund_lease_until" json:"-"`
}

// ChargeStore persists charges; part of services.Store. Errors follow core.Store.
type ChargeStore interface {
	// CreateCharge records a charge; ErrExists if its idempotency key is
	// recorded already, or its (method, reference) when the reference is
	// not empty (a transaction hash pays once).
	CreateCharge(ctx context.Context, c *Charge) error
	GetCharge(ctx context.Context, id string) (*Charge, error)
	GetChargeByKey(ctx context.Context, idempotencyKey string) (*Charge, error)
	// MarkChargeRefunded moves a succeeded charge to refunded once;
	// ErrConflict otherwise.
	MarkChargeRefunded(ctx context.Context, id, reference string, at time.Time) error
	// GetChargeByFax reads the charge that paid for a fax.
	GetChargeByFax(ctx context.Context, faxID string) (*Charge, error)
	// SetChargeRefund records what a machine charge is owed back (state
	// due with the amount in the method's units, or not_refundable), once:
	// ErrConflict if a refund state is set already.
	SetChargeRefund(ctx context.Context, chargeID, state string, dueUnits int64) error
}
