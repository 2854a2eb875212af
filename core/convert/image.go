package convert

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"runtime"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/hhrutter/tiff"
)

// Bounds on image conversions (docs/limits.md). Memory is bounded per page,
// not per document: pages are decoded one at a time and dropped once
// written, so a many-page TIFF costs time, which the conversion timeout and
// maxDocumentPixels bound, not memory.
const (
	// maxPagePixels bounds any page, decoded or not: 10,000×10,000. JPEGs
	// are embedded without decoding, but the fax back end decodes them.
	maxPagePixels = 100_000_000
	// maxPageDecodeBytes bounds what decoding one PNG, GIF or TIFF page may
	// allocate (see tiffPage.decodeBytes, pngDecodeBytes): about 24 MP
	// grey or 6 MP colour (a 300 dpi grey Letter scan needs 8.4 MB, a
	// colour one 34 MB and is refused: JPEGs, which most colour scans
	// are, are not decoded). Pages are collected between
	// (gcAfterPageBytes), but the heap may still reach twice the live page
	// while the collector runs: measured up to 82 MB for a 40 MB page on a
	// loaded machine, so this keeps a conversion within 64 MB.
	maxPageDecodeBytes = 24 << 20
	// maxDocumentPixels bounds a document's pages together: 350 Letter pages
	// scanned at 300 dpi.
	maxDocumentPixels = 3_000_000_000
	// gcAfterPageBytes: after decoding a page larger than this, collect
	// before the next one. A fax page (1728×2200, a byte a pixel) is below.
	gcAfterPageBytes = 4 << 20
)

// imageSource is an image file split into pages that can be loaded one at a
// time.
type imageSource struct {
	pages []imagePage
}

type imagePage struct {
	width, height int
	// decodeBytes is the memory decoding the page needs; 0 when it is
	// embedded as it is.
	decodeBytes int64
	load        func() (pageImage, error)
}

// imageToPDF lays an image out on US Letter pages, one image per page, scaled
// to fit with a small margin (fax machines cannot print to the paper's edge),
// centred and never rotated. Every page of a multi-page TIFF becomes a page;
// an animated GIF contributes its first frame. Page count and dimensions are
// checked from the headers before any pixel is decoded, and pages are
// decoded and written one at a time.
func imageToPDF(ctx context.Context, req documents.ConvertRequest) (pages int, err error) {
	f, err := os.Open(req.Src)
	if err != nil {
		return 0, fmt.Errorf("open image: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat image: %w", err)
	}
	// Every read checks ctx, so the timeout interrupts a decoder mid-page.
	r := io.NewSectionReader(ctxReaderAt{ctx, f}, 0, st.Size())
	src, err := openImage(r, req.Kind, req.MaxPages)
	if err != nil {
		if ctx.Err() != nil {
			// A read refused at the deadline, not a damaged file.
			return 0, fmt.Errorf("read image: %w", ctx.Err())
		}
		return 0, err
	}
	if err := src.check(req.Kind); err != nil {
		return 0, err
	}
	err = writeFile(req.Dst, func(w io.Writer) error {
		pdf := newImagePDF(w)
		for _, p := range src.pages {
			if err := ctx.Err(); err != nil {
				return err
			}
			img, err := loadPage(p, req.Kind)
			if err != nil {
				return err
			}
			if err := pdf.addPage(img); err != nil {
				return err
			}
			if p.decodeBytes > gcAfterPageBytes {
				// The page is garbage now, but the collector would let the
				// next one allocate beside it (the heap goal is twice the
				// live heap): two pages in memory instead of one.
				runtime.GC()
			}
		}
		return pdf.finish()
	})
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("convert image: %w", ctx.Err())
		}
		return 0, err
	}
	// Count what we wrote: the same check every other document gets.
	return pdfPages(ctx, req.Dst)
}

// loadPage loads one page; decoders panic on some malformed input, which is
// a damaged file, not a reason to take the process down.
func loadPage(p imagePage, kind documents.FileKind) (img pageImage, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = corrupt(fmt.Errorf("decoder panic: %v", r), "the %s image cannot be converted; it appears to be damaged", kindName(kind))
		}
	}()
	img, err = p.load()
	var ce *core.Error
	if err != nil && !errors.As(err, &ce) {
		var ctxErr ctxError
		if errors.As(err, &ctxErr) {
			return img, err
		}
		return img, corrupt(err, "the %s image cannot be converted: %s", kindName(kind), firstLine(err.Error()))
	}
	return img, err
}

// check applies the size bounds to every page before anything is decoded.
func (s *imageSource) check(kind documents.FileKind) error {
	var total int64
	for i, p := range s.pages {
		if p.width <= 0 || p.height <= 0 {
			return corrupt(fmt.Errorf("page %d: %dx%d", i+1, p.width, p.height), "the %s image has no pixels", kindName(kind))
		}
		// Each side first: two 32-bit sides can overflow the product.
		px := int64(p.width) * int64(p.height)
		if p.width > maxPagePixels || p.height > maxPagePixels {
			px = maxPagePixels + 1
		}
		total += px
		switch {
		case px > maxPagePixels:
			return imageTooLarge(i, p, fmt.Sprintf("the limit is %d megapixels a page", maxPagePixels/1_000_000))
		case p.decodeBytes > maxPageDecodeBytes:
			return imageTooLarge(i, p, fmt.Sprintf("decoding it would take %d MB, the limit is %d MB (a colour image has about 4 bytes a pixel, a grey one 1)",
				(p.decodeBytes+1<<20-1)>>20, maxPageDecodeBytes>>20))
		case total > maxDocumentPixels:
			return core.Errorf(core.KindUnprocessable, documents.CodeConversionFailed,
				"the images have more than %d megapixels together, the limit for one document; reduce their resolution or split the document",
				maxDocumentPixels/1_000_000).With("limit_megapixels", maxDocumentPixels/1_000_000)
		}
	}
	return nil
}

func imageTooLarge(i int, p imagePage, why string) *core.Error {
	return core.Errorf(core.KindUnprocessable, documents.CodeConversionFailed,
		"page %d of the image is %d×%d pixels, too large to convert: %s; reduce its resolution (fax resolution is about 200 dpi) and upload it again",
		i+1, p.width, p.height, why).
		With("page", i+1).With("width", p.width).With("height", p.height)
}

// openImage reads the headers of an image file and describes its pages.
func openImage(r *io.SectionReader, kind documents.FileKind, maxPages int) (*imageSource, error) {
	name := kindName(kind)
	switch kind {
	case documents.FileTIFF:
		limit := maxTIFFPages
		if maxPages > 0 {
			limit = min(limit, maxPages)
		}
		dirs, err := tiffPages(r, limit)
		if errors.Is(err, errTIFFTooManyPages) {
			return nil, core.Errorf(core.KindUnprocessable, documents.CodeTooManyPages,
				"the TIFF has more than %d pages, the limit", limit).With("limit", limit)
		}
		if err != nil {
			return nil, corrupt(err, "the TIFF image cannot be read: %v", err)
		}
		src := &imageSource{}
		for i, d := range dirs {
			src.pages = append(src.pages, imagePage{width: d.width, height: d.height, decodeBytes: d.decodeBytes(0),
				load: func() (pageImage, error) {
					// What the strips really expand to, now that the page
					// is next: the layout alone may understate it.
					block, err := d.largestBlock(r, maxPageDecodeBytes)
					if err != nil {
						return pageImage{}, err
					}
					if n := d.decodeBytes(block); n > maxPageDecodeBytes {
						return pageImage{}, imageTooLarge(i, imagePage{width: d.width, height: d.height},
							fmt.Sprintf("its strips expand to %d MB, the limit for decoding a page is %d MB", (n+1<<20-1)>>20, maxPageDecodeBytes>>20))
					}
					img, err := tiff.DecodeAt(r, d.ifd)
					if err != nil {
						return pageImage{}, err
					}
					return flateImage(img), nil
				}})
		}
		return src, nil
	case documents.FileJPEG:
		cfg, err := jpeg.DecodeConfig(io.NewSectionReader(r, 0, r.Size()))
		if err != nil {
			return nil, corrupt(err, "the %s image cannot be read: %v", name, err)
		}
		dict := "/ColorSpace /DeviceRGB"
		switch cfg.ColorModel {
		case color.GrayModel:
			dict = "/ColorSpace /DeviceGray"
		case color.CMYKModel:
			// Adobe writes CMYK JPEGs inverted; so does everyone after it.
			dict = "/ColorSpace /DeviceCMYK /Decode [1 0 1 0 1 0 1 0]"
		}
		dict += " /BitsPerComponent 8 /Filter /DCTDecode"
		// Embedded as it is: PDF readers and fax back ends decode JPEG.
		return &imageSource{pages: []imagePage{{width: cfg.Width, height: cfg.Height, load: func() (pageImage, error) {
			return pageImage{width: cfg.Width, height: cfg.Height, dict: dict, body: func(w io.Writer) error {
				_, err := io.Copy(w, io.NewSectionReader(r, 0, r.Size()))
				return err
			}}, nil
		}}}}, nil
	case documents.FilePNG:
		var ihdr [29]byte
		if _, err := r.ReadAt(ihdr[:], 0); err != nil || string(ihdr[12:16]) != "IHDR" {
			return nil, corrupt(err, "the %s image cannot be read: no header", name)
		}
		be := binary.BigEndian
		w, h := int(be.Uint32(ihdr[16:])), int(be.Uint32(ihdr[20:]))
		return &imageSource{pages: []imagePage{{width: w, height: h, decodeBytes: pngDecodeBytes(w, h, ihdr[24], ihdr[25], ihdr[28]),
			load: func() (pageImage, error) {
				img, err := png.Decode(io.NewSectionReader(r, 0, r.Size()))
				if err != nil {
					return pageImage{}, err
				}
				return flateImage(img), nil
			}}}}, nil
	case documents.FileGIF:
		cfg, err := gif.DecodeConfig(io.NewSectionReader(r, 0, r.Size()))
		if err != nil {
			return nil, corrupt(err, "the %s image cannot be read: %v", name, err)
		}
		// A paletted image of the logical screen's size, at a byte a pixel.
		return &imageSource{pages: []imagePage{{width: cfg.Width, height: cfg.Height, decodeBytes: int64(cfg.Width) * int64(cfg.Height),
			load: func() (pageImage, error) {
				img, err := gif.Decode(io.NewSectionReader(r, 0, r.Size()))
				if err != nil {
					return pageImage{}, err
				}
				return flateImage(img), nil
			}}}}, nil
	}
	return nil, unsupported("files of type %q cannot be converted", kind)
}

// pngDecodeBytes is what image/png allocates for an image: the image at its
// decoded depth (RGB becomes RGBA, grey with alpha NRGBA; 16-bit samples
// double that) and, for an interlaced file, the largest pass (a quarter) on
// top.
func pngDecodeBytes(w, h int, depth, colorType, interlace byte) int64 {
	var perPixel int64 = 1 // grey, paletted
	switch colorType {
	case 2, 4, 6:
		perPixel = 4
	}
	if depth == 16 {
		perPixel *= 2
	}
	n := int64(w) * int64(h) * perPixel
	if interlace != 0 {
		n += n / 4
	}
	return n
}

// ctxReaderAt fails reads once ctx is done, so decoders stop at the timeout.
type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

// ctxError marks a read refused because the context ended.
type ctxError struct{ err error }

func (e ctxError) Error() string { return e.err.Error() }
func (e ctxError) Unwrap() error { return e.err }

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, ctxError{err}
	}
	return c.r.ReadAt(p, off)
}

func kindName(k documents.FileKind) string {
	for _, s := range supported {
		if s.kind == k {
			return s.name
		}
	}
	return string(k)
}
