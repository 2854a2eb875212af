package documents

import (
	"time"

	"github.com/faxhub/faxhub/core"
)

// Upload is the server side of an upload capability: the token names it, the
// row makes it single-use.
type Upload struct {
	ID          string     `db:"id"`
	OwnerID     string     `db:"owner_id"`
	Mode        core.Mode  `db:"mode"`
	ContentType string     `db:"content_type"`
	MaxBytes    int64      `db:"max_bytes"`
	CreatedAt   time.Time  `db:"created_at"`
	ExpiresAt   time.Time  `db:"expires_at"`
	ClaimedAt   *time.Time `db:"claimed_at"`
	DocumentID  *string    `db:"document_id"`
}

// Document is a stored, fax-ready PDF and what it was made from.
type Document struct {
	ID          string    `json:"id" db:"id"`
	OwnerID     string    `json:"-" db:"owner_id"`
	Mode        core.Mode `json:"mode" db:"mode"`
	SourceType  string    `json:"sourceType" db:"source_type"` // detected media type of the original
	SourceBytes int64     `json:"sourceBytes" db:"source_bytes"`
	SourceKey   string    `json:"-" db:"source_key"` // blob key of the original
	PDFKey      string    `json:"-" db:"pdf_key"`    // blob key of the fax-ready PDF
	PDFBytes    int64     `json:"pdfBytes" db:"pdf_bytes"`
	Pages       int       `json:"pages" db:"pages"`
	SHA256      string    `json:"sha256" db:"sha256"` // of the original bytes
	CreatedAt   time.Time `json:"createdAt" db:"created_at"`
}
