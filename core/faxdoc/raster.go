package faxdoc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"golang.org/x/image/draw"
)

// ErrRasterizerMissing is returned by Rasterize when pdftoppm (Debian
// package poppler-utils) is not installed.
var ErrRasterizerMissing = errors.New("faxdoc: pdftoppm (poppler-utils) is not installed")

// Fax raster geometry: 204 dots per inch across, at most 1728 dots (the
// width of a fax line, about 8.5 inches); rows at 98 or 196 lines per inch.
const (
	faxDPIX     = 204
	faxWidth    = 1728
	standardDPY = 98
	fineDPY     = 196
	// maxRows bounds a page's rows at fine resolution: 2400 rows per
	// page at standard, twice that at fine (about 24 inches, beyond any
	// paper a fax machine feeds). Longer pages are scaled down to fit.
	maxRows = 2 * 2400
	// toolWaitDelay is how long pdftoppm's output may stay open after it
	// exited or was killed.
	toolWaitDelay = 2 * time.Second
)

// Rasterize implements faxes.Composer with poppler's pdftoppm: the page
// is rendered in black and white at 204 × r dots per inch, scaled down if
// it is wider than a fax line (or absurdly long), standard's rows doubled.
func (c *Composer) Rasterize(ctx context.Context, pdf io.ReaderAt, size int64, page int, r faxes.Resolution, maxWidth int) ([]byte, error) {
	dpy := standardDPY
	switch r {
	case faxes.ResolutionStandard, "":
	case faxes.ResolutionFine:
		dpy = fineDPY
	default:
		return nil, fmt.Errorf("rasterize: unknown resolution %q", r)
	}
	if size > MaxSource {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrSource, size, MaxSource)
	}
	bin, err := c.pdftoppm()
	if err != nil {
		// The server's lack, not the caller's mistake: a 503 with a code,
		// never a 500.
		e := core.Errorf(core.KindUnavailable, faxes.CodePageImagesUnavailable,
			"page images are not available on this server (its page renderer is not installed); download the PDF instead")
		e.Err = fmt.Errorf("rasterize: %w: %v", ErrRasterizerMissing, err)
		return nil, e
	}
	ctx, release, err := c.slot(ctx, "rasterize")
	if err != nil {
		return nil, err
	}
	defer release()

	pctx, err := readPDF(ctx, io.NewSectionReader(pdf, 0, size), size)
	if err != nil {
		return nil, fmt.Errorf("rasterize: %w", err)
	}
	if page < 1 || page > pctx.PageCount {
		return nil, fmt.Errorf("rasterize: page %d of a %d-page document", page, pctx.PageCount)
	}
	_, _, inh, err := pctx.PageDict(page, false)
	if err != nil {
		return nil, fmt.Errorf("rasterize: page %d: %w", page, err)
	}
	box, err := boxOf(inh)
	if err != nil {
		return nil, fmt.Errorf("rasterize: page %d: %w", page, err)
	}
	pw, ph := box.seen()
	w, h := pixels(pw, ph, dpy)

	in, extra, done, err := toolInput(pdf, size)
	if err != nil {
		return nil, fmt.Errorf("rasterize: stage the document: %w", err)
	}
	defer done()
	pn := strconv.Itoa(page)
	args := []string{"-f", pn, "-l", pn, "-mono", "-rx", strconv.Itoa(faxDPIX), "-ry", strconv.Itoa(dpy)}
	// -scale-to-x/-y set the exact size (they override -rx/-ry): the
	// size computed above is the fax's, and it bounds the pixels whatever
	// size the page claims.
	args = append(args, "-scale-to-x", strconv.Itoa(w), "-scale-to-y", strconv.Itoa(h), in)
	out, err := runTool(ctx, bin, int64(w/8+8)*int64(h)+64, extra, args...)
	if err != nil {
		return nil, fmt.Errorf("rasterize page %d: %w", page, err)
	}
	img, err := readPBM(out)
	if err != nil {
		return nil, fmt.Errorf("rasterize page %d: %w", page, err)
	}
	if dpy == standardDPY {
		img = doubleRows(img)
	}
	var res image.Image = img
	if maxWidth > 0 && img.Bounds().Dx() > maxWidth {
		b := img.Bounds()
		nh := max(1, int(math.Round(float64(b.Dy())*float64(maxWidth)/float64(b.Dx()))))
		g := image.NewGray(image.Rect(0, 0, maxWidth, nh))
		draw.ApproxBiLinear.Scale(g, g.Bounds(), img, b, draw.Src, nil)
		res = g
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, res); err != nil {
		return nil, fmt.Errorf("rasterize page %d: encode png: %w", page, err)
	}
	return buf.Bytes(), nil
}

func (c *Composer) pdftoppm() (string, error) {
	if c.opts.PdftoppmPath != "" {
		return exec.LookPath(c.opts.PdftoppmPath)
	}
	return exec.LookPath("pdftoppm")
}

// pixels is the fax image of a page pw×ph points: 204 dots per inch
// across and dpy down, scaled down to at most faxWidth × maxRows dots.
// (Rows are fine ones, dpy 196, when counting against maxRows.)
func pixels(pw, ph float64, dpy int) (w, h int) {
	fw, fh := pw/72*faxDPIX, ph/72*float64(dpy)
	rowLimit := float64(maxRows) * float64(dpy) / fineDPY
	scale := min(1, faxWidth/fw, rowLimit/fh)
	return max(1, int(math.Round(fw*scale))), max(1, int(math.Round(fh*scale)))
}

// runTool runs bin with args in its own process group, killed with it when
// ctx ends, and returns its standard output, refused beyond limit bytes.
func runTool(ctx context.Context, bin string, limit int64, extra []*os.File, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = toolWaitDelay
	out := &limitedBuffer{limit: limit}
	var stderr limitedBuffer
	stderr.limit = 4 << 10
	cmd.Stdout, cmd.Stderr = out, &stderr
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %w", filepath.Base(bin), ctx.Err())
	case out.over:
		return nil, fmt.Errorf("%s: output larger than %d bytes", filepath.Base(bin), limit)
	case err != nil:
		return nil, fmt.Errorf("%s: %w: %s", filepath.Base(bin), err, bytes.TrimSpace(stderr.b.Bytes()))
	}
	return out.b.Bytes(), nil
}

// limitedBuffer keeps at most limit bytes and notes that more came.
type limitedBuffer struct {
	b     bytes.Buffer
	limit int64
	over  bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.limit - int64(l.b.Len()); int64(len(p)) > room {
		l.over = true
		l.b.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return l.b.Write(p)
}

// toolInput returns the path pdftoppm reads pdf (size bytes) from, the
// files it must inherit for that, and the function that releases what it
// made. A whole file (the caller's spool of a blob, already on disk) is
// handed to the child as its descriptor 3 and read as /dev/fd/3 on Linux,
// where opening that reopens the file itself, unlinked or not: no second
// copy of the document. Anything else is copied to a private temporary
// directory.
func toolInput(pdf io.ReaderAt, size int64) (string, []*os.File, func(), error) {
	if f, ok := pdf.(*os.File); ok && runtime.GOOS == "linux" {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() == size {
			return "/dev/fd/3", []*os.File{f}, func() {}, nil
		}
	}
	dir, err := os.MkdirTemp("", "faxhub-faxdoc-")
	if err != nil {
		return "", nil, nil, err
	}
	in := filepath.Join(dir, "doc.pdf")
	if err := writeFile(in, io.NewSectionReader(pdf, 0, size)); err != nil {
		os.RemoveAll(dir)
		return "", nil, nil, err
	}
	return in, nil, func() { os.RemoveAll(dir) }, nil
}

func writeFile(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readPBM decodes a binary PBM (P4), what pdftoppm -mono writes, into a
// two-colour paletted image (a 1-bit PNG).
func readPBM(b []byte) (*image.Paletted, error) {
	br := bufio.NewReader(bytes.NewReader(b))
	var magic string
	var w, h int
	if _, err := fmt.Fscan(br, &magic, &w, &h); err != nil || magic != "P4" {
		return nil, fmt.Errorf("read pdftoppm output: not a binary PBM (%v)", err)
	}
	if _, err := br.ReadByte(); err != nil { // the one whitespace byte
		return nil, fmt.Errorf("read pdftoppm output: %w", err)
	}
	if w <= 0 || h <= 0 || w > 2*faxWidth || h > 2*maxRows {
		return nil, fmt.Errorf("read pdftoppm output: unexpected size %dx%d", w, h)
	}
	stride := (w + 7) / 8
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.White, color.Black})
	row := make([]byte, stride)
	for y := range h {
		if _, err := io.ReadFull(br, row); err != nil {
			return nil, fmt.Errorf("read pdftoppm output: row %d: %w", y, err)
		}
		pix := img.Pix[y*img.Stride:]
		for x := range w {
			// PBM: 1 is black, the palette's index 1.
			pix[x] = row[x/8] >> (7 - uint(x%8)) & 1
		}
	}
	return img, nil
}

// doubleRows repeats every row: standard resolution's rows are twice as
// tall as they are wide.
func doubleRows(img *image.Paletted) *image.Paletted {
	b := img.Bounds()
	out := image.NewPaletted(image.Rect(0, 0, b.Dx(), 2*b.Dy()), img.Palette)
	for y := range b.Dy() {
		row := img.Pix[y*img.Stride : y*img.Stride+b.Dx()]
		copy(out.Pix[2*y*out.Stride:], row)
		copy(out.Pix[(2*y+1)*out.Stride:], row)
	}
	return out
}
