package convert

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"golang.org/x/image/tiff/lzw"
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
	// byteOrder and the raw directory entries of the strip (or tile)
	// offsets and byte counts, read only when the page is about to be
	// decoded (largestBlock).
	byteOrder             binary.ByteOrder
	offsetsTag, countsTag []byte
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
	tagStripOffsets    = 273
	tagStripByteCounts = 279
	tagTileOffsets     = 324
	tagTileByteCounts  = 325
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
		p := tiffPage{ifd: int64(off), bitsPerSample: 1, samplesPerPixel: 1, compression: 1, byteOrder: bo}
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
			case tagStripOffsets, tagTileOffsets:
				p.offsetsTag = entries[e : e+12]
			case tagStripByteCounts, tagTileByteCounts:
				p.countsTag = entries[e : e+12]
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
// strip or tile, which it reads into a buffer grown by doubling: up to
// twice the block, with the outgrown buffers as garbage beside it, so four
// times (measured: a 1500x1500 one-strip page whose strip fills the
// decoder's 18 MB grew RSS by 68 MB at twice). For JPEG compression the
// block is also decoded into an image of its own.
// block is the largest strip or tile's decoded size in bytes; before
// largestBlock has measured it, pass 0 to assume what the layout implies.
func (p tiffPage) decodeBytes(block int64) int64 {
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
	if block <= 0 {
		block = (c(p.blockWidth)*min(c(p.samplesPerPixel), 64)*min(c(p.bitsPerSample), 64) + 7) / 8 * c(p.blockRows)
	}
	n := 4 * block
	if p.compression == 6 || p.compression == 7 { // JPEG
		n += 4 * c(p.blockWidth) * c(p.blockRows)
	}
	return c(p.width)*c(p.height)*perPixel + n
}

// maxTIFFBlocks bounds the strips or tiles of one page.
const maxTIFFBlocks = 1 << 20

// largestBlock returns the size of the page's largest strip or tile as the
// decoder will hold it. The decoder reads a compressed block up to 8 bytes a
// pixel of the block, whatever the layout says, so a Deflate, LZW or
// PackBits block is decompressed here first, into a counter (no memory):
// a small strip can expand to far more than its rows. CCITT output is bounded
// by the rows; uncompressed blocks are their byte counts. It stops at
// limit: the caller refuses the page anyway.
func (p tiffPage) largestBlock(r io.ReaderAt, limit int64) (int64, error) {
	switch p.compression {
	case 2, 3, 4: // CCITT: a bit a pixel, bounded by the block's rows
		return 0, nil
	}
	if p.offsetsTag == nil || p.countsTag == nil {
		return 0, errors.New("no strip offsets or byte counts")
	}
	// The decoder stops reading a block there, so counting need not go on.
	c := func(v int) int64 { return int64(min(max(v, 1), 1<<20)) }
	decoderLimit := 8 * c(p.blockWidth) * c(p.blockRows)
	limit = min(limit, decoderLimit)
	offsets, err := tiffArray(r, p.byteOrder, p.offsetsTag)
	if err != nil {
		return 0, err
	}
	counts, err := tiffArray(r, p.byteOrder, p.countsTag)
	if err != nil {
		return 0, err
	}
	var largest int64
	// One inflater for every block: each new one is ~45 KB of garbage,
	// megabytes on a page of thin strips.
	var inflater io.ReadCloser
	defer func() {
		if inflater != nil {
			inflater.Close()
		}
	}()
	for i := range min(len(offsets), len(counts)) {
		var n int64
		sr := io.NewSectionReader(r, offsets[i], counts[i])
		var dec io.Reader
		switch p.compression {
		case 1: // none
			n = counts[i]
		case 8, 32946: // Deflate
			var err error
			if inflater == nil {
				inflater, err = zlib.NewReader(sr)
			} else {
				err = inflater.(zlib.Resetter).Reset(sr, nil)
			}
			if err != nil {
				var ce ctxError
				if errors.As(err, &ce) {
					return 0, err
				}
				inflater = nil
				continue // a damaged block is the decoder's to refuse
			}
			dec = inflater
		case 5: // LZW
			dec = lzw.NewReader(sr, lzw.MSB, 8)
		case 32773: // PackBits
			dec = &packBitsCounter{r: bufio.NewReader(sr)}
		default:
			// JPEG and anything else: assume the decoder's own bound.
			return decoderLimit, nil
		}
		if dec != nil {
			n, err = io.Copy(io.Discard, io.LimitReader(dec, limit+1))
			if c, ok := dec.(io.Closer); ok && dec != inflater {
				c.Close()
			}
			// A damaged block is the decoder's to refuse; only a read
			// refused at the deadline stops the count.
			var ce ctxError
			if errors.As(err, &ce) {
				return 0, err
			}
		}
		largest = max(largest, min(n, decoderLimit))
		if largest > limit {
			break
		}
	}
	return largest, nil
}

// tiffArray reads the SHORT or LONG values of a directory entry.
func tiffArray(r io.ReaderAt, bo binary.ByteOrder, entry []byte) ([]int64, error) {
	typ, count := bo.Uint16(entry[2:]), bo.Uint32(entry[4:])
	size := map[uint16]int{3: 2, 4: 4}[typ]
	if size == 0 || count > maxTIFFBlocks {
		return nil, fmt.Errorf("strip table of type %d with %d entries", typ, count)
	}
	b := entry[8:12]
	if int(count)*size > 4 {
		b = make([]byte, int(count)*size)
		if _, err := r.ReadAt(b, int64(bo.Uint32(entry[8:]))); err != nil {
			return nil, fmt.Errorf("read strip table: %w", err)
		}
	}
	vals := make([]int64, count)
	for i := range vals {
		if size == 2 {
			vals[i] = int64(bo.Uint16(b[2*i:]))
		} else {
			vals[i] = int64(bo.Uint32(b[4*i:]))
		}
	}
	return vals, nil
}

// packBitsCounter decodes PackBits (TIFF 6.0, section 9) and yields the
// decoded bytes as zeros: only their number matters here.
type packBitsCounter struct {
	r       *bufio.Reader
	pending int  // bytes of the current run still to yield
	literal bool // whether they are read from r (a literal run)
}

func (p *packBitsCounter) Read(b []byte) (int, error) {
	for p.pending == 0 {
		h, err := p.r.ReadByte()
		if err != nil {
			return 0, err
		}
		switch n := int8(h); {
		case n >= 0:
			p.pending, p.literal = int(n)+1, true
		case n != -128:
			if _, err := p.r.ReadByte(); err != nil {
				return 0, err
			}
			p.pending, p.literal = 1-int(n), false
		}
	}
	n := min(len(b), p.pending)
	if p.literal {
		var err error
		if n, err = p.r.Read(b[:n]); err != nil {
			return n, err
		}
	} else {
		clear(b[:n])
	}
	p.pending -= n
	return n, nil
}
