package convert

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/internal/require"
)

func needTool(t *testing.T, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		require.Missing(t, name, "apt-get install "+pkg)
	}
}

// testPage is a page of a hand-written PDF: lines of text in its text
// layer and, under them, an optional image filling the page (a scan).
type testPage struct {
	lines []string
	scan  *image.Gray
}

// textPDF writes pages as a PDF: text in Helvetica (WinAnsi, so "é" is one
// byte in the content stream and two in pdftotext's UTF-8), scans as
// Flate-compressed grey images.
func textPDF(t testing.TB, pages ...testPage) string {
	t.Helper()
	var b bytes.Buffer
	var offs []int
	obj := func(body string) int {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offs), body)
		return len(offs)
	}
	stream := func(dict string, data []byte) int {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n<< %s /Length %d >>\nstream\n", len(offs), dict, len(data))
		b.Write(data)
		b.WriteString("\nendstream\nendobj\n")
		return len(offs)
	}
	b.WriteString("%PDF-1.4\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	offs = append(offs, 0) // 2: the page tree, written last
	font := obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	var kids []string
	for _, p := range pages {
		var content strings.Builder
		res := fmt.Sprintf("/Font << /F1 %d 0 R >>", font)
		if p.scan != nil {
			var z bytes.Buffer
			zw := zlib.NewWriter(&z)
			if _, err := zw.Write(p.scan.Pix); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			im := stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode",
				p.scan.Rect.Dx(), p.scan.Rect.Dy()), z.Bytes())
			res += fmt.Sprintf(" /XObject << /Im0 %d 0 R >>", im)
			content.WriteString("q 612 0 0 792 0 0 cm /Im0 Do Q\n")
		}
		if len(p.lines) > 0 {
			content.WriteString("BT /F1 7 Tf 8 TL 36 756 Td\n")
			for _, l := range p.lines {
				l = strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`, "é", `\351`).Replace(l)
				fmt.Fprintf(&content, "(%s) Tj T*\n", l)
			}
			content.WriteString("ET\n")
		}
		c := stream("", []byte(content.String()))
		kids = append(kids, fmt.Sprintf("%d 0 R", obj(fmt.Sprintf(
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << %s >> /Contents %d 0 R >>", res, c))))
	}
	offs[1] = b.Len()
	fmt.Fprintf(&b, "2 0 obj\n<< /Type /Pages /Count %d /Kids [%s] >>\nendobj\n", len(pages), strings.Join(kids, " "))
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return writeTemp(t, "fax.pdf", b.Bytes())
}

// scanOf renders lines as a 150 dpi US Letter scan: black Go Regular on
// white, nothing in any text layer.
func scanOf(t testing.TB, lines ...string) *image.Gray {
	t.Helper()
	f, err := opentype.Parse(goregular.TTF)
	if err != nil {
		t.Fatal(err)
	}
	face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: 28, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		t.Fatal(err)
	}
	defer face.Close()
	img := image.NewGray(image.Rect(0, 0, 1275, 1650))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	d := &font.Drawer{Dst: img, Src: image.NewUniform(color.Black), Face: face}
	for i, l := range lines {
		d.Dot = fixed.P(120, 200+i*60)
		d.DrawString(l)
	}
	return img
}

func lines(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestExtractText(t *testing.T) {
	needTool(t, "pdftotext", "poppler-utils")
	t.Parallel()
	digital := testPage{lines: []string{"Invoice 4711 from Acme Widgets", "Total due: 120.00 EUR"}}
	scan := testPage{scan: scanOf(t, "PURCHASE ORDER 8812", "DELIVER TO WAREHOUSE")}
	// A scan stamped with a page number: too little text to count.
	numbered := testPage{lines: []string{"2"}, scan: scan.scan}
	missing := filepath.Join(t.TempDir(), "tesseract")
	haveOCR := true
	if _, err := exec.LookPath("tesseract"); err != nil {
		haveOCR = false
	}
	long := lines(90, strings.Repeat("é", 100))
	// A tesseract that cannot read one page.
	brokenOCR := fakeTool(t, `case "$1" in *page.png) echo "Error in pixReadStream: Unknown format" >&2; exit 1;; esac`)

	tests := []struct {
		name  string
		pages []testPage
		opts  TextOptions
		ocr   bool // needs tesseract
		// want: status, method, words in the text (in order, each page's
		// words after the previous page's form feed), words in the note.
		status inbox.TextStatus
		method string
		text   [][]string
		note   []string
	}{
		{name: "text layer", pages: []testPage{digital, digital},
			status: inbox.TextExtracted, method: "text",
			text: [][]string{{"Invoice 4711", "Total due: 120.00 EUR"}, {"Acme Widgets"}}},
		{name: "scan read by OCR", pages: []testPage{scan}, ocr: true,
			status: inbox.TextExtracted, method: "ocr",
			text: [][]string{{"PURCHASE ORDER 8812", "WAREHOUSE"}}},
		{name: "text layer and a numbered scan", pages: []testPage{digital, numbered}, ocr: true,
			status: inbox.TextExtracted, method: "text+ocr",
			text: [][]string{{"Invoice 4711"}, {"PURCHASE ORDER 8812"}}},
		{name: "no OCR installed", pages: []testPage{digital, numbered, scan}, opts: TextOptions{TesseractPath: missing},
			status: inbox.TextOCRUnavailable, method: "text",
			text: [][]string{{"Invoice 4711"}, {"2"}, {}},
			note: []string{"tesseract-ocr is not installed", "2 pages without a text layer have no text"}},
		{name: "only scans, no OCR", pages: []testPage{scan}, opts: TextOptions{TesseractPath: missing},
			status: inbox.TextOCRUnavailable, method: "none",
			note: []string{"tesseract-ocr is not installed", "1 page without a text layer has no text"}},
		{name: "OCR page limit", pages: []testPage{scan, digital, scan}, opts: TextOptions{MaxOCRPages: 1}, ocr: true,
			status: inbox.TextTruncated, method: "text+ocr",
			text: [][]string{{"PURCHASE ORDER"}, {"Invoice 4711"}, {}},
			note: []string{"page 3 without a text layer was not read", "OCR reads at most 1 page of a fax"}},
		{name: "no language data", pages: []testPage{digital, scan}, opts: TextOptions{OCRLang: "xx+yy"}, ocr: true,
			status: inbox.TextOCRUnavailable, method: "text",
			text: [][]string{{"Invoice 4711"}, {}},
			note: []string{`no data for language "xx+yy"`, "tesseract-ocr-xx tesseract-ocr-yy", "1 page without a text layer has no text"}},
		{name: "OCR fails", pages: []testPage{scan, digital, scan}, opts: TextOptions{TesseractPath: brokenOCR},
			status: inbox.TextFailed, method: "text",
			text: [][]string{{}, {"Invoice 4711"}, {}},
			note: []string{"OCR of pages 1 and 3 failed", "Unknown format"}},
		{name: "blank page", pages: []testPage{{}}, ocr: true,
			status: inbox.TextEmpty, method: "none"},
		{name: "longer than kept", pages: []testPage{{lines: long}, {lines: long}, {lines: long}, {lines: long}, {lines: long}, {lines: long}, {lines: long}, {lines: long}, {lines: long}, {lines: long}, {lines: long}, {lines: long}, {lines: long}, {lines: long}, {lines: long}},
			status: inbox.TextTruncated, method: "text",
			text: [][]string{{"éééé"}}, note: []string{"cut at 256 KB"}},
		{name: "pdftotext missing", pages: []testPage{digital}, opts: TextOptions{PdftotextPath: missing},
			status: inbox.TextFailed, method: "none", note: []string{"pdftotext", "poppler-utils", "not installed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.ocr && !haveOCR {
				require.Missing(t, "tesseract", "apt-get install tesseract-ocr tesseract-ocr-eng")
			}
			t.Parallel()
			path := textPDF(t, tt.pages...)
			got, err := NewTextReader(tt.opts).Extract(t.Context(), path, len(tt.pages))
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.status || got.Method != tt.method {
				t.Fatalf("status %s, method %s; want %s, %s (note %q, text %q)", got.Status, got.Method, tt.status, tt.method, got.Note, core.CutUTF8(got.Text, 300))
			}
			if !utf8.ValidString(got.Text) || len(got.Text) > inbox.MaxText {
				t.Fatalf("text is %d bytes, valid UTF-8 %v", len(got.Text), utf8.ValidString(got.Text))
			}
			if tt.text == nil && got.Text != "" {
				t.Errorf("text %q, want none", got.Text)
			}
			pages := strings.Split(got.Text, "\f")
			if tt.text != nil && tt.status != inbox.TextTruncated && len(pages) != len(tt.text) {
				t.Errorf("%d pages of text, want %d: %q", len(pages), len(tt.text), got.Text)
			}
			for i, words := range tt.text {
				for _, w := range words {
					if i >= len(pages) || !strings.Contains(strings.ToUpper(pages[i]), strings.ToUpper(w)) {
						t.Errorf("page %d of the text lacks %q: %q", i+1, w, got.Text)
					}
				}
			}
			for _, w := range tt.note {
				if !strings.Contains(got.Note, w) {
					t.Errorf("note %q lacks %q", got.Note, w)
				}
			}
			if len(tt.note) == 0 && got.Note != "" {
				t.Errorf("note %q, want none", got.Note)
			}
		})
	}
}

// fakeTool writes a shell script standing in for a tool.
func fakeTool(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExtractBounds: time and output are bounded whatever the tools do.
func TestExtractBounds(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to fake tools with")
	}
	t.Parallel()
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	// A deadline that passed before the work began is the caller's to
	// retry: nothing was tried.
	if _, err := NewTextReader(TextOptions{}).Extract(expired, writeTemp(t, "late.pdf", []byte("%PDF-1.4\n")), 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline already passed: %v, want an error", err)
	}
	tests := []struct {
		name   string
		ctx    context.Context
		opts   func(t *testing.T) TextOptions
		status inbox.TextStatus
		note   string
	}{
		{"tool hangs with a child holding its output", t.Context(), func(t *testing.T) TextOptions {
			// Without the process group kill, Wait would wait for the
			// child's sleep until WaitDelay, then report no timeout.
			return TextOptions{PdftotextPath: fakeTool(t, "sleep 600 & wait"), Timeout: 300 * time.Millisecond}
		}, inbox.TextFailed, "did not finish in the time allowed"},
		{"endless output", t.Context(), func(t *testing.T) TextOptions {
			return TextOptions{PdftotextPath: fakeTool(t, "exec yes 'a line of text that never ends'")}
		}, inbox.TextTruncated, "longer than 1024 KB"},
		{"tool error", t.Context(), func(t *testing.T) TextOptions {
			return TextOptions{PdftotextPath: fakeTool(t, "echo 'Syntax Error: broken xref' >&2; exit 1")}
		}, inbox.TextFailed, "Syntax Error: broken xref"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeTemp(t, "fax.pdf", []byte("%PDF-1.4\n"))
			start := time.Now()
			got, err := NewTextReader(tt.opts(t)).Extract(tt.ctx, path, 1)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.status || !strings.Contains(got.Note, tt.note) {
				t.Fatalf("status %s, note %q; want %s, %q", got.Status, got.Note, tt.status, tt.note)
			}
			if len(got.Text) > inbox.MaxText {
				t.Errorf("text is %d bytes", len(got.Text))
			}
			// A process left behind holding the output would keep Wait
			// waiting for the whole WaitDelay.
			if d := time.Since(start); d >= toolWaitDelay {
				t.Errorf("took %s", d)
			}
		})
	}
}

// TestExtractWaiting: the wait for a slot ends with the caller's context; a
// caller cancelled or out of time gets an error (the job retries later),
// not a failed reading recorded for good.
func TestExtractWaiting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		busy     bool
		deadline bool
		err      error
	}{
		{"cancelled before", false, false, context.Canceled},
		{"cancelled waiting for a slot", true, false, context.Canceled},
		{"deadline waiting for a slot", true, true, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := NewTextReader(TextOptions{MaxConcurrent: 1})
				if tt.busy {
					r.slots <- struct{}{}
				}
				ctx, cancel := context.WithCancel(t.Context())
				if tt.deadline {
					ctx, cancel = context.WithTimeout(t.Context(), time.Minute)
				}
				defer cancel()
				if !tt.busy {
					cancel()
				}
				type result struct {
					got inbox.ExtractedText
					err error
				}
				done := make(chan result, 1)
				go func() {
					got, err := r.Extract(ctx, "/nonexistent.pdf", 1)
					done <- result{got, err}
				}()
				synctest.Wait()
				if !tt.deadline {
					cancel()
				}
				res := <-done
				if tt.err != nil {
					if !errors.Is(res.err, tt.err) {
						t.Fatalf("err %v, want %v", res.err, tt.err)
					}
					return
				}
				if res.err != nil || res.got.Status != inbox.TextFailed {
					t.Fatalf("%+v, %v; want failed", res.got, res.err)
				}
			})
		})
	}
}

func TestSplitPages(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		cut     bool
		texts   []string
		scanned []bool
	}{
		{"two pages", "  first page with enough text\f\n\nsecond page, also long enough  \n\n\f", false,
			[]string{"  first page with enough text", "second page, also long enough"}, []bool{false, false}},
		{"image page", "first page with enough text\f  7  \f", false,
			[]string{"first page with enough text", "  7"}, []bool{false, true}},
		{"cut mid page", "first page with enough text\fsecond", true,
			[]string{"first page with enough text", "second"}, []bool{false, true}},
		{"controls and bad UTF-8", "a\x00b\x1b\xffc page text is here\f", false,
			[]string{"ab\uFFFDc page text is here"}, []bool{false}},
		{"nothing", "", false, []string{""}, []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := splitPages([]byte(tt.out), tt.cut)
			if len(doc) != len(tt.texts) {
				t.Fatalf("%d pages, want %d: %+v", len(doc), len(tt.texts), doc)
			}
			for i, p := range doc {
				if p.text != tt.texts[i] || p.scanned != tt.scanned[i] {
					t.Errorf("page %d: %q scanned %v, want %q scanned %v", i+1, p.text, p.scanned, tt.texts[i], tt.scanned[i])
				}
			}
		})
	}
}
