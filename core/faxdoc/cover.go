package faxdoc

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// Cover page layout, points on US Letter.
const (
	margin      = 54.0 // 0.75 inch
	titleSize   = 44.0
	labelSize   = 9.0
	valueSize   = 12.0
	valueLead   = 16.0
	columnGap   = 24.0
	labelColumn = 76.0 // the Date/Pages/Subject values' indent
	// The message is set at the first of these sizes at which it fits
	// the rest of the page; at the smallest, what does not fit is cut,
	// its last line ending in "…".
	messageLead = 1.3
)

var messageSizes = []float64{11, 10, 9, 8}

// addCover adds the cover page as page 1.
func (c *Composer) addCover(xt *model.XRefTable, d *drawing, comp faxes.Composition, h header, total int) error {
	cv := &canvas{doc: d}
	h.line(1).draw(cv, letterW, letterH)
	layoutCover(cv, comp, total)
	return addPage(xt, d, cv.b.Bytes(), true, nil)
}

// layoutCover draws the cover page: a big "FAX", the To and From columns,
// the date, page count and subject, then the message.
func layoutCover(cv *canvas, comp faxes.Composition, total int) {
	cp := comp.Cover
	reg := cv.doc.regular.face
	width := letterW - 2*margin
	y := letterH - margin - titleSize*0.8
	cv.text(true, titleSize, margin, y, "FAX")
	y -= 14
	cv.hline(margin, letterW-margin, y, 2)
	y -= 22

	colW := (width - columnGap) / 2
	column := func(x float64, label string, lines []string) float64 {
		cy := y
		cv.text(true, labelSize, x, cy, label)
		cy -= valueLead
		for _, l := range lines {
			cv.text(false, valueSize, x, cy, fit(reg, l, valueSize, colW))
			cy -= valueLead
		}
		return cy
	}
	to := nonEmpty(cp.RecipientName, cp.RecipientCompany, labelled("Fax", readableNumber(comp.To)))
	from := nonEmpty(cp.SenderName, cp.SenderCompany, labelled("Phone", readableNumber(cp.SenderPhone)), labelled("Fax", readableNumber(cp.SenderFax)))
	y = min(column(margin, "TO", to), column(margin+colW+columnGap, "FROM", from))
	y += valueLead - 12
	cv.hline(margin, letterW-margin, y, 0.75)
	y -= 20

	row := func(label string, value string) {
		cv.text(true, labelSize, margin, y, label)
		lines := wrap(reg, value, valueSize, width-labelColumn)
		if len(lines) > 3 { // a subject is a line or two; a long one is cut
			lines = lines[:3]
			lines[2] = fit(reg, lines[2]+" …", valueSize, width-labelColumn)
		}
		for _, l := range lines {
			cv.text(false, valueSize, margin+labelColumn, y, l)
			y -= valueLead
		}
		y -= 4
	}
	row("DATE", comp.At.Format("January 2, 2006 15:04 MST"))
	row("PAGES", strconv.Itoa(total)+" (including this cover page)")
	if s := strings.TrimSpace(cp.Subject); s != "" {
		row("SUBJECT", s)
	}
	y += valueLead - 12
	cv.hline(margin, letterW-margin, y, 0.75)
	y -= 24

	if strings.TrimSpace(cp.Message) == "" {
		return
	}
	size, lines := fitMessage(reg, cp.Message, width, y-margin)
	for _, l := range lines {
		cv.text(false, size, margin, y, l)
		y -= size * messageLead
	}
}

// fitMessage sets the message in the largest of messageSizes at which it
// fits height, or cuts it at the smallest.
func fitMessage(f *face, msg string, width, height float64) (float64, []string) {
	msg = strings.TrimRight(msg, " \t\r\n")
	var lines []string
	var size float64
	for _, size = range messageSizes {
		lines = wrap(f, msg, size, width)
		if float64(len(lines))*size*messageLead <= height {
			return size, lines
		}
	}
	keep := max(1, int(height/(size*messageLead)))
	lines = lines[:keep]
	last := strings.TrimRight(lines[keep-1], " ")
	lines[keep-1] = fit(f, last+" …", size, width)
	return size, lines
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// labelled is "label: v", or empty when v is.
func labelled(label, v string) string {
	if strings.TrimSpace(v) == "" {
		return ""
	}
	return fmt.Sprintf("%s: %s", label, strings.TrimSpace(v))
}
