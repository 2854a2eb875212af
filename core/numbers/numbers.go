// Package numbers is fax numbers: an owner rents a number from the provider of a mode (the
// simulator in test mode, Telnyx live) to receive faxes on and to send
// from. This package decides everything about them:
//
//   - search: the provider's inventory, less the numbers someone here holds,
//     each priced per month from the price table (Tariff.NumberMonthly);
//   - buying: a number is reserved for its buyer (awaiting_payment) for
//     CheckoutTTL and paid for at a hosted checkout, like a draft; the paid
//     checkout moves it to pending and enqueues its order at the provider in
//     the same transaction; the provider reports active or failed (a
//     failed order returns the month as account credits);
//   - renewal: the month is paid for again from the owner's credits in its
//     mode when paid_through passes (SweepNumbers); without enough credits
//     the number goes past_due (it still receives) and is released when
//     NumberGrace passes unpaid, with a clear failure code on the number;
//   - release: the owner gives a number back at any time; the rest of the
//     month is not refunded.
//
// One number is held by at most one owner at a time: a partial unique index
// over (mode, e164) for the statuses that hold it.
package numbers

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/events"
)

// Status is where a rented number stands.
type Status string

const (
	// AwaitingPayment: reserved for its buyer until ReservedUntil,
	// waiting for the first month to be paid at the checkout.
	AwaitingPayment Status = "awaiting_payment"
	// Pending: paid; the provider is provisioning it.
	Pending Status = "pending"
	// Active: receives and sends.
	Active Status = "active"
	// PastDue: the renewal could not be paid from credits; it still
	// works until paid_through + NumberGrace, then it is released.
	PastDue Status = "past_due"
	// Failed: the provider could not provision it; the month paid
	// returned to the owner as credits.
	Failed Status = "failed"
	// Canceled: never paid (the reservation lapsed or the owner or
	// agent canceled it).
	Canceled Status = "canceled"
	// Released: given back to the provider.
	Released Status = "released"
)

// Holds reports whether a number in this status keeps the number from
// anyone else.
func (s Status) Holds() bool {
	switch s {
	case AwaitingPayment, Pending, Active, PastDue:
		return true
	}
	return false
}

// Receives reports whether faxes to the number are accepted.
func (s Status) Receives() bool { return s == Active || s == PastDue }

// Error codes of numbers.
const (
	// CodeNumberUnavailable: the number is not in the provider's inventory
	// or someone holds it.
	CodeNumberUnavailable = "number_unavailable"
	// CodeNumberState: the operation does not apply to the number as it
	// stands (releasing a released number, paying a canceled one).
	CodeNumberState = "number_not_in_state"
	// CodeTooManyNumbers: the owner holds MaxNumbersPerOwner numbers, or
	// MaxUnpaidNumbers awaiting payment.
	CodeTooManyNumbers = "too_many_numbers"
	// CodeFromNumberNotOwned: a send's from is not one of the owner's
	// active numbers in its mode.
	CodeFromNumberNotOwned = "from_number_not_owned"
	// CodeProviderFailed: the provider's API failed a request; retry.
	CodeProviderFailed = "provider_unavailable"
	// CodeNumbersNotConfigured: the mode's provider rents no numbers.
	CodeNumbersNotConfigured = "numbers_not_configured"
	// Renewal failure codes recorded on a number.
	CodeRenewalInsufficientCredits = "renewal_insufficient_credits"
)

// Config tunes numbers; zero values take the defaults.
type Config struct {
	// Grace is how long a past_due number keeps working (default 7 days).
	Grace time.Duration
	// MaxPerOwner bounds the numbers an owner holds in a mode (default 20);
	// MaxUnpaid those awaiting payment (default 3).
	MaxPerOwner int
	MaxUnpaid   int
	// SearchLimit bounds one search's results (default 20, at most 50).
	SearchLimit int
	// ReservationTTL is how long a number bought is reserved for its buyer
	// while its first month is paid (default 1 hour, a checkout's life).
	ReservationTTL time.Duration
}

// SetDefaults fills zero values with the defaults.
func (c *Config) SetDefaults() {
	if c.Grace <= 0 {
		c.Grace = 7 * 24 * time.Hour
	}
	if c.MaxPerOwner <= 0 {
		c.MaxPerOwner = 20
	}
	if c.MaxUnpaid <= 0 {
		c.MaxUnpaid = 3
	}
	c.ReservationTTL = cmp.Or(c.ReservationTTL, time.Hour)
	if c.SearchLimit <= 0 || c.SearchLimit > MaxSearchLimit {
		c.SearchLimit = 20
	}
}

// MaxSearchLimit is the most results one search returns.
const MaxSearchLimit = 50

// Number is a number an owner rents (or tried to).
type Number struct {
	ID       string    `json:"id" db:"id"`
	OwnerID  string    `json:"-" db:"owner_id"`
	Mode     core.Mode `json:"mode" db:"mode"`
	E164     string    `json:"number" db:"e164"`
	Country  string    `json:"country" db:"country"`
	Region   string    `json:"region,omitempty" db:"region"`
	Locality string    `json:"locality,omitempty" db:"locality"`
	Status   Status    `json:"status" db:"status"`
	// Provider is the provider the number is rented from; ProviderRef its
	// id of the number and OrderRef of the order that provisioned it.
	Provider      string `json:"provider" db:"provider"`
	ProviderRef   string `json:"-" db:"provider_ref"`
	OrderRef      string `json:"-" db:"order_ref"`
	MonthlyMicros int64  `json:"-" db:"monthly_micros"`
	// ReservedUntil: an awaiting_payment number is freed after it.
	ReservedUntil *time.Time `json:"reservedUntil,omitempty" db:"reserved_until"`
	// PaidThrough: the end of the month paid for; renewal is due then.
	PaidThrough   *time.Time `json:"paidThrough,omitempty" db:"paid_through"`
	FailureCode   string     `json:"failureCode,omitempty" db:"failure_code"`
	FailureReason string     `json:"failureReason,omitempty" db:"failure_reason"`
	CreatedAt     time.Time  `json:"createdAt" db:"created_at"`
	UpdatedAt     time.Time  `json:"updatedAt" db:"updated_at"`
	ActivatedAt   *time.Time `json:"activatedAt,omitempty" db:"activated_at"`
	ReleasedAt    *time.Time `json:"releasedAt,omitempty" db:"released_at"`

	// Filled by the service for responses, not stored on the row.
	MonthlyPrice string `json:"monthlyPrice" db:"-"`
	MonthlyCents int64  `json:"monthlyCents" db:"-"`
	Currency     string `json:"currency" db:"-"`
	// CheckoutURL is the page where the owner pays for an awaiting_payment
	// number.
	CheckoutURL string `json:"checkoutUrl,omitempty" db:"-"`
}

// Search asks a provider for numbers that can be rented.
type Search struct {
	// Country is ISO 3166-1 alpha-2 (default US).
	Country string `json:"country,omitempty"`
	// AreaCode is the national destination code (NANP area code, UK area
	// code without its leading 0), digits only.
	AreaCode string `json:"areaCode,omitempty"`
	// Locality matches the city or town, case-insensitively, by prefix.
	Locality string `json:"locality,omitempty"`
	// Number asks whether one exact number (E.164) is available; the
	// service sets it when a number is bought.
	Number string `json:"-"`
	Limit  int    `json:"limit,omitempty"`
}

// Bounds of a number search.
const (
	MaxAreaCode = 6
	MaxLocality = 64
)

// AvailableNumber is one number a provider offers.
type AvailableNumber struct {
	E164     string `json:"number" jsonschema:"the number in E.164; pass it to buy_number"`
	Country  string `json:"country"`
	Region   string `json:"region,omitempty"`
	Locality string `json:"locality,omitempty"`
	// Filled by the service.
	MonthlyPrice string `json:"monthlyPrice" jsonschema:"USD per month, decimal"`
	MonthlyCents int64  `json:"monthlyCents"`
	Currency     string `json:"currency"`
}

// Order asks a provider to provision one number. NumberID is the
// idempotency key: an order retried after a crash must not order twice.
type Order struct {
	NumberID string
	E164     string
}

// OrderResult is a provider's answer to an order, at once or later
// (Service.RecordOrder): pending with an OrderRef while provisioning, then
// active (with ProviderRef) or failed (with a reason).
type OrderResult struct {
	Status        Status `json:"status"`
	OrderRef      string `json:"order_ref,omitempty"`
	ProviderRef   string `json:"provider_ref,omitempty"`
	FailureReason string `json:"failure_reason,omitempty"`
}

// Provider rents numbers: the simulator in test mode, Telnyx live.
// A FaxProvider that rents numbers implements it too.
type Provider interface {
	// Name names the provider on the numbers it rents.
	Name() string
	// Search lists numbers the provider offers (fax capable) that
	// match q, at most q.Limit.
	SearchNumbers(ctx context.Context, q Search) ([]AvailableNumber, error)
	// PlaceOrder orders o.E164. It returns quickly: pending with an
	// OrderRef when provisioning goes on (the outcome arrives through
	// Service.RecordOrder), or active/failed at once.
	OrderNumber(ctx context.Context, o Order) (OrderResult, error)
	// Release gives the number back; releasing one already released
	// is not an error.
	ReleaseNumber(ctx context.Context, n *Number) error
}

// Queries persists numbers; part of services.Store.
type Queries interface {
	// CreateNumber inserts n; ErrExists when someone holds n.E164 in n.Mode.
	CreateNumber(ctx context.Context, n *Number) error
	GetNumber(ctx context.Context, ownerID string, mode core.Mode, id string) (*Number, error)
	// GetNumberByID reads a number for workers and webhooks (no owner).
	GetNumberByID(ctx context.Context, id string) (*Number, error)
	// GetNumberByOrderRef finds the number an order provisions.
	GetNumberByOrderRef(ctx context.Context, provider, orderRef string) (*Number, error)
	// GetHeldNumber finds the number that holds e164 in mode (any owner).
	GetHeldNumber(ctx context.Context, mode core.Mode, e164 string) (*Number, error)
	// List lists an owner's numbers in mode, newest first; released,
	// failed and canceled ones only when all is set.
	ListNumbers(ctx context.Context, ownerID string, mode core.Mode, all bool) ([]Number, error)
	// HeldNumbers reports which of e164s someone holds in mode.
	HeldNumbers(ctx context.Context, mode core.Mode, e164s []string) (map[string]bool, error)
	// CountNumbers counts an owner's numbers in mode by holding status.
	CountNumbers(ctx context.Context, ownerID string, mode core.Mode) (map[Status]int, error)
	// UpdateNumber writes n's mutable fields if the stored status is one of
	// from; ErrConflict otherwise.
	UpdateNumber(ctx context.Context, n *Number, from ...Status) error
	// DueNumbers lists up to limit numbers the sweeper must act on at now,
	// by id after afterID: reservations lapsed, renewals due (active or
	// past_due with paid_through reached), and pending numbers not updated
	// since stalePending (their order's answer may have been lost).
	DueNumbers(ctx context.Context, now, stalePending time.Time, afterID string, limit int) ([]Number, error)
}

// Store keeps numbers.
type Store interface {
	Tx
	core.Transactor
}

// Tx is a transaction of numbers (a month is paid from the ledger in it).
type Tx interface {
	core.Tx
	credits.Tx
	events.Queries
	Queries
}

// Queue schedules the provider order of a paid number in the transaction
// that pays it.
type Queue interface {
	EnqueueNumberOrder(ctx context.Context, tx core.Tx, numberID string) error
}

// Deps are the ports numbers drive.
type Deps struct {
	Store Store
	Queue Queue
	// Providers maps each mode to the provider that rents its numbers (the
	// simulator in test mode, Telnyx live); a mode without one answers
	// numbers_not_configured.
	Providers   map[core.Mode]Provider
	Destination core.DestinationChecker
	Prices      *core.PriceTable
	Logger      *slog.Logger
	// Core charges rate limits.
	Kernel *core.Kernel
}

// Service rents numbers.
type Service struct {
	cfg    core.Config
	nc     Config
	d      Deps
	kernel *core.Kernel
}

// New returns the service; cfg is the kernel's configuration with its
// defaults applied.
func New(cfg core.Config, nc Config, d Deps) *Service {
	nc.SetDefaults()
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Prices == nil {
		d.Prices = core.DefaultPriceTable()
	}
	return &Service{cfg: cfg, nc: nc, d: d, kernel: d.Kernel}
}

func (s *Service) now() time.Time { return core.Clock(s.cfg.Now).Now() }

// inTx runs fn in one transaction of the store, typed as numbers'.
func (s *Service) inTx(ctx context.Context, fn func(tx Tx) error) error {
	return s.d.Store.InTx(ctx, func(tx core.Tx) error { return fn(tx.(Tx)) })
}
