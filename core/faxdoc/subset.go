package faxdoc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
)

// TrueType subsetting. pdfcpu v0.15.0 has a subsetter (pkg/font.Subset),
// but it reads the font by name from its process-wide user font directory,
// so this package keeps its own: the glyph id space is kept whole (so CID =
// glyph id still holds, CIDToGIDMap stays Identity and widths and ToUnicode
// need no renumbering) and every glyph the document does not draw is made
// empty. Only glyf and loca are rebuilt, and head for the loca format and
// the checksum; the tables a CIDFontType2 program needs are copied as they
// are, the hinting ones (cvt, fpgm, prep) included so that the glyphs kept
// render exactly as before (they cost ~2 KB compressed), and cmap, which a
// PDF reader does not need (CIDToGIDMap is Identity) but strict font
// parsers (x/image/font/sfnt among them) require, as they require post,
// which is cut to its version 3.0 header (no glyph names, ~5 KB less);
// name is dropped.

// sfntTables is a parsed TrueType font, ready to be subset any number of
// times; read-only after parseSFNT.
type sfntTables struct {
	kept []sfntTable // copied into every subset as they are
	head []byte
	glyf []byte
	// loca holds numGlyphs+1 offsets into glyf: glyph g is
	// glyf[loca[g]:loca[g+1]].
	loca []uint32
	// components lists a composite glyph's component glyphs (nil for a
	// simple one): a subset keeps them too or the composite draws nothing.
	components [][]uint16
}

type sfntTable struct {
	tag  string
	data []byte
}

// keptTable reports whether a table is copied into a subset, beside the
// rebuilt head, glyf and loca: the ones the TrueType rasterizer uses (PDF
// 32000-1 9.9: head, hhea, loca, maxp, cvt, prep, glyf, hmtx, fpgm), cmap
// (see above) and OS/2 and gasp, which are small and some renderers read.
func keptTable(tag string) bool {
	switch tag {
	case "OS/2", "cmap", "cvt ", "fpgm", "gasp", "hhea", "hmtx", "maxp", "prep":
		return true
	}
	return false
}

var errFont = errors.New("malformed TrueType font")

// parseSFNT reads ttf's table directory, loca and composite glyphs. Every
// offset is checked here, so subsetting cannot fail afterwards.
func parseSFNT(ttf []byte) (*sfntTables, error) {
	if len(ttf) < 12 {
		return nil, fmt.Errorf("%w: %d bytes", errFont, len(ttf))
	}
	if v := binary.BigEndian.Uint32(ttf); v != 0x00010000 && v != 0x74727565 { // 1.0 or "true"
		return nil, fmt.Errorf("%w: not TrueType outlines (version %#x)", errFont, v)
	}
	n := int(binary.BigEndian.Uint16(ttf[4:]))
	if len(ttf) < 12+16*n {
		return nil, fmt.Errorf("%w: table directory cut", errFont)
	}
	tables := make(map[string][]byte, n)
	for i := range n {
		rec := ttf[12+16*i:]
		tag := string(rec[:4])
		off, size := uint64(binary.BigEndian.Uint32(rec[8:])), uint64(binary.BigEndian.Uint32(rec[12:]))
		if off+size > uint64(len(ttf)) {
			return nil, fmt.Errorf("%w: table %q beyond the end", errFont, tag)
		}
		tables[tag] = ttf[off : off+size]
	}
	for _, tag := range []string{"head", "hhea", "hmtx", "maxp", "loca", "glyf"} {
		if tables[tag] == nil {
			return nil, fmt.Errorf("%w: no %q table", errFont, tag)
		}
	}
	t := &sfntTables{head: tables["head"], glyf: tables["glyf"]}
	if len(t.head) < 54 || len(tables["maxp"]) < 6 {
		return nil, fmt.Errorf("%w: head or maxp cut", errFont)
	}
	numGlyphs := int(binary.BigEndian.Uint16(tables["maxp"][4:]))
	loca := tables["loca"]
	t.loca = make([]uint32, numGlyphs+1)
	switch format := binary.BigEndian.Uint16(t.head[50:]); format {
	case 0: // short: offset/2 as uint16
		if len(loca) < 2*(numGlyphs+1) {
			return nil, fmt.Errorf("%w: loca cut", errFont)
		}
		for g := range t.loca {
			t.loca[g] = 2 * uint32(binary.BigEndian.Uint16(loca[2*g:]))
		}
	case 1: // long: uint32
		if len(loca) < 4*(numGlyphs+1) {
			return nil, fmt.Errorf("%w: loca cut", errFont)
		}
		for g := range t.loca {
			t.loca[g] = binary.BigEndian.Uint32(loca[4*g:])
		}
	default:
		return nil, fmt.Errorf("%w: indexToLocFormat %d", errFont, format)
	}
	t.components = make([][]uint16, numGlyphs)
	for g := range numGlyphs {
		start, end := t.loca[g], t.loca[g+1]
		if start > end || end > uint32(len(t.glyf)) {
			return nil, fmt.Errorf("%w: glyph %d outside glyf", errFont, g)
		}
		comps, err := glyphComponents(t.glyf[start:end], numGlyphs)
		if err != nil {
			return nil, fmt.Errorf("%w: glyph %d: %v", errFont, g, err)
		}
		t.components[g] = comps
	}
	var tags []string
	for tag := range tables {
		if keptTable(tag) {
			tags = append(tags, tag)
		}
	}
	sort.Strings(tags)
	for _, tag := range tags {
		t.kept = append(t.kept, sfntTable{tag, tables[tag]})
	}
	if post := tables["post"]; len(post) >= 32 {
		p := append([]byte(nil), post[:32]...)
		binary.BigEndian.PutUint32(p, 0x00030000)
		t.kept = append(t.kept, sfntTable{"post", p})
	}
	return t, nil
}

// Composite glyph flags (TrueType glyf table).
const (
	arg1And2AreWords   = 0x0001
	weHaveAScale       = 0x0008
	moreComponents     = 0x0020
	weHaveAnXAndYScale = 0x0040
	weHaveATwoByTwo    = 0x0080
)

// glyphComponents returns the component glyph ids of a composite glyph,
// nil for a simple or empty one.
func glyphComponents(g []byte, numGlyphs int) ([]uint16, error) {
	if len(g) == 0 {
		return nil, nil
	}
	if len(g) < 10 {
		return nil, errors.New("header cut")
	}
	if int16(binary.BigEndian.Uint16(g)) >= 0 { // numberOfContours: simple glyph
		return nil, nil
	}
	var comps []uint16
	p := 10
	for {
		if p+4 > len(g) {
			return nil, errors.New("component cut")
		}
		flags, gid := binary.BigEndian.Uint16(g[p:]), binary.BigEndian.Uint16(g[p+2:])
		if int(gid) >= numGlyphs {
			return nil, fmt.Errorf("component %d beyond %d glyphs", gid, numGlyphs)
		}
		comps = append(comps, gid)
		p += 4
		if flags&arg1And2AreWords != 0 {
			p += 4
		} else {
			p += 2
		}
		switch {
		case flags&weHaveAScale != 0:
			p += 2
		case flags&weHaveAnXAndYScale != 0:
			p += 4
		case flags&weHaveATwoByTwo != 0:
			p += 8
		}
		if p > len(g) {
			return nil, errors.New("component cut")
		}
		if flags&moreComponents == 0 {
			return comps, nil
		}
	}
}

// subset returns a TrueType font with the glyph space of t in which only
// the glyphs gids, their components and glyph 0 (.notdef) have outlines.
func (t *sfntTables) subset(gids []int) []byte {
	keep := make([]bool, len(t.components))
	todo := []uint16{0}
	for _, g := range gids {
		if g >= 0 && g < len(keep) {
			todo = append(todo, uint16(g))
		}
	}
	for len(todo) > 0 {
		g := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if keep[g] {
			continue
		}
		keep[g] = true
		todo = append(todo, t.components[g]...)
	}

	// glyf and a long-format loca; each glyph padded to 4 bytes.
	var glyf []byte
	loca := make([]byte, 4*len(t.loca))
	for g, k := range keep {
		if k {
			glyf = append(glyf, t.glyf[t.loca[g]:t.loca[g+1]]...)
			for len(glyf)%4 != 0 {
				glyf = append(glyf, 0)
			}
		}
		binary.BigEndian.PutUint32(loca[4*(g+1):], uint32(len(glyf)))
	}
	head := append([]byte(nil), t.head...)
	binary.BigEndian.PutUint32(head[8:], 0) // checkSumAdjustment, set last
	binary.BigEndian.PutUint16(head[50:], 1)

	tables := append([]sfntTable{{"glyf", glyf}, {"head", head}, {"loca", loca}}, t.kept...)
	sort.Slice(tables, func(i, j int) bool { return tables[i].tag < tables[j].tag })
	return writeSFNT(tables)
}

// writeSFNT writes tables (sorted by tag, head's checkSumAdjustment zero)
// as a TrueType file, each table 4-byte aligned with its checksum, and
// sets checkSumAdjustment in the output.
func writeSFNT(tables []sfntTable) []byte {
	n := len(tables)
	size := 12 + 16*n
	for _, tb := range tables {
		size += pad4(len(tb.data))
	}
	out := make([]byte, 12+16*n, size)
	binary.BigEndian.PutUint32(out, 0x00010000)
	binary.BigEndian.PutUint16(out[4:], uint16(n))
	entrySelector := 0
	for 1<<(entrySelector+1) <= n {
		entrySelector++
	}
	searchRange := 16 << entrySelector
	binary.BigEndian.PutUint16(out[6:], uint16(searchRange))
	binary.BigEndian.PutUint16(out[8:], uint16(entrySelector))
	binary.BigEndian.PutUint16(out[10:], uint16(16*n-searchRange))
	headAt := -1
	for i, tb := range tables {
		rec := out[12+16*i:]
		copy(rec, tb.tag)
		binary.BigEndian.PutUint32(rec[4:], checksum(tb.data))
		binary.BigEndian.PutUint32(rec[8:], uint32(len(out)))
		binary.BigEndian.PutUint32(rec[12:], uint32(len(tb.data)))
		if tb.tag == "head" {
			headAt = len(out)
		}
		out = append(out, tb.data...)
		for len(out)%4 != 0 {
			out = append(out, 0)
		}
	}
	if headAt >= 0 {
		binary.BigEndian.PutUint32(out[headAt+8:], 0xB1B0AFBA-checksum(out))
	}
	return out
}

// checksum is the TrueType table checksum: the sum of its big-endian
// uint32s, the last one zero-padded.
func checksum(b []byte) uint32 {
	var sum uint32
	for len(b) >= 4 {
		sum += binary.BigEndian.Uint32(b)
		b = b[4:]
	}
	var last [4]byte
	copy(last[:], b)
	return sum + binary.BigEndian.Uint32(last[:])
}

func pad4(n int) int { return (n + 3) &^ 3 }

// subsetTag is the six uppercase letters a subset font's name starts with
// (PDF 32000-1 9.6.4: "ABCDEF+GoRegular"). It is derived from the glyphs
// kept, so the same text gives the same bytes and two different subsets of
// one face are unlikely to share a name.
func subsetTag(gids []int) string {
	h := fnv.New64a()
	var b [2]byte
	for _, g := range gids {
		binary.BigEndian.PutUint16(b[:], uint16(g))
		h.Write(b[:])
	}
	v := h.Sum64()
	tag := make([]byte, 6)
	for i := range tag {
		tag[i] = 'A' + byte(v%26)
		v /= 26
	}
	return string(tag)
}
