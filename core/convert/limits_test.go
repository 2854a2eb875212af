package convert

import (
	"bytes"
	"compress/zlib"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/internal/fixtures"
)

// Every bound on image conversions answers before decoding, with the code
// docs/limits.md names.
func TestImageLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		data     []byte
		kind     documents.FileKind
		maxPages int
		timeout  time.Duration
		pages    int
		code     string
	}{
		{"TIFF at the page limit", fixtures.MultiPageTIFF(5, 8, 8), documents.FileTIFF, 5, 0, 5, ""},
		{"TIFF past the page limit", fixtures.MultiPageTIFF(6, 8, 8), documents.FileTIFF, 5, 0, 0, documents.CodeTooManyPages},
		{"TIFF past the walk's own bound", deflateTIFF(t, maxTIFFPages+1, 8, 8, 8, false), documents.FileTIFF, 0, 0, 0, documents.CodeTooManyPages},
		// 200 pages of 23 MP: each page is within bounds, together 4.6
		// gigapixels (minutes of CPU) are not.
		{"TIFF over the document's pixels", deflateTIFF(t, 200, 4800, 4800, 64, false), documents.FileTIFF, 350, 0, 0, documents.CodeConversionFailed},
		{"one-strip TIFF page whose strip alone is too large", deflateTIFF(t, 1, 4000, 4000, 4000, false), documents.FileTIFF, 0, 0, 0, documents.CodeConversionFailed},
		{"RGB PNG over the decode bound", withPNGSize(pngBytes(t), 3300, 3300), documents.FilePNG, 0, 0, 0, documents.CodeConversionFailed},
		{"PNG over the pixel bound", withPNGSize(pngBytes(t), 10001, 10000), documents.FilePNG, 0, 0, 0, documents.CodeConversionFailed},
		{"JPEG over the pixel bound", withJPEGSize(t, jpegBytes(t), 10001, 10000), documents.FileJPEG, 0, 0, 0, documents.CodeConversionFailed},
		{"JPEG at the pixel bound is embedded, not decoded", withJPEGSize(t, jpegBytes(t), 10000, 10000), documents.FileJPEG, 0, 0, 1, ""},
		{"GIF over the decode bound", withGIFSize(gifBytes(t), 6500, 6500), documents.FileGIF, 0, 0, 0, documents.CodeConversionFailed},
		// The directory walk once read LONGs as signed and masked them: this
		// page looked 1 pixel wide and the decoder allocated 2 GB for it.
		{"TIFF width above 2^31", fixtures.MultiPageTIFF(1, 4, 6, 0x80000001, 1), documents.FileTIFF, 0, 0, 0, documents.CodeConversionFailed},
		{"TIFF sides whose product overflows", fixtures.MultiPageTIFF(1, 4, 6, 0xffffffff, 0xffffffff), documents.FileTIFF, 0, 0, 0, documents.CodeConversionFailed},
		{"PNG width above 2^31", withPNGSize(pngBytes(t), 0x80000001, 1), documents.FilePNG, 0, 0, 0, documents.CodeConversionFailed},
		{"TIFF strips that inflate past their rows", deflateTIFF(t, 1, 2000, 2000, 2000, false, 8), documents.FileTIFF, 0, 0, 0, documents.CodeConversionFailed},
		{"TIFF strips that inflate a little (the decoder ignores the rest)", deflateTIFF(t, 1, 300, 300, 100, false, 2), documents.FileTIFF, 0, 0, 1, ""},
		{"conversion past the timeout", deflateTIFF(t, 3, 2000, 2000, 64, false), documents.FileTIFF, 0, time.Nanosecond, 0, documents.CodeConversionFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := writeTemp(t, "source", tt.data)
			dst := filepath.Join(t.TempDir(), "out.pdf")
			pages, err := newConverter(t, Options{Timeout: tt.timeout}).ToPDF(context.Background(),
				documents.ConvertRequest{Src: src, Kind: tt.kind, Dst: dst, MaxPages: tt.maxPages})
			if tt.code != "" {
				wantCode(t, err, core.KindUnprocessable, tt.code)
				return
			}
			if err != nil || pages != tt.pages {
				t.Fatalf("pages = %d, %v; want %d", pages, err, tt.pages)
			}
		})
	}
}

// More image layouts than TestToPDF's: each converts and re-validates.
func TestImageLayouts(t *testing.T) {
	t.Parallel()
	enc := func(img image.Image) []byte {
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	translucent := image.NewNRGBA(image.Rect(0, 0, 30, 20))
	grey16 := image.NewGray16(image.Rect(0, 0, 30, 20))
	var greyJPEG bytes.Buffer
	if err := jpeg.Encode(&greyJPEG, image.NewGray(image.Rect(0, 0, 30, 20)), nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		kind documents.FileKind
	}{
		{"translucent PNG", enc(translucent), documents.FilePNG},
		{"16-bit grey PNG", enc(grey16), documents.FilePNG},
		{"grey JPEG", greyJPEG.Bytes(), documents.FileJPEG},
		{"RGB TIFF in strips", deflateTIFF(t, 2, 30, 20, 3, true), documents.FileTIFF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := writeTemp(t, "source", tt.data)
			dst := filepath.Join(t.TempDir(), "out.pdf")
			pages, err := newConverter(t, Options{}).ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: tt.kind, Dst: dst})
			if err != nil || pages < 1 {
				t.Fatalf("pages = %d, %v", pages, err)
			}
			if n, err := pdfPages(context.Background(), dst); err != nil || n != pages {
				t.Errorf("re-validating the output: %d pages, %v", n, err)
			}
		})
	}
}

// Transparency is flattened onto white paper: a fully transparent pixel
// prints nothing, whatever colour it carries.
func TestFlateImageFlattensOntoWhite(t *testing.T) {
	t.Parallel()
	img := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	img.SetNRGBA(0, 0, color.NRGBA{R: 0, G: 0, B: 0, A: 0})
	img.SetNRGBA(1, 0, color.NRGBA{R: 0, G: 0, B: 0, A: 255})
	pi := flateImage(img)
	var b bytes.Buffer
	if err := pi.body(&b); err != nil {
		t.Fatal(err)
	}
	zr, err := zlib.NewReader(&b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{255, 255, 255, 0, 0, 0}; !bytes.Equal(got, want) {
		t.Errorf("pixels %v, want %v", got, want)
	}
}
