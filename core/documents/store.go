package documents

import (
	"context"
	"time"

	"github.com/faxhub/faxhub/core"
)

// Queries keeps uploads and the documents made from them.
type Queries interface {
	CreateUpload(ctx context.Context, u *Upload) error
	GetUpload(ctx context.Context, id string) (*Upload, error)
	// GetUploadDocument is the document uploaded with uploadID if it is
	// ownerID's in mode and not purged, in one read; ErrNoRows otherwise
	// (GetUpload then tells a missing upload from an empty one).
	GetUploadDocument(ctx context.Context, uploadID, ownerID string, mode core.Mode) (*Document, error)
	// UploadDocumentToUse is GetUploadDocument for a caller that goes on
	// to use the document through UseDocument in a transaction: as
	// DocumentToUse, it may answer from memory, and so answer a document
	// purged since, which that UseDocument refuses.
	UploadDocumentToUse(ctx context.Context, uploadID, ownerID string, mode core.Mode) (*Document, error)
	// ClaimUpload leases an upload for one PUT, named by claimID, until
	// until. It succeeds when the upload has no document and nobody holds
	// it, or its last lease lapsed at or before at (the PUT's process died);
	// ErrConflict otherwise. Exactly one of many concurrent callers wins.
	ClaimUpload(ctx context.Context, id, claimID string, at, until time.Time) error
	// RenewUpload extends claimID's lease while its PUT streams;
	// ErrConflict if another claim took the upload over or it is complete.
	RenewUpload(ctx context.Context, id, claimID string, until time.Time) error
	// ReleaseUpload undoes claimID's claim when its PUT failed, so the owner
	// can retry with the same token while it is valid.
	ReleaseUpload(ctx context.Context, id, claimID string) error
	// CompleteUpload records the document of the upload claimID holds;
	// ErrConflict if claimID no longer holds it or it is complete.
	CompleteUpload(ctx context.Context, id, claimID, documentID string) error

	CreateDocument(ctx context.Context, d *Document) error
	GetDocument(ctx context.Context, ownerID string, mode core.Mode, id string) (*Document, error)
	// DocumentToUse is GetDocument for a caller that goes on to use the
	// document through UseDocument in a transaction (a send, a draft): it
	// may answer from memory, and so may answer a document purged since,
	// which that UseDocument refuses.
	DocumentToUse(ctx context.Context, ownerID string, mode core.Mode, id string) (*Document, error)
	// UseDocument records that a fax or draft is being made from the
	// document, in that fax's or draft's transaction; ErrNoRows if the
	// document has been purged. Writing the row is what keeps the garbage
	// collector from purging it concurrently (MarkDocumentPurged rechecks
	// used_at on the row it updates).
	UseDocument(ctx context.Context, id string, at time.Time) error
	// DocumentUsage is the bytes of the owner's unsent documents in mode:
	// originals plus converted PDFs of documents that no fax uses and whose
	// blobs are not purged.
	DocumentUsage(ctx context.Context, ownerID string, mode core.Mode) (int64, error)
}
