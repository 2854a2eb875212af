// Package machine is machine payments: a machine with no account pays for one fax per request
// over HTTP 402 (the Machine Payments Protocol, draft-ryan-httpauth-payment).
// The wire format and the HTTP are the adapter's (rest, rest/mpp): core
// takes typed credentials (Credential, in a FaxRequest) and returns typed
// outcomes (FaxResult: an Order and its Receipt, or a Refusal with the
// request's Challenges). The money moves through a payments.PaymentMethod
// (stripe: a card shared payment token; tempo: a stablecoin transfer).
// Core decides everything else, here:
//
//   - the price (per destination, from the pages of the PDF) and each
//     method's offer of it (its units, minimum, currency, recipient);
//   - the challenges: HMAC-bound under the server's secret (the id over
//     the protocol's seven wire slots is the Binder's), expiry, the body's
//     digest, the request_id in opaque; the same challenges for the same
//     request_id and body while they are live;
//   - a paid retry: binding, realm, expiry, digest, request_id, method,
//     single use of the challenge (claimed before the method is called, so
//     concurrent retries with one credential settle once), then the charge
//     record, the challenge's consumption, the document, the fax and its
//     delivery job in ONE transaction;
//   - request_id: same id + same body → the same challenge while live, and
//     once paid the stored 200 with its receipt; same id + other body → 409;
//   - crash recovery: a claimed challenge whose settlement was interrupted is
//     finished by SweepMachinePayments with the same idempotency key (the
//     method reports the first outcome), so a paid challenge always becomes a
//     fax and nothing is charged twice;
//   - refunds: a machine fax that fails (or arrives partly) is refunded
//     through its method where the method can refund (card); the refund is
//     recorded as due in the transaction that ends the fax and performed by
//     SweepMachinePayments, idempotently.
//
// Machine faxes belong to the reserved owner MachineOwnerID (a row no one
// can sign in as), so every store query, the delivery worker and retention
// treat them like any other fax.
package machine

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/payments"
)

// Error codes of machine payments (REST problem+json "code").
const (
	// CodeRequestIDConflict: the request_id was used with another body.
	CodeRequestIDConflict = "request_id_conflict"
	// CodeMultipleCredentials: more than one Payment credential (400).
	CodeMultipleCredentials = "multiple_payment_credentials"
	// CodePaymentInProgress: a concurrent request with the same credential
	// is settling it; retry after Retry-After to get its answer.
	CodePaymentInProgress = "payment_in_progress"
	// CodePaymentProcessorUnavailable: the method could not reach a verdict
	// (processor down, node unreachable); retry the same credential.
	CodePaymentProcessorUnavailable = "payment_processor_unavailable"
	// CodeStatusToken: a status link that is malformed, forged or
	// expired.
	CodeStatusToken = "status_token_invalid"
	// CodeMachineBusy: the documents of other machine requests fill the
	// memory set aside for reading them, longer than a request waits
	// (503 with Retry-After).
	CodeMachineBusy = "machine_payments_busy"
)

// Method is one way a paying machine can pay, with the offer it
// makes. The app builds it from configuration (docs/payments.md).
type Method struct {
	Method payments.PaymentMethod
	// Mode is the mode of the faxes it pays for: test for the built-in
	// Stripe test backend, sk_test_ keys and Tempo test networks; live
	// otherwise. A live method is offered only while a live provider is
	// configured.
	Mode core.Mode
	// Intent is the MPP intent; "charge" (the default).
	Intent string
	// Currency of the charge request: "usd" for stripe, the token address
	// for tempo.
	Currency string
	// UnitsPerUSD converts a price into the method's base units: 100
	// (cents) for stripe, 1_000_000 for a 6-decimal TIP-20 token. The
	// amount is rounded up to a whole unit.
	UnitsPerUSD int64
	// MinAmount is the smallest charge the method takes, in its units
	// (Stripe: 50 cents); a smaller price is charged MinAmount, and the
	// quote says so.
	MinAmount int64
	// Recipient, when set, goes into the request (tempo: required).
	Recipient string
	// MethodDetails is the request's methodDetails (stripe: networkId,
	// paymentMethodTypes; tempo: chainId, supportedModes ["push"]).
	MethodDetails map[string]any
	// Refunds says whether a failed fax is refunded through the method
	// (card yes; a push transfer cannot be pulled back).
	Refunds bool
}

// Config configures machine payments (services.Config.Machine);
// zero values take the defaults.
type Config struct {
	// Enabled is --machine-payments: off, every machine call answers 503
	// machine_payments_disabled and records nothing.
	Enabled bool
	// ChallengeTTL is how long a challenge can be paid (default 5 min).
	ChallengeTTL time.Duration
	// SettleLease is how long a claimed challenge belongs to the request
	// settling it; after it, a retry or the sweeper takes it over
	// (default 2 min).
	SettleLease time.Duration
	// StatusTTL is how long a paid order's status link works (default 30
	// days).
	StatusTTL time.Duration
	// MaxPDFBytes bounds the decoded document (default 10 MiB); the
	// adapter bounds the body at MaxBodyBytes() accordingly.
	MaxPDFBytes int64
	// DocumentReadBytes bounds, per process, the bodies whose base64
	// document is being decoded, checked and priced at once, in body bytes
	// (default 32 MiB: two maximal bodies). Decoding a body holds about
	// four times its size (the body, the JSON decoder's copy of the
	// string, the string, the document), so this bounds that memory
	// whatever the number of requests (ReserveDocumentRead).
	DocumentReadBytes int64
	// DocumentReadWait is how long a request waits for room among them
	// before it is refused with 503 machine_payments_busy (default 30 s).
	DocumentReadWait time.Duration
}

// Offer is one method on offer as discovery lists it; it has
// no amount because the price depends on the request (the 402 challenge
// carries it).
type Offer struct {
	Method   string // "stripe", "tempo"
	Intent   string // "charge"
	Currency string // "usd", or a token address
}

// QuoteRequest prices a machine fax: a PDF or a page count.
type QuoteRequest struct {
	To    string
	PDF   []byte // decoded; when nil, Pages is used
	Pages int
	Cover bool
	// Options are the send options a fax request would carry: a coverPage
	// is priced; all are checked as the fax request checks them.
	Options faxes.Options
	// ClientIP (web.ClientIP) queues the PDF's page count fairly among
	// clients.
	ClientIP string
}

// Quote is the answer of POST /api/v1/machine/faxes/validate: the
// quote and what each method on offer would charge for it.
type Quote struct {
	core.Quote
	Offers []OfferView `json:"offers"`
}

// OfferView is one method's offer for a quote.
type OfferView struct {
	Method   string    `json:"method"`
	Intent   string    `json:"intent"`
	Amount   string    `json:"amount"` // base units, as the challenge carries it
	Currency string    `json:"currency"`
	Mode     core.Mode `json:"mode"`
	// Minimum is true when the method's minimum charge applies.
	Minimum bool `json:"minimumApplied,omitempty"`
	Refunds bool `json:"refundsFailedFaxes"`
}

// FaxRequest is one POST /api/v1/machine/faxes as the adapter read it:
// the body's fields (strictly parsed, base64 decoded and size-bounded) and
// the payment credential, or what made it unreadable.
type FaxRequest struct {
	To        string
	PDF       []byte
	RequestID string
	Cover     bool
	// Options are the send options of the body (cover page, header,
	// resolution, retry); core checks them. SendAt is refused
	// (CheckOptions).
	Options faxes.Options
	// BodyDigest is the RFC 9530 Content-Digest of the raw body bytes
	// (rest/mpp.ContentDigest); the challenges bind it.
	BodyDigest string
	// Credential is the request's one Payment credential; nil when it
	// carried none, or when MultipleCredentials or Unreadable says why not.
	Credential *Credential
	// MultipleCredentials: the request carried more than one Payment
	// credential (400 multiple_payment_credentials).
	MultipleCredentials bool
	// Unreadable is why the request's Payment credential could not be
	// read (MalformedCredential, or InvalidChallenge for an echo that is
	// no challenge); it is answered with the request's challenges.
	Unreadable *Refusal
	// ClientIP (web.ClientIP) bounds unpaid work per address.
	ClientIP string
}

// FaxResult is what to answer when the call is not an error: an Order
// with its Receipt, or a Refusal with the request's Challenges, every one
// on offer in the server's order (the adapter filters and orders them by
// the payer's preference).
type FaxResult struct {
	Order      *Order
	Receipt    *Receipt
	Refusal    *Refusal
	Challenges []Challenge
	// Rendered maps the id of a challenge the Binder rendered as it issued
	// it for this answer (Binder.Issue) to that rendering, so that a 402
	// encodes each challenge it offers once; a challenge read back from the
	// store is not in it, and the adapter renders it itself.
	Rendered map[string]string
	// RetryAfter, in seconds, when the payer should retry the same
	// credential (a transfer not mined yet).
	RetryAfter int
}

// Order is a paid machine fax as the payer sees it.
type Order struct {
	ID     string       `json:"id"`
	Status faxes.Status `json:"status"`
	To     string       `json:"to"`
	Pages  int          `json:"pages"`
	Cover  bool         `json:"cover"`
	Mode   core.Mode    `json:"mode"`
	// Options are the fax's send options, at the top level of the order's
	// JSON (coverPage, header, resolution, retry).
	faxes.Options
	// Amount is what was charged, in the method's base units, with its
	// currency; Price is the fax's price in USD ("0.21").
	Amount    string `json:"amount"`
	Currency  string `json:"currency"`
	Price     string `json:"price"`
	Method    string `json:"method"`
	RequestID string `json:"requestId"`
	// StatusURL carries its own capability: GET it without credentials.
	StatusURL     string     `json:"statusUrl"`
	PagesSent     int        `json:"pagesSent"`
	FailureCode   string     `json:"failureCode,omitempty"`
	FailureReason string     `json:"failureReason,omitempty"`
	Refund        string     `json:"refund,omitempty"` // "due", "refunded", "not_refundable"
	CreatedAt     time.Time  `json:"createdAt"`
	CompletedAt   *time.Time `json:"completedAt,omitempty"`
}

// Enabled reports --machine-payments.
func (s *Service) Enabled() bool { return s.cfg.Enabled }

// MaxBodyBytes bounds a machine request body: the base64 of
// MaxPDFBytes plus room for the other fields.
func (s *Service) MaxBodyBytes() int64 {
	return (s.cfg.MaxPDFBytes+2)/3*4 + 4<<10
}

// SetDefaults fills zero values with the defaults.
func (c *Config) SetDefaults() {
	c.ChallengeTTL = cmp.Or(c.ChallengeTTL, 5*time.Minute)
	c.SettleLease = cmp.Or(c.SettleLease, 2*time.Minute)
	c.StatusTTL = cmp.Or(c.StatusTTL, 30*24*time.Hour)
	c.MaxPDFBytes = cmp.Or(c.MaxPDFBytes, 10<<20)
	c.DocumentReadBytes = cmp.Or(c.DocumentReadBytes, 32<<20)
	c.DocumentReadWait = cmp.Or(c.DocumentReadWait, 30*time.Second)
}

// Store is what machine payments keep: their requests, claims and
// charges, and the shared secrets their challenges and links are bound
// under.
type Store interface {
	Tx
	core.Transactor
	core.Secrets
}

// Tx is a transaction of machine payments.
type Tx interface {
	faxes.Tx
	Queries
}

// Deps are the ports machine payments drive.
type Deps struct {
	Store Store
	// Machine lists the methods paying machines can use, in the order they
	// are offered; empty with machine payments on, the endpoint answers
	// machine_payments_not_available.
	Machine     []Method
	Converter   documents.Converter
	Destination core.DestinationChecker
	// Providers: a method is offered only while a fax provider of its mode
	// is configured.
	Providers map[core.Mode]faxes.Provider
	Logger    *slog.Logger
	// Core creates the fax, stores the document and prices the request.
	Kernel *core.Kernel
	// Documents stores and reads the documents it faxes.
	Documents *documents.Service
	// Faxes creates, prices and reads faxes and drafts.
	Faxes *faxes.Service
	// Binder computes challenge ids (rest/mpp's, wired by the app);
	// required with methods.
	Binder Binder
}

// Service is machine payments.
type Service struct {
	cfg       Config
	kc        core.Config
	d         Deps
	kernel    *core.Kernel
	documents *documents.Service
	faxes     *faxes.Service
	// reads weighs the bodies being decoded, in bytes, against
	// cfg.DocumentReadBytes.
	reads *semaphore.Weighted
}

// New returns machine payments; kc is the kernel's configuration (origins,
// page limit, spool directory, clock) with its defaults applied.
func New(cfg Config, kc core.Config, d Deps) *Service {
	cfg.SetDefaults()
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, kc: kc, d: d, kernel: d.Kernel, faxes: d.Faxes, documents: d.Documents,
		reads: semaphore.NewWeighted(cfg.DocumentReadBytes)}
}

// machineBusyRetryAfter is the Retry-After of machine_payments_busy.
const machineBusyRetryAfter = 5

// ReserveDocumentRead reserves room for decoding a machine request body of
// bodyBytes (the adapter calls it once the body has arrived, before it
// reads it into memory, and calls release when the request is answered).
// Each body's decoding holds about four times its size, and the per-address
// rate limit alone let every address hold that sixty times over (issue
// 26): this bounds it for the whole process. Requests wait their turn in
// order, at most DocumentReadWait, then get 503 machine_payments_busy.
func (s *Service) ReserveDocumentRead(ctx context.Context, bodyBytes int64) (release func(), err error) {
	n := min(max(bodyBytes, 1), s.cfg.DocumentReadBytes)
	wait, cancel := context.WithTimeout(ctx, s.cfg.DocumentReadWait)
	defer cancel()
	if err := s.reads.Acquire(wait, n); err != nil {
		return nil, core.Errorf(core.KindUnavailable, CodeMachineBusy,
			"other machine payment documents are being read; retry in a few seconds").WithRetryAfter(machineBusyRetryAfter)
	}
	var once sync.Once
	return func() { once.Do(func() { s.reads.Release(n) }) }, nil
}

func (s *Service) now() time.Time { return core.Clock(s.kc.Now).Now() }

// inTx runs fn in one transaction of the store, typed as machine payments'.
func (s *Service) inTx(ctx context.Context, fn func(tx Tx) error) error {
	return s.d.Store.InTx(ctx, func(tx core.Tx) error { return fn(tx.(Tx)) })
}
