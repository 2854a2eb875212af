// Package payments is the port of the adapters that move money: a card
// charged through Stripe (a shared payment token of a paying machine, or a
// card an agent presents under an AP2 payment mandate), a Tempo stablecoin
// transfer, and their test-mode stand-ins. Core decides what is charged and
// why (the price, the idempotency, what the payment buys); a PaymentMethod
// only settles and refunds. Implementations live in subpackages and never
// import core, so core can depend on this package.
package payments

import (
	"context"
	"encoding/json"
	"errors"
)

// PaymentMethod settles charges of one payment method.
type PaymentMethod interface {
	// Name is the method as payment offers name it: "stripe", "tempo",
	// "card" (an AP2 card credential) …
	Name() string
	// Charge settles one charge. It is idempotent by IdempotencyKey:
	// called again with the same key it reports the first outcome and never
	// charges twice. An error is a failure to reach a verdict (retry); a
	// refusal is a Result with a Status other than StatusSucceeded.
	Charge(ctx context.Context, r ChargeRequest) (Result, error)
	// Refund returns a settled charge in whole, idempotently by
	// IdempotencyKey; ErrRefundUnsupported where the method cannot (a
	// stablecoin transfer cannot be pulled back).
	Refund(ctx context.Context, r RefundRequest) (Result, error)
}

// ChargeRequest is one charge, in the smallest unit of Currency.
type ChargeRequest struct {
	IdempotencyKey string
	// Amount is in base units: cents for "usd", token base units for a
	// token address.
	Amount   int64
	Currency string
	// Credential is the payer's proof of payment as the method defines it
	// (a shared payment token, a transaction hash, a card token), never
	// logged or stored.
	Credential  json.RawMessage
	Description string
	// Metadata is recorded with the charge at the processor (e.g. the
	// challenge id), never secret.
	Metadata map[string]string
}

// RefundRequest returns the charge Reference names.
type RefundRequest struct {
	IdempotencyKey string
	Reference      string
	Amount         int64
	Reason         string
}

// Status is a method's verdict on a charge or a refund.
type Status string

const (
	StatusSucceeded Status = "succeeded"
	// StatusDeclined: the payer's funds or card refused; nothing moved.
	StatusDeclined Status = "declined"
	// StatusRequiresAction: the payer must act (3-D Secure and the like)
	// before anything moves; the charge did not happen.
	StatusRequiresAction Status = "requires_action"
	// StatusInvalid: the credential is not one this method accepts (a
	// malformed token, a transfer to someone else, a reused hash).
	StatusInvalid Status = "invalid"
)

// Result is a method's answer.
type Result struct {
	Status Status
	// Reference is the processor's id of the charge or refund (pi_…,
	// re_…, a transaction hash), for receipts and refunds.
	Reference string
	// Message says why a charge did not succeed, for the payer.
	Message string
}

// ErrPending is wrapped by Charge's error when the payment exists but is
// not settled yet (a transfer not mined): no verdict, and the payer should
// retry the same credential shortly rather than pay again.
var ErrPending = errors.New("payments: the payment is not settled yet")

// ErrRefundUnsupported is Refund's answer where the method cannot refund.
var ErrRefundUnsupported = errors.New("payments: this method cannot refund")
