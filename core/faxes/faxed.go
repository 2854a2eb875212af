package faxes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
)

// FaxedKey is the blob key of f's document as faxed: beside its document's
// blobs, so it is kept and purged with them.
func FaxedKey(f *Fax) string {
	return fmt.Sprintf("%s/%s/%s/faxed-%s.pdf", f.OwnerID, f.Mode, f.DocumentID, f.ID)
}

// unfaxableError is a document the composer cannot fax: the attempt fails
// with media_error instead of retrying what will fail again.
type unfaxableError struct{ err error }

func (e *unfaxableError) Error() string {
	return "the document could not be prepared for faxing: " + e.err.Error()
}
func (e *unfaxableError) Unwrap() error { return e.err }

// faxedDocument returns the blob key and page count of o's document as
// faxed, composing it (cover page, header line with the time at) on the
// first attempt and reusing it on every later one, so a retry transmits
// the same bytes and the receipt's hash holds for all of them. Without a
// composer the uploaded document is faxed as it is.
//
// The blob is written before the row names it: a crash in between leaves a
// blob the next attempt overwrites, never a row naming a missing blob.
func (s *Service) faxedDocument(ctx context.Context, o *Fax, doc *documents.Document, at time.Time) (string, int, error) {
	if s.d.Composer == nil {
		return doc.PDFKey, o.Pages, nil
	}
	key := FaxedKey(o)
	if o.FaxedSHA256 != "" {
		return key, o.FaxedPages, nil
	}
	st, err := s.Settings(ctx, o.OwnerID)
	if err != nil {
		return "", 0, err
	}
	sum, pages, err := s.compose(ctx, doc, key, composition(o, st, at))
	if err != nil {
		return "", 0, err
	}
	if err := s.d.Store.SetFaxedDocument(ctx, o.ID, sum, pages); err != nil {
		return "", 0, fmt.Errorf("record the document as faxed of %s: %w", o.ID, err)
	}
	o.FaxedSHA256, o.FaxedPages = sum, pages
	return key, pages, nil
}

// compose renders doc as c says into the blob at key and returns its
// SHA-256 (hex) and pages. The composer reads the source at random and the
// blob store takes a stream: both sit in memory for a small document, in a
// private temporary directory for a large one.
func (s *Service) compose(ctx context.Context, doc *documents.Document, key string, c Composition) (string, int, error) {
	src, out, done, err := s.composeBuffers(ctx, doc)
	if err != nil {
		return "", 0, err
	}
	defer done()
	h := sha256.New()
	pages, err := s.d.Composer.Compose(ctx, io.MultiWriter(out, h), src, c)
	if err != nil {
		if ctx.Err() != nil {
			return "", 0, ctx.Err()
		}
		return "", 0, &unfaxableError{err}
	}
	body, err := out.reader()
	if err != nil {
		return "", 0, fmt.Errorf("compose: %w", err)
	}
	if _, err := s.d.Blobs.Put(ctx, key, body, string(documents.FilePDF)); err != nil {
		return "", 0, fmt.Errorf("store the document as faxed: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), pages, nil
}

// composeOut is where a composition is written, then read back from.
type composeOut interface {
	io.Writer
	reader() (io.Reader, error)
}

type memOut struct{ bytes.Buffer }

func (m *memOut) reader() (io.Reader, error) { return &m.Buffer, nil }

type fileOut struct{ *os.File }

func (f fileOut) reader() (io.Reader, error) {
	_, err := f.Seek(0, io.SeekStart)
	return f.File, err
}

// composeBuffers returns doc's PDF to read from and where to write its
// composition, with done to release them.
func (s *Service) composeBuffers(ctx context.Context, doc *documents.Document) (io.ReadSeeker, composeOut, func(), error) {
	if limit := s.fc.ComposeInMemoryBytes; doc.PDFBytes > 0 && doc.PDFBytes <= limit {
		rc, err := s.d.Blobs.Open(ctx, doc.PDFKey)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("open document %s: %w", doc.ID, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, limit+1))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read document %s: %w", doc.ID, err)
		}
		out := &memOut{}
		out.Grow(len(b) + 64<<10)
		return bytes.NewReader(b), out, func() {}, nil
	}
	src, _, err := s.spool(ctx, doc.PDFKey)
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := unlinkedTemp()
	if err != nil {
		src.Close()
		return nil, nil, nil, fmt.Errorf("compose: %w", err)
	}
	return src, fileOut{out}, func() { src.Close(); out.Close() }, nil
}

// Settings returns an owner's fax defaults (zero when they set none).
func (s *Service) Settings(ctx context.Context, ownerID string) (Settings, error) {
	st, err := s.d.Store.GetFaxSettings(ctx, ownerID)
	if errors.Is(err, core.ErrNoRows) {
		return Settings{}, nil
	} else if err != nil {
		return Settings{}, fmt.Errorf("read fax settings: %w", err)
	}
	return *st, nil
}

// DeleteBlobs deletes a purged document's blobs and the documents as
// faxed made of it, which live and die with it (the garbage collector's
// retention.Documents).
func (s *Service) DeleteBlobs(ctx context.Context, d *documents.Document) error {
	faxed, err := s.d.Store.FaxedOfDocument(ctx, d.ID)
	if err != nil {
		return err
	}
	var errs []error
	for i := range faxed {
		if err := s.d.Blobs.Delete(ctx, FaxedKey(&faxed[i])); err != nil {
			errs = append(errs, fmt.Errorf("delete document as faxed of %s: %w", faxed[i].ID, err))
		}
	}
	return errors.Join(append(errs, s.documents.DeleteBlobs(ctx, d))...)
}
