package faxdoc

import (
	"fmt"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// pageBox is the part of a page a reader sees (its crop box, else its
// media box) and the page's rotation, a multiple of 90 in [0, 360).
type pageBox struct {
	llx, lly, urx, ury float64
	rotate             int
}

func boxOf(inh *model.InheritedPageAttrs) (pageBox, error) {
	r := inh.MediaBox
	if r == nil {
		return pageBox{}, fmt.Errorf("no media box")
	}
	if c := inh.CropBox; c != nil {
		// The visible area is the crop box clipped to the media box.
		r = types.NewRectangle(max(r.LL.X, c.LL.X), max(r.LL.Y, c.LL.Y), min(r.UR.X, c.UR.X), min(r.UR.Y, c.UR.Y))
		if r.Width() <= 0 || r.Height() <= 0 {
			r = inh.MediaBox
		}
	}
	b := pageBox{llx: min(r.LL.X, r.UR.X), lly: min(r.LL.Y, r.UR.Y), urx: max(r.LL.X, r.UR.X), ury: max(r.LL.Y, r.UR.Y)}
	b.rotate = ((inh.Rotate % 360) + 360) % 360 / 90 * 90
	return b, nil
}

// seen is the page's width and height as a reader sees it.
func (b pageBox) seen() (w, h float64) {
	w, h = b.urx-b.llx, b.ury-b.lly
	if b.rotate == 90 || b.rotate == 270 {
		return h, w
	}
	return w, h
}

// matrix maps the seen page (origin bottom left, as displayed) to the
// page's user space, undoing its /Rotate, so that the header is at the
// top as the page is read.
func (b pageBox) matrix() string {
	switch b.rotate {
	case 90: // shown turned clockwise: user space's left edge is the top
		return fmt.Sprintf("0 1 -1 0 %s %s cm\n", num(b.urx), num(b.lly))
	case 180:
		return fmt.Sprintf("-1 0 0 -1 %s %s cm\n", num(b.urx), num(b.ury))
	case 270:
		return fmt.Sprintf("0 -1 1 0 %s %s cm\n", num(b.llx), num(b.ury))
	}
	return fmt.Sprintf("1 0 0 1 %s %s cm\n", num(b.llx), num(b.lly))
}

// stampPage adds the header line to source page i: its content streams
// are kept, between a "q" and a "Q", and followed by the header's; its
// resources are copied with the header font added, since a resource
// dictionary may be shared with other pages.
func stampPage(xt *model.XRefTable, d *drawing, i int, line headerLine) error {
	page, _, inh, err := xt.PageDict(i, false)
	if err != nil {
		return fmt.Errorf("find page: %w", err)
	}
	box, err := boxOf(inh)
	if err != nil {
		return err
	}
	c := &canvas{doc: d}
	c.printf("Q q\n%s", box.matrix())
	w, h := box.seen()
	line.draw(c, w, h)
	c.printf("Q\n")

	contents := types.Array{}
	if obj, ok := page.Find("Contents"); ok {
		o, err := xt.Dereference(obj)
		if err != nil {
			return fmt.Errorf("read contents: %w", err)
		}
		switch o := o.(type) {
		case types.Array:
			contents = append(contents, o...)
		case types.StreamDict:
			contents = append(contents, obj)
		}
	}
	open, err := d.openStream(xt)
	if err != nil {
		return err
	}
	stamp, err := d.contentStream(xt, c.b.Bytes())
	if err != nil {
		return err
	}
	page["Contents"] = append(append(types.Array{open}, contents...), stamp)

	res, err := withFonts(xt, inh.Resources, d, false)
	if err != nil {
		return err
	}
	page["Resources"] = res
	return nil
}

// openStream returns the content stream "q" every stamped page starts
// with, one object for the whole document.
func (d *drawing) openStream(xt *model.XRefTable) (types.IndirectRef, error) {
	if d.open == nil {
		ref, err := d.contentStream(xt, []byte("q\n"))
		if err != nil {
			return types.IndirectRef{}, err
		}
		d.open = &ref
	}
	return *d.open, nil
}

// contentStream adds a content stream, Flate-compressed unless it is
// small: a header line's few hundred bytes gain little from compression.
// A larger one (a cover page's) is compressed with the Composer's pooled
// compressors, not pdfcpu's StreamDict.Encode, whose compressor costs
// ~1 MB to set up, per stream.
func (d *drawing) contentStream(xt *model.XRefTable, b []byte) (types.IndirectRef, error) {
	var sd types.StreamDict
	if len(b) < 1024 {
		l := int64(len(b))
		sd = types.StreamDict{Dict: types.Dict{"Length": types.Integer(l)}, StreamLength: &l, Content: b, Raw: b}
	} else {
		var err error
		if sd, err = flateStream(d.zlibs, b); err != nil {
			return types.IndirectRef{}, fmt.Errorf("encode content: %w", err)
		}
		sd.Content = b
	}
	ref, err := xt.IndRefForNewObject(sd)
	if err != nil {
		return types.IndirectRef{}, fmt.Errorf("add content: %w", err)
	}
	return *ref, nil
}

// withFonts returns a copy of res (nil: none) whose Font dictionary also
// names the document's regular font and, with bold, its bold font.
func withFonts(xt *model.XRefTable, res types.Dict, d *drawing, bold bool) (types.Dict, error) {
	out := types.Dict{}
	for k, v := range res {
		out[k] = v
	}
	fonts := types.Dict{}
	if obj, ok := res.Find("Font"); ok {
		fd, err := xt.DereferenceDict(obj)
		if err != nil {
			return nil, fmt.Errorf("read fonts: %w", err)
		}
		for k, v := range fd {
			fonts[k] = v
		}
	}
	ref, err := d.regular.reference(xt)
	if err != nil {
		return nil, err
	}
	fonts[regularRes] = ref
	if bold {
		ref, err := d.bold.reference(xt)
		if err != nil {
			return nil, err
		}
		fonts[boldRes] = ref
	}
	out["Font"] = fonts
	return out, nil
}

// Letter paper, points: the cover page's and the report's size.
const (
	letterW = 612.0
	letterH = 792.0
)

// addPage adds a US Letter page drawn by content at position 0 (first) or
// at the end of the root of the page tree, with every attribute a parent
// could pass down to it set on it.
func addPage(xt *model.XRefTable, d *drawing, content []byte, first bool, extra types.Dict) error {
	rootRef, err := xt.Pages()
	if err != nil {
		return fmt.Errorf("find page tree: %w", err)
	}
	root, err := xt.DereferenceDict(*rootRef)
	if err != nil || root == nil {
		return fmt.Errorf("read page tree: %v", err)
	}
	stream, err := d.contentStream(xt, content)
	if err != nil {
		return err
	}
	res, err := withFonts(xt, extra, d, true)
	if err != nil {
		return err
	}
	box := types.Array{types.Integer(0), types.Integer(0), types.Integer(letterW), types.Integer(letterH)}
	page := types.Dict{
		"Type":      types.Name("Page"),
		"Parent":    *rootRef,
		"MediaBox":  box,
		"CropBox":   box,
		"Rotate":    types.Integer(0),
		"Resources": res,
		"Contents":  stream,
	}
	ref, err := xt.IndRefForNewObject(page)
	if err != nil {
		return fmt.Errorf("add page: %w", err)
	}
	kidsObj, _ := root.Find("Kids")
	kids, err := xt.DereferenceArray(kidsObj)
	if err != nil {
		return fmt.Errorf("read page tree kids: %w", err)
	}
	if first {
		kids = append(types.Array{*ref}, kids...)
	} else {
		kids = append(kids, *ref)
	}
	root["Kids"] = kids
	count := 0
	if n, ok := root.Find("Count"); ok {
		if v, err := xt.DereferenceInteger(n); err == nil && v != nil {
			count = v.Value()
		}
	}
	root["Count"] = types.Integer(count + 1)
	xt.PageCount++
	return nil
}
