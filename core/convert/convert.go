// Package convert turns uploads into fax-ready PDFs: it recognises files by
// their content, validates PDFs and counts their pages with pdfcpu, lays
// images out on US Letter pages, and runs LibreOffice for office documents:
// on warm LibreOffice processes kept per slot (officeworker.go), because a
// cold start costs about ten times a warm conversion (docs/conversion.md).
// TextReader (text.go) reads received faxes back as text, with poppler's
// pdftotext and tesseract OCR.
package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
)

// Options configures a Converter. The zero value is usable.
type Options struct {
	// SofficePath is the LibreOffice binary. Empty means "soffice", then
	// "libreoffice", looked up on PATH at each conversion, so installing
	// LibreOffice needs no restart.
	SofficePath string
	// Timeout bounds one conversion's work (default 60s), not its wait for
	// a slot: a LibreOffice run (its whole process group is killed when it
	// expires), an image conversion or a PDF validation.
	Timeout time.Duration
	// MaxConcurrent bounds simultaneous LibreOffice conversions (default 2):
	// each one is a full office suite in memory. It is also the number of
	// warm LibreOffice processes kept (see ColdOffice).
	MaxConcurrent int
	// ColdOffice starts a LibreOffice for every conversion, as faxhub did
	// before issue 32, instead of handing documents to long-running ones
	// (one per slot, started at the first office conversion).
	ColdOffice bool
	// OfficeRecycleAfter restarts a warm LibreOffice after this many
	// conversions (default 100).
	OfficeRecycleAfter int
	// OfficeMaxRSS restarts a warm LibreOffice whose processes hold more
	// than this many bytes after a conversion (default 768 MiB).
	OfficeMaxRSS int64
	// MaxConcurrentImages bounds simultaneous image conversions and PDF
	// validations (default 4). Each stays within about 64 MB (docs/limits.md).
	MaxConcurrentImages int
	// MaxQueuedPerOwner bounds one owner's conversions waiting for a slot
	// of either kind (default 4); more are refused with 429 rate_limited.
	MaxQueuedPerOwner int
	// TempDir holds per-conversion work directories (default os.TempDir()).
	TempDir string
}

// Converter implements documents.Converter.
type Converter struct {
	opts Options
	// office and images are the slots of LibreOffice runs and of image and
	// PDF work, shared fairly between owners.
	office, images *fairSlots
	// pool holds the warm LibreOffice processes; nil with ColdOffice.
	pool *officePool
}

var _ documents.Converter = (*Converter)(nil)

// retryAfterSeconds is what a client refused for a full queue is told to
// wait: short conversions free a slot within seconds, LibreOffice ones
// within the timeout.
const retryAfterSeconds = 10

// New returns a Converter with opts' defaults filled in.
func New(opts Options) *Converter {
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 2
	}
	if opts.MaxConcurrentImages <= 0 {
		opts.MaxConcurrentImages = 4
	}
	if opts.MaxQueuedPerOwner <= 0 {
		opts.MaxQueuedPerOwner = 4
	}
	if opts.OfficeRecycleAfter <= 0 {
		opts.OfficeRecycleAfter = defaultOfficeRecycleAfter
	}
	if opts.OfficeMaxRSS <= 0 {
		opts.OfficeMaxRSS = defaultOfficeMaxRSS
	}
	// One owner gets at most half the slots (at least one), so another
	// owner always finds one without waiting for the first owner's jobs.
	perOwner := func(slots int) int { return max(1, slots/2) }
	c := &Converter{
		opts:   opts,
		office: newFairSlots(opts.MaxConcurrent, perOwner(opts.MaxConcurrent), opts.MaxQueuedPerOwner),
		images: newFairSlots(opts.MaxConcurrentImages, perOwner(opts.MaxConcurrentImages), opts.MaxQueuedPerOwner),
	}
	if !opts.ColdOffice {
		c.pool = newOfficePool(opts.MaxConcurrent, opts.OfficeRecycleAfter, opts.OfficeMaxRSS, opts.TempDir)
	}
	return c
}

// Close stops the warm LibreOffice processes, waiting for conversions in
// progress to end. Conversions after Close run cold.
func (c *Converter) Close() error {
	c.pool.close()
	return nil
}

// OfficeRSS is the resident memory of the idle warm LibreOffice processes,
// in bytes (Linux; 0 elsewhere or when none runs).
func (c *Converter) OfficeRSS() int64 { return c.pool.rss() }

// ToPDF implements documents.Converter.
func (c *Converter) ToPDF(ctx context.Context, req documents.ConvertRequest) (int, error) {
	var pages int
	var err error
	switch req.Kind {
	case documents.FilePDF:
		// Validated in place: the original is the fax document, and a copy
		// of up to 50 MB would only cost a write (documents.Converter's contract).
		err = c.withSlot(ctx, c.images, req.OwnerID, func(ctx context.Context) (err error) {
			pages, err = pdfPagesLimit(ctx, req.Src, req.MaxPages)
			return err
		})
	case documents.FilePNG, documents.FileJPEG, documents.FileTIFF, documents.FileGIF:
		err = c.withSlot(ctx, c.images, req.OwnerID, func(ctx context.Context) (err error) {
			pages, err = imageToPDF(ctx, req)
			return err
		})
	case documents.FileDOC, documents.FileDOCX, documents.FileXLS, documents.FileXLSX, documents.FileODT, documents.FileODS, documents.FileRTF:
		pages, err = c.officeToPDF(ctx, req)
	default:
		return 0, unsupported("files of type %q cannot be converted", req.Kind)
	}
	if err != nil {
		return 0, err
	}
	if req.MaxPages > 0 && pages > req.MaxPages {
		if req.Kind != documents.FilePDF {
			os.Remove(req.Dst)
		}
		return 0, tooManyPages(pages, req.MaxPages)
	}
	return pages, nil
}

// CountPDF implements documents.Converter: the checks of ToPDF for a PDF
// (its content, then the structure index and pdfcpu, in a slot of the
// same pool), on bytes already in memory, so nothing is written to disk.
func (c *Converter) CountPDF(ctx context.Context, req documents.CountRequest) (pages int, err error) {
	r := bytes.NewReader(req.PDF)
	kind, err := detectAt(r, r.Size())
	if err != nil {
		return 0, err
	}
	if kind != documents.FilePDF {
		return 0, unsupported("the document is %s, not a PDF", kind)
	}
	err = c.withSlot(ctx, c.images, req.OwnerID, func(ctx context.Context) (err error) {
		pages, err = pdfPagesAt(ctx, r, r.Size(), req.MaxPages)
		return err
	})
	if err != nil {
		return 0, err
	}
	if req.MaxPages > 0 && pages > req.MaxPages {
		return 0, tooManyPages(pages, req.MaxPages)
	}
	return pages, nil
}

// withSlot runs work in a slot of pool under the conversion timeout. The
// timeout starts once the slot is held: waiting is bounded by the queue
// limit and the caller's context, work by the timeout.
func (c *Converter) withSlot(ctx context.Context, pool *fairSlots, owner string, work func(context.Context) error) error {
	release, err := pool.acquire(ctx, owner)
	if errors.Is(err, errQueueFull) {
		return core.Errorf(core.KindRateLimited, core.CodeRateLimited,
			"%d of your conversions are already waiting; retry in %d s", c.opts.MaxQueuedPerOwner, retryAfterSeconds).
			With("limit", c.opts.MaxQueuedPerOwner).WithRetryAfter(retryAfterSeconds)
	}
	if err != nil {
		return fmt.Errorf("wait for a conversion slot: %w", err)
	}
	defer release()
	wctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	err = work(wctx)
	if err != nil && ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
		var ce *core.Error
		if !errors.As(err, &ce) || ce.Kind != core.KindUnprocessable {
			return conversionFailed(err, "the document could not be converted within %s; simplify it or split it and upload the parts", c.opts.Timeout)
		}
	}
	return err
}

func tooManyPages(pages, limit int) *core.Error {
	return core.Errorf(core.KindUnprocessable, documents.CodeTooManyPages, "the document has %d pages; the limit is %d", pages, limit).
		With("pages", pages).With("limit", limit)
}

// copyFile streams src to a new file at dst.
func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy pdf: %w", err)
	}
	defer in.Close()
	return writeFile(dst, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

// writeFile creates dst, fills it with write and removes it again on failure,
// so a failed conversion never leaves half a PDF behind.
func writeFile(dst string, write func(io.Writer) error) (err error) {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", filepath.Base(dst), err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write %s: %w", filepath.Base(dst), cerr)
		}
		if err != nil {
			os.Remove(dst)
		}
	}()
	if err := write(out); err != nil {
		var ce *core.Error
		if errors.As(err, &ce) {
			return err
		}
		return fmt.Errorf("write %s: %w", filepath.Base(dst), err)
	}
	return nil
}

func conversionFailed(cause error, format string, args ...any) *core.Error {
	e := core.Errorf(core.KindUnprocessable, documents.CodeConversionFailed, format, args...)
	e.Err = cause
	return e
}
