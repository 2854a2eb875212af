package store

import (
	"context"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
)

const uploadCols = "id, owner_id, mode, content_type, max_bytes, created_at, expires_at, claimed_at, document_id"

func (x q) CreateUpload(ctx context.Context, u *documents.Upload) error {
	err := x.insert(ctx, `INSERT INTO uploads (`+uploadCols+`)
		VALUES (:id, :owner_id, :mode, :content_type, :max_bytes, :created_at, :expires_at, :claimed_at, :document_id)
		ON CONFLICT DO NOTHING`, u)
	if err != nil {
		return fmt.Errorf("create upload: %w", err)
	}
	return nil
}

func (x q) GetUpload(ctx context.Context, id string) (*documents.Upload, error) {
	var u documents.Upload
	if err := x.get(ctx, x.reader(), &u, "SELECT "+uploadCols+" FROM uploads WHERE id = ?", id); err != nil {
		return nil, fmt.Errorf("get upload: %w", err)
	}
	return &u, nil
}

// ClaimUpload leases an upload without a document to claimID until until.
// It succeeds when nobody holds the upload or the last lease lapsed at or
// before at (its PUT died); the condition and the write are one statement,
// so of concurrent claimers exactly one wins.
// It changes only an upload without a document, which no kept upload
// document is (rowcache.go).
func (x q) ClaimUpload(ctx context.Context, id, claimID string, at, until time.Time) error {
	n, err := x.exec(ctx, `UPDATE uploads SET claimed_at = ?, claim_id = ?, lease_until = ?
		WHERE id = ? AND document_id IS NULL AND (claimed_at IS NULL OR lease_until IS NULL OR lease_until <= ?)`,
		at, claimID, until, id, at)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "uploads", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("claim upload: %w", err)
	}
	return nil
}

// RenewUpload moves claimID's lease to until; ErrConflict once another
// claim took the upload over or it is complete.
// It changes only an upload without a document, which no kept upload
// document is (rowcache.go).
func (x q) RenewUpload(ctx context.Context, id, claimID string, until time.Time) error {
	n, err := x.exec(ctx, "UPDATE uploads SET lease_until = ? WHERE id = ? AND claim_id = ? AND claimed_at IS NOT NULL AND document_id IS NULL",
		until, id, claimID)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "uploads", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("renew upload lease: %w", err)
	}
	return nil
}

// ReleaseUpload clears claimID's claim of an upload that has no document
// yet; ErrConflict once it is completed or claimed by another PUT.
// It changes only an upload without a document, which no kept upload
// document is (rowcache.go).
func (x q) ReleaseUpload(ctx context.Context, id, claimID string) error {
	n, err := x.exec(ctx, `UPDATE uploads SET claimed_at = NULL, claim_id = '', lease_until = NULL
		WHERE id = ? AND claim_id = ? AND document_id IS NULL`, id, claimID)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "uploads", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("release upload: %w", err)
	}
	return nil
}

// CompleteUpload records the document of an upload claimed by claimID;
// ErrConflict if it is not claimed, claimed by another PUT (this one's
// lease lapsed and was taken over) or already completed.
// It changes only an upload without a document, which no kept upload
// document is (rowcache.go).
func (x q) CompleteUpload(ctx context.Context, id, claimID, documentID string) error {
	n, err := x.exec(ctx, `UPDATE uploads SET document_id = ?, lease_until = NULL
		WHERE id = ? AND claim_id = ? AND claimed_at IS NOT NULL AND document_id IS NULL`, documentID, id, claimID)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "uploads", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("complete upload: %w", err)
	}
	return nil
}

const documentCols = "id, owner_id, mode, source_type, source_bytes, source_key, pdf_key, pdf_bytes, pages, sha256, created_at"

func (x q) CreateDocument(ctx context.Context, d *documents.Document) error {
	err := x.insert(ctx, `INSERT INTO documents (`+documentCols+`)
		VALUES (:id, :owner_id, :mode, :source_type, :source_bytes, :source_key, :pdf_key, :pdf_bytes, :pages, :sha256, :created_at)
		ON CONFLICT DO NOTHING`, d)
	if err != nil {
		return fmt.Errorf("create document: %w", err)
	}
	return nil
}

// GetUploadDocument is the document an upload completed with, if it is
// ownerID's in mode and not purged. On SQLite it is kept (rowcache.go): a
// send by upload token reads it, and nothing but a purge changes it.
func (x q) GetUploadDocument(ctx context.Context, uploadID, ownerID string, mode core.Mode) (*documents.Document, error) {
	return cachedRead(x, x.db.caches.uploadDocs, uploadID+"\x00"+ownerID+"\x00"+string(mode), func() (*documents.Document, error) {
		var d documents.Document
		if err := x.get(ctx, x.reader(), &d, "SELECT "+documentCols+` FROM documents
			WHERE id = (SELECT document_id FROM uploads WHERE id = ?) AND owner_id = ? AND mode = ? AND purged_at IS NULL`, uploadID, ownerID, mode); err != nil {
			return nil, fmt.Errorf("get uploaded document: %w", err)
		}
		return &d, nil
	})
}

// DocumentToUse implements documents.Store: GetDocument from this
// process's memory when it read the document before. A document's fields
// never change once it is written, so a kept one is exact but for one
// thing: it may have been purged since (by another replica, or by this
// one's janitor between a read and its keeping). That never reaches a fax
// or a draft: the transaction that uses the document calls UseDocument,
// which refuses a purged one with the same not-found answer. A purge by
// this process drops the entry, so here a purged document is answered at
// most by a lookup that raced with it. A send saves a round trip on
// PostgreSQL, a read from the pool on SQLite.
func (x q) DocumentToUse(ctx context.Context, ownerID string, mode core.Mode, id string) (*documents.Document, error) {
	if x.tx != nil {
		return x.GetDocument(ctx, ownerID, mode, id)
	}
	return x.docToUse(docByID+id, ownerID, mode, func() (*documents.Document, error) {
		return x.GetDocument(ctx, ownerID, mode, id)
	})
}

// UploadDocumentToUse implements documents.Store: GetUploadDocument kept
// as DocumentToUse keeps documents (an upload's document, once recorded,
// is never replaced).
func (x q) UploadDocumentToUse(ctx context.Context, uploadID, ownerID string, mode core.Mode) (*documents.Document, error) {
	if x.tx != nil {
		return x.GetUploadDocument(ctx, uploadID, ownerID, mode)
	}
	return x.docToUse(docByUpload+uploadID, ownerID, mode, func() (*documents.Document, error) {
		return x.GetUploadDocument(ctx, uploadID, ownerID, mode)
	})
}

// The keys of docsToUse: a document by its id, or by its upload's.
const (
	docByID     = "d\x00"
	docByUpload = "u\x00"
)

// docToUse is the document kept under key if it is ownerID's in mode
// (another owner's or mode's request reads, and finds nothing), or else
// read's, kept.
func (x q) docToUse(key, ownerID string, mode core.Mode, read func() (*documents.Document, error)) (*documents.Document, error) {
	if d, ok := x.db.docsToUse.Get(key); ok && d.OwnerID == ownerID && d.Mode == mode {
		return cloneDocument(d), nil
	}
	d, err := read()
	if err != nil {
		return nil, err
	}
	x.db.docsToUse.Add(key, cloneDocument(d))
	return d, nil
}

// forgetDocument drops document id from docsToUse, under its id and under
// any upload's: a purge here is then never answered from memory. Purges
// are few and the cache small, so it looks at every entry.
func (db *DB) forgetDocument(id string) {
	db.docsToUse.Remove(docByID + id)
	for _, k := range db.docsToUse.Keys() {
		if d, ok := db.docsToUse.Peek(k); ok && d.ID == id {
			db.docsToUse.Remove(k)
		}
	}
}

// newDocsToUse makes DocumentToUse's cache: an entry is a few hundred
// bytes, so it holds at most about a megabyte.
func newDocsToUse() *lru.Cache[string, *documents.Document] {
	c, err := lru.New[string, *documents.Document](rowCacheSize)
	if err != nil {
		// Only a non-positive size fails.
		panic(err)
	}
	return c
}

// GetDocument reads a document whose blobs are still there: a purged one
// is ErrNoRows, so nothing new can use it.
func (x q) GetDocument(ctx context.Context, ownerID string, mode core.Mode, id string) (*documents.Document, error) {
	var d documents.Document
	if err := x.get(ctx, x.reader(), &d, "SELECT "+documentCols+" FROM documents WHERE id = ? AND owner_id = ? AND mode = ? AND purged_at IS NULL", id, ownerID, mode); err != nil {
		return nil, fmt.Errorf("get document: %w", err)
	}
	return &d, nil
}

func (x q) DocumentUsage(ctx context.Context, ownerID string, mode core.Mode) (int64, error) {
	var n int64
	err := x.get(ctx, x.reader(), &n, `SELECT CAST(COALESCE(SUM(d.source_bytes + CASE WHEN d.pdf_key <> d.source_key THEN d.pdf_bytes ELSE 0 END), 0) AS BIGINT)
		FROM documents d WHERE d.owner_id = ? AND d.mode = ? AND d.purged_at IS NULL
		AND NOT EXISTS (SELECT 1 FROM faxes f WHERE f.document_id = d.id)`, ownerID, mode)
	if err != nil {
		return 0, fmt.Errorf("document usage: %w", err)
	}
	return n, nil
}

const draftCols = "id, owner_id, mode, document_id, destination, country, cover, cover_text, pages, price_micros, status, fax_id, created_at, expires_at, from_number, options, sent_by_kind, sent_by_id, sent_by_name"

// UseDocument records a document's use. It leaves the upload documents
// kept on SQLite as they are (rowcache.go): used_at is neither a field
// they keep nor a condition of their read.
func (x q) UseDocument(ctx context.Context, id string, at time.Time) error {
	n, err := x.exec(ctx, "UPDATE documents SET used_at = ? WHERE id = ? AND purged_at IS NULL", at, id)
	if err == nil && n == 0 {
		err = core.ErrNoRows
	}
	if err != nil {
		return fmt.Errorf("use document %s: %w", id, err)
	}
	return nil
}

func (x q) CreateDraft(ctx context.Context, d *faxes.Draft) error {
	err := x.insert(ctx, `INSERT INTO drafts (`+draftCols+`)
		VALUES (:id, :owner_id, :mode, :document_id, :destination, :country, :cover, :cover_text, :pages, :price_micros, :status, :fax_id, :created_at, :expires_at, :from_number, :options, :sent_by_kind, :sent_by_id, :sent_by_name)
		ON CONFLICT DO NOTHING`, d)
	if err != nil {
		return fmt.Errorf("create draft: %w", err)
	}
	return nil
}

func (x q) GetDraft(ctx context.Context, ownerID string, mode core.Mode, id string) (*faxes.Draft, error) {
	var d faxes.Draft
	if err := x.get(ctx, x.reader(), &d, "SELECT "+draftCols+" FROM drafts WHERE id = ? AND owner_id = ? AND mode = ?", id, ownerID, mode); err != nil {
		return nil, fmt.Errorf("get draft: %w", err)
	}
	return &d, nil
}

func (x q) MarkDraftPaid(ctx context.Context, id, faxID string) error {
	n, err := x.exec(ctx, "UPDATE drafts SET status = ?, fax_id = ? WHERE id = ? AND status = ?", faxes.DraftPaid, faxID, id, faxes.DraftOpen)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "drafts", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("mark draft paid: %w", err)
	}
	return nil
}
