package convert

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/internal/fixtures"
)

func wantCode(t *testing.T, err error, kind core.Kind, code string) {
	t.Helper()
	var ce *core.Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %v (%T), want *core.Error %s", err, err, code)
	}
	if ce.Code != code || ce.Kind != kind {
		t.Fatalf("got kind %d code %s (%s), want kind %d code %s", ce.Kind, ce.Code, ce.Message, kind, code)
	}
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestDetect(t *testing.T) {
	t.Parallel()
	onePage := pdfBytes(t, pdfSpec{pages: 1})
	tests := []struct {
		name string
		data []byte
		want documents.FileKind // empty: unsupported
	}{
		{"pdf", onePage, documents.FilePDF},
		{"pdf with junk before the header", pdfBytes(t, pdfSpec{pages: 1, junk: "From scanner\r\n"}), documents.FilePDF},
		{"truncated pdf is still a pdf", onePage[:200], documents.FilePDF},
		{"png", pngBytes(t), documents.FilePNG},
		{"jpeg", jpegBytes(t), documents.FileJPEG},
		{"gif", gifBytes(t), documents.FileGIF},
		{"tiff little-endian", tiffBytes(t), documents.FileTIFF},
		{"tiff big-endian", append([]byte("MM\x00*"), make([]byte, 100)...), documents.FileTIFF},
		{"rtf", []byte(`{\rtf1\ansi Hello}`), documents.FileRTF},
		{"docx", docxBytes(t, 1), documents.FileDOCX},
		{"xlsx", xlsxBytes(t), documents.FileXLSX},
		{"odt", odtBytes(t), documents.FileODT},
		{"ods", odsBytes(t), documents.FileODS},
		{"doc", cfbBytes([]string{"\x01CompObj", "WordDocument", "1Table"}, nil), documents.FileDOC},
		{"xls (BIFF8)", cfbBytes([]string{"Workbook", "\x05SummaryInformation"}, nil), documents.FileXLS},
		{"xls (BIFF5)", cfbBytes([]string{"Book"}, nil), documents.FileXLS},
		{"doc with an embedded workbook", cfbBytes([]string{"WordDocument"}, []string{"Workbook"}), documents.FileDOC},
		{"many directory sectors", cfbBytes([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "Workbook"}, nil), documents.FileXLS},
		{"ole2 with only a nested workbook", cfbBytes(nil, []string{"Workbook"}), ""},
		{"powerpoint", cfbBytes([]string{"PowerPoint Document"}, nil), ""},
		{"truncated ole2", cfbMagic, ""},
		{"plain zip", zipBytes(t, zipEntry{"notes.txt", "hello"}), ""},
		{"zip with word/ but no content types", zipBytes(t, zipEntry{"word/document.xml", "<x/>"}), ""},
		{"odp presentation", odfBytes(t, "application/vnd.oasis.opendocument.presentation", ""), ""},
		{"broken zip", []byte("PK\x03\x04garbage"), ""},
		{"random bytes", randomBytes(8192), ""},
		{"plain text", []byte("just some text\n"), ""},
		{"html", []byte("<!doctype html><html></html>"), ""},
		{"one byte", []byte{0x89}, ""},
	}
	c := newConverter(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.Detect(context.Background(), writeTemp(t, "upload", tt.data))
			// The bytes in memory are told apart as the file is (CountPDF).
			if mem, merr := detectAt(bytes.NewReader(tt.data), int64(len(tt.data))); mem != got || core.ErrorCode(merr) != core.ErrorCode(err) {
				t.Errorf("detectAt = %q, %v; Detect = %q, %v", mem, merr, got, err)
			}
			if tt.want == "" {
				wantCode(t, err, core.KindUnsupportedMedia, documents.CodeUnsupportedType)
				var ce *core.Error
				errors.As(err, &ce)
				if !bytes.Contains([]byte(ce.Message), []byte("PDF, PNG, JPEG, TIFF, GIF, DOC, DOCX, XLS, XLSX, ODT, ODS, RTF")) {
					t.Errorf("message does not list what is supported: %s", ce.Message)
				}
				if len(ce.Fields["supported"].([]string)) != 12 {
					t.Errorf("supported field: %v", ce.Fields["supported"])
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Detect = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestToPDF(t *testing.T) {
	t.Parallel()
	three := pdfBytes(t, pdfSpec{pages: 3})
	tests := []struct {
		name  string
		data  []byte
		kind  documents.FileKind
		pages int
		code  string // error code, if the conversion must fail
	}{
		{"one page", pdfBytes(t, pdfSpec{pages: 1}), documents.FilePDF, 1, ""},
		{"three pages", three, documents.FilePDF, 3, ""},
		{"indirect lengths", pdfBytes(t, pdfSpec{pages: 4, indirectLengths: true, imageBytes: 20000}), documents.FilePDF, 4, ""},
		{"large streams", pdfBytes(t, pdfSpec{pages: 2, imageBytes: 300000}), documents.FilePDF, 2, ""},
		{"junk before header", pdfBytes(t, pdfSpec{pages: 2, junk: "%%%junk\n"}), documents.FilePDF, 2, ""},
		{"xref stream and object streams", rewritePDF(t, pdfBytes(t, pdfSpec{pages: 5, imageBytes: 10000})), documents.FilePDF, 5, ""},
		{"incremental update", appendUpdate(t, three), documents.FilePDF, 3, ""},
		{"truncated in the middle", three[:len(three)/2], documents.FilePDF, 0, documents.CodeCorruptDocument},
		// Every object is intact and pdfcpu alone would rebuild the xref, but
		// we refuse damaged files (see pdfPages).
		{"trailer cut off", three[:len(three)-40], documents.FilePDF, 0, documents.CodeCorruptDocument},
		{"header only", []byte("%PDF-1.7\n"), documents.FilePDF, 0, documents.CodeCorruptDocument},
		{"pdf header then random bytes", append([]byte("%PDF-1.4\n"), randomBytes(20000)...), documents.FilePDF, 0, documents.CodeCorruptDocument},
		{"encrypted with a user password", encryptPDF(t, three, "user-secret"), documents.FilePDF, 0, documents.CodeEncryptedDocument},
		{"encrypted, owner password only", encryptPDF(t, three, ""), documents.FilePDF, 0, documents.CodeEncryptedDocument},
		{"png", pngBytes(t), documents.FilePNG, 1, ""},
		{"jpeg", jpegBytes(t), documents.FileJPEG, 1, ""},
		{"gif", gifBytes(t), documents.FileGIF, 1, ""},
		{"tiff", tiffBytes(t), documents.FileTIFF, 1, ""},
		{"multi-page tiff", fixtures.MultiPageTIFF(3, 40, 60), documents.FileTIFF, 3, ""},
		{"truncated png", pngBytes(t)[:60], documents.FilePNG, 0, documents.CodeCorruptDocument},
		{"truncated jpeg", jpegBytes(t)[:100], documents.FileJPEG, 0, documents.CodeCorruptDocument},
		{"png header only", []byte("\x89PNG\r\n\x1a\n"), documents.FilePNG, 0, documents.CodeCorruptDocument},
	}
	c := newConverter(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := writeTemp(t, "source", tt.data)
			if kind, err := c.Detect(context.Background(), src); err != nil || kind != tt.kind {
				t.Fatalf("Detect = %q, %v; want %q", kind, err, tt.kind)
			}
			dst := filepath.Join(t.TempDir(), "document.pdf")
			pages, err := c.ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: tt.kind, Dst: dst})
			// CountPDF answers what ToPDF answers for a PDF, on the bytes in
			// memory, and refuses anything else as no PDF.
			counted, cerr := c.CountPDF(context.Background(), documents.CountRequest{PDF: tt.data})
			switch {
			case tt.kind != documents.FilePDF:
				wantCode(t, cerr, core.KindUnsupportedMedia, documents.CodeUnsupportedType)
			case core.ErrorCode(cerr) != core.ErrorCode(err) || counted != pages:
				t.Errorf("CountPDF = %d, %v; ToPDF = %d, %v", counted, cerr, pages, err)
			}
			if tt.code != "" {
				wantCode(t, err, core.KindUnprocessable, tt.code)
				if _, err := os.Stat(dst); !os.IsNotExist(err) {
					t.Errorf("a failed conversion left %s behind", dst)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pages != tt.pages {
				t.Errorf("pages = %d, want %d", pages, tt.pages)
			}
			if tt.kind == documents.FilePDF {
				// Validated in place: the caller stores the original.
				if _, err := os.Stat(dst); !os.IsNotExist(err) {
					t.Errorf("a PDF source must not be copied to dst (%v)", err)
				}
				return
			}
			// Whatever we produced must pass our own validation again.
			if n, err := pdfPages(context.Background(), dst); err != nil || n != tt.pages {
				t.Errorf("re-validating the output: %d pages, %v", n, err)
			}
		})
	}
}

func TestImageTooLarge(t *testing.T) {
	t.Parallel()
	// A PNG header claiming 20000×20000 pixels: refused before decoding.
	b := pngBytes(t)
	b[16], b[17], b[18], b[19] = 0, 0, 0x4e, 0x20
	b[20], b[21], b[22], b[23] = 0, 0, 0x4e, 0x20
	binary.BigEndian.PutUint32(b[29:], crc32.ChecksumIEEE(b[12:29]))
	src := writeTemp(t, "big.png", b)
	_, err := newConverter(t, Options{}).ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: documents.FilePNG, Dst: filepath.Join(t.TempDir(), "out.pdf")})
	wantCode(t, err, core.KindUnprocessable, documents.CodeConversionFailed)
}

// pdfcpu checks the first page of a TIFF only; a later page claiming huge
// dimensions must be refused before anything is decoded.
func TestTIFFLaterPageTooLarge(t *testing.T) {
	t.Parallel()
	src := writeTemp(t, "pages.tif", fixtures.MultiPageTIFF(3, 40, 60, 30000, 30000))
	_, err := newConverter(t, Options{}).ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: documents.FileTIFF, Dst: filepath.Join(t.TempDir(), "out.pdf")})
	wantCode(t, err, core.KindUnprocessable, documents.CodeConversionFailed)
}

func TestUnsupportedKind(t *testing.T) {
	t.Parallel()
	src := writeTemp(t, "x", []byte("x"))
	_, err := newConverter(t, Options{}).ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: documents.FileKind("text/plain"), Dst: filepath.Join(t.TempDir(), "out.pdf")})
	wantCode(t, err, core.KindUnsupportedMedia, documents.CodeUnsupportedType)
}

// Mangled PDFs must come back as corrupt_document, never as a panic or an
// internal error.
func TestPDFNeverPanics(t *testing.T) {
	t.Parallel()
	base := rewritePDF(t, pdfBytes(t, pdfSpec{pages: 3, imageBytes: 5000}))
	classic := pdfBytes(t, pdfSpec{pages: 3, imageBytes: 5000, indirectLengths: true})
	r := rand.New(rand.NewPCG(7, 11))
	c := newConverter(t, Options{})
	for i := 0; i < 300; i++ {
		src := base
		if i%2 == 1 {
			src = classic
		}
		b := bytes.Clone(src)
		for j := 0; j < 1+r.IntN(8); j++ {
			b[r.IntN(len(b))] = byte(r.Uint32())
		}
		p := writeTemp(t, "fuzzed.pdf", b)
		pages, err := c.ToPDF(context.Background(), documents.ConvertRequest{Src: p, Kind: documents.FilePDF, Dst: p + ".out"})
		if err == nil {
			if pages < 1 {
				t.Fatalf("case %d: %d pages without an error", i, pages)
			}
			continue
		}
		var ce *core.Error
		if !errors.As(err, &ce) || (ce.Code != documents.CodeCorruptDocument && ce.Code != documents.CodeEncryptedDocument) {
			t.Fatalf("case %d: %v", i, err)
		}
	}
}

// FuzzPDFPages: go test -fuzz=FuzzPDFPages ./core/convert
func FuzzPDFPages(f *testing.F) {
	f.Add(pdfBytes(f, pdfSpec{pages: 2}))
	f.Add(pdfBytes(f, pdfSpec{pages: 2, imageBytes: 5000, indirectLengths: true}))
	f.Add(rewritePDF(f, pdfBytes(f, pdfSpec{pages: 2, imageBytes: 5000})))
	f.Add(appendUpdate(f, pdfBytes(f, pdfSpec{pages: 1})))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.pdf")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		pages, err := pdfPages(context.Background(), p)
		if err == nil {
			if pages < 1 {
				t.Fatalf("%d pages without an error", pages)
			}
			return
		}
		var ce *core.Error
		if !errors.As(err, &ce) || (ce.Code != documents.CodeCorruptDocument && ce.Code != documents.CodeEncryptedDocument) {
			t.Fatalf("%v", err)
		}
	})
}
