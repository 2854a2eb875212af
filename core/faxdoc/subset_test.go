package faxdoc

import (
	"bytes"
	"context"
	"encoding/binary"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/faxes"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// TestSubset reads a subset back with x/image/font/sfnt: the glyph id
// space is whole, every glyph kept has exactly its original outline (a
// composite's components included), every other one is empty, and the
// checksums hold.
func TestSubset(t *testing.T) {
	for _, tt := range []struct {
		name string
		ttf  []byte
	}{{"Go Regular", goregular.TTF}, {"Go Bold", gobold.TTF}} {
		t.Run(tt.name, func(t *testing.T) {
			fc, err := parseFace(tt.ttf)
			if err != nil {
				t.Fatal(err)
			}
			gids := usedGlyphs(fc, "Zürich Ελλάδα Москва Æǿ ŉ… Page 1/3")
			sub := fc.sfnt.subset(gids)
			checkChecksums(t, sub)
			orig, err := sfnt.Parse(tt.ttf)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sfnt.Parse(sub)
			if err != nil {
				t.Fatalf("the subset does not parse: %v", err)
			}
			if got.NumGlyphs() != orig.NumGlyphs() {
				t.Fatalf("subset has %d glyphs, want %d (the glyph id space is kept)", got.NumGlyphs(), orig.NumGlyphs())
			}
			drawn := map[int]bool{0: true}
			for _, g := range gids {
				drawn[g] = true
			}
			var ob, gb sfnt.Buffer
			ppem := fixed.I(1000)
			kept := 0
			for g := range orig.NumGlyphs() {
				want, err := orig.LoadGlyph(&ob, sfnt.GlyphIndex(g), ppem, nil)
				if err != nil {
					t.Fatal(err)
				}
				want = slices.Clone(want)
				have, err := got.LoadGlyph(&gb, sfnt.GlyphIndex(g), ppem, nil)
				if err != nil {
					t.Fatalf("glyph %d: %v", g, err)
				}
				if len(have) > 0 {
					kept++
				}
				switch {
				case drawn[g] && !slices.Equal(have, want):
					t.Errorf("glyph %d: outline of %d segments, want the original's %d", g, len(have), len(want))
				case !drawn[g] && len(have) > 0 && !isComponent(fc.sfnt, gids, g):
					t.Errorf("glyph %d is not drawn but kept its outline", g)
				}
				wa, _ := orig.GlyphAdvance(&ob, sfnt.GlyphIndex(g), ppem, font.HintingNone)
				ha, _ := got.GlyphAdvance(&gb, sfnt.GlyphIndex(g), ppem, font.HintingNone)
				if wa != ha {
					t.Errorf("glyph %d: advance %v, want %v", g, ha, wa)
				}
			}
			if kept > len(gids)+10 {
				t.Errorf("%d glyphs kept for %d drawn", kept, len(gids))
			}
			if len(sub) > len(tt.ttf)/5 {
				t.Errorf("subset is %d bytes, the whole font %d", len(sub), len(tt.ttf))
			}
		})
	}
}

// usedGlyphs returns the glyph ids that drawing s uses, sorted.
func usedGlyphs(fc *face, s string) []int {
	u := newFontUse(fc)
	u.encode(s)
	var gids []int
	for g := range u.used {
		gids = append(gids, int(g))
	}
	sort.Ints(gids)
	return gids
}

func isComponent(t *sfntTables, gids []int, g int) bool {
	for _, p := range gids {
		if slices.Contains(t.components[p], uint16(g)) {
			return true
		}
	}
	return false
}

// checkChecksums checks every table's checksum and the whole file's
// (head.checkSumAdjustment makes it 0xB1B0AFBA).
func checkChecksums(t *testing.T, ttf []byte) {
	t.Helper()
	n := int(binary.BigEndian.Uint16(ttf[4:]))
	for i := range n {
		rec := ttf[12+16*i:]
		tag := string(rec[:4])
		off, size := binary.BigEndian.Uint32(rec[8:]), binary.BigEndian.Uint32(rec[12:])
		if off%4 != 0 {
			t.Errorf("table %q at %d, not 4-byte aligned", tag, off)
		}
		data := slices.Clone(ttf[off : off+size])
		if tag == "head" {
			binary.BigEndian.PutUint32(data[8:], 0)
		}
		if got, want := checksum(data), binary.BigEndian.Uint32(rec[4:]); got != want {
			t.Errorf("table %q checksum %#x, directory says %#x", tag, got, want)
		}
	}
	if got := checksum(ttf); got != 0xB1B0AFBA {
		t.Errorf("font checksum %#x, want 0xB1B0AFBA", got)
	}
}

// TestComposeSubsetsFonts composes a one-page, header-only fax: it is
// small (the font is subset) and poppler draws the header from the subset
// font without a complaint.
func TestComposeSubsetsFonts(t *testing.T) {
	bin, err := exec.LookPath("pdftoppm")
	if err != nil {
		t.Skip("pdftoppm (poppler-utils) is not installed")
	}
	var out bytes.Buffer
	comp := faxes.Composition{Header: "ACME Legal Zürich Ελλάδα Москва", From: "+12125550100", At: time.Date(2026, 11, 29, 10, 4, 0, 0, time.UTC)}
	if _, err := testComposer.Compose(context.Background(), &out, bytes.NewReader(fixturePDF(letter)), comp); err != nil {
		t.Fatal(err)
	}
	if out.Len() >= 30<<10 {
		t.Errorf("a one-page fax with its header is %d bytes, want < 30 KB", out.Len())
	}
	validatePDF(t, out.Bytes())

	dir := t.TempDir()
	in := filepath.Join(dir, "fax.pdf")
	if err := os.WriteFile(in, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	// 200 dpi: the 14.4-point header band is the top 40 rows.
	cmd := exec.Command(bin, "-r", "200", "-gray", "-singlefile", "-png", in, filepath.Join(dir, "page"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pdftoppm: %v: %s", err, stderr.Bytes())
	}
	if stderr.Len() > 0 {
		t.Errorf("pdftoppm complains: %s", stderr.Bytes())
	}
	f, err := os.Open(filepath.Join(dir, "page.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	black := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Min.Y+40; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, _, _, _ := img.At(x, y).RGBA(); r < 0x8000 {
				black++
			}
		}
	}
	// About 70 characters of 8.5-point text: some thousands of black
	// pixels; an undrawn (empty) glyph set leaves the band white.
	if black < 1000 {
		t.Errorf("the header band has %d black pixels: its glyphs did not render", black)
	}
}

// TestSubsetKeepsComponents: the Go fonts have no composite glyph, so this
// makes one: Go Regular with its "ü" replaced by a composite of "u" and "¨"
// (moved by word offsets, scaled by 1.0). A subset drawing only "ü" keeps
// both components, and its "ü" draws as in that font.
func TestSubsetKeepsComponents(t *testing.T) {
	orig, err := parseFace(goregular.TTF)
	if err != nil {
		t.Fatal(err)
	}
	uu, u, dia := orig.glyphs['ü'], orig.glyphs['u'], orig.glyphs['¨']
	composite := binary.BigEndian.AppendUint16(nil, 0xFFFF)           // numberOfContours -1
	composite = append(composite, 0, 0, 0, 0, 0x04, 0x00, 0x06, 0x00) // bbox
	const argsAreXYValues = 0x0002
	composite = binary.BigEndian.AppendUint16(composite, moreComponents|argsAreXYValues)
	composite = binary.BigEndian.AppendUint16(composite, u)
	composite = append(composite, 0, 0) // byte offsets 0, 0
	composite = binary.BigEndian.AppendUint16(composite, arg1And2AreWords|weHaveAScale|argsAreXYValues)
	composite = binary.BigEndian.AppendUint16(composite, dia)
	composite = binary.BigEndian.AppendUint16(composite, 10)
	composite = binary.BigEndian.AppendUint16(composite, 0)
	composite = binary.BigEndian.AppendUint16(composite, 0x4000) // 1.0 in F2Dot14
	ttf := replaceGlyph(t, goregular.TTF, orig.sfnt, int(uu), composite)

	fc, err := parseFace(ttf)
	if err != nil {
		t.Fatal(err)
	}
	if got := fc.sfnt.components[uu]; !slices.Equal(got, []uint16{u, dia}) {
		t.Fatalf("components of the composite: %v, want [%d %d]", got, u, dia)
	}
	sub := fc.sfnt.subset(usedGlyphs(fc, "ü"))
	checkChecksums(t, sub)
	want, err := sfnt.Parse(ttf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sfnt.Parse(sub)
	if err != nil {
		t.Fatal(err)
	}
	var wb, gb sfnt.Buffer
	for _, g := range []uint16{uu, u, dia} {
		w, err := want.LoadGlyph(&wb, sfnt.GlyphIndex(g), fixed.I(1000), nil)
		if err != nil {
			t.Fatal(err)
		}
		w = slices.Clone(w)
		h, err := got.LoadGlyph(&gb, sfnt.GlyphIndex(g), fixed.I(1000), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) == 0 || !slices.Equal(h, w) {
			t.Errorf("glyph %d: %d segments, want %d", g, len(h), len(w))
		}
	}
	if h, _ := got.LoadGlyph(&gb, sfnt.GlyphIndex(orig.glyphs['a']), fixed.I(1000), nil); len(h) != 0 {
		t.Error("glyph a kept its outline")
	}
}

// replaceGlyph returns ttf with glyph g's data replaced, every other table
// as it is (glyf and loca rebuilt, loca in long format).
func replaceGlyph(t *testing.T, ttf []byte, st *sfntTables, g int, data []byte) []byte {
	t.Helper()
	n := int(binary.BigEndian.Uint16(ttf[4:]))
	var tables []sfntTable
	var glyf []byte
	loca := make([]byte, 4*len(st.loca))
	for i := range len(st.loca) - 1 {
		if i == g {
			glyf = append(glyf, data...)
		} else {
			glyf = append(glyf, st.glyf[st.loca[i]:st.loca[i+1]]...)
		}
		binary.BigEndian.PutUint32(loca[4*(i+1):], uint32(len(glyf)))
	}
	for i := range n {
		rec := ttf[12+16*i:]
		tag := string(rec[:4])
		off, size := binary.BigEndian.Uint32(rec[8:]), binary.BigEndian.Uint32(rec[12:])
		d := slices.Clone(ttf[off : off+size])
		switch tag {
		case "glyf":
			d = glyf
		case "loca":
			d = loca
		case "head":
			binary.BigEndian.PutUint32(d[8:], 0)
			binary.BigEndian.PutUint16(d[50:], 1)
		}
		tables = append(tables, sfntTable{tag, d})
	}
	sort.Slice(tables, func(i, j int) bool { return tables[i].tag < tables[j].tag })
	return writeSFNT(tables)
}

func TestGlyphComponents(t *testing.T) {
	head := []byte{0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0}
	comp := func(flags, gid uint16, rest int) []byte {
		b := binary.BigEndian.AppendUint16(nil, flags)
		b = binary.BigEndian.AppendUint16(b, gid)
		return append(b, make([]byte, rest)...)
	}
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	tests := []struct {
		name    string
		glyph   []byte
		want    []uint16
		wantErr bool
	}{
		{"empty glyph", nil, nil, false},
		{"simple glyph", []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil, false},
		{"byte args", cat(head, comp(0, 5, 2)), []uint16{5}, false},
		{"word args, scale, more", cat(head, comp(arg1And2AreWords|weHaveAScale|moreComponents, 5, 6), comp(0, 6, 2)), []uint16{5, 6}, false},
		{"x and y scale, more", cat(head, comp(weHaveAnXAndYScale|moreComponents, 7, 6), comp(weHaveATwoByTwo, 8, 10)), []uint16{7, 8}, false},
		{"instructions after the last", cat(head, comp(0x0100, 5, 2), []byte{0, 1, 0xB0}), []uint16{5}, false},
		{"header cut", head[:8], nil, true},
		{"component cut", cat(head, comp(arg1And2AreWords, 5, 2)), nil, true},
		{"more promised, none", cat(head, comp(moreComponents, 5, 2)), nil, true},
		{"component beyond the font", cat(head, comp(0, 100, 2)), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := glyphComponents(tt.glyph, 100)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("components %v, want %v", got, tt.want)
			}
		})
	}
}
