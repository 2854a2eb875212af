package convert

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/internal/fixtures"
)

// FuzzDetect: whatever the bytes, Detect names a supported kind or answers
// unsupported_file_type, and never panics.
// go test -fuzz=FuzzDetect ./core/convert
func FuzzDetect(f *testing.F) {
	f.Add(pdfBytes(f, pdfSpec{pages: 1}))
	f.Add(pngBytes(f))
	f.Add(tiffBytes(f))
	f.Add(docxBytes(f, 1))
	f.Add(odtBytes(f))
	f.Add(cfbBytes([]string{"WordDocument"}, []string{"Workbook"}))
	f.Add([]byte(`{\rtf1 x}`))
	c := newConverter(f, Options{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "upload")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		kind, err := c.Detect(context.Background(), p)
		if err == nil {
			if kindName(kind) == string(kind) {
				t.Fatalf("detected %q, which is not a supported kind", kind)
			}
			return
		}
		var ce *core.Error
		if !errors.As(err, &ce) || ce.Code != documents.CodeUnsupportedType {
			t.Fatalf("%v", err)
		}
	})
}

// FuzzTIFF: the directory walk and the conversion of any bytes claiming to
// be a TIFF end in pages or a client error (never a panic or an internal
// error), and the walk never reports more pages than its limit.
// go test -fuzz=FuzzTIFF ./core/convert
func FuzzTIFF(f *testing.F) {
	f.Add(tiffBytes(f))
	f.Add(fixtures.MultiPageTIFF(3, 4, 6))
	f.Add(fixtures.MultiPageTIFF(2, 4, 6, 30000, 30000))
	f.Add(deflateTIFF(f, 2, 16, 16, 5, false))
	f.Add(deflateTIFF(f, 1, 9, 7, 7, true))
	c := newConverter(f, Options{})
	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 5
		pages, err := tiffPages(bytes.NewReader(b), limit)
		if len(pages) > limit {
			t.Fatalf("%d pages past the limit %d (%v)", len(pages), limit, err)
		}
		var pixels int64
		for _, p := range pages {
			if p.decodeBytes(0) < 0 {
				t.Fatalf("negative estimate for %+v", p)
			}
			pixels += int64(max(p.width, 0)) * int64(max(p.height, 0))
		}
		if pixels > 1<<20 {
			// Legitimately seconds of decoding and compressing under the
			// fuzzer's instrumentation; the bounds themselves are checked
			// before decoding, and TestImageLimits covers them.
			return
		}
		src := filepath.Join(t.TempDir(), "source")
		if err := os.WriteFile(src, b, 0o600); err != nil {
			t.Fatal(err)
		}
		n, err := c.ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: documents.FileTIFF, Dst: src + ".pdf", MaxPages: limit})
		if err == nil {
			if n < 1 || n > limit {
				t.Fatalf("%d pages without an error", n)
			}
			return
		}
		var ce *core.Error
		if !errors.As(err, &ce) || ce.Kind != core.KindUnprocessable {
			t.Fatalf("%v", err)
		}
	})
}
