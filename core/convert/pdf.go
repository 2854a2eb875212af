package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/faxhub/faxhub/core/pdfconf"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/validate"
)

// pdfConfig is pdfcpu's configuration (core/pdfconf).
func pdfConfig(cmd model.CommandMode) *model.Configuration { return pdfconf.New(cmd) }

// maxDecodeBytes bounds one decoded object stream or XMP packet during
// validation. Writers put a few hundred objects in an object stream, a few
// hundred KB at most.
const maxDecodeBytes = 32 << 20

// pdfPages validates the PDF at path and returns its page count, in memory
// bounded by the file's structure rather than its size (see pdfindex.go).
func pdfPages(ctx context.Context, path string) (int, error) {
	return pdfPagesLimit(ctx, path, 0)
}

// pdfPagesLimit is pdfPages refusing, before pdfcpu reads it, a document
// whose page tree or page objects show more than maxPages pages (0: no
// limit).
func pdfPagesLimit(ctx context.Context, path string, maxPages int) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open pdf: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat pdf: %w", err)
	}
	return pdfPagesAt(ctx, f, st.Size(), maxPages)
}

// pdfPagesAt is pdfPagesLimit on the size bytes of r: a file, or a
// document held in memory (CountPDF).
func pdfPagesAt(ctx context.Context, r io.ReaderAt, size int64, maxPages int) (int, error) {
	if size == 0 {
		return 0, corrupt(errors.New("empty file"), "the PDF is empty")
	}
	// A file the index cannot read is refused even where pdfcpu could repair
	// it: pdfcpu's repairs trust stream lengths, so a small crafted file
	// could make it allocate its own size once per stream. A damaged PDF is
	// also one a fax back end may render badly, so asking for a re-save is
	// the better answer anyway.
	idx, err := indexPDF(ctx, r, size)
	switch {
	case err != nil && ctx.Err() != nil:
		return 0, fmt.Errorf("index pdf: %w", ctx.Err())
	case err != nil:
		return 0, corrupt(err, "the PDF is damaged or truncated (%s); re-save or re-export it and upload it again", firstLine(err.Error()))
	case idx.encrypted:
		return 0, encrypted()
	case maxPages > 0 && max(idx.declaredPages, idx.pageObjects) > maxPages:
		return 0, tooManyPages(max(idx.declaredPages, idx.pageObjects), maxPages)
	}
	return validateWithPDFCPU(ctx, &patchedReader{r: r, size: size, patches: idx.patches}, size)
}

// validateWithPDFCPU reads and validates rs with pdfcpu. pdfcpu panics on some
// malformed input; a bad upload must never take the process down or surface
// as an internal error, so a panic is a corrupt document.
func validateWithPDFCPU(ctx context.Context, rs io.ReadSeeker, size int64) (pages int, err error) {
	defer func() {
		if r := recover(); r != nil {
			pages, err = 0, corrupt(fmt.Errorf("pdfcpu panic: %v", r), "the PDF could not be read; it appears to be damaged")
		}
	}()
	conf := pdfConfig(model.VALIDATE)
	// No stream can be longer than the file; the default allows 512 MB.
	conf.Limits.MaxStreamBytes = max(size, 1)
	// pdfcpu decodes object streams (and the catalog's XMP metadata) in
	// full; bound what a compression bomb can expand to.
	conf.Limits.MaxDecodeBytes = maxDecodeBytes
	pctx, err := pdfcpu.ReadWithContext(ctx, rs, conf)
	if err == nil {
		err = validate.XRefTable(pctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("validate pdf: %w", ctx.Err())
		}
		return 0, pdfcpuError(err)
	}
	if pctx.PageCount < 1 {
		return 0, corrupt(errors.New("page count 0"), "the PDF has no pages")
	}
	return pctx.PageCount, nil
}

func pdfcpuError(err error) *core.Error {
	// pdfcpu reports encryption problems with plain error strings as well as
	// ErrWrongPassword, depending on where it notices them.
	msg := strings.ToLower(err.Error())
	if errors.Is(err, pdfcpu.ErrWrongPassword) || strings.Contains(msg, "password") || strings.Contains(msg, "encrypt") {
		e := encrypted()
		e.Err = err
		return e
	}
	return corrupt(err, "the PDF is damaged and cannot be read: %s", firstLine(err.Error()))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func corrupt(cause error, format string, args ...any) *core.Error {
	e := core.Errorf(core.KindUnprocessable, documents.CodeCorruptDocument, format, args...)
	e.Err = cause
	return e
}

// encrypted refuses every encrypted PDF, including those that open without a
// password (owner-password only): we forward the file as is, and fax
// rendering back ends differ in whether they honour or even read encryption.
func encrypted() *core.Error {
	return core.Errorf(core.KindUnprocessable, documents.CodeEncryptedDocument,
		"the PDF is encrypted or password-protected; remove the protection (for example print it to a new PDF) and upload it again")
}
