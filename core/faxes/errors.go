package faxes

// Error codes of faxes: stable and machine-readable, part of the public API.
const (
	CodeDraftState          = "draft_not_payable"
	CodeFaxNotCancelable    = "fax_not_cancelable"
	CodeProviderUnavailable = "provider_not_configured"
	// CodeUndrawableCharacter: a cover page or header field holds a
	// character the fax font has no glyph for.
	CodeUndrawableCharacter = "undrawable_character"
	// CodePageImagesUnavailable: this server cannot render page images
	// (its renderer, poppler's pdftoppm, is not installed); the PDF
	// links still work.
	CodePageImagesUnavailable = "page_images_unavailable"
)

// CodeDocumentPurged: a resend of a fax whose document is no longer
// retained (core/retention purged its blobs); upload it again and send.
const CodeDocumentPurged = "document_purged"

// CodeInvalidPeriod: a list's created_from or created_to is not a date or
// an RFC 3339 time, or the period is empty.
const CodeInvalidPeriod = "invalid_period"

// CodeDocumentChanged: the document of a pending fax is not the one asked
// about (its SHA-256 differs), so its pages are not shown.
const CodeDocumentChanged = "document_changed"
