package faxdoc

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// canvas builds one content stream. Coordinates are PDF points, origin at
// the bottom left of what the reader sees.
type canvas struct {
	b   bytes.Buffer
	doc *drawing
}

// drawing is what one output document's canvases share: the fonts used so
// far. Its resource names are unusual so that they never clash with a
// source page's own.
type drawing struct {
	regular, bold *fontUse
	open          *types.IndirectRef // the shared "q" content stream
	zlibs         *sync.Pool         // the Composer's *zlib.Writer
	fonts         *fontFiles         // the Composer's font files
}

const (
	regularRes = "FaxhubR"
	boldRes    = "FaxhubB"
)

func (c *canvas) printf(format string, args ...any) { fmt.Fprintf(&c.b, format, args...) }

// text draws s with its baseline starting at (x, y).
func (c *canvas) text(bold bool, size, x, y float64, s string) {
	u, res := c.doc.regular, regularRes
	if bold {
		u, res = c.doc.bold, boldRes
	}
	c.printf("BT /%s %s Tf %s %s Td %s Tj ET\n", res, num(size), num(x), num(y), u.encode(s))
}

// textRight draws s ending at x.
func (c *canvas) textRight(bold bool, size, x, y float64, s string) {
	c.text(bold, size, x-c.doc.face(bold).width(s, size), y, s)
}

// fillRect fills a rectangle with gray g (0 black, 1 white).
func (c *canvas) fillRect(x, y, w, h, g float64) {
	c.printf("%s g %s %s %s %s re f 0 g\n", num(g), num(x), num(y), num(w), num(h))
}

// hline draws a horizontal black rule of width lw.
func (c *canvas) hline(x1, x2, y, lw float64) {
	c.printf("%s w %s %s m %s %s l S\n", num(lw), num(x1), num(y), num(x2), num(y))
}

func (d *drawing) face(bold bool) *face {
	if bold {
		return d.bold.face
	}
	return d.regular.face
}

// fit returns s, cut with "…" if needed, so that it is at most w wide.
func fit(f *face, s string, size, w float64) string {
	if f.width(s, size) <= w {
		return s
	}
	ell := f.width("…", size)
	cut, width := 0, 0.0
	for i, r := range s {
		width += f.width(string(r), size)
		if width+ell > w {
			break
		}
		cut = i + utf8.RuneLen(r)
	}
	return strings.TrimRight(s[:cut], " ") + "…"
}

// wrap breaks text into lines at most w wide: paragraphs (lines of the
// text) are kept, an empty one is a blank line, words are broken only
// when one alone is wider than a line.
func wrap(f *face, text string, size, w float64) []string {
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	text = strings.ReplaceAll(text, "\t", "    ")
	var lines []string
	spaceW := f.width(" ", size)
	for para := range strings.SplitSeq(text, "\n") {
		words := strings.Fields(para)
		if len(words) == 0 {
			lines = append(lines, "")
			continue
		}
		line, lineW := "", 0.0
		for _, word := range words {
			ww := f.width(word, size)
			switch {
			case line != "" && lineW+spaceW+ww <= w:
				line, lineW = line+" "+word, lineW+spaceW+ww
				continue
			case line != "":
				lines = append(lines, line)
				line, lineW = "", 0
			}
			// A word wider than the line is broken where it fills one.
			for ww > w {
				head := breakWord(f, word, size, w)
				lines = append(lines, head)
				word = word[len(head):]
				ww = f.width(word, size)
			}
			line, lineW = word, ww
		}
		lines = append(lines, line)
	}
	return lines
}

// breakWord returns the longest prefix of word at most w wide (at least
// one rune, so that wrapping always advances).
func breakWord(f *face, word string, size, w float64) string {
	width, cut := 0.0, 0
	for i, r := range word {
		width += f.width(string(r), size)
		if width > w && i > 0 {
			break
		}
		cut = i + utf8.RuneLen(r)
	}
	return word[:cut]
}

// num formats a PDF real with at most three decimals.
func num(f float64) string {
	s := strconv.FormatFloat(f, 'f', 3, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-" || s == "-0" {
		return "0"
	}
	return s
}
