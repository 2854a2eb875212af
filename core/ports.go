package core

import (
	"context"
	"io"
	"time"
)

// BlobStore keeps document bytes: files in the data dir by default, an
// S3-compatible bucket at scale.
type BlobStore interface {
	// Put streams r to key; it never buffers the whole body in memory.
	Put(ctx context.Context, key string, r io.Reader, contentType string) (int64, error)
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	Delete(ctx context.Context, key string) error
}

// FileBlobStore is a BlobStore that can take a local file whole. A store on
// the same file system as the spool directory moves the file instead of
// copying it (an upload is written once, not twice). The file at path is
// gone afterwards whether it was moved or copied.
type FileBlobStore interface {
	PutFile(ctx context.Context, key, path, contentType string) (int64, error)
}

// FileKind is what a file is, judged by its magic bytes.
type FileKind string

const (
	FilePDF  FileKind = "application/pdf"
	FilePNG  FileKind = "image/png"
	FileJPEG FileKind = "image/jpeg"
	FileTIFF FileKind = "image/tiff"
	FileGIF  FileKind = "image/gif"
	FileDOC  FileKind = "application/msword"
	FileDOCX FileKind = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	FileXLS  FileKind = "application/vnd.ms-excel"
	FileXLSX FileKind = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	FileODT  FileKind = "application/vnd.oasis.opendocument.text"
	FileODS  FileKind = "application/vnd.oasis.opendocument.spreadsheet"
	FileRTF  FileKind = "application/rtf"
)

// Converter turns an uploaded file into a fax-ready PDF and counts its pages.
// It works on files on local disk because LibreOffice and pdfcpu do.
type Converter interface {
	// Detect names the kind of the file at path by its content; an
	// unsupported file is a *Error with CodeUnsupportedType.
	Detect(ctx context.Context, path string) (FileKind, error)
	// ToPDF converts req.Src (of req.Kind) into a PDF at req.Dst and
	// returns its page count. A PDF source is validated in place and Dst is
	// not written: the caller uses Src. Errors are *Error with
	// CodeCorruptDocument, CodeEncryptedDocument, CodeConversionFailed,
	// CodeTooManyPages, CodeLibreOfficeMissing or (too many conversions of
	// one owner waiting) CodeRateLimited.
	ToPDF(ctx context.Context, req ConvertRequest) (pages int, err error)
}

// ConvertRequest is one conversion for Converter.ToPDF.
type ConvertRequest struct {
	Src  string
	Kind FileKind
	Dst  string
	// OwnerID is whose upload this is: conversions queue fairly per owner,
	// so one owner's slow files cannot hold every slot.
	OwnerID string
	// MaxPages refuses a longer document with CodeTooManyPages, before
	// its pages are decoded where the format allows; 0 means no limit.
	MaxPages int
}

// DestinationChecker validates a destination fax number.
type DestinationChecker interface {
	// Check parses an E.164 number and returns it normalised with its ISO
	// country; *Error with CodeInvalidDestination, CodePremiumDestination or
	// CodeUnsupportedDestination otherwise.
	Check(number string) (e164, country string, err error)
}

// FaxProvider sends one fax attempt.
type FaxProvider interface {
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
}

// FaxCanceler is a FaxProvider that can call back a fax it is sending.
// The outcome (a failure with code canceled, or the fax went through after
// all) arrives like any other, through Service.RecordProviderOutcome.
type FaxCanceler interface {
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

// Queue schedules delivery work durably.
type Queue interface {
	// EnqueueDelivery schedules the delivery of faxID inside tx, so the
	// fax row and its job commit or vanish together.
	EnqueueDelivery(ctx context.Context, tx Tx, faxID string, at time.Time) error
	// EnqueueNumberOrder schedules the provider order of a paid number
	// inside tx (Service.OrderNumber runs it).
	EnqueueNumberOrder(ctx context.Context, tx Tx, numberID string) error
	// EnqueueInbound schedules the processing of a received fax inside tx
	// (Service.ProcessInboundFax runs it).
	EnqueueInbound(ctx context.Context, tx Tx, inboundID string) error
}

// PayerRefunds records what a fax paid by a machine (no account: core/machine)
// owes its payer back, in the transaction that ends the fax; the payment
// method performs the refund later.
type PayerRefunds interface {
	// OwePayer records that refundMicros of f's price (all of it, or the
	// unsent pages' share) goes back to the payer.
	OwePayer(ctx context.Context, tx Tx, f *Fax, refundMicros int64) error
}
