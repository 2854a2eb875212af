// Package testcard is test mode's AP2 card payment method: it settles the
// test tokens an agent presents in a PaymentMandate without moving money.
// It keeps no state: a charge's reference is derived from its idempotency
// key, so a retry on any replica, before or after a restart, reports the
// same charge.
package testcard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/faxhub/faxhub/core/payments"
)

// Test tokens (Stripe's names, so they are familiar and never real).
const (
	TokenVisa       = "tok_visa"
	TokenMastercard = "tok_mastercard"
	TokenDeclined   = "tok_chargeDeclined"
)

// Name is the method's name in payment offers and charge records.
const Name = "card"

// Method is the test-mode card method.
type Method struct{}

var _ payments.PaymentMethod = Method{}

// New returns the test card method.
func New() Method { return Method{} }

// Name implements payments.PaymentMethod.
func (Method) Name() string { return Name }

// credential is the payment credential of a card mandate
// (payment_response.details).
type credential struct {
	Token string `json:"token"`
}

// Charge implements payments.PaymentMethod: tok_visa and tok_mastercard
// succeed, tok_chargeDeclined is declined, anything else is invalid.
func (Method) Charge(ctx context.Context, r payments.ChargeRequest) (payments.Result, error) {
	if r.IdempotencyKey == "" {
		return payments.Result{}, fmt.Errorf("test card charge: an idempotency key is required")
	}
	if r.Amount <= 0 {
		return payments.Result{}, fmt.Errorf("test card charge: amount must be positive, got %d", r.Amount)
	}
	var c credential
	if err := json.Unmarshal(r.Credential, &c); err != nil || c.Token == "" {
		return payments.Result{Status: payments.StatusInvalid, Message: "the card credential must be " + usage}, nil
	}
	switch c.Token {
	case TokenVisa, TokenMastercard:
		return payments.Result{Status: payments.StatusSucceeded, Reference: reference("ch_test_", r.IdempotencyKey)}, nil
	case TokenDeclined:
		return payments.Result{Status: payments.StatusDeclined, Message: "the card was declined (test token " + TokenDeclined + ")"}, nil
	}
	return payments.Result{Status: payments.StatusInvalid, Message: "unknown test card token; the credential must be " + usage}, nil
}

// Refund implements payments.PaymentMethod: every test charge refunds.
func (Method) Refund(ctx context.Context, r payments.RefundRequest) (payments.Result, error) {
	if r.IdempotencyKey == "" || !strings.HasPrefix(r.Reference, "ch_test_") {
		return payments.Result{}, fmt.Errorf("test card refund: an idempotency key and a test charge reference are required")
	}
	return payments.Result{Status: payments.StatusSucceeded, Reference: reference("re_test_", r.IdempotencyKey)}, nil
}

var usage = fmt.Sprintf(`{"token": %q} or {"token": %q} (succeed) or {"token": %q} (declined)`, TokenVisa, TokenMastercard, TokenDeclined)

// reference derives a processor-style id from the idempotency key.
func reference(prefix, key string) string {
	sum := sha256.Sum256([]byte(key))
	return prefix + hex.EncodeToString(sum[:])[:24]
}
