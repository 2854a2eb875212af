package faxdoc

import (
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/faxhub/faxhub/core/pdfconf"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/nyaruka/phonenumbers"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/validate"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
)

// Options configures a Composer. The zero value is usable.
type Options struct {
	// PdftoppmPath is poppler's pdftoppm; empty means "pdftoppm" looked up
	// on PATH at each call, so installing it needs no restart.
	PdftoppmPath string
	// Timeout bounds one call: a composition, a report or a rasterization
	// (default 1m), not its wait for a slot.
	Timeout time.Duration
	// MaxConcurrent bounds simultaneous calls (default 2): each holds a
	// source document (up to MaxSource) in memory or runs pdftoppm.
	MaxConcurrent int
}

// Bounds of the documents composed.
const (
	// MaxSource is the largest source PDF composed, in bytes.
	MaxSource = 50 << 20
	// MaxPages is the most pages a source PDF may have.
	MaxPages = 350
)

// Composer implements faxes.Composer with pdfcpu and the Go fonts. It holds
// no mutable state but its slots and its pool of compressors: the fonts are
// parsed once, in New.
type Composer struct {
	opts          Options
	regular, bold *face
	slots         chan struct{}
	// zlibs holds *zlib.Writer for the font streams: a new one allocates
	// ~800 KB, more than the rest of a one-page composition.
	zlibs sync.Pool
	// fonts keeps the font files of recent glyph sets (font.go).
	fonts *fontFiles
}

var _ faxes.Composer = (*Composer)(nil)

// New returns a Composer with opts' defaults filled in. It parses the
// embedded fonts, which cannot fail for the fonts compiled in (the tests
// parse them); it panics if they ever do.
func New(opts Options) *Composer {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 2
	}
	regular, err := parseFace(goregular.TTF)
	if err != nil {
		panic(fmt.Sprintf("faxdoc: the embedded Go Regular font: %v", err))
	}
	bold, err := parseFace(gobold.TTF)
	if err != nil {
		panic(fmt.Sprintf("faxdoc: the embedded Go Bold font: %v", err))
	}
	c := &Composer{opts: opts, regular: regular, bold: bold, slots: make(chan struct{}, opts.MaxConcurrent),
		fonts: newFontFiles()}
	c.zlibs.New = func() any {
		zw, _ := zlib.NewWriterLevel(nil, zlib.DefaultCompression) // a valid level: no error; BestCompression saves a few bytes of ~10 KB
		return zw
	}
	return c
}

// drawing starts one output document's drawing.
func (c *Composer) drawing() *drawing {
	return &drawing{regular: newFontUse(c.regular), bold: newFontUse(c.bold), zlibs: &c.zlibs, fonts: c.fonts}
}

// Undrawable implements faxes.Composer. Bold and regular cover the same
// characters, so one check serves both.
func (c *Composer) Undrawable(s string) (rune, bool) {
	if r, bad := c.regular.undrawable(s); bad {
		return r, true
	}
	return c.bold.undrawable(s)
}

// slot waits for a free slot and returns the call's context, bounded by
// Timeout, and the function that releases both.
func (c *Composer) slot(ctx context.Context, what string) (context.Context, func(), error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("%s: waiting for a slot: %w", what, ctx.Err())
	}
	tctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	return tctx, func() { cancel(); <-c.slots }, nil
}

// pdfConfig is pdfcpu's configuration (core/pdfconf).
func pdfConfig(cmd model.CommandMode) *model.Configuration { return pdfconf.New(cmd) }

// ErrSource wraps every refusal of a source document (too big, too many
// pages, unreadable). Upload validation refuses such documents first, so
// seeing it means a document changed or bypassed validation.
var ErrSource = errors.New("faxdoc: source document refused")

// Compose implements faxes.Composer: pdfcpu reads src; each of its pages
// keeps its content (wrapped in q/Q so that its graphics state cannot leak)
// and gets one more content stream, the header line; the cover page is a
// new page put first in the page tree; pdfcpu writes the result.
func (c *Composer) Compose(ctx context.Context, w io.Writer, src io.ReadSeeker, comp faxes.Composition) (int, error) {
	ctx, release, err := c.slot(ctx, "compose fax")
	if err != nil {
		return 0, err
	}
	defer release()
	size, err := src.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, fmt.Errorf("compose fax: size the source: %w", err)
	}
	if size > MaxSource {
		return 0, fmt.Errorf("%w: %d bytes, more than %d", ErrSource, size, MaxSource)
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("compose fax: rewind the source: %w", err)
	}
	pctx, err := readPDF(ctx, src, size)
	if err != nil {
		return 0, err
	}
	if pctx.PageCount > MaxPages {
		return 0, fmt.Errorf("%w: %d pages, more than %d", ErrSource, pctx.PageCount, MaxPages)
	}
	xt := pctx.XRefTable
	d := c.drawing()
	total := pctx.PageCount
	if comp.Cover != nil {
		total++
	}
	h := header{at: comp.At, text: comp.Header, from: readableNumber(comp.From), total: total}
	// Every page's header needs the regular font, so it is referenced
	// (and so written) in any case.
	if _, err := d.regular.reference(xt); err != nil {
		return 0, err
	}
	for i := 1; i <= pctx.PageCount; i++ {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("compose fax: %w", err)
		}
		n := i
		if comp.Cover != nil {
			n++
		}
		if err := stampPage(xt, d, i, h.line(n)); err != nil {
			return 0, fmt.Errorf("compose fax: page %d: %w", i, err)
		}
	}
	if comp.Cover != nil {
		if err := c.addCover(xt, d, comp, h, total); err != nil {
			return 0, fmt.Errorf("compose fax: cover page: %w", err)
		}
	}
	if err := d.finish(xt); err != nil {
		return 0, fmt.Errorf("compose fax: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("compose fax: %w", err)
	}
	// A classic cross-reference table and no object streams: pdfcpu
	// compresses each of those with a new ~800 KB zlib compressor, which
	// cost a one-page composition more than its drawing (~0.4 ms and
	// 1.6 MB). The objects left uncompressed are a few dictionaries (the
	// page contents, fonts and images stay compressed), and a table is what
	// every fax provider's PDF reader reads.
	pctx.WriteObjectStream, pctx.WriteXRefStream = false, false
	if err := api.WriteContext(pctx, w); err != nil {
		return 0, fmt.Errorf("compose fax: write: %w", err)
	}
	return total, nil
}

func (d *drawing) finish(xt *model.XRefTable) error {
	if err := d.regular.finish(xt, d.zlibs, d.fonts); err != nil {
		return err
	}
	return d.bold.finish(xt, d.zlibs, d.fonts)
}

// readPDF reads and validates src with pdfcpu. pdfcpu panics on some
// malformed input; that must not take the process down.
func readPDF(ctx context.Context, src io.ReadSeeker, size int64) (pctx *model.Context, err error) {
	defer func() {
		if r := recover(); r != nil {
			pctx, err = nil, fmt.Errorf("%w: pdfcpu panic: %v", ErrSource, r)
		}
	}()
	conf := pdfConfig(model.VALIDATE)
	conf.Limits.MaxStreamBytes = max(size, 1)
	conf.Limits.MaxDecodeBytes = 32 << 20
	pctx, err = pdfcpu.ReadWithContext(ctx, src, conf)
	if err == nil {
		err = validate.XRefTable(pctx)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("read pdf: %w", ctx.Err())
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrSource, err)
	case pctx.Encrypt != nil:
		return nil, fmt.Errorf("%w: encrypted", ErrSource)
	case pctx.PageCount < 1:
		return nil, fmt.Errorf("%w: no pages", ErrSource)
	}
	return pctx, nil
}

// readableNumber formats an E.164 number the international way ("+1
// 212-555-0100"); anything else (a number a person typed their own way)
// is shown as it is.
func readableNumber(s string) string {
	if !e164.MatchString(s) {
		return s
	}
	n, err := phonenumbers.Parse(s, "")
	if err != nil {
		return s
	}
	return phonenumbers.Format(n, phonenumbers.INTERNATIONAL)
}

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// Header line geometry, points: fax machines overwrite the top ~0.2 inch
// of every page with it.
const (
	bandHeight  = 14.4
	headerSize  = 8.5
	headerBase  = 4.5 // baseline above the band's bottom
	headerInset = 18  // left and right margin
)

// header is what every page's header line says but its page number.
type header struct {
	at         time.Time
	text, from string
	total      int
}

// headerLine is one page's header: left, the date, text and number;
// right, "Page n/N".
type headerLine struct{ left, right string }

func (h header) line(n int) headerLine {
	parts := []string{h.at.Format("2006-01-02 15:04 MST")}
	if t := strings.TrimSpace(h.text); t != "" {
		parts = append(parts, t)
	}
	if h.from != "" {
		parts = append(parts, h.from)
	}
	return headerLine{left: strings.Join(parts, "   "), right: fmt.Sprintf("Page %d/%d", n, h.total)}
}

// draw draws the header line on a page w×h points (as seen) in a white
// band, cutting the left part if the page is too narrow for all of it.
func (l headerLine) draw(c *canvas, w, h float64) {
	c.fillRect(0, h-bandHeight, w, bandHeight, 1)
	f := c.doc.regular.face
	y := h - bandHeight + headerBase
	rightW := f.width(l.right, headerSize)
	c.textRight(false, headerSize, w-headerInset, y, l.right)
	if avail := w - 2*headerInset - rightW - 2*headerSize; avail > 0 {
		c.text(false, headerSize, headerInset, y, fit(f, l.left, headerSize, avail))
	}
}
