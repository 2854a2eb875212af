package faxes

import (
	"time"

	"github.com/faxhub/faxhub/core"
)

// DraftStatus is where a draft stands.
type DraftStatus string

const (
	DraftOpen     DraftStatus = "open"
	DraftPaid     DraftStatus = "paid"
	DraftCanceled DraftStatus = "canceled"
	DraftExpired  DraftStatus = "expired"
)

// Draft is a document, a destination and a quote, not yet paid.
type Draft struct {
	ID         string    `json:"id" db:"id"`
	OwnerID    string    `json:"-" db:"owner_id"`
	Mode       core.Mode `json:"mode" db:"mode"`
	DocumentID string    `json:"documentId" db:"document_id"`
	To         string    `json:"to" db:"destination"`
	From       string    `json:"from,omitempty" db:"from_number"`
	// Country is the ISO region the destination was priced in.
	Country   string `json:"-" db:"country"`
	Cover     bool   `json:"cover" db:"cover"`
	CoverText string `json:"coverText,omitempty" db:"cover_text"`
	// Options are shown at the top level of the draft's JSON (jsonOptions).
	Options     Options     `json:"-" db:"options"`
	Pages       int         `json:"pages" db:"pages"`
	PriceMicros int64       `json:"-" db:"price_micros"`
	Status      DraftStatus `json:"status" db:"status"`
	FaxID       *string     `json:"faxId,omitempty" db:"fax_id"`
	CreatedAt   time.Time   `json:"createdAt" db:"created_at"`
	ExpiresAt   time.Time   `json:"expiresAt" db:"expires_at"`
	// SentBy is who made the draft: the door of the fax it becomes when
	// paid at its checkout.
	SentBy `json:"-"`
}

// Status is the state of a fax.
//
//	queued → sending → delivered | partial | failed
//	scheduled (sendAt) → sending when its time comes
//	scheduled | queued → canceled; sending → queued (retryable failure, retry scheduled)
type Status string

const (
	Scheduled Status = "scheduled"
	Queued    Status = "queued"
	Sending   Status = "sending"
	Delivered Status = "delivered"
	Partial   Status = "partial"
	Failed    Status = "failed"
	Canceled  Status = "canceled"
)

// Terminal reports whether no further transition can happen.
func (s Status) Terminal() bool {
	switch s {
	case Delivered, Partial, Failed, Canceled:
		return true
	}
	return false
}

// Statuses lists every state, for validation of filters.
var Statuses = []Status{Scheduled, Queued, Sending, Delivered, Partial, Failed, Canceled}

// PaymentMethod says how a fax was paid.
type PaymentMethod string

const (
	PayCredits  PaymentMethod = "credits"
	PayCheckout PaymentMethod = "checkout"
	PayMachine  PaymentMethod = "machine"
)

// Fax is a paid fax.
type Fax struct {
	ID      string    `json:"id" db:"id"`
	OwnerID string    `json:"-" db:"owner_id"`
	Mode    core.Mode `json:"mode" db:"mode"`
	Status  Status    `json:"status" db:"status"`
	To      string    `json:"to" db:"destination"`
	// From is the sender number (one of the owner's numbers), or empty
	// for the provider's default.
	From       string `json:"from,omitempty" db:"from_number"`
	DocumentID string `json:"documentId" db:"document_id"`
	Pages      int    `json:"pages" db:"pages"`
	Cover      bool   `json:"cover" db:"cover"`
	CoverText  string `json:"coverText,omitempty" db:"cover_text"`
	// Options are shown at the top level of the fax's JSON (jsonOptions).
	Options       Options       `json:"-" db:"options"`
	PriceMicros   int64         `json:"-" db:"price_micros"`
	Currency      string        `json:"currency" db:"currency"`
	PaymentMethod PaymentMethod `json:"paymentMethod" db:"payment_method"`
	PagesSent     int           `json:"pagesSent" db:"pages_sent"`
	Attempts      int           `json:"attemptCount" db:"attempts"`
	FailureCode   string        `json:"failureCode,omitempty" db:"failure_code"`
	FailureReason string        `json:"failureReason,omitempty" db:"failure_reason"`
	DraftID       *string       `json:"draftId,omitempty" db:"draft_id"`
	CreatedAt     time.Time     `json:"createdAt" db:"created_at"`
	UpdatedAt     time.Time     `json:"updatedAt" db:"updated_at"`
	CompletedAt   *time.Time    `json:"completedAt,omitempty" db:"completed_at"`
	NextAttemptAt *time.Time    `json:"nextAttemptAt,omitempty" db:"next_attempt_at"`
	// BatchID names the broadcast the fax is one recipient of.
	BatchID *string `json:"batchId,omitempty" db:"batch_id"`
	// FaxedSHA256 and FaxedPages describe the document as faxed (cover
	// page and header line included), composed at the first attempt;
	// empty before.
	FaxedSHA256 string `json:"faxedSha256,omitempty" db:"faxed_sha256"`
	FaxedPages  int    `json:"faxedPages,omitempty" db:"faxed_pages"`
	// SentBy is the door the fax came in by (its columns sent_by_*).
	SentBy `json:"sentBy"`

	// Filled by the service for responses, not stored on the row.
	Price         string   `json:"price" db:"-"`
	PriceCents    int64    `json:"priceCents" db:"-"`
	LatestAttempt *Attempt `json:"latestAttempt" db:"-"`
}

// AttemptStatus is the outcome of one provider try.
type AttemptStatus string

const (
	AttemptSending   AttemptStatus = "sending"
	AttemptDelivered AttemptStatus = "delivered"
	AttemptPartial   AttemptStatus = "partial"
	AttemptFailed    AttemptStatus = "failed"
)

// Attempt is one try at a provider.
type Attempt struct {
	ID            string        `json:"id" db:"id"`
	FaxID         string        `json:"-" db:"fax_id"`
	Number        int           `json:"number" db:"number"`
	Provider      string        `json:"provider" db:"provider"`
	ProviderRef   string        `json:"providerRef,omitempty" db:"provider_ref"`
	Status        AttemptStatus `json:"status" db:"status"`
	FailureCode   string        `json:"failureCode,omitempty" db:"failure_code"`
	FailureReason string        `json:"failureReason,omitempty" db:"failure_reason"`
	Retryable     bool          `json:"retryable" db:"retryable"`
	PagesSent     int           `json:"pagesSent" db:"pages_sent"`
	DurationMS    int64         `json:"durationMs" db:"duration_ms"`
	StartedAt     time.Time     `json:"startedAt" db:"started_at"`
	FinishedAt    *time.Time    `json:"finishedAt,omitempty" db:"finished_at"`
}
