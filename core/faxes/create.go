package faxes

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
)

// newFax is a fax about to be created, with how it is paid. Every way of
// paying (credits by API key, a draft sent with credits, a draft paid at
// its checkout, and the machine payments to come) creates its fax through
// createFax, so the rules below hold for all of them.
type NewFax struct {
	Fax *Fax
	// Draft, when set, moves from open to paid in the same transaction:
	// a draft becomes at most one fax.
	Draft *Draft
	// Idempotency, when set, is stored with the fax as its response; a
	// concurrent request with the same key makes the transaction fail with
	// ErrExists.
	Idempotency *core.IdempotencyRecord
	// HoldReason describes a credit hold in the ledger.
	HoldReason string
	// RateCharged: the caller charged the send rate for this fax already
	// in tx (a batch charges all of its faxes at once: AllowNIn).
	RateCharged bool
	// Presented, when set, is Fax as presented (Present with no attempt)
	// and encoded: its created event's data, then encoded once instead of
	// twice (sendWithCredits has it as the idempotent response).
	Presented json.RawMessage
}

// createFax is the one step that creates a fax, inside tx: it stores its
// idempotency record, charges the owner's send rate, writes the fax, moves
// its draft to paid, places its payment entry (a credit hold for
// PayCredits; a checkout payment is the checkout row the caller marks paid
// in the same transaction) and schedules its delivery. Either all of it
// commits or none of it does.
func (s *Service) CreateFax(ctx context.Context, tx Tx, n NewFax) error {
	f := n.Fax
	if n.Idempotency != nil {
		// First, so that a request whose key was used stops here (ErrExists)
		// before it charges the rate limit or the balance. The response is
		// the fax as created: nothing below changes it, so a caller may
		// encode it before the transaction (sendWithCredits does: on
		// SQLite this function runs on the one writer).
		if n.Idempotency.Response == nil {
			resp, err := json.Marshal(f)
			if err != nil {
				return fmt.Errorf("encode fax: %w", err)
			}
			n.Idempotency.Response = resp
		}
		if err := tx.InsertIdempotency(ctx, n.Idempotency); err != nil {
			return err
		}
	}
	// The limiter is charged in the fax's transaction: one commit less per
	// fax, and a send that fails (402) does not use up the allowance. A
	// machine's fax is paid already when it is created (refusing it now
	// would keep the money), and every machine shares one owner: paying
	// machines are bounded per client address before they pay instead.
	if f.PaymentMethod != PayMachine && !n.RateCharged {
		if err := s.kernel.AllowIn(ctx, tx, core.LimitSend, f.OwnerID+":"+string(f.Mode)); err != nil {
			return err
		}
	}
	if err := tx.UseDocument(ctx, f.DocumentID, f.CreatedAt); err != nil {
		return core.StoreErr(err, "document")
	}
	if err := tx.CreateFax(ctx, f); err != nil {
		return fmt.Errorf("create fax: %w", err)
	}
	if n.Draft != nil {
		if err := tx.MarkDraftPaid(ctx, n.Draft.ID, f.ID); err != nil {
			return fmt.Errorf("mark draft %s paid: %w", n.Draft.ID, err)
		}
	}
	switch f.PaymentMethod {
	case PayCredits:
		hold := &credits.LedgerEntry{
			ID: core.NewID(core.PrefixLedger), OwnerID: f.OwnerID, Mode: f.Mode, Kind: credits.LedgerHold,
			AmountMicros: -f.PriceMicros, FaxID: &f.ID, Reason: cmpReason(n.HoldReason, "hold for fax "+f.ID+" to "+f.To), CreatedAt: f.CreatedAt,
		}
		if err := credits.PlaceHold(ctx, tx, hold); err != nil {
			return err
		}
	case PayCheckout:
		// Paid at the checkout the caller marks paid in this transaction.
	case PayMachine:
		// Paid by the machine's charge the caller records in this
		// transaction (core/machine/pay.go).
	default:
		return fmt.Errorf("create fax: payment method %q has no payment entry", f.PaymentMethod)
	}
	at := f.CreatedAt
	if f.Status == Scheduled {
		at = *f.NextAttemptAt
	}
	if err := s.d.Queue.EnqueueDelivery(ctx, tx, f.ID, at); err != nil {
		return fmt.Errorf("enqueue delivery: %w", err)
	}
	if n.Presented != nil {
		return s.faxEventData(ctx, tx, f, "", n.Presented)
	}
	return s.faxEvent(ctx, tx, f, nil, "")
}

func cmpReason(reason, def string) string {
	if reason == "" {
		return def
	}
	return reason
}
