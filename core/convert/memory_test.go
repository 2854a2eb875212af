package convert

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
)

// deflateTIFF builds a TIFF of pages identical pages, w×h, 8-bit grey (or RGB
// if rgb), Deflate-compressed in strips of rowsPerStrip rows. Mostly white
// with a stripe pattern: it compresses about a thousandfold, as the
// adversary's file did (3.5 MB for 100 pages of 6000×6000).
//
// inflate, if given, makes every strip decompress to that many times its
// rows: a decompression bomb inside a plausible layout.
func deflateTIFF(t testing.TB, pages, w, h, rowsPerStrip int, rgb bool, inflate ...int) []byte {
	t.Helper()
	factor := 1
	if len(inflate) == 1 {
		factor = inflate[0]
	}
	spp := 1
	if rgb {
		spp = 3
	}
	// All pages share the strips: only the directories differ.
	var strips [][]byte
	for y := 0; y < h; y += rowsPerStrip {
		rows := min(rowsPerStrip, h-y)
		var b bytes.Buffer
		zw := zlib.NewWriter(&b)
		row := bytes.Repeat([]byte{0xff}, w*spp)
		for x := 0; x < len(row); x += 97 {
			row[x] = 0
		}
		for range rows * factor {
			zw.Write(row)
		}
		zw.Close()
		strips = append(strips, b.Bytes())
	}
	le := binary.LittleEndian
	b := []byte{'I', 'I', 42, 0, 0, 0, 0, 0}
	var offsets, counts []uint32
	for _, s := range strips {
		offsets = append(offsets, uint32(len(b)))
		counts = append(counts, uint32(len(s)))
		b = append(b, s...)
	}
	arr := func(v []uint32) uint32 {
		off := uint32(len(b))
		for _, x := range v {
			b = le.AppendUint32(b, x)
		}
		return off
	}
	offArr, cntArr := arr(offsets), arr(counts)
	bpsArr := uint32(len(b))
	b = le.AppendUint16(b, 8)
	b = le.AppendUint16(b, 8)
	b = le.AppendUint16(b, 8)
	photometric, bpsVal, bpsCount := uint32(1), uint32(8), uint32(1)
	if rgb {
		photometric, bpsVal, bpsCount = 2, bpsArr, 3
	}
	ifdPtr := 4
	type tag struct {
		id, typ uint16
		count   uint32
		val     uint32
	}
	for range pages {
		if len(b)%2 == 1 {
			b = append(b, 0)
		}
		le.PutUint32(b[ifdPtr:], uint32(len(b)))
		tags := []tag{
			{256, 4, 1, uint32(w)}, {257, 4, 1, uint32(h)}, {258, 3, bpsCount, bpsVal}, {259, 3, 1, 8},
			{262, 3, 1, photometric}, {273, 4, uint32(len(strips)), offArr}, {277, 3, 1, uint32(spp)},
			{278, 4, 1, uint32(rowsPerStrip)}, {279, 4, uint32(len(strips)), cntArr},
		}
		if len(strips) == 1 {
			tags[5].val, tags[8].val = offsets[0], counts[0]
		}
		b = le.AppendUint16(b, uint16(len(tags)))
		for _, tg := range tags {
			b = le.AppendUint16(b, tg.id)
			b = le.AppendUint16(b, tg.typ)
			b = le.AppendUint32(b, tg.count)
			if tg.typ == 3 && tg.count == 1 {
				b = le.AppendUint16(b, uint16(tg.val))
				b = le.AppendUint16(b, 0)
			} else {
				b = le.AppendUint32(b, tg.val)
			}
		}
		ifdPtr = len(b)
		b = le.AppendUint32(b, 0)
	}
	return b
}

// withPNGSize rewrites a PNG's header to claim w×h: a decompression bomb
// needs no more than that to make a naive decoder allocate.
func withPNGSize(b []byte, w, h uint32) []byte {
	b = bytes.Clone(b)
	binary.BigEndian.PutUint32(b[16:], w)
	binary.BigEndian.PutUint32(b[20:], h)
	binary.BigEndian.PutUint32(b[29:], crc32.ChecksumIEEE(b[12:29]))
	return b
}

// withJPEGSize rewrites the first SOF segment of a JPEG to claim w×h.
func withJPEGSize(t testing.TB, b []byte, w, h uint16) []byte {
	b = bytes.Clone(b)
	for i := 2; i+9 < len(b); {
		if b[i] != 0xff {
			t.Fatal("no SOF marker")
		}
		m := b[i+1]
		if m == 0xc0 || m == 0xc2 {
			binary.BigEndian.PutUint16(b[i+5:], h)
			binary.BigEndian.PutUint16(b[i+7:], w)
			return b
		}
		i += 2 + int(binary.BigEndian.Uint16(b[i+2:]))
	}
	t.Fatal("no SOF marker")
	return nil
}

// withGIFSize rewrites a GIF's logical screen to w×h.
func withGIFSize(b []byte, w, h uint16) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint16(b[6:], w)
	binary.LittleEndian.PutUint16(b[8:], h)
	return b
}

func noisyPNG(t testing.TB, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i*7 + i/5)
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func greyPNG(t testing.TB, w, h int) []byte {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		img.SetGray(y%w, y, color.Gray{Y: 0})
	}
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// conversionBudgetKB is the most one conversion may grow the process's peak
// RSS, whatever the upload (issue 10, defect 1).
const conversionBudgetKB = 64 << 10

const measureConvertEnv = "FAXHUB_MEASURE_CONVERT"

// TestConvertWorstCasesMemory converts the worst uploads we know, each in a
// child process, and checks how much each grew the child's peak RSS: the
// adversary's TIFF (100 pages of 6000×6000), pages just inside the decode
// bound (many of them), decompression-bomb headers for every image format
// and a PDF with far more pages than allowed. Before the fix the adversary's
// TIFF alone grew RSS by ~55 MB a page.
func TestConvertWorstCasesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("converts large images")
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory makes RSS meaningless")
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	manyPagePDF := filepath.Join(dir, "many-pages.pdf")
	f, err := os.Create(manyPagePDF)
	if err != nil {
		t.Fatal(err)
	}
	writePDF(t, f, pdfSpec{pages: 20000})
	f.Close()
	tests := []struct {
		name  string
		path  string
		kind  documents.FileKind
		pages int    // if it converts
		code  string // if it must be refused
	}{
		{"adversary's TIFF: 100 pages of 6000x6000, one strip each", write("adversary.tif", deflateTIFF(t, 100, 6000, 6000, 6000, false)), documents.FileTIFF, 0, documents.CodeConversionFailed},
		{"2000 tiny TIFF pages", write("pages.tif", deflateTIFF(t, 2000, 8, 8, 8, false)), documents.FileTIFF, 0, documents.CodeTooManyPages},
		{"40 grey TIFF pages at the decode bound", write("grey.tif", deflateTIFF(t, 40, 4800, 4800, 64, false)), documents.FileTIFF, 40, ""},
		{"12 RGB TIFF pages at the decode bound", write("rgb.tif", deflateTIFF(t, 12, 2400, 2400, 16, true)), documents.FileTIFF, 12, ""},
		{"3 one-strip RGB TIFF pages at the decode bound", write("strip.tif", deflateTIFF(t, 3, 1200, 1200, 1200, true)), documents.FileTIFF, 3, ""},
		// 3000x3000 grey in one strip looks like 27 MB to decode, but the
		// strip inflates to 8 bytes a pixel, which the decoder reads whole.
		{"TIFF strip that inflates eightfold", write("strip-bomb.tif", deflateTIFF(t, 2, 3000, 3000, 3000, false, 8)), documents.FileTIFF, 0, documents.CodeConversionFailed},
		{"3 one-strip TIFF pages inflating to the decoder's own limit", write("strip-bomb-ok.tif", deflateTIFF(t, 3, 800, 800, 800, false, 8)), documents.FileTIFF, 3, ""},
		{"RGB PNG at the decode bound", write("rgb.png", noisyPNG(t, 2500, 2400)), documents.FilePNG, 1, ""},
		{"grey PNG at the decode bound", write("grey.png", greyPNG(t, 4800, 4800)), documents.FilePNG, 1, ""},
		{"PNG header claiming 60000x60000", write("bomb.png", withPNGSize(greyPNG(t, 64, 64), 60000, 60000)), documents.FilePNG, 0, documents.CodeConversionFailed},
		{"PNG header claiming 9000x9000 (under the pixel bound)", write("bomb2.png", withPNGSize(noisyPNG(t, 64, 64), 9000, 9000)), documents.FilePNG, 0, documents.CodeConversionFailed},
		{"JPEG header claiming 65000x65000", write("bomb.jpg", withJPEGSize(t, jpegBytes(t), 65000, 65000)), documents.FileJPEG, 0, documents.CodeConversionFailed},
		{"GIF screen of 65535x65535", write("bomb.gif", withGIFSize(gifBytes(t), 65535, 65535)), documents.FileGIF, 0, documents.CodeConversionFailed},
		{"PDF of 20000 pages", manyPagePDF, documents.FilePDF, 0, documents.CodeTooManyPages},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rest, out := measureInChild(t, "TestMeasureConvertChild", measureConvertEnv+"="+string(tt.kind)+"|"+tt.path)
			if rest == "" {
				t.Fatalf("child printed no measurement:\n%s", out)
			}
			var pages, grewKB int
			var code string
			fmt.Sscanf(rest, "pages=%d grew_kb=%d code=%s", &pages, &grewKB, &code)
			st, _ := os.Stat(tt.path)
			t.Logf("%d KB upload: pages=%d code=%s, peak RSS grew by %d KB", st.Size()>>10, pages, code, grewKB)
			if code == "-" {
				code = ""
			}
			if code != tt.code || (tt.code == "" && pages != tt.pages) {
				t.Errorf("got pages=%d code=%q, want pages=%d code=%q", pages, code, tt.pages, tt.code)
			}
			if grewKB > conversionBudgetKB {
				t.Errorf("peak RSS grew by %d MB; the budget is %d MB", grewKB>>10, conversionBudgetKB>>10)
			}
		})
	}
}

func TestMeasureConvertChild(t *testing.T) {
	kind, p, ok := strings.Cut(os.Getenv(measureConvertEnv), "|")
	if !ok {
		t.Skip("helper for TestConvertWorstCasesMemory")
	}
	before := peakRSSKB(t)
	pages, err := newConverter(t, Options{}).ToPDF(context.Background(), documents.ConvertRequest{
		Src: p, Kind: documents.FileKind(kind), Dst: p + ".out.pdf", OwnerID: "own_1", MaxPages: 350,
	})
	code := "-"
	if err != nil {
		var ce *core.Error
		if !errors.As(err, &ce) {
			t.Fatal(err)
		}
		code = ce.Code
	}
	fmt.Printf("MEASURE pages=%d grew_kb=%d code=%s\n", pages, peakRSSKB(t)-before, code)
	fmt.Println("detail: " + strconv.Quote(fmt.Sprint(err)))
}
