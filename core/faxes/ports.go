package faxes

import (
	"context"
	"io"
	"time"

	"github.com/faxhub/faxhub/core"
)

// Provider sends one fax attempt.
type Provider interface {
	Name() string
	// Send hands the PDF for req.To to the provider and returns quickly: a
	// provider that completes asynchronously (they all do, fax calls take
	// minutes) returns AttemptSending with a ProviderRef and reports the
	// end through Service.RecordProviderOutcome; a final result may also be
	// returned at once. req.AttemptID is the attempt's idempotency key: a
	// delivery resumed after a crash sends the same attempt again, and a
	// provider that can must accept it only once.
	Send(ctx context.Context, req ProviderRequest) (ProviderResult, error)
}

// ProviderRequest is one attempt to send.
type ProviderRequest struct {
	FaxID     string
	AttemptID string
	Attempt   int
	To        string
	// From is the sender number (E.164): one of the owner's active
	// numbers, or empty for the provider's default.
	From  string
	Pages int
	// PDF opens the fax-ready document.
	PDF func(ctx context.Context) (io.ReadCloser, error)
	// MediaURL is a signed, short-lived URL where faxhub serves the same
	// document (no redirects), for providers that fetch it themselves.
	MediaURL string
	// Resolution is the resolution to transmit at.
	Resolution Resolution
	// Header is the header line's text (rendered into the PDF already),
	// for providers that also show a sender name of their own.
	Header string
}

// Canceler is a FaxProvider that can call back a fax it is sending.
// The outcome (a failure with code canceled, or the fax went through after
// all) arrives like any other, through Service.RecordProviderOutcome.
type Canceler interface {
	CancelSend(ctx context.Context, providerRef string) error
}

// ProviderResult is what a provider reports for one attempt. It is stored
// in jobs (a scheduled outcome), hence the JSON names.
type ProviderResult struct {
	Status        AttemptStatus `json:"status"`
	ProviderRef   string        `json:"provider_ref,omitempty"`
	PagesSent     int           `json:"pages_sent,omitempty"`
	FailureCode   string        `json:"failure_code,omitempty"` // one of the Failure* codes
	FailureReason string        `json:"failure_reason,omitempty"`
	Retryable     bool          `json:"retryable,omitempty"`
	Duration      time.Duration `json:"duration_ns,omitempty"`
}

// Failure codes of an attempt: every provider maps its own reasons to
// these (docs/providers.md), so owners and agents see one vocabulary.
const (
	FailureBusy          = "busy"              // retryable
	FailureNoAnswer      = "no_answer"         // retryable
	FailureNotAFax       = "not_a_fax_machine" // a person or voicemail answered
	FailureSignaling     = "signaling_error"   // T.30 negotiation or line trouble; retryable
	FailureInvalidNumber = "invalid_number"    // unallocated or unreachable number
	FailureMedia         = "media_error"       // the provider could not fetch or read the document
	FailureCallDropped   = "call_dropped"      // ended part way (partial)
	FailureProvider      = "provider_error"    // the provider's API failed; retryable
	// FailureCanceled: called back while sending (CancelFax); tasks and
	// purchases canceled by their agent end with it too.
	FailureCanceled = "canceled"
)

// DeliveryQueue schedules fax deliveries.
type DeliveryQueue interface {
	// EnqueueDelivery schedules the delivery of faxID inside tx, so the
	// fax row and its job commit or vanish together.
	EnqueueDelivery(ctx context.Context, tx core.Tx, faxID string, at time.Time) error
}

// PayerRefunds records what a fax paid by a machine (no account: core/machine)
// owes its payer back, in the transaction that ends the fax; the payment
// method performs the refund later.
type PayerRefunds interface {
	// OwePayer records that refundMicros of f's price (all of it, or the
	// unsent pages' share) goes back to the payer.
	OwePayer(ctx context.Context, tx Tx, f *Fax, refundMicros int64) error
}
