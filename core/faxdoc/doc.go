// Package faxdoc renders a fax as it is transmitted: it implements
// faxes.Composer (core/faxes/compose.go). See docs/fax-document.md for
// what the pages look like.
//
// How: pdfcpu reads the source PDF into its object model, this package
// edits that model and pdfcpu writes it back. Every source page keeps its
// own content streams (wrapped in q … Q so that their graphics state cannot
// leak) and gains one more, the header line, drawn through a matrix that
// undoes the page's /Rotate so the line is at the top as the page is read;
// its resource dictionary is copied (it may be shared) with the header font
// added. The cover page is a new page put first in the page tree, with
// every attribute a parent could pass down set on it.
//
// Fonts are written by hand, not with pdfcpu's user fonts, which pdfcpu
// installs into a process-wide directory (package-level state). The Go
// fonts (goregular, gobold) are parsed once in New; each document embeds
// a subset of each face it uses as a Type 0 font with a CIDFontType2
// descendant, Identity-H encoding (CID = glyph id), the widths of the
// glyphs used and a ToUnicode map of them, so pdftotext reads back every
// character drawn. The subsetter is this package's own (subset.go; pdfcpu's
// reads fonts from its process-wide font directory): it keeps the glyph id
// space whole and empties every glyph the document does not draw,
// rebuilding glyf and loca (composite glyphs keep their components) and
// head's checksum, so CID = glyph id still holds; the font's name gets its
// subset tag ("ABCDEF+GoRegular"). The font streams are compressed with the
// Composer's pool of zlib writers.
//
// Rasterize runs poppler's pdftoppm; Report builds a new one-page document
// the same way as the cover page.
package faxdoc
