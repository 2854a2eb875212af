package testcard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core/payments"
	"github.com/faxhub/faxhub/core/payments/testcard"
)

func TestCharge(t *testing.T) {
	m := testcard.New()
	if m.Name() != "card" {
		t.Fatalf("Name = %q", m.Name())
	}
	for _, tc := range []struct {
		name, cred string
		want       payments.Status
		msg        string
	}{
		{"visa", `{"token":"tok_visa"}`, payments.StatusSucceeded, ""},
		{"mastercard", `{"token":"tok_mastercard"}`, payments.StatusSucceeded, ""},
		{"declined", `{"token":"tok_chargeDeclined"}`, payments.StatusDeclined, "declined"},
		{"unknown token", `{"token":"tok_amex"}`, payments.StatusInvalid, "tok_visa"},
		{"no token", `{}`, payments.StatusInvalid, "tok_chargeDeclined"},
		{"not an object", `"tok_visa"`, payments.StatusInvalid, "tok_visa"},
		{"empty", ``, payments.StatusInvalid, "tok_visa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := payments.ChargeRequest{IdempotencyKey: "ap2:cart_1", Amount: 1000, Currency: "usd", Credential: json.RawMessage(tc.cred)}
			res, err := m.Charge(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.want {
				t.Fatalf("status = %s, want %s (%s)", res.Status, tc.want, res.Message)
			}
			if !strings.Contains(res.Message, tc.msg) {
				t.Errorf("message %q does not mention %q", res.Message, tc.msg)
			}
			if tc.want == payments.StatusSucceeded {
				if !strings.HasPrefix(res.Reference, "ch_test_") || len(res.Reference) != len("ch_test_")+24 {
					t.Errorf("reference = %q", res.Reference)
				}
			} else if res.Reference != "" {
				t.Errorf("a refused charge has reference %q", res.Reference)
			}
		})
	}
}

func TestChargeIsDeterministic(t *testing.T) {
	ctx := context.Background()
	charge := func(key string) string {
		res, err := testcard.New().Charge(ctx, payments.ChargeRequest{IdempotencyKey: key, Amount: 500, Currency: "usd", Credential: json.RawMessage(`{"token":"tok_visa"}`)})
		if err != nil {
			t.Fatal(err)
		}
		return res.Reference
	}
	if a, b := charge("ap2:cart_a"), charge("ap2:cart_a"); a != b {
		t.Errorf("same key, references %q and %q", a, b)
	}
	if a, b := charge("ap2:cart_a"), charge("ap2:cart_b"); a == b {
		t.Errorf("different keys share reference %q", a)
	}
	if _, err := testcard.New().Charge(ctx, payments.ChargeRequest{Amount: 500, Credential: json.RawMessage(`{"token":"tok_visa"}`)}); err == nil {
		t.Error("a charge without an idempotency key was accepted")
	}
}

func TestRefund(t *testing.T) {
	res, err := testcard.New().Refund(context.Background(), payments.RefundRequest{IdempotencyKey: "refund:1", Reference: "ch_test_abc", Amount: 500})
	if err != nil || res.Status != payments.StatusSucceeded || !strings.HasPrefix(res.Reference, "re_test_") {
		t.Fatalf("refund = %+v, %v", res, err)
	}
	if _, err := testcard.New().Refund(context.Background(), payments.RefundRequest{IdempotencyKey: "refund:2", Reference: "pi_live"}); err == nil {
		t.Error("refund of a non-test reference was accepted")
	}
}
