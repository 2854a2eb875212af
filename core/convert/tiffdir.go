package convert

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// tiffPage is what a TIFF image file directory says about one page, read
// without touching its pixels.
type tiffPage struct {
	ifd                   int64 // offset of the directory
	width, height         int
	bitsPerSample         int // of the first sample
	samplesPerPixel       int
	compression           int
	photometric           int
	blockWidth, blockRows int // one strip or tile: what the decoder holds besides the image
}

// maxTIFFPages bounds the directory walk whatever the caller's page limit.
const maxTIFFPages = 1000

// errTIFFTooManyPages is returned by tiffPages when the chain has more
// directories than the limit it was given.
var errTIFFTooManyPages = errors.New("too many pages")

// TIFF tags read here (TIFF 6.0, section 8).
const (
	tagImageWidth      = 256
	tagImageLength     = 257
	tagBitsPerSample   = 258
	tagCompression     = 259
	tagPhotometric     = 262
	tagSamplesPerPixel = 277
	tagRowsPerStrip    = 278
	tagTileWidth       = 322
	tagTileLength      = 323
)

// tiffPages walks a TIFF's chain of image file directories and describes
// each page, reading only the directories (a few bytes a page, whatever the
// pixels). A chain longer than limit fails with errTIFFTooManyPages before
// anything else is read; a cyclic chain is an error.
func tiffPages(r io.ReaderAt, limit int) ([]tiffPage, error) {
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
	var pages []tiffPage
	seen := map[uint32]bool{}
	for off := bo.Uint32(hdr[4:]); off != 0; {
		if seen[off] {
			return nil, errors.New("cyclic directory chain")
		}
		if len(pages) >= limit {
			return pages, errTIFFTooManyPages
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
		p := tiffPage{ifd: int64(off), bitsPerSample: 1, samplesPerPixel: 1, compression: 1}
		var rowsPerStrip int
		for e := 0; e+12 <= len(entries)-4; e += 12 {
			v, err := firstTIFFValue(r, bo, entries[e:e+12])
			if err != nil {
				return nil, err
			}
			switch bo.Uint16(entries[e:]) {
			case tagImageWidth:
				p.width = v
			case tagImageLength:
				p.height = v
			case tagBitsPerSample:
				p.bitsPerSample = v
			case tagCompression:
				p.compression = v
			case tagPhotometric:
				p.photometric = v
			case tagSamplesPerPixel:
				p.samplesPerPixel = v
			case tagRowsPerStrip:
				rowsPerStrip = v
			case tagTileWidth:
				p.blockWidth = v
			case tagTileLength:
				p.blockRows = v
			}
		}
		if p.blockWidth == 0 || p.blockRows == 0 {
			p.blockWidth, p.blockRows = p.width, p.height
			if rowsPerStrip > 0 && rowsPerStrip < p.height {
				p.blockRows = rowsPerStrip
			}
		}
		pages = append(pages, p)
		off = bo.Uint32(entries[len(entries)-4:])
	}
	return pages, nil
}

// firstTIFFValue returns the first value of a SHORT or LONG directory entry
// (0 for other types), following the entry's offset when the values do not
// fit in it.
func firstTIFFValue(r io.ReaderAt, bo binary.ByteOrder, entry []byte) (int, error) {
	typ, count := bo.Uint16(entry[2:]), bo.Uint32(entry[4:])
	var size uint32
	switch typ {
	case 3: // SHORT
		size = 2
	case 4: // LONG
		size = 4
	default:
		return 0, nil
	}
	v := entry[8:12]
	if uint64(count)*uint64(size) > 4 {
		var b [4]byte
		if _, err := r.ReadAt(b[:size], int64(bo.Uint32(entry[8:]))); err != nil {
			return 0, fmt.Errorf("read directory value: %w", err)
		}
		v = b[:]
	}
	if size == 2 {
		return int(bo.Uint16(v)), nil
	}
	// As the decoder reads it: a LONG above 2^31 is a huge width, not a
	// small one.
	return int(bo.Uint32(v)), nil
}

// decodeBytes estimates the memory the decoder needs for the page: the
// decoded image (github.com/hhrutter/tiff decodes RGB into RGBA, 16-bit
// samples into 16-bit images, everything else at a byte a pixel) plus one
// strip or tile, which it reads into a growing buffer (up to twice its size)
// and, for JPEG compression, decodes into an image of its own.
func (p tiffPage) decodeBytes() int64 {
	var perPixel int64 = 1
	switch p.photometric {
	case 2, 5: // RGB, CMYK
		perPixel = 4
	case 3: // palette
		perPixel = 1
	}
	if p.bitsPerSample > 8 {
		perPixel *= 2
	}
	// Directories say anything; clamped, no product below overflows, and
	// every clamped value is far past the limits anyway.
	c := func(v int) int64 { return int64(min(max(v, 1), 1<<20)) }
	rowBytes := (c(p.blockWidth)*min(c(p.samplesPerPixel), 64)*min(c(p.bitsPerSample), 64) + 7) / 8
	block := 2 * rowBytes * c(p.blockRows)
	if p.compression == 6 || p.compression == 7 { // JPEG
		block += 4 * c(p.blockWidth) * c(p.blockRows)
	}
	return c(p.width)*c(p.height)*perPixel + block
}
