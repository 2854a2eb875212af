package faxes

import (
	"context"
	"io"
	"time"
)

// Resolution is the vertical resolution a fax is transmitted at. Both are
// 204 dots per inch across; standard is 98 lines per inch, fine 196. Fine
// takes about twice the line time and costs the same (docs/api.md).
type Resolution string

const (
	ResolutionStandard Resolution = "standard"
	ResolutionFine     Resolution = "fine"
)

// CoverPage is what the cover page says. Every field is optional text;
// the page count is filled in by faxhub.
type CoverPage struct {
	RecipientName    string `json:"recipientName,omitempty"`
	RecipientCompany string `json:"recipientCompany,omitempty"`
	SenderName       string `json:"senderName,omitempty"`
	SenderCompany    string `json:"senderCompany,omitempty"`
	SenderPhone      string `json:"senderPhone,omitempty"`
	SenderFax        string `json:"senderFax,omitempty"`
	Subject          string `json:"subject,omitempty"`
	Message          string `json:"message,omitempty"`
}

// Composition is how a document is faxed: what the composer adds to it.
type Composition struct {
	// Cover is the cover page, page 1; nil for none.
	Cover *CoverPage
	// Header is the header line's text (at most MaxHeader characters):
	// the sender's name as a fax machine prints it.
	Header string
	// From is the sending number (E.164) the header names; empty when the
	// provider's default number sends.
	From string
	// To is the destination (E.164), shown on the cover page.
	To string
	// At is the time the header and the cover show, in the owner's time
	// zone (its Location is used as is).
	At time.Time
	// Resolution is the resolution the pages are faxed at.
	Resolution Resolution
}

// MaxHeader bounds the header line's text, in characters.
const MaxHeader = 50

// Composer renders a fax as it is transmitted (core/faxdoc). It is a port so
// that core holds the rules (which fields, which bounds) and an adapter
// holds the PDF work.
type Composer interface {
	// Compose writes the document as faxed to w: the cover page, when c
	// has one, as page 1, then src's pages, each page with the header line
	// at its top ("page n/N" counts the cover). It returns the pages
	// written. src is a PDF that passed upload validation.
	Compose(ctx context.Context, w io.Writer, src io.ReadSeeker, c Composition) (pages int, err error)
	// Undrawable returns the first character of s the embedded font has
	// no glyph for, and false when it can draw all of s.
	Undrawable(s string) (rune, bool)
	// Rasterize renders page (1-based) of pdf as a fax machine would print
	// it at r: black and white, 204 dots per inch across, r's lines per
	// inch down (standard's rows doubled so the image keeps its aspect), as
	// a PNG at most maxWidth pixels wide (0: full fax width, 1728 dots).
	Rasterize(ctx context.Context, pdf io.ReaderAt, size int64, page int, r Resolution, maxWidth int) ([]byte, error)
	// Report writes a transmission report PDF to w.
	Report(ctx context.Context, w io.Writer, r TransmissionReport) error
}

// TransmissionReport is what a fax machine's confirmation page says of a
// finished fax.
type TransmissionReport struct {
	FaxID string
	To    string
	From  string
	// RemoteStationID is the receiving machine's identification (CSID)
	// where the provider reports it.
	RemoteStationID string
	Pages           int // pages of the document as faxed
	PagesSent       int
	Attempts        int
	Duration        time.Duration
	// Started and Finished are in the owner's time zone.
	Started, Finished time.Time
	Result            string // delivered, partial, failed, canceled
	Reason            string // why, when not delivered
	Resolution        Resolution
	// DocumentSHA256 is the hex SHA-256 of the document as faxed.
	DocumentSHA256 string
	// FirstPage is a reduced image of page 1 (PNG), or nil.
	FirstPage []byte
}
