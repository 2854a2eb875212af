package faxdoc

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/pdfcpu/pdfcpu/pkg/api"
)

func TestUndrawable(t *testing.T) {
	tests := []struct {
		in   string
		want rune
		bad  bool
	}{
		{"", 0, false},
		{"ACME Legal", 0, false},
		{"Zürich Ελλάδα Москва – “quotes” … €", 0, false},
		{"line one\nline two\r\n\ttabbed\u00a0nbsp\u3000ideographic space", 0, false},
		{"Tokyo 漢字", '漢', true},
		{"hello 😀 world", '😀', true},
		{"a\u200b", '\u200b', true}, // zero-width space: no glyph, not a space to unicode.IsSpace
	}
	for _, tt := range tests {
		r, bad := testComposer.Undrawable(tt.in)
		if r != tt.want || bad != tt.bad {
			t.Errorf("Undrawable(%q) = %q, %v; want %q, %v", tt.in, r, bad, tt.want, tt.bad)
		}
	}
}

func TestWrap(t *testing.T) {
	f := testComposer.regular
	long := strings.Repeat("x", 200)
	tests := []struct {
		name, in string
		width    float64
		check    func(lines []string) bool
	}{
		{"paragraphs kept", "one\n\ntwo", 500, func(l []string) bool { return strings.Join(l, "|") == "one||two" }},
		{"crlf", "one\r\ntwo", 500, func(l []string) bool { return strings.Join(l, "|") == "one|two" }},
		{"wraps words", "aaa bbb ccc", f.width("aaa bbb", 10) + 1, func(l []string) bool { return strings.Join(l, "|") == "aaa bbb|ccc" }},
		{"breaks a long word", long, 100, func(l []string) bool {
			for _, x := range l {
				if f.width(x, 10) > 100 {
					return false
				}
			}
			return len(l) > 1 && strings.Join(l, "") == long
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wrap(f, tt.in, 10, tt.width); !tt.check(got) {
				t.Errorf("wrap(%q) = %q", tt.in, got)
			}
		})
	}
}

func TestCoverMessageOverflowIsCut(t *testing.T) {
	// 2000 characters in short lines overflow the page even at 8 points.
	msg := strings.Repeat("short line\n", 180)
	var out bytes.Buffer
	if _, err := testComposer.Compose(context.Background(), &out, bytes.NewReader(fixturePDF(letter)), faxes.Composition{
		Cover: &faxes.CoverPage{Message: msg}, At: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC),
	}); err != nil {
		t.Fatal(err)
	}
	validatePDF(t, out.Bytes())
	cover := strings.Split(pdftotext(t, out.Bytes()), "\f")[0]
	if !strings.Contains(cover, "short line …") {
		t.Errorf("the cut message does not end in an ellipsis:\n%s", cover)
	}
	if n := strings.Count(cover, "short line"); n < 40 || n >= 180 {
		t.Errorf("%d message lines on the cover", n)
	}
	if strings.Contains(cover, "SUBJECT") || strings.Contains(cover, "null") {
		t.Errorf("empty fields shown:\n%s", cover)
	}
}

func TestHeaderOnNarrowPageIsCut(t *testing.T) {
	var out bytes.Buffer
	if _, err := testComposer.Compose(context.Background(), &out, bytes.NewReader(fixturePDF(srcPage{w: 300, h: 400})), faxes.Composition{
		Header: strings.Repeat("Long Company Name ", 3), From: "+442071838750", At: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC),
	}); err != nil {
		t.Fatal(err)
	}
	text := pdftotext(t, out.Bytes())
	if !strings.Contains(text, "Page 1/1") || !strings.Contains(text, "…") || !strings.Contains(text, "2026-01-02 03:04 UTC") {
		t.Errorf("header on a narrow page:\n%s", text)
	}
}

func TestComposeRefuses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := testComposer.Compose(ctx, &bytes.Buffer{}, bytes.NewReader(fixturePDF(letter)), faxes.Composition{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
	if _, err := testComposer.Compose(context.Background(), &bytes.Buffer{}, bytes.NewReader([]byte("not a pdf")), faxes.Composition{}); !errors.Is(err, ErrSource) {
		t.Errorf("not a PDF: err = %v", err)
	}
	pages := make([]srcPage, MaxPages+1)
	for i := range pages {
		pages[i] = letter
	}
	if _, err := testComposer.Compose(context.Background(), &bytes.Buffer{}, bytes.NewReader(fixturePDF(pages...)), faxes.Composition{}); !errors.Is(err, ErrSource) {
		t.Errorf("%d pages: err = %v", len(pages), err)
	}
}

func needPdftoppm(t testing.TB) {
	if _, err := exec.LookPath("pdftoppm"); err != nil {
		t.Skip("pdftoppm (poppler-utils) is not installed")
	}
}

func TestRasterize(t *testing.T) {
	needPdftoppm(t)
	pdf := fixturePDF(letter, a4Landscape, srcPage{w: 612, h: 20000})
	tests := []struct {
		name     string
		page     int
		res      faxes.Resolution
		maxWidth int
		w, h     int
	}{
		// Letter: 8.5 in × 204 = 1734 dots, scaled to the 1728-dot line;
		// 11 in × 98 = 1078 rows × 1728/1734, doubled.
		{"letter standard", 1, faxes.ResolutionStandard, 0, 1728, 2 * 1074},
		{"letter fine", 1, faxes.ResolutionFine, 0, 1728, 2148},
		{"letter fine preview", 1, faxes.ResolutionFine, 400, 400, 497},
		// A4 landscape: 11.69 in × 204 = 2385 dots, scaled to 1728;
		// 8.26 in × 196 = 1620 rows, scaled alike.
		{"landscape A4 fine", 2, faxes.ResolutionFine, 0, 1728, 1173},
		// A page 277 inches long is scaled to the row bound.
		{"absurdly long page", 3, faxes.ResolutionFine, 0, 0, maxRows},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := testComposer.Rasterize(context.Background(), bytes.NewReader(pdf), int64(len(pdf)), tt.page, tt.res, tt.maxWidth)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			got := img.Bounds().Size()
			if (tt.w != 0 && abs(got.X-tt.w) > 1) || abs(got.Y-tt.h) > 2 {
				t.Errorf("size %v, want %dx%d", got, tt.w, tt.h)
			}
			if !hasBlack(img) {
				t.Error("the page rendered blank")
			}
		})
	}
	if _, err := testComposer.Rasterize(context.Background(), bytes.NewReader(pdf), int64(len(pdf)), 4, faxes.ResolutionFine, 0); err == nil {
		t.Error("page 4 of 3 rasterized")
	}
	if _, err := testComposer.Rasterize(context.Background(), bytes.NewReader(pdf), int64(len(pdf)), 0, faxes.ResolutionFine, 0); err == nil {
		t.Error("page 0 rasterized")
	}
	missing := New(Options{PdftoppmPath: "/nonexistent/pdftoppm"})
	if _, err := missing.Rasterize(context.Background(), bytes.NewReader(pdf), int64(len(pdf)), 1, faxes.ResolutionFine, 0); !errors.Is(err, ErrRasterizerMissing) ||
		core.ErrorKind(err) != core.KindUnavailable || core.ErrorCode(err) != faxes.CodePageImagesUnavailable {
		t.Errorf("without pdftoppm: err = %v (kind %v, code %q), want unavailable %s", err, core.ErrorKind(err), core.ErrorCode(err), faxes.CodePageImagesUnavailable)
	}
}

func abs(i int) int { return max(i, -i) }

func hasBlack(img image.Image) bool {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, _, _, _ := img.At(x, y).RGBA(); r < 0x8000 {
				return true
			}
		}
	}
	return false
}

func TestReport(t *testing.T) {
	needPdftoppm(t)
	pdf := fixturePDF(letter)
	first, err := testComposer.Rasterize(context.Background(), bytes.NewReader(pdf), int64(len(pdf)), 1, faxes.ResolutionStandard, 400)
	if err != nil {
		t.Fatal(err)
	}
	loc := newYork(t)
	start := time.Date(2026, 11, 29, 10, 4, 0, 0, loc)
	sum := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	for _, img := range [][]byte{first, nil} {
		var out bytes.Buffer
		err := testComposer.Report(context.Background(), &out, faxes.TransmissionReport{
			FaxID: "fax_01JDEXAMPLE", To: "+12025550100", From: "+12125550100", RemoteStationID: "ZÜRICH OFFICE",
			Pages: 3, PagesSent: 2, Attempts: 2, Duration: 95 * time.Second, Started: start, Finished: start.Add(2 * time.Minute),
			Result: "partial", Reason: "the line dropped during page 3", Resolution: faxes.ResolutionFine,
			DocumentSHA256: sum, FirstPage: img,
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := validatePDF(t, out.Bytes()); n != 1 {
			t.Errorf("report has %d pages", n)
		}
		text := pdftotext(t, out.Bytes())
		for _, w := range []string{"Transmission Report", "PARTIAL", "fax_01JDEXAMPLE", "+1 202-555-0100", "+1 212-555-0100", "ZÜRICH OFFICE",
			"2 sent of 3", "Attempts", "1m35s", "2026-11-29 10:06:00 EST", "fine (204 × 196 dpi)", "the line dropped during page 3",
			sum[:32], sum[32:]} {
			if !strings.Contains(text, w) {
				t.Errorf("report lacks %q:\n%s", w, text)
			}
		}
		if hasImage := reportImages(t, out.Bytes()) == 1; hasImage != (img != nil) {
			t.Errorf("image embedded = %v with image %v", hasImage, img != nil)
		}
	}
}

// reportImages counts the image XObjects of page 1.
func reportImages(t *testing.T, pdf []byte) int {
	t.Helper()
	conf := pdfConfig(0)
	ctx, err := api.ReadValidateAndOptimize(bytes.NewReader(pdf), conf)
	if err != nil {
		t.Fatal(err)
	}
	_, _, inh, err := ctx.PageDict(1, false)
	if err != nil {
		t.Fatal(err)
	}
	xo, err := ctx.DereferenceDict(inh.Resources["XObject"])
	if err != nil {
		t.Fatal(err)
	}
	return len(xo)
}

// TestConcurrentCompositions shares one Composer (its fonts) between
// goroutines; run with -race.
func TestConcurrentCompositions(t *testing.T) {
	c := New(Options{MaxConcurrent: 4})
	pdf := fixturePDF(letter, a4Landscape)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			var out bytes.Buffer
			_, err := c.Compose(context.Background(), &out, bytes.NewReader(pdf), faxes.Composition{
				Header: "Parallel", At: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), Cover: &faxes.CoverPage{Subject: strings.Repeat("s", i)},
			})
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestRasterizeFromFile: a document already in a file (the spool of a
// blob, unlinked) is read by pdftoppm through its descriptor, not copied
// again, and renders the same page as from memory.
func TestRasterizeFromFile(t *testing.T) {
	needPdftoppm(t)
	pdf := fixturePDF(letter, a4Landscape)
	f, err := os.CreateTemp(t.TempDir(), "spool-*.pdf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(pdf); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.Name()); err != nil { // as the spool leaves it
		t.Fatal(err)
	}
	want, err := testComposer.Rasterize(context.Background(), bytes.NewReader(pdf), int64(len(pdf)), 2, faxes.ResolutionFine, 300)
	if err != nil {
		t.Fatal(err)
	}
	got, err := testComposer.Rasterize(context.Background(), f, int64(len(pdf)), 2, faxes.ResolutionFine, 300)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("page from the file (%d bytes) differs from the page from memory (%d bytes)", len(got), len(want))
	}
}
