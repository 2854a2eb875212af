package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// CodeCheckoutPaymentMismatch: a processor reported a payment for a
// checkout in another amount or currency than the checkout's; nothing was
// delivered for it (docs/payments.md).
const CodeCheckoutPaymentMismatch = "checkout_payment_mismatch"

// CheckoutSession is what a caller gets to hand to a payer.
type CheckoutSession struct {
	ID          string    `json:"id"`
	CheckoutURL string    `json:"checkoutUrl"`
	ExpiresAt   time.Time `json:"expiresAt"`
	Amount      string    `json:"amount"`
	AmountCents int64     `json:"amountCents"`
	Currency    string    `json:"currency"`
	PackID      string    `json:"packId,omitempty"`
	Credit      string    `json:"credit,omitempty"`
	DraftID     string    `json:"draftId,omitempty"`
	NumberID    string    `json:"numberId,omitempty"`
}

func (s *Service) startCheckout(ctx context.Context, c *Checkout, description string) (*CheckoutSession, error) {
	gw := s.d.Checkout[c.Mode]
	if gw == nil {
		return nil, Errorf(KindUnavailable, CodeCheckoutUnavailable, "%s-mode checkout is not configured on this server (set the Stripe settings to enable it)", c.Mode)
	}
	now := s.now()
	c.CreatedAt, c.ExpiresAt = now, now.Add(s.cfg.CheckoutTTL).Truncate(time.Second)
	url, ext, err := gw.Start(ctx, c, description)
	if err != nil {
		return nil, fmt.Errorf("start %s checkout: %w", c.Mode, err)
	}
	c.ExternalID = ext
	if err := s.d.Store.CreateCheckout(ctx, c); err != nil {
		return nil, fmt.Errorf("create checkout: %w", err)
	}
	cs := &CheckoutSession{
		ID: c.ID, CheckoutURL: url, ExpiresAt: c.ExpiresAt, Amount: FormatUSD(c.AmountMicros),
		AmountCents: CentsUp(c.AmountMicros), Currency: Currency,
	}
	if c.DraftID != nil {
		cs.DraftID = *c.DraftID
	}
	return cs, nil
}

// CheckoutPayable tells a payment page whether c can still be paid: a
// draft's checkout cannot once the draft was paid another way (sent with
// credits) or expired. A paid checkout is not an error (the page shows
// its receipt).
func (s *Service) CheckoutPayable(ctx context.Context, c *Checkout) error {
	if c.Status == CheckoutPaid {
		return nil
	}
	if !s.now().Before(c.ExpiresAt) {
		return Errorf(KindGone, CodeCheckoutState, "this checkout expired; start a new one")
	}
	if c.Kind == CheckoutDraft && c.DraftID != nil {
		d, err := s.d.Store.GetDraft(ctx, c.OwnerID, c.Mode, *c.DraftID)
		if err != nil {
			return StoreErr(err, "draft")
		}
		return s.draftPayable(d)
	}
	if c.Kind == CheckoutNumber && c.NumberID != nil {
		n, err := s.d.Store.GetNumber(ctx, c.OwnerID, c.Mode, *c.NumberID)
		if err != nil {
			return StoreErr(err, "number")
		}
		return s.NumberPayable(n)
	}
	return nil
}

// GetCheckout reads a checkout for its payment page.
func (s *Service) GetCheckout(ctx context.Context, id string) (*Checkout, error) {
	c, err := s.d.Store.GetCheckout(ctx, id)
	return c, StoreErr(err, "checkout")
}

// CompleteCheckout records that a checkout was paid on the test page and
// delivers what it bought: credits for a pack,
// a queued fax for a draft. It is idempotent: a second completion of the
// same checkout changes nothing and reports the first result.
func (s *Service) CompleteCheckout(ctx context.Context, id string) (*Checkout, error) {
	var out *Checkout
	err := s.d.Store.InTx(ctx, func(tx Tx) error {
		c, err := tx.GetCheckout(ctx, id)
		if err != nil {
			return StoreErr(err, "checkout")
		}
		now := s.now()
		if c.Status == CheckoutPaid {
			out = c
			return nil
		}
		if now.After(c.ExpiresAt) {
			return Errorf(KindGone, CodeCheckoutState, "this checkout expired; start a new one")
		}
		if err := tx.MarkCheckoutPaid(ctx, c.ID, now); err != nil {
			if errors.Is(err, ErrConflict) {
				out = c
				return nil
			}
			return err
		}
		c.Status, c.PaidAt = CheckoutPaid, &now
		out = c
		switch c.Kind {
		case CheckoutCreditPack:
			return grantPack(ctx, tx, c, now)
		case CheckoutDraft:
			return s.payDraftAtCheckout(ctx, tx, c)
		case CheckoutNumber:
			return s.payNumberAtCheckout(ctx, tx, c)
		}
		return fmt.Errorf("checkout %s has unknown kind %q", c.ID, c.Kind)
	})
	return out, err
}

// grantPack adds a paid pack's credits, inside the transaction that marks
// its checkout paid.
func grantPack(ctx context.Context, tx Tx, c *Checkout, now time.Time) error {
	return tx.AppendLedger(ctx, &LedgerEntry{
		ID: NewID(PrefixLedger), OwnerID: c.OwnerID, Mode: c.Mode, Kind: LedgerPurchase, AmountMicros: c.CreditMicros,
		Reason: "credit pack " + c.PackID + " (checkout " + c.ID + ")", CreatedAt: now,
	})
}

// PaymentRef is what a verified processor event says was paid for a
// checkout.
type PaymentRef struct {
	// Session is the processor's id of the hosted session that was paid
	// (cs_…); it must be the one the checkout started (ExternalID).
	Session string
	// AmountCents and Currency are what the payer paid (Stripe's
	// amount_total and currency).
	AmountCents int64
	Currency    string
	// PaymentIntent is the processor's id of the payment (pi_…); a later
	// refund names it.
	PaymentIntent string
}

// CompleteCheckoutPaid records a payment the processor took for checkout id
// (a verified Stripe webhook) and delivers what it bought, exactly once:
// events delivered twice, concurrently or out of order change nothing the
// second time.
//
// The money was taken, so it is honoured whatever happened locally in the
// meantime: a checkout past its expiry, or already marked expired or
// failed, is still completed. A draft that can no longer be paid (sent
// with credits meanwhile, expired, canceled) gets no second fax; the
// payment is credited to the owner's balance in the draft's mode instead
// (a refund entry). A payment whose amount or currency is not the
// checkout's is refused (CodeCheckoutPaymentMismatch) and delivers nothing.
func (s *Service) CompleteCheckoutPaid(ctx context.Context, id string, ref PaymentRef) (*Checkout, error) {
	var out *Checkout
	err := s.d.Store.InTx(ctx, func(tx Tx) error {
		c, err := tx.GetCheckout(ctx, id)
		if err != nil {
			return StoreErr(err, "checkout")
		}
		out = c
		if c.Status == CheckoutPaid {
			return nil
		}
		if ref.Session != c.ExternalID {
			return Errorf(KindUnprocessable, CodeCheckoutPaymentMismatch,
				"the payment is for another session than this checkout's; nothing was delivered").With("checkoutId", c.ID)
		}
		if want := CentsUp(c.AmountMicros); ref.AmountCents != want || !strings.EqualFold(ref.Currency, Currency) {
			return Errorf(KindUnprocessable, CodeCheckoutPaymentMismatch,
				"the payment (%d %s cents) is not this checkout's amount (%d %s cents); nothing was delivered",
				ref.AmountCents, strings.ToLower(ref.Currency), want, Currency).With("checkoutId", c.ID)
		}
		now := s.now()
		if err := tx.SettleCheckout(ctx, c.ID, ref.PaymentIntent, now); errors.Is(err, ErrConflict) {
			// Settled by a concurrent delivery of the same event.
			out, err = tx.GetCheckout(ctx, id)
			return StoreErr(err, "checkout")
		} else if err != nil {
			return err
		}
		c.Status, c.PaidAt, c.PaymentRef = CheckoutPaid, &now, ref.PaymentIntent
		switch c.Kind {
		case CheckoutCreditPack:
			return grantPack(ctx, tx, c, now)
		case CheckoutDraft:
			d, err := tx.GetDraft(ctx, c.OwnerID, c.Mode, *c.DraftID)
			if err != nil {
				return StoreErr(err, "draft")
			}
			if s.draftPayable(d) == nil {
				return s.payDraftAtCheckout(ctx, tx, c)
			}
			s.d.Logger.WarnContext(ctx, "checkout paid after its draft could no longer be paid: credited to the account",
				slog.String("checkout", c.ID), slog.String("draft", d.ID), slog.String("draftStatus", string(s.DraftStatus(d))))
			return tx.AppendLedger(ctx, &LedgerEntry{
				ID: NewID(PrefixLedger), OwnerID: c.OwnerID, Mode: c.Mode, Kind: LedgerRefund, AmountMicros: ref.AmountCents * MicrosPerCent,
				Reason: "checkout " + c.ID + " was paid after draft " + d.ID + " was " + string(s.DraftStatus(d)) + ": the payment is credited here", CreatedAt: now,
			})
		case CheckoutNumber:
			n, err := tx.GetNumber(ctx, c.OwnerID, c.Mode, *c.NumberID)
			if err != nil {
				return StoreErr(err, "number")
			}
			// The money was taken: a number still awaiting payment is
			// bought; one whose reservation lapsed meanwhile (someone else
			// may hold it now) is credited to the account instead.
			if n.Status == NumberAwaitingPayment {
				return s.payNumberAtCheckout(ctx, tx, c)
			}
			return s.creditUnpayableNumber(ctx, tx, c, ref.AmountCents, now)
		}
		return fmt.Errorf("checkout %s has unknown kind %q", c.ID, c.Kind)
	})
	return out, err
}

// EndCheckout records that the processor ended the session of a checkout
// unpaid: status is CheckoutExpired (the session expired) or
// CheckoutFailed (an asynchronous payment failed). Only an open checkout
// ends; a paid one stays paid (an expiry delivered after the completion
// changes nothing). session must be the checkout's (ExternalID).
func (s *Service) EndCheckout(ctx context.Context, id, session string, status CheckoutStatus) (*Checkout, error) {
	if status != CheckoutExpired && status != CheckoutFailed {
		return nil, fmt.Errorf("end checkout %s: a checkout ends expired or failed, not %q", id, status)
	}
	c, err := s.d.Store.GetCheckout(ctx, id)
	if err != nil {
		return nil, StoreErr(err, "checkout")
	}
	if session != c.ExternalID {
		return nil, Errorf(KindUnprocessable, CodeCheckoutPaymentMismatch, "the event is for another session than this checkout's").With("checkoutId", c.ID)
	}
	err = s.d.Store.EndCheckout(ctx, id, status)
	if err != nil && !errors.Is(err, ErrConflict) {
		return nil, StoreErr(err, "checkout")
	}
	c, err = s.d.Store.GetCheckout(ctx, id)
	return c, StoreErr(err, "checkout")
}

// errRefundRaced rolls back a refund a concurrent delivery recorded first.
var errRefundRaced = errors.New("core: the refund was recorded concurrently")

// RefundCheckout records that the processor refunded refundedCents
// (cumulative) of the payment paymentIntent settled. For a credit pack it
// takes back the same share of the pack's credits, once per cent refunded:
// at most what is still available, since credits already spent on faxes
// were spent (the shortfall is logged and stays with the owner; see
// docs/payments.md). For a draft it only records the refund: the fax was
// sent. A duplicate or older refund event (no more refunded than already
// recorded) changes nothing.
func (s *Service) RefundCheckout(ctx context.Context, paymentIntent string, refundedCents int64) (*Checkout, error) {
	var out *Checkout
	err := s.d.Store.InTx(ctx, func(tx Tx) error {
		c, err := tx.GetCheckoutByPaymentRef(ctx, paymentIntent)
		if err != nil {
			return StoreErr(err, "checkout")
		}
		out = c
		paid := CentsUp(c.AmountMicros)
		refundedCents = min(refundedCents, paid)
		if c.Status != CheckoutPaid || refundedCents <= c.RefundedCents || paid <= 0 {
			return nil
		}
		now := s.now()
		var reversed int64
		if c.Kind == CheckoutCreditPack {
			due := c.CreditMicros*refundedCents/paid - c.CreditMicros*c.RefundedCents/paid
			if due > 0 {
				reversed, err = tx.ReverseCredits(ctx, &LedgerEntry{
					ID: NewID(PrefixLedger), OwnerID: c.OwnerID, Mode: c.Mode, Kind: LedgerReversal, AmountMicros: -due,
					Reason: "credit pack " + c.PackID + " refunded (checkout " + c.ID + ")", CreatedAt: now,
				})
				if err != nil {
					return err
				}
				if reversed < due {
					s.d.Logger.WarnContext(ctx, "refunded credit pack: some of its credits were spent and stay spent",
						slog.String("checkout", c.ID), slog.String("owner", c.OwnerID),
						slog.Int64("dueMicros", due), slog.Int64("reversedMicros", reversed))
				}
			}
		}
		if err := tx.RecordCheckoutRefund(ctx, c.ID, refundedCents, reversed, now); errors.Is(err, ErrConflict) {
			return errRefundRaced
		} else if err != nil {
			return err
		}
		c.RefundedCents, c.ReversedMicros, c.RefundedAt = refundedCents, c.ReversedMicros+reversed, &now
		return nil
	})
	if errors.Is(err, errRefundRaced) {
		c, err := s.d.Store.GetCheckoutByPaymentRef(ctx, paymentIntent)
		return c, StoreErr(err, "checkout")
	}
	return out, err
}
