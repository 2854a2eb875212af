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
// blobs, so it is kept and purged with them, in one of 1,024 folders by
// the last two characters of the fax's id (random). Every fax of a
// broadcast is composed from one document at once, and files created
// concurrently in one directory of a file:// bucket queue on its lock in
// the kernel: on ext4 here a create cost about 5× the CPU with 8 creators
// in one directory than spread over many, and 32 folders were not enough
// to show in the delivery rate (docs/benchmarks.md).
func FaxedKey(f *Fax) string {
	// Every stored fax's id is a prefix and 26 characters; a shorter one
	// (none is stored) is its own folder rather than a panic.
	folder := f.ID[max(0, len(f.ID)-2):]
	return fmt.Sprintf("%s/%s/%s/faxed/%s/%s.pdf", f.OwnerID, f.Mode, f.DocumentID, folder, f.ID)
}

// LegacyFaxedKey is where FaxedKey put f's document as faxed before it
// was spread over folders: a fax composed then is still read there
// (faxedKeyOf) and purged there (DeleteBlobs).
func LegacyFaxedKey(f *Fax) string {
	return fmt.Sprintf("%s/%s/%s/faxed-%s.pdf", f.OwnerID, f.Mode, f.DocumentID, f.ID)
}

// faxedKeyOf is the key of f's recorded document as faxed: FaxedKey, or
// LegacyFaxedKey for a fax composed before the key's folders when the blob
// is there and not at FaxedKey. A store that cannot tell is read at
// FaxedKey, whose reader then fails and says why.
func (s *Service) faxedKeyOf(ctx context.Context, f *Fax) string {
	key := FaxedKey(f)
	if ok, err := s.d.Blobs.Exists(ctx, key); ok || err != nil {
		return key
	}
	if ok, _ := s.d.Blobs.Exists(ctx, LegacyFaxedKey(f)); ok {
		return LegacyFaxedKey(f)
	}
	return key
}

// unfaxableError is a document the composer cannot fax: the attempt fails
// with media_error instead of retrying what will fail again.
type unfaxableError struct{ err error }

func (e *unfaxableError) Error() string {
	return "the document could not be prepared for faxing: " + e.err.Error()
}
func (e *unfaxableError) Unwrap() error { return e.err }

// faxedPrep is a fax's document as faxed, composed before its attempt
// starts (prepareFaxed) so that the attempt's move to sending records it.
type faxedPrep struct {
	// fax is the fax as read for composing it, which the attempt's move
	// to sending takes as its Move.Read.
	fax   *Fax
	sum   string // hex SHA-256 of the blob at FaxedKey
	pages int
	// err is an *unfaxableError: the attempt opens and fails with
	// media_error, as when composing after it opened.
	err error
}

// recordsOn reports whether p (nil: nothing prepared) is the document as
// faxed to record on o. A fax keeps its first document as faxed (the store
// writes it only to a fax without one); any other recorded is of the same
// blob, which is only ever created, never replaced.
func (p *faxedPrep) recordsOn(o *Fax) bool {
	return p != nil && p.err == nil && o.FaxedSHA256 == ""
}

// prepareFaxed composes the document as faxed of a fax whose attempt is
// about to start and has none yet, before the attempt starts, so that the
// move to sending records it instead of a second write after it (the
// SQLite writer's time is what a delivery is short of); the move also
// takes its read of the fax (startAsRead). It returns nil
// when there is nothing to prepare (no composer, a fax already composed,
// terminal or early) and when preparing failed: the attempt then opens
// and faxedDocument composes after it as it always did, failing the same
// way (a document gone, a store down) with the same consequences.
func (s *Service) prepareFaxed(ctx context.Context, faxID string) (*faxedPrep, error) {
	if s.d.Composer == nil {
		return nil, nil
	}
	// One statement for the fax, its document and the owner's settings
	// (they were three); a fax or document it cannot read is left to
	// startAttempt and faxedDocument, which read them again and say why.
	o, doc, st, err := s.d.Store.FaxWithDocument(ctx, faxID)
	if err != nil {
		return nil, nil
	}
	switch {
	case o.FaxedSHA256 != "":
		return nil, nil
	case o.Status != Queued && o.Status != Scheduled && o.Status != Sending:
		return nil, nil
	case o.NextAttemptAt != nil && s.now().Before(*o.NextAttemptAt):
		return nil, nil
	}
	// The header shows the time composed, a moment before the attempt
	// that records it starts.
	sum, pages, err := s.composeFaxed(ctx, o, doc, st, s.now())
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var bad *unfaxableError
		if errors.As(err, &bad) {
			return &faxedPrep{fax: o, err: err}, nil
		}
		s.d.Logger.WarnContext(ctx, "composing before the attempt failed; composing after it", "fax_id", o.ID, "err", err)
		return nil, nil
	}
	return &faxedPrep{fax: o, sum: sum, pages: pages}, nil
}

// faxedDocument returns the blob key and page count of o's document as
// faxed: the one recorded (prep's, recorded as the attempt started, or an
// earlier attempt's), so a retry transmits the same bytes and the
// receipt's hash holds for all of them. A fax without one (its attempt
// opened without prep) has it composed now, with the time at, and
// recorded before it is sent. Without a composer the uploaded document is
// faxed as it is.
func (s *Service) faxedDocument(ctx context.Context, o *Fax, prep *faxedPrep, at time.Time) (string, int, error) {
	if s.d.Composer == nil {
		doc, err := s.d.Store.GetDocument(ctx, o.OwnerID, o.Mode, o.DocumentID)
		if err != nil {
			return "", 0, fmt.Errorf("load document of %s: %w", o.ID, err)
		}
		return doc.PDFKey, o.Pages, nil
	}
	switch {
	case prep != nil && prep.err == nil && prep.sum == o.FaxedSHA256:
		return FaxedKey(o), o.FaxedPages, nil // composed there just now
	case o.FaxedSHA256 != "":
		return s.faxedKeyOf(ctx, o), o.FaxedPages, nil
	}
	key := FaxedKey(o)
	if prep != nil && prep.err != nil {
		return "", 0, prep.err
	}
	doc, err := s.d.Store.GetDocument(ctx, o.OwnerID, o.Mode, o.DocumentID)
	if err != nil {
		return "", 0, fmt.Errorf("load document of %s: %w", o.ID, err)
	}
	st, err := s.Settings(ctx, o.OwnerID)
	if err != nil {
		return "", 0, err
	}
	sum, pages, err := s.composeFaxed(ctx, o, doc, st, at)
	if err != nil {
		return "", 0, err
	}
	if err := s.d.Store.SetFaxedDocument(ctx, o.ID, sum, pages); err != nil {
		return "", 0, fmt.Errorf("record the document as faxed of %s: %w", o.ID, err)
	}
	o.FaxedSHA256, o.FaxedPages = sum, pages
	return key, pages, nil
}

// composeFaxed composes o's document as faxed with its owner's settings st
// and the time at into its blob and returns the blob's SHA-256 (hex) and
// pages.
//
// The blob is created, never replaced, and written before any row names
// it: two workers composing the same fax at once (a job rescued while its
// first run is still going) cannot swap the bytes under a recorded hash,
// and a crash between the blob and its row leaves a blob no row names.
// Finding the blob there, the composer's output is dropped and the blob's
// own hash is returned: whoever records first, every recorded hash is
// that blob's. Its pages are this composition's: the source document's and
// the cover page the fax asked for, the same for every composition of it.
func (s *Service) composeFaxed(ctx context.Context, o *Fax, doc *documents.Document, st Settings, at time.Time) (string, int, error) {
	key := FaxedKey(o)
	sum, pages, err := s.compose(ctx, doc, key, composition(o, st, at), s.d.Blobs.Create)
	if !errors.Is(err, core.ErrExists) {
		return sum, pages, err
	}
	if sum, err = s.blobSHA256(ctx, key); err != nil {
		return "", 0, err
	}
	return sum, pages, nil
}

// blobSHA256 hashes the blob at key.
func (s *Service) blobSHA256(ctx context.Context, key string) (string, error) {
	rc, err := s.d.Blobs.Open(ctx, key)
	if err != nil {
		return "", fmt.Errorf("read the document as faxed: %w", err)
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return "", fmt.Errorf("read the document as faxed: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// compose renders doc as c says into the blob at key, written with put
// (the blob store's Put or Create), and returns its SHA-256 (hex) and
// pages; with an error matching core.ErrExists (and the pages) when Create
// finds the blob there already. The composer reads the source at random
// and the blob store takes a stream: both sit in memory for a small
// document, in a private temporary directory for a large one.
func (s *Service) compose(ctx context.Context, doc *documents.Document, key string, c Composition,
	put func(ctx context.Context, key string, r io.Reader, contentType string) (int64, error)) (string, int, error) {
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
	if _, err := put(ctx, key, body, string(documents.FilePDF)); errors.Is(err, core.ErrExists) {
		return "", pages, err
	} else if err != nil {
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
// retention.Documents): at the key of every fax of it, since a blob may be
// there that no row names (deleting a missing blob succeeds).
func (s *Service) DeleteBlobs(ctx context.Context, d *documents.Document) error {
	faxed, err := s.d.Store.FaxedOfDocument(ctx, d.ID)
	if err != nil {
		return err
	}
	var errs []error
	for i := range faxed {
		for _, key := range []string{FaxedKey(&faxed[i]), LegacyFaxedKey(&faxed[i])} {
			if err := s.d.Blobs.Delete(ctx, key); err != nil {
				errs = append(errs, fmt.Errorf("delete document as faxed of %s: %w", faxed[i].ID, err))
			}
		}
	}
	return errors.Join(append(errs, s.documents.DeleteBlobs(ctx, d))...)
}
