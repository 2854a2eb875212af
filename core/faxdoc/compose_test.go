package faxdoc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/pdfcpu/pdfcpu/pkg/api"
)

var testComposer = New(Options{})

func newYork(t testing.TB) *time.Location {
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// pdftotext returns the text of pdf, pages separated by form feeds.
func pdftotext(t testing.TB, pdf []byte) string {
	t.Helper()
	bin, err := exec.LookPath("pdftotext")
	if err != nil {
		t.Skip("pdftotext (poppler-utils) is not installed")
	}
	p := filepath.Join(t.TempDir(), "doc.pdf")
	if err := os.WriteFile(p, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-layout", "-enc", "UTF-8", p, "-").CombinedOutput()
	if err != nil {
		t.Fatalf("pdftotext: %v: %s", err, out)
	}
	return string(out)
}

// validatePDF checks pdf with pdfcpu and returns its page count.
func validatePDF(t testing.TB, pdf []byte) int {
	t.Helper()
	conf := pdfConfig(0)
	conf.ValidationMode = 1 // strict
	if err := api.Validate(bytes.NewReader(pdf), conf); err != nil {
		t.Fatalf("pdfcpu does not validate the output: %v", err)
	}
	n, err := api.PageCount(bytes.NewReader(pdf), pdfConfig(0))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestComposeReadsBack(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 4, 0, 0, newYork(t))
	cover := &faxes.CoverPage{
		RecipientName: "Dana Zürich", RecipientCompany: "Ελλάδα Shipping", SenderName: "Ivan Москва",
		SenderCompany: "ACME Legal LLP", SenderPhone: "+1 212 555 0199", SenderFax: "+12125550100",
		Subject: "Signed lease", Message: "Please find the lease attached.\n\nSecond paragraph here.",
	}
	tests := []struct {
		name      string
		src       []srcPage
		cover     *faxes.CoverPage
		wantPages int
		want      []string // on every page
		wantCover []string // on page 1
	}{
		{name: "one page, no cover", src: []srcPage{letter}, wantPages: 1,
			want: []string{"2026-11-29 10:04 EST", "ACME Legal", "+1 212-555-0100", "Page 1/1", "Source page 1"}},
		{name: "three pages with landscape and rotated, cover", src: []srcPage{letter, a4Landscape, letterTurned}, cover: cover, wantPages: 4,
			want: []string{"2026-11-29 10:04 EST", "ACME Legal", "+1 212-555-0100"},
			wantCover: []string{"FAX", "TO", "Dana Zürich", "Ελλάδα Shipping", "Fax: +1 202-555-0100", "FROM", "Ivan Москва",
				"ACME Legal LLP", "Phone: +1 212 555 0199", "Fax: +1 212-555-0100", "November 29, 2026 10:04 EST", "4 (including this cover page)",
				"Signed lease", "Please find the lease attached.", "Second paragraph here.", "Page 1/4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := testComposer.Compose(context.Background(), &out, bytes.NewReader(fixturePDF(tt.src...)), faxes.Composition{
				Cover: tt.cover, Header: "ACME Legal", From: "+12125550100", To: "+12025550100", At: at, Resolution: faxes.ResolutionFine,
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.wantPages {
				t.Errorf("pages = %d, want %d", n, tt.wantPages)
			}
			if got := validatePDF(t, out.Bytes()); got != tt.wantPages {
				t.Errorf("output has %d pages, want %d", got, tt.wantPages)
			}
			pages := strings.Split(pdftotext(t, out.Bytes()), "\f")
			for i := 0; i < tt.wantPages; i++ {
				for _, w := range tt.want {
					if !strings.Contains(pages[i], w) {
						t.Errorf("page %d lacks %q:\n%s", i+1, w, pages[i])
					}
				}
				if pn := fmt.Sprintf("Page %d/%d", i+1, tt.wantPages); !strings.Contains(pages[i], pn) {
					t.Errorf("page %d lacks %q:\n%s", i+1, pn, pages[i])
				}
			}
			for _, w := range tt.wantCover {
				if !strings.Contains(pages[0], w) {
					t.Errorf("cover lacks %q:\n%s", w, pages[0])
				}
			}
			if tt.cover != nil && !strings.Contains(pages[1], "Source page 1") {
				t.Errorf("page 2 is not source page 1:\n%s", pages[1])
			}
		})
	}
}

// TestKeptFontFiles: a glyph set drawn again gets the font file kept for
// it, the bytes a fresh subset gives; another set (or the same glyphs
// standing for other characters) gets its own.
func TestKeptFontFiles(t *testing.T) {
	c := New(Options{})
	files := func(text string, fs *fontFiles) fontFile {
		u := newFontUse(c.regular)
		u.encode(text)
		gids := make([]int, 0, len(u.used))
		for g := range u.used {
			gids = append(gids, int(g))
		}
		slices.Sort(gids)
		ff, err := fs.get(u, gids, &c.zlibs)
		if err != nil {
			t.Fatal(err)
		}
		return ff
	}
	line := "2026-11-29 10:04 CET   ACME Legal   Page 1/3"
	first := files(line, c.fonts)
	again := files("Page 3/3 ACME Legal 2026-11-29 10:04 CET", c.fonts) // the same glyphs
	fresh := files(line, newFontFiles())
	if c.fonts.cache.Len() != 1 || &first.file[0] != &again.file[0] {
		t.Fatalf("the same glyph set was not served from the cache (%d kept)", c.fonts.cache.Len())
	}
	if !bytes.Equal(first.file, fresh.file) || !bytes.Equal(first.toUnicode, fresh.toUnicode) || first.length1 != fresh.length1 {
		t.Fatal("a kept font file differs from a fresh subset of the same glyphs")
	}
	if other := files("Ελληνικά", c.fonts); bytes.Equal(other.file, first.file) || c.fonts.cache.Len() != 2 {
		t.Fatalf("another glyph set shares a font file (%d kept)", c.fonts.cache.Len())
	}
}
