// Package checkout is hosted payment: a page where an owner pays for a
// credit pack, a draft (which becomes a queued fax) or the first month of a
// number (our own test page in test mode, Stripe Checkout live), and what
// the processor reports afterwards: the payment, the session's end, a
// refund. Whatever a checkout buys is delivered exactly once, in the
// transaction that marks it paid.
package checkout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/numbers"
)

// CodePaymentMismatch: a processor reported a payment for a
// checkout in another amount or currency than the checkout's; nothing was
// delivered for it (docs/payments.md).
const CodePaymentMismatch = "checkout_payment_mismatch"

// Queries keeps hosted checkouts; part of services.Store.
type Queries interface {
	CreateCheckout(ctx context.Context, c *Checkout) error
	GetCheckout(ctx context.Context, id string) (*Checkout, error)
	// MarkCheckoutPaid moves an open checkout to paid once; ErrConflict
	// otherwise.
	MarkCheckoutPaid(ctx context.Context, id string, at time.Time) error
	// SettleCheckout records a payment the processor took: it moves a
	// checkout that is not paid yet (open, expired or failed: the money
	// was taken all the same) to paid with paymentRef, once; ErrConflict
	// if it is paid already.
	SettleCheckout(ctx context.Context, id, paymentRef string, at time.Time) error
	// End moves an open checkout to status (expired or failed)
	// once; ErrConflict otherwise.
	EndCheckout(ctx context.Context, id string, status Status) error
	// GetCheckoutByPaymentRef finds the checkout a payment settled.
	GetCheckoutByPaymentRef(ctx context.Context, paymentRef string) (*Checkout, error)
	// RecordCheckoutRefund raises a paid checkout's refunded amount to
	// refundedCents and adds reversedMicros to what was taken back, only
	// if refundedCents is more than it was; ErrConflict otherwise (a
	// duplicate or an older refund event).
	RecordCheckoutRefund(ctx context.Context, id string, refundedCents, reversedMicros int64, at time.Time) error
}

// Session is what a caller gets to hand to a payer.
type Session struct {
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

func (s *Service) startCheckout(ctx context.Context, c *Checkout, description string) (*Session, error) {
	gw := s.d.Gateways[c.Mode]
	if gw == nil {
		return nil, core.Errorf(core.KindUnavailable, CodeCheckoutUnavailable, "%s-mode checkout is not configured on this server (set the Stripe settings to enable it)", c.Mode)
	}
	now := s.now()
	c.CreatedAt, c.ExpiresAt = now, now.Add(s.cc.TTL).Truncate(time.Second)
	url, ext, err := gw.Start(ctx, c, description)
	if err != nil {
		return nil, fmt.Errorf("start %s checkout: %w", c.Mode, err)
	}
	c.ExternalID = ext
	if err := s.d.Store.CreateCheckout(ctx, c); err != nil {
		return nil, fmt.Errorf("create checkout: %w", err)
	}
	cs := &Session{
		ID: c.ID, CheckoutURL: url, ExpiresAt: c.ExpiresAt, Amount: core.FormatUSD(c.AmountMicros),
		AmountCents: core.CentsUp(c.AmountMicros), Currency: core.Currency,
	}
	if c.DraftID != nil {
		cs.DraftID = *c.DraftID
	}
	return cs, nil
}

// Payable tells a payment page whether c can still be paid: a
// draft's checkout cannot once the draft was paid another way (sent with
// credits) or expired. A paid checkout is not an error (the page shows
// its receipt).
func (s *Service) Payable(ctx context.Context, c *Checkout) error {
	if c.Status == Paid {
		return nil
	}
	if !s.now().Before(c.ExpiresAt) {
		return core.Errorf(core.KindGone, CodeCheckoutState, "this checkout expired; start a new one")
	}
	if c.Kind == KindDraft && c.DraftID != nil {
		d, err := s.d.Store.GetDraft(ctx, c.OwnerID, c.Mode, *c.DraftID)
		if err != nil {
			return core.StoreErr(err, "draft")
		}
		return s.faxes.DraftPayable(d)
	}
	if c.Kind == KindNumber && c.NumberID != nil {
		n, err := s.numbers.Own(ctx, core.Principal{OwnerID: c.OwnerID, Mode: c.Mode}, *c.NumberID)
		if err != nil {
			return core.StoreErr(err, "number")
		}
		return s.numbers.Payable(n)
	}
	return nil
}

// Get reads a checkout for its payment page.
func (s *Service) Get(ctx context.Context, id string) (*Checkout, error) {
	c, err := s.d.Store.GetCheckout(ctx, id)
	return c, core.StoreErr(err, "checkout")
}

// Complete records that a checkout was paid on the test page and
// delivers what it bought: credits for a pack,
// a queued fax for a draft. It is idempotent: a second completion of the
// same checkout changes nothing and reports the first result.
func (s *Service) Complete(ctx context.Context, id string) (*Checkout, error) {
	var out *Checkout
	err := s.inTx(ctx, func(tx Tx) error {
		c, err := tx.GetCheckout(ctx, id)
		if err != nil {
			return core.StoreErr(err, "checkout")
		}
		now := s.now()
		if c.Status == Paid {
			out = c
			return nil
		}
		if now.After(c.ExpiresAt) {
			return core.Errorf(core.KindGone, CodeCheckoutState, "this checkout expired; start a new one")
		}
		if err := tx.MarkCheckoutPaid(ctx, c.ID, now); err != nil {
			if errors.Is(err, core.ErrConflict) {
				out = c
				return nil
			}
			return err
		}
		c.Status, c.PaidAt = Paid, &now
		out = c
		switch c.Kind {
		case KindCreditPack:
			return grantPack(ctx, tx, c, now)
		case KindDraft:
			return s.faxes.PayDraftAtCheckout(ctx, tx, c.OwnerID, c.Mode, *c.DraftID, c.AmountMicros)
		case KindNumber:
			return s.numbers.PayAtCheckout(ctx, tx, c.OwnerID, c.Mode, *c.NumberID)
		}
		return fmt.Errorf("checkout %s has unknown kind %q", c.ID, c.Kind)
	})
	return out, err
}

// grantPack adds a paid pack's credits, inside the transaction that marks
// its checkout paid.
func grantPack(ctx context.Context, tx Tx, c *Checkout, now time.Time) error {
	return credits.GrantPurchase(ctx, tx, &credits.LedgerEntry{
		ID: core.NewID(core.PrefixLedger), OwnerID: c.OwnerID, Mode: c.Mode, Kind: credits.LedgerPurchase, AmountMicros: c.CreditMicros,
		Reason: "credit pack " + c.PackID + " (checkout " + c.ID + ")", CreatedAt: now,
	}, credits.Purchase{PackID: c.PackID, PriceMicros: c.AmountMicros, CheckoutID: c.ID})
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

// CompletePaid records a payment the processor took for checkout id
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
func (s *Service) CompletePaid(ctx context.Context, id string, ref PaymentRef) (*Checkout, error) {
	var out *Checkout
	err := s.inTx(ctx, func(tx Tx) error {
		c, err := tx.GetCheckout(ctx, id)
		if err != nil {
			return core.StoreErr(err, "checkout")
		}
		out = c
		if c.Status == Paid {
			return nil
		}
		if ref.Session != c.ExternalID {
			return core.Errorf(core.KindUnprocessable, CodePaymentMismatch,
				"the payment is for another session than this checkout's; nothing was delivered").With("checkoutId", c.ID)
		}
		if want := core.CentsUp(c.AmountMicros); ref.AmountCents != want || !strings.EqualFold(ref.Currency, core.Currency) {
			return core.Errorf(core.KindUnprocessable, CodePaymentMismatch,
				"the payment (%d %s cents) is not this checkout's amount (%d %s cents); nothing was delivered",
				ref.AmountCents, strings.ToLower(ref.Currency), want, core.Currency).With("checkoutId", c.ID)
		}
		now := s.now()
		if err := tx.SettleCheckout(ctx, c.ID, ref.PaymentIntent, now); errors.Is(err, core.ErrConflict) {
			// Settled by a concurrent delivery of the same event.
			out, err = tx.GetCheckout(ctx, id)
			return core.StoreErr(err, "checkout")
		} else if err != nil {
			return err
		}
		c.Status, c.PaidAt, c.PaymentRef = Paid, &now, ref.PaymentIntent
		switch c.Kind {
		case KindCreditPack:
			return grantPack(ctx, tx, c, now)
		case KindDraft:
			d, err := tx.GetDraft(ctx, c.OwnerID, c.Mode, *c.DraftID)
			if err != nil {
				return core.StoreErr(err, "draft")
			}
			if s.faxes.DraftPayable(d) == nil {
				return s.faxes.PayDraftAtCheckout(ctx, tx, c.OwnerID, c.Mode, *c.DraftID, c.AmountMicros)
			}
			s.d.Logger.WarnContext(ctx, "checkout paid after its draft could no longer be paid: credited to the account",
				slog.String("checkout", c.ID), slog.String("draft", d.ID), slog.String("draftStatus", string(s.faxes.DraftStatus(d))))
			return tx.AppendLedger(ctx, &credits.LedgerEntry{
				ID: core.NewID(core.PrefixLedger), OwnerID: c.OwnerID, Mode: c.Mode, Kind: credits.LedgerRefund, AmountMicros: ref.AmountCents * core.MicrosPerCent,
				Reason: "checkout " + c.ID + " was paid after draft " + d.ID + " was " + string(s.faxes.DraftStatus(d)) + ": the payment is credited here", CreatedAt: now,
			})
		case KindNumber:
			n, err := tx.GetNumber(ctx, c.OwnerID, c.Mode, *c.NumberID)
			if err != nil {
				return core.StoreErr(err, "number")
			}
			// The money was taken: a number still awaiting payment is
			// bought; one whose reservation lapsed meanwhile (someone else
			// may hold it now) is credited to the account instead.
			if n.Status == numbers.AwaitingPayment {
				return s.numbers.PayAtCheckout(ctx, tx, c.OwnerID, c.Mode, *c.NumberID)
			}
			return s.creditUnpayableNumber(ctx, tx, c, ref.AmountCents, now)
		}
		return fmt.Errorf("checkout %s has unknown kind %q", c.ID, c.Kind)
	})
	return out, err
}

// End records that the processor ended the session of a checkout
// unpaid: status is CheckoutExpired (the session expired) or
// Failed (an asynchronous payment failed). Only an open checkout
// ends; a paid one stays paid (an expiry delivered after the completion
// changes nothing). session must be the checkout's (ExternalID).
func (s *Service) End(ctx context.Context, id, session string, status Status) (*Checkout, error) {
	if status != Expired && status != Failed {
		return nil, fmt.Errorf("end checkout %s: a checkout ends expired or failed, not %q", id, status)
	}
	c, err := s.d.Store.GetCheckout(ctx, id)
	if err != nil {
		return nil, core.StoreErr(err, "checkout")
	}
	if session != c.ExternalID {
		return nil, core.Errorf(core.KindUnprocessable, CodePaymentMismatch, "the event is for another session than this checkout's").With("checkoutId", c.ID)
	}
	err = s.d.Store.EndCheckout(ctx, id, status)
	if err != nil && !errors.Is(err, core.ErrConflict) {
		return nil, core.StoreErr(err, "checkout")
	}
	c, err = s.d.Store.GetCheckout(ctx, id)
	return c, core.StoreErr(err, "checkout")
}

// errRefundRaced rolls back a refund a concurrent delivery recorded first.
var errRefundRaced = errors.New("core: the refund was recorded concurrently")

// Refund records that the processor refunded refundedCents
// (cumulative) of the payment paymentIntent settled. For a credit pack it
// takes back the same share of the pack's credits, once per cent refunded:
// at most what is still available, since credits already spent on faxes
// were spent (the shortfall is logged and stays with the owner; see
// docs/payments.md). For a draft it only records the refund: the fax was
// sent. A duplicate or older refund event (no more refunded than already
// recorded) changes nothing.
func (s *Service) Refund(ctx context.Context, paymentIntent string, refundedCents int64) (*Checkout, error) {
	var out *Checkout
	err := s.inTx(ctx, func(tx Tx) error {
		c, err := tx.GetCheckoutByPaymentRef(ctx, paymentIntent)
		if err != nil {
			return core.StoreErr(err, "checkout")
		}
		out = c
		paid := core.CentsUp(c.AmountMicros)
		refundedCents = min(refundedCents, paid)
		if c.Status != Paid || refundedCents <= c.RefundedCents || paid <= 0 {
			return nil
		}
		now := s.now()
		var reversed int64
		if c.Kind == KindCreditPack {
			due := c.CreditMicros*refundedCents/paid - c.CreditMicros*c.RefundedCents/paid
			if due > 0 {
				reversed, err = credits.Reverse(ctx, tx, &credits.LedgerEntry{
					ID: core.NewID(core.PrefixLedger), OwnerID: c.OwnerID, Mode: c.Mode, Kind: credits.LedgerReversal, AmountMicros: -due,
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
		if err := tx.RecordCheckoutRefund(ctx, c.ID, refundedCents, reversed, now); errors.Is(err, core.ErrConflict) {
			return errRefundRaced
		} else if err != nil {
			return err
		}
		c.RefundedCents, c.ReversedMicros, c.RefundedAt = refundedCents, c.ReversedMicros+reversed, &now
		return nil
	})
	if errors.Is(err, errRefundRaced) {
		c, err := s.d.Store.GetCheckoutByPaymentRef(ctx, paymentIntent)
		return c, core.StoreErr(err, "checkout")
	}
	return out, err
}

// Store keeps checkouts.
type Store interface {
	Tx
	core.Transactor
}

// Tx is a transaction of checkouts: it also pays the drafts and numbers
// they buy.
type Tx interface {
	faxes.Tx
	numbers.Tx
	Queries
}

// Config tunes checkouts; zero values take the defaults.
type Config struct {
	// TTL is how long a checkout can be paid (default 1 hour).
	TTL time.Duration
}

// SetDefaults fills zero values with the defaults.
func (c *Config) SetDefaults() { c.TTL = cmp.Or(c.TTL, time.Hour) }

// Deps are the ports checkouts drive.
type Deps struct {
	Store Store
	// Gateways maps each mode to its hosted payment gateway; a missing
	// live gateway makes live checkouts answer checkout_not_configured.
	Gateways map[core.Mode]Gateway
	Prices   *core.PriceTable
	Logger   *slog.Logger
	// Core pays the drafts and numbers checkouts buy.
	Kernel *core.Kernel
	// Credits reads balances and packs.
	Credits *credits.Service
	// Numbers reads and pays the numbers it acts on.
	Numbers *numbers.Service
	// Faxes creates, prices and reads faxes and drafts.
	Faxes *faxes.Service
}

// Service runs checkouts.
type Service struct {
	cfg     core.Config
	cc      Config
	d       Deps
	kernel  *core.Kernel
	credits *credits.Service
	numbers *numbers.Service
	faxes   *faxes.Service
}

// New returns the service; cfg is the kernel's configuration with its
// defaults applied.
func New(cfg core.Config, cc Config, d Deps) *Service {
	cc.SetDefaults()
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Prices == nil {
		d.Prices = core.DefaultPriceTable()
	}
	return &Service{cfg: cfg, cc: cc, d: d, kernel: d.Kernel, faxes: d.Faxes, numbers: d.Numbers, credits: d.Credits}
}

func (s *Service) now() time.Time { return core.Clock(s.cfg.Now).Now() }

// inTx runs fn in one transaction of the store, typed as checkouts'.
func (s *Service) inTx(ctx context.Context, fn func(tx Tx) error) error {
	return s.d.Store.InTx(ctx, func(tx core.Tx) error { return fn(tx.(Tx)) })
}

// Kind says what a checkout pays for.
type Kind string

const (
	KindCreditPack Kind = "credit_pack"
	KindDraft      Kind = "draft"
	// KindNumber pays the first month of a number (NumberID).
	KindNumber Kind = "number"
)

// Status is where a checkout stands.
type Status string

const (
	Open    Status = "open"
	Paid    Status = "paid"
	Expired Status = "expired"
	// Failed: the payer's asynchronous payment (a bank debit)
	// did not go through; nothing was paid.
	Failed Status = "failed"
)

// Checkout is a hosted payment page session: a credit pack or a draft.
type Checkout struct {
	ID           string     `db:"id"`
	OwnerID      string     `db:"owner_id"`
	Mode         core.Mode  `db:"mode"`
	Kind         Kind       `db:"kind"`
	PackID       string     `db:"pack_id"`
	DraftID      *string    `db:"draft_id"`
	NumberID     *string    `db:"number_id"`
	AmountMicros int64      `db:"amount_micros"` // what is charged
	CreditMicros int64      `db:"credit_micros"` // what is credited (packs)
	Status       Status     `db:"status"`
	ExternalID   string     `db:"external_id"` // e.g. the Stripe Checkout session id
	CreatedAt    time.Time  `db:"created_at"`
	ExpiresAt    time.Time  `db:"expires_at"`
	PaidAt       *time.Time `db:"paid_at"`
	// PaymentRef is the processor's id of the payment that settled the
	// checkout (a Stripe PaymentIntent), so a refund finds it.
	PaymentRef string `db:"payment_ref"`
	// RefundedCents is how much of the payment the processor refunded
	// (cumulative, as it reports it); ReversedMicros is the credit that
	// took back from the owner's balance (packs), which can be less when
	// the credits were spent already. RefundedAt is the latest refund.
	RefundedCents  int64      `db:"refunded_cents"`
	ReversedMicros int64      `db:"reversed_micros"`
	RefundedAt     *time.Time `db:"refunded_at"`
}

// Gateway starts a hosted payment for a checkout. In test mode it is
// our own test page; in live mode Stripe Checkout.
type Gateway interface {
	// Start returns the URL the payer opens and an external id, if any.
	Start(ctx context.Context, c *Checkout, description string) (url, externalID string, err error)
}
