package faxdoc

import (
	"bytes"
	"fmt"
	"strings"
)

// srcPage is one page of a fixture PDF.
type srcPage struct {
	w, h   float64
	rotate int
	text   string
}

var (
	letter       = srcPage{w: 612, h: 792}
	a4Landscape  = srcPage{w: 842, h: 595}
	letterTurned = srcPage{w: 612, h: 792, rotate: 90}
)

// fixturePDF writes a small PDF by hand: each page shows its text in
// Helvetica. The pages share one resource dictionary, as many writers do.
func fixturePDF(pages ...srcPage) []byte {
	var b bytes.Buffer
	var offs []int
	obj := func(body string) {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offs), body)
	}
	b.WriteString("%PDF-1.4\n")
	// 1 catalog, 2 pages, 3 font, 4 resources, then per page: page, content.
	kids := make([]string, len(pages))
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 5+2*i)
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	obj("<< /Font << /F1 3 0 R >> >>")
	for i, p := range pages {
		text := p.text
		if text == "" {
			text = fmt.Sprintf("Source page %d", i+1)
		}
		content := fmt.Sprintf("BT /F1 24 Tf 72 %d Td (%s) Tj ET\n0 0 m %d %d l S\n", int(p.h)-40, text, int(p.w), int(p.h))
		rot := ""
		if p.rotate != 0 {
			rot = fmt.Sprintf(" /Rotate %d", p.rotate)
		}
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g]%s /Resources 4 0 R /Contents %d 0 R >>", p.w, p.h, rot, 6+2*i))
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", len(content), content))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return b.Bytes()
}
