// Package inbox is the faxes owners receive on their numbers: recorded
// with their processing job in one transaction (once per provider
// reference), then stored and read as text for agents (docs/numbers.md),
// listed, downloaded through short-lived signed links, and simulated in
// test mode.
package inbox

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/numbers"
)

// Status is where a received fax stands.
type Status string

const (
	// Receiving: the provider reported it; its document is being
	// fetched and read.
	Receiving Status = "receiving"
	// Received: the document is stored and its text extracted.
	Received Status = "received"
	// Failed: the document could not be fetched or read (FailureReason).
	Failed Status = "failed"
)

// TextStatus says how much of a received fax's text could be read.
type TextStatus string

const (
	// TextExtracted: every page's text was read (from its text layer or
	// by OCR).
	TextExtracted TextStatus = "extracted"
	// TextOCRUnavailable: some pages are images and OCR (tesseract) is not
	// installed; Text holds what the text layer gave.
	TextOCRUnavailable TextStatus = "ocr_unavailable"
	// TextEmpty: the pages hold no readable text.
	TextEmpty TextStatus = "empty"
	// TextFailed: extraction failed (timeout, tool error); TextNote says why.
	TextFailed TextStatus = "failed"
	// TextTruncated: the text was longer than MaxInboxText and was cut.
	TextTruncated TextStatus = "truncated"
)

// Bounds of the inbox.
const (
	// MaxText is the most text kept per received fax (bytes).
	MaxText = 256 << 10
	// PreviewChars is how much of the text a list shows.
	PreviewChars = 280
	// DownloadTTL is how long a signed download link works.
	DownloadTTL = 5 * time.Minute
)

// Error codes of the inbox.
const (
	CodeTestModeOnly       = "test_mode_only"
	CodeDownloadLink       = "inbox_download_link_invalid"
	CodeNumberNotReceiving = "number_not_receiving"
)

// InboundFax is a received fax.
type InboundFax struct {
	ID       string    `json:"id" db:"id"`
	OwnerID  string    `json:"-" db:"owner_id"`
	Mode     core.Mode `json:"mode" db:"mode"`
	NumberID string    `json:"numberId" db:"number_id"`
	From     string    `json:"from" db:"from_number"`
	To       string    `json:"to" db:"to_number"`
	Pages    int       `json:"pages" db:"pages"`
	Status   Status    `json:"status" db:"status"`
	// Provider and ProviderRef identify the fax at its provider: unique,
	// so a notice delivered twice is recorded once.
	Provider    string `json:"provider" db:"provider"`
	ProviderRef string `json:"-" db:"provider_ref"`
	// MediaURL is where the provider serves the document until it is
	// fetched (never shown: it may carry a credential).
	MediaURL    string `json:"-" db:"media_url"`
	DocumentKey string `json:"-" db:"document_key"`
	Bytes       int64  `json:"bytes" db:"bytes"`
	// Text is the fax's text (GetInboxFax only; lists carry TextPreview).
	Text       string     `json:"text,omitempty" db:"text"`
	TextStatus TextStatus `json:"textStatus,omitempty" db:"text_status"`
	// TextMethod: text (a text layer), ocr, text+ocr, or none.
	TextMethod    string     `json:"textMethod,omitempty" db:"text_method"`
	TextNote      string     `json:"textNote,omitempty" db:"text_note"`
	FailureReason string     `json:"failureReason,omitempty" db:"failure_reason"`
	ReceivedAt    time.Time  `json:"receivedAt" db:"received_at"`
	CreatedAt     time.Time  `json:"createdAt" db:"created_at"`
	UpdatedAt     time.Time  `json:"updatedAt" db:"updated_at"`
	ProcessedAt   *time.Time `json:"processedAt,omitempty" db:"processed_at"`
	// ReadAt is when the owner or an agent first read the fax whole
	// (inbound_fax.read).
	ReadAt *time.Time `json:"readAt,omitempty" db:"read_at"`

	// Filled by the service for lists, not stored.
	TextPreview string `json:"textPreview,omitempty" db:"-"`
}

// ReadingNote says in words what the fax's status and textStatus mean for
// an agent reading it: the extractor's own note when it has one, else a
// sentence per state. Every adapter shows this one text.
func (f *InboundFax) ReadingNote() string {
	if f.TextNote != "" {
		return f.TextNote
	}
	switch f.Status {
	case Receiving:
		return "the fax is still being fetched and read; read it again in a moment"
	case Failed:
		return "the fax's document could not be fetched or read"
	}
	switch f.TextStatus {
	case TextOCRUnavailable:
		return "some pages are images and OCR is not available on this server: the text is only what the pages' text layer gave; the PDF shows everything"
	case TextEmpty:
		return "the pages hold no readable text; the PDF shows them"
	case TextFailed:
		return "the text could not be extracted; the PDF shows the pages"
	case TextTruncated:
		return "the text was too long and is cut off; the PDF has all of it"
	}
	return ""
}

// InboundNotice is what a provider reports about a fax it received.
type InboundNotice struct {
	Provider    string
	ProviderRef string
	// To is the number it arrived on (E.164), From the sender (E.164 or
	// whatever caller id the network gave, possibly empty).
	To, From string
	// MediaURL is where to fetch the document (empty when DocumentKey is
	// set: the simulator stores it first).
	MediaURL    string
	DocumentKey string
	Pages       int
	ReceivedAt  time.Time
}

// InboundMedia fetches a received fax's document from its provider; a
// FaxProvider that receives faxes implements it.
type InboundMedia interface {
	FetchInbound(ctx context.Context, f *InboundFax) (io.ReadCloser, error)
}

// TextExtractor reads the text of a PDF for agents.
type TextExtractor interface {
	// Extract returns the text of the PDF at path (pages long): the text
	// layer of pages that have one, OCR of those that do not when OCR is
	// available. It bounds its own time and output.
	Extract(ctx context.Context, path string, pages int) (ExtractedText, error)
}

// ExtractedText is what a TextExtractor read.
type ExtractedText struct {
	Text   string
	Status TextStatus
	// Method: text, ocr, text+ocr or none.
	Method string
	// Note says what was not possible (OCR not installed, pages that timed
	// out), for people.
	Note string
}

// Queries persists received faxes; part of services.Store.
type Queries interface {
	// CreateInboundFax inserts f; ErrExists when (provider, provider_ref)
	// is recorded already.
	CreateInboundFax(ctx context.Context, f *InboundFax) error
	GetInboundFax(ctx context.Context, ownerID string, mode core.Mode, id string) (*InboundFax, error)
	// GetInboundFaxByID reads one for the processing job (no owner).
	GetInboundFaxByID(ctx context.Context, id string) (*InboundFax, error)
	GetInboundFaxByRef(ctx context.Context, provider, providerRef string) (*InboundFax, error)
	// ListInboundFaxes lists newest first, after the cursor id; Text is
	// cut to InboxPreviewChars.
	ListInboundFaxes(ctx context.Context, f Filter) ([]InboundFax, error)
	// UpdateInboundFax writes f's mutable fields if the stored status is
	// one of from; ErrConflict otherwise.
	UpdateInboundFax(ctx context.Context, f *InboundFax, from ...Status) error
	// MarkInboundFaxRead sets read_at of a received fax that has none, once:
	// ErrConflict when it is read already or not received (ErrNoRows when
	// there is no such fax).
	MarkInboundFaxRead(ctx context.Context, id string, at time.Time) error
}

// Filter selects received faxes.
type Filter struct {
	OwnerID       string
	Mode          core.Mode
	NumberID      string // empty: every number
	StartingAfter string
	Limit         int
}

// TestInboundFax is a fax the simulator delivers to a test number.
type TestInboundFax struct {
	// To is the owned test number: its id or E.164.
	To string
	// From is the sender shown (default +12125550100).
	From string
	// Path is the file to deliver (any kind the Converter reads); it is
	// consumed.
	Path string
}

// Store keeps received faxes.
type Store interface {
	Tx
	core.Transactor
}

// Tx is a transaction of the inbox.
type Tx interface {
	core.Tx
	events.Queries
	Queries
}

// Queue schedules the processing of a received fax in the transaction that
// records it.
type Queue interface {
	EnqueueInbound(ctx context.Context, tx core.Tx, inboundID string) error
}

// Deps are the ports the inbox drives.
type Deps struct {
	Store       Store
	Queue       Queue
	Blobs       core.BlobStore
	Converter   documents.Converter
	Destination core.DestinationChecker
	// Providers names the provider a fax arrived through.
	Providers map[core.Mode]faxes.Provider
	// Text reads received faxes for agents (pdftotext, tesseract).
	Text   TextExtractor
	Logger *slog.Logger
	// Core signs download links, stores blobs and charges rate limits.
	Kernel *core.Kernel
	// Documents stores and reads the documents it faxes.
	Documents *documents.Service
	// Numbers reads and pays the numbers it acts on.
	Numbers *numbers.Service
	// Faxes creates, prices and reads faxes and drafts.
	Faxes *faxes.Service
}

// Service runs the inbox.
type Service struct {
	cfg       core.Config
	d         Deps
	kernel    *core.Kernel
	documents *documents.Service
	numbers   *numbers.Service
	faxes     *faxes.Service
}

// New returns the inbox; cfg is the kernel's configuration with its
// defaults applied.
func New(cfg core.Config, d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, d: d, kernel: d.Kernel, faxes: d.Faxes, numbers: d.Numbers, documents: d.Documents}
}

func (s *Service) now() time.Time { return core.Clock(s.cfg.Now).Now() }

// inTx runs fn in one transaction of the store, typed as the inbox's.
func (s *Service) inTx(ctx context.Context, fn func(tx Tx) error) error {
	return s.d.Store.InTx(ctx, func(tx core.Tx) error { return fn(tx.(Tx)) })
}
