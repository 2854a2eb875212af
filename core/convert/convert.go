// Package convert turns uploads into fax-ready PDFs: it recognises files by
// their content, validates PDFs and counts their pages with pdfcpu, lays
// images out on US Letter pages, and runs LibreOffice for office documents.
package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/faxhub/faxhub/core"
)

// Options configures a Converter. The zero value is usable.
type Options struct {
	// SofficePath is the LibreOffice binary. Empty means "soffice", then
	// "libreoffice", looked up on PATH at each conversion, so installing
	// LibreOffice needs no restart.
	SofficePath string
	// Timeout bounds one LibreOffice conversion (default 60s); the whole
	// process group is killed when it expires.
	Timeout time.Duration
	// MaxConcurrent bounds simultaneous LibreOffice conversions (default 2):
	// each one is a full office suite in memory.
	MaxConcurrent int
	// TempDir holds per-conversion work directories (default os.TempDir()).
	TempDir string
}

// Converter implements core.Converter.
type Converter struct {
	opts Options
	// slots is a semaphore of LibreOffice conversions.
	slots chan struct{}
}

var _ core.Converter = (*Converter)(nil)

// New returns a Converter with opts' defaults filled in.
func New(opts Options) *Converter {
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 2
	}
	return &Converter{opts: opts, slots: make(chan struct{}, opts.MaxConcurrent)}
}

// ToPDF implements core.Converter.
func (c *Converter) ToPDF(ctx context.Context, src string, kind core.FileKind, dst string) (int, error) {
	switch kind {
	case core.FilePDF:
		// Validated in place: the original is the fax document, and a copy
		// of up to 50 MB would only cost a write (core.Converter's contract).
		return pdfPages(ctx, src)
	case core.FilePNG, core.FileJPEG, core.FileTIFF, core.FileGIF:
		return imageToPDF(ctx, src, kind, dst)
	case core.FileDOC, core.FileDOCX, core.FileXLS, core.FileXLSX, core.FileODT, core.FileODS, core.FileRTF:
		return c.officeToPDF(ctx, src, kind, dst)
	}
	return 0, unsupported("files of type %q cannot be converted", kind)
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
	e := core.Errorf(core.KindUnprocessable, core.CodeConversionFailed, format, args...)
	e.Err = cause
	return e
}
