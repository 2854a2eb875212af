package faxdoc

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
	"golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// face is one embedded TrueType font, parsed once (New) and read-only
// afterwards, so any number of compositions share it.
type face struct {
	name string // PostScript name, the PDF BaseFont
	// glyphs maps the Basic Multilingual Plane's runes to glyph ids; the
	// Go fonts draw nothing outside it.
	glyphs map[rune]uint16
	// advance is each glyph's advance width in thousandths of an em, the
	// unit of PDF text space and of a CIDFont's W array.
	advance                    []int
	ascent, descent, capHeight int // thousandths of an em
	bbox                       [4]int
	// sfnt is the TrueType file's tables, which each document embeds a
	// subset of: the glyphs it draws.
	sfnt            *sfntTables
	space, question uint16
}

// parseFace reads a TrueType font and precomputes everything a
// composition needs from it.
func parseFace(ttf []byte) (*face, error) {
	f, err := sfnt.Parse(ttf)
	if err != nil {
		return nil, fmt.Errorf("parse font: %w", err)
	}
	var buf sfnt.Buffer
	name, err := f.Name(&buf, sfnt.NameIDPostScript)
	if err != nil {
		return nil, fmt.Errorf("read font name: %w", err)
	}
	upem := fixed.Int26_6(f.UnitsPerEm())
	per1000 := func(v fixed.Int26_6) int { return int(int64(v) * 1000 / int64(upem)) }
	fc := &face{name: strings.Map(pdfNameRune, name), glyphs: make(map[rune]uint16, 1024)}
	for r := rune(0); r <= 0xFFFF; r++ {
		if g, err := f.GlyphIndex(&buf, r); err == nil && g != 0 {
			fc.glyphs[r] = uint16(g)
		}
	}
	fc.advance = make([]int, f.NumGlyphs())
	for g := range fc.advance {
		// ppem = units per em gives advances in font units.
		a, err := f.GlyphAdvance(&buf, sfnt.GlyphIndex(g), upem, font.HintingNone)
		if err != nil {
			return nil, fmt.Errorf("read glyph %d advance: %w", g, err)
		}
		fc.advance[g] = per1000(a)
	}
	m, err := f.Metrics(&buf, upem, font.HintingNone)
	if err != nil {
		return nil, fmt.Errorf("read font metrics: %w", err)
	}
	fc.ascent, fc.descent, fc.capHeight = per1000(m.Ascent), -per1000(m.Descent), per1000(m.CapHeight)
	b, err := f.Bounds(&buf, upem, font.HintingNone)
	if err != nil {
		return nil, fmt.Errorf("read font bounds: %w", err)
	}
	// sfnt's y axis points down; PDF's up.
	fc.bbox = [4]int{per1000(b.Min.X), -per1000(b.Max.Y), per1000(b.Max.X), -per1000(b.Min.Y)}
	fc.space, fc.question = fc.glyphs[' '], fc.glyphs['?']
	if fc.sfnt, err = parseSFNT(ttf); err != nil {
		return nil, fmt.Errorf("read font tables: %w", err)
	}
	return fc, nil
}

func pdfNameRune(r rune) rune {
	if r <= ' ' || r > '~' || strings.ContainsRune("()<>[]{}/%#", r) {
		return -1
	}
	return r
}

// undrawable returns the first rune of s the face has no glyph for;
// whitespace never counts (it is laid out, not drawn).
func (f *face) undrawable(s string) (rune, bool) {
	for _, r := range s {
		if unicode.IsSpace(r) {
			continue
		}
		if _, ok := f.glyphs[r]; !ok {
			return r, true
		}
	}
	return 0, false
}

// glyph returns r's glyph and the rune it stands for: a space for any
// whitespace, '?' for a rune the face cannot draw (core refuses those
// before composing; this only keeps stray text such as a provider's reason
// drawable).
func (f *face) glyph(r rune) (uint16, rune) {
	if g, ok := f.glyphs[r]; ok {
		return g, r
	}
	if unicode.IsSpace(r) {
		return f.space, ' '
	}
	return f.question, '?'
}

// width is s's advance width at size points.
func (f *face) width(s string, size float64) float64 {
	w := 0
	for _, r := range s {
		g, _ := f.glyph(r)
		w += f.advance[g]
	}
	return float64(w) * size / 1000
}

// fontUse is one document's use of one face: the glyphs its text used (and
// which rune each stands for), from which its W array and ToUnicode map
// are written once the document is drawn.
type fontUse struct {
	face *face
	used map[uint16]rune
	ref  *types.IndirectRef // the Type0 font dict
	dict types.Dict
}

func newFontUse(f *face) *fontUse {
	return &fontUse{face: f, used: make(map[uint16]rune)}
}

// encode returns s as an Identity-H hex string of glyph ids, recording the
// glyphs used.
func (u *fontUse) encode(s string) string {
	var b strings.Builder
	b.Grow(2 + 4*len(s))
	b.WriteByte('<')
	for _, r := range s {
		g, r := u.face.glyph(r)
		if _, ok := u.used[g]; !ok {
			u.used[g] = r
		}
		fmt.Fprintf(&b, "%04X", g)
	}
	b.WriteByte('>')
	return b.String()
}

// reference returns the indirect reference of the document's Type0 font
// dict for this face, creating it (empty until finish) on first use.
func (u *fontUse) reference(xt *model.XRefTable) (types.IndirectRef, error) {
	if u.ref != nil {
		return *u.ref, nil
	}
	u.dict = types.Dict{}
	ref, err := xt.IndRefForNewObject(u.dict)
	if err != nil {
		return types.IndirectRef{}, fmt.Errorf("add font %s: %w", u.face.name, err)
	}
	u.ref = ref
	return *ref, nil
}

// finish fills in the Type0 font: a CIDFontType2 descendant with a subset
// of the TrueType file embedded (FontFile2: only the glyphs drawn have
// outlines, see subset.go), CID = glyph id (Identity-H encoding,
// Identity CIDToGIDMap), widths of the glyphs used and a ToUnicode map so
// that text extraction (pdftotext, copy and paste, search) reads the
// characters drawn, Greek and Cyrillic included.
func (u *fontUse) finish(xt *model.XRefTable, zlibs *sync.Pool, files *fontFiles) error {
	if u.ref == nil {
		return nil
	}
	f := u.face
	gids := make([]int, 0, len(u.used))
	for g := range u.used {
		gids = append(gids, int(g))
	}
	sort.Ints(gids)
	// A subset font's name is prefixed with a tag (PDF 32000-1 9.6.4).
	name := subsetTag(gids) + "+" + f.name

	ff, err := files.get(u, gids, zlibs)
	if err != nil {
		return fmt.Errorf("font %s: %w", name, err)
	}
	file := ff.file.stream()
	file.Dict["Length1"] = types.Integer(ff.length1)
	fileRef, err := xt.IndRefForNewObject(file)
	if err != nil {
		return fmt.Errorf("add font file: %w", err)
	}
	desc := types.Dict{
		"Type":        types.Name("FontDescriptor"),
		"FontName":    types.Name(name),
		"Flags":       types.Integer(32), // nonsymbolic
		"FontBBox":    types.Array{types.Integer(f.bbox[0]), types.Integer(f.bbox[1]), types.Integer(f.bbox[2]), types.Integer(f.bbox[3])},
		"ItalicAngle": types.Integer(0),
		"Ascent":      types.Integer(f.ascent),
		"Descent":     types.Integer(f.descent),
		"CapHeight":   types.Integer(f.capHeight),
		"StemV":       types.Integer(80),
		"FontFile2":   *fileRef,
	}
	descRef, err := xt.IndRefForNewObject(desc)
	if err != nil {
		return fmt.Errorf("add font descriptor: %w", err)
	}
	w := types.Array{}
	for _, g := range gids {
		w = append(w, types.Integer(g), types.Array{types.Integer(f.advance[g])})
	}
	cid := types.Dict{
		"Type":     types.Name("Font"),
		"Subtype":  types.Name("CIDFontType2"),
		"BaseFont": types.Name(name),
		"CIDSystemInfo": types.Dict{
			"Registry":   types.StringLiteral("Adobe"),
			"Ordering":   types.StringLiteral("Identity"),
			"Supplement": types.Integer(0),
		},
		"FontDescriptor": *descRef,
		"DW":             types.Integer(1000),
		"W":              w,
		"CIDToGIDMap":    types.Name("Identity"),
	}
	cidRef, err := xt.IndRefForNewObject(cid)
	if err != nil {
		return fmt.Errorf("add CID font: %w", err)
	}
	toUniRef, err := xt.IndRefForNewObject(ff.toUnicode.stream())
	if err != nil {
		return fmt.Errorf("add ToUnicode map: %w", err)
	}
	u.dict["Type"] = types.Name("Font")
	u.dict["Subtype"] = types.Name("Type0")
	u.dict["BaseFont"] = types.Name(name)
	u.dict["Encoding"] = types.Name("Identity-H")
	u.dict["DescendantFonts"] = types.Array{*cidRef}
	u.dict["ToUnicode"] = *toUniRef
	return nil
}

// flated is data compressed with FlateDecode, ready to be a stream.
type flated []byte

// flate compresses data with one of zlibs' *zlib.Writer (rather than by
// pdfcpu's StreamDict.Encode, which makes a new ~800 KB compressor for
// each stream).
func flate(zlibs *sync.Pool, data []byte) (flated, error) {
	var z bytes.Buffer
	zw := zlibs.Get().(*zlib.Writer)
	zw.Reset(&z)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	zlibs.Put(zw)
	return flated(z.Bytes()), nil
}

// stream returns a new stream dict of z. The bytes are shared (a cached
// font file serves many documents): pdfcpu writes Raw as it is and never
// changes it.
func (z flated) stream() types.StreamDict {
	l := int64(len(z))
	return types.StreamDict{
		Dict: types.Dict{
			"Filter": types.Name("FlateDecode"),
			"Length": types.Integer(l),
		},
		StreamLength:   &l,
		FilterPipeline: []types.PDFFilter{{Name: "FlateDecode"}},
		Raw:            z,
	}
}

// flateStream returns a stream of data, compressed (see flate).
func flateStream(zlibs *sync.Pool, data []byte) (types.StreamDict, error) {
	z, err := flate(zlibs, data)
	if err != nil {
		return types.StreamDict{}, err
	}
	return z.stream(), nil
}

// fontFile is what a document embeds of a face for the glyphs it drew:
// the compressed subset font program and its ToUnicode map. It depends on
// nothing else, so documents that draw the same glyphs share one.
type fontFile struct {
	file, toUnicode flated
	length1         int // the uncompressed font program's size
}

// fontFiles keeps the font files of the glyph sets drawn most recently:
// most documents as faxed draw the same few (the header line's digits,
// letters and punctuation; a cover page's labels), and subsetting and
// compressing a face costs ~0.3 ms a document. Bounded by count and by
// the size of what it keeps.
type fontFiles struct {
	cache *lru.Cache[string, fontFile]
}

const (
	// fontFilesCached bounds the glyph sets kept; each costs ~6–15 KB.
	fontFilesCached = 128
	// fontFileCachedMax is the largest font file kept: a document drawing
	// much of a face (a long cover message in many scripts) is rare and is
	// subset afresh.
	fontFileCachedMax = 64 << 10
)

func newFontFiles() *fontFiles {
	c, err := lru.New[string, fontFile](fontFilesCached)
	if err != nil {
		panic(fmt.Sprintf("faxdoc: font file cache: %v", err)) // only for a size ≤ 0
	}
	return &fontFiles{cache: c}
}

// get returns the font file of u's glyphs gids (sorted), from the cache or
// made and kept.
func (fs *fontFiles) get(u *fontUse, gids []int, zlibs *sync.Pool) (fontFile, error) {
	// The key names the face and every glyph with the rune it stands for
	// (the ToUnicode map says which).
	key := make([]byte, 0, len(u.face.name)+1+8*len(gids))
	key = append(key, u.face.name...)
	key = append(key, 0)
	for _, g := range gids {
		key = binary.BigEndian.AppendUint16(key, uint16(g))
		key = binary.BigEndian.AppendUint32(key, uint32(u.used[uint16(g)]))
	}
	if ff, ok := fs.cache.Get(string(key)); ok {
		return ff, nil
	}
	ttf := u.face.sfnt.subset(gids)
	file, err := flate(zlibs, ttf)
	if err != nil {
		return fontFile{}, fmt.Errorf("compress the font: %w", err)
	}
	toUni, err := flate(zlibs, u.toUnicode(gids))
	if err != nil {
		return fontFile{}, fmt.Errorf("compress the ToUnicode map: %w", err)
	}
	ff := fontFile{file: file, toUnicode: toUni, length1: len(ttf)}
	if len(file)+len(toUni) <= fontFileCachedMax {
		fs.cache.Add(string(key), ff)
	}
	return ff, nil
}

// toUnicode writes the ToUnicode CMap of gids (sorted).
func (u *fontUse) toUnicode(gids []int) []byte {
	var b bytes.Buffer
	b.WriteString("/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n" +
		"/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n" +
		"/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n" +
		"1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n")
	for len(gids) > 0 {
		n := min(len(gids), 100) // at most 100 entries a block
		fmt.Fprintf(&b, "%d beginbfchar\n", n)
		for _, g := range gids[:n] {
			fmt.Fprintf(&b, "<%04X> <", g)
			for _, c := range utf16.Encode([]rune{u.used[uint16(g)]}) {
				fmt.Fprintf(&b, "%04X", c)
			}
			b.WriteString(">\n")
		}
		b.WriteString("endbfchar\n")
		gids = gids[n:]
	}
	b.WriteString("endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n")
	return b.Bytes()
}
