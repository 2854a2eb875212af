package convert

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	// image.DecodeConfig needs the decoders registered; pdfcpu registers
	// PNG, JPEG and TIFF itself but not GIF, and we do not rely on that.
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"os"

	"github.com/faxhub/faxhub/core"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// maxDecodedPixels bounds one PNG, GIF or TIFF page: pdfcpu decodes those
// into memory at up to 4 bytes a pixel, so this bounds a conversion at about
// 160 MB. A US Letter page at 400 dpi, more than any fax resolution, is 15 MP.
// JPEGs are embedded without decoding and may be larger (phone cameras make
// 48 MP photos); pdfcpu's own 100 MP limit applies to them.
const maxDecodedPixels = 40 << 20

// maxTIFFPages bounds a multi-page TIFF before anything is decoded.
const maxTIFFPages = 1000

// imageToPDF lays an image out on US Letter pages, one image per page, scaled
// to fit with a small margin (fax machines cannot print to the paper's edge),
// centred and never rotated. pdfcpu turns every page of a multi-page TIFF into
// a page of its own; an animated GIF contributes its first frame only, since
// Go's image.Decode reads no more.
func imageToPDF(ctx context.Context, src string, kind core.FileKind, dst string) (pages int, err error) {
	f, err := os.Open(src)
	if err != nil {
		return 0, fmt.Errorf("open image: %w", err)
	}
	defer f.Close()
	// Refuse absurd dimensions before anything is decoded.
	cfg, format, err := image.DecodeConfig(f)
	if err != nil {
		return 0, corrupt(err, "the %s image cannot be read: %v", kindName(kind), err)
	}
	dims := [][2]int{{cfg.Width, cfg.Height}}
	if format == "tiff" {
		// pdfcpu converts every page but checks only the first.
		if dims, err = tiffPageSizes(f); err != nil {
			return 0, corrupt(err, "the TIFF image cannot be read: %v", err)
		}
	}
	for i, d := range dims {
		px := int64(d[0]) * int64(d[1])
		if d[0] <= 0 || d[1] <= 0 || (format != "jpeg" && px > maxDecodedPixels) {
			return 0, conversionFailed(fmt.Errorf("%s page %d: %dx%d", format, i+1, d[0], d[1]),
				"the image is %d×%d pixels; the limit is %d megapixels", d[0], d[1], maxDecodedPixels>>20)
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("rewind image: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("convert image: %w", err)
	}
	imp := &pdfcpu.Import{
		PageDim:  types.PaperSize["Letter"],
		PageSize: "Letter",
		UserDim:  true,
		Pos:      types.Center,
		Scale:    0.95,
		InpUnit:  types.POINTS,
	}
	err = writeFile(dst, func(w io.Writer) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = corrupt(fmt.Errorf("pdfcpu panic: %v", r), "the %s image cannot be converted; it appears to be damaged", kindName(kind))
			}
		}()
		if err := api.ImportImages(nil, w, []io.Reader{f}, imp, pdfConfig(model.IMPORTIMAGES)); err != nil {
			return corrupt(err, "the %s image cannot be converted: %s", kindName(kind), firstLine(err.Error()))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	// Count what we wrote rather than trusting pdfcpu's internal counter:
	// this is the same check every other document gets.
	return pdfPages(ctx, dst)
}

func kindName(k core.FileKind) string {
	for _, s := range supported {
		if s.kind == k {
			return s.name
		}
	}
	return string(k)
}

// tiffPageSizes walks a TIFF's chain of image file directories and returns
// each page's width and height, reading only the directories.
func tiffPageSizes(r io.ReaderAt) ([][2]int, error) {
	var hdr [8]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	var bo binary.ByteOrder
	switch string(hdr[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return nil, errors.New("not a classic TIFF")
	}
	var pages [][2]int
	seen := map[uint32]bool{}
	for off := bo.Uint32(hdr[4:]); off != 0; {
		if seen[off] || len(pages) >= maxTIFFPages {
			return nil, fmt.Errorf("more than %d pages, or a cyclic directory chain", maxTIFFPages)
		}
		seen[off] = true
		var n [2]byte
		if _, err := r.ReadAt(n[:], int64(off)); err != nil {
			return nil, fmt.Errorf("read directory: %w", err)
		}
		entries := make([]byte, 12*int(bo.Uint16(n[:]))+4)
		if _, err := r.ReadAt(entries, int64(off)+2); err != nil {
			return nil, fmt.Errorf("read directory: %w", err)
		}
		var w, h int
		for e := 0; e+12 <= len(entries)-4; e += 12 {
			tag, typ := bo.Uint16(entries[e:]), bo.Uint16(entries[e+2:])
			var v int
			switch typ {
			case 3: // SHORT
				v = int(bo.Uint16(entries[e+8:]))
			case 4: // LONG
				v = int(bo.Uint32(entries[e+8:]))
			}
			switch tag {
			case 256:
				w = v
			case 257:
				h = v
			}
		}
		pages = append(pages, [2]int{w, h})
		off = bo.Uint32(entries[len(entries)-4:])
	}
	return pages, nil
}
