package convert

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// imagePDF writes a PDF of image pages straight to a file, one page at a
// time: each page's image stream is written as it is produced and nothing of
// it is kept afterwards, so memory does not grow with the page count.
// (pdfcpu's ImportImages builds the whole document in memory, decoded images
// included: ~55 MB a page for a 6000×6000 TIFF, issue 10 defect 1.)
//
// Stream lengths are indirect objects written after each stream, as
// LibreOffice does, so a stream never has to be buffered to learn its length.
type imagePDF struct {
	w       *bufio.Writer
	n       int64   // bytes written so far
	offsets []int64 // by object number - 1; 0 until written
	kids    []int   // page objects
	err     error
}

// Letter paper in points, and the share of it an image may cover: fax
// machines cannot print to the paper's edge.
const (
	pageWidth  = 612.0
	pageHeight = 792.0
	imageScale = 0.95
)

const (
	catalogObj = 1
	pagesObj   = 2
)

func newImagePDF(w io.Writer) *imagePDF {
	p := &imagePDF{w: bufio.NewWriterSize(w, 64<<10), offsets: make([]int64, 2)}
	// The binary comment marks the file as binary for transfer programs.
	p.printf("%%PDF-1.4\n%%\xe2\xe3\xcf\xd3\n")
	return p
}

func (p *imagePDF) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.w.Write(b)
	p.n += int64(n)
	p.err = err
	return n, err
}

func (p *imagePDF) printf(format string, args ...any) {
	fmt.Fprintf(p, format, args...)
}

func (p *imagePDF) alloc() int {
	p.offsets = append(p.offsets, 0)
	return len(p.offsets)
}

func (p *imagePDF) begin(nr int) {
	p.offsets[nr-1] = p.n
	p.printf("%d 0 obj\n", nr)
}

// pageImage describes one page's image XObject.
type pageImage struct {
	width, height int
	// dict holds the stream dictionary's entries other than Type, Subtype,
	// Width, Height and Length, e.g. "/ColorSpace /DeviceGray
	// /BitsPerComponent 8 /Filter /FlateDecode".
	dict string
	// body writes the stream's (encoded) data.
	body func(w io.Writer) error
}

// addPage writes one page showing img scaled to fit and centred.
func (p *imagePDF) addPage(img pageImage) error {
	imgNr, lenNr, contentNr, pageNr := p.alloc(), p.alloc(), p.alloc(), p.alloc()
	p.begin(imgNr)
	p.printf("<< /Type /XObject /Subtype /Image /Width %d /Height %d %s /Length %d 0 R >>\nstream\n",
		img.width, img.height, img.dict, lenNr)
	start := p.n
	if p.err == nil {
		if err := img.body(p); err != nil {
			return err
		}
	}
	length := p.n - start
	p.printf("\nendstream\nendobj\n")
	p.begin(lenNr)
	p.printf("%d\nendobj\n", length)

	scale := min(pageWidth*imageScale/float64(img.width), pageHeight*imageScale/float64(img.height))
	w, h := float64(img.width)*scale, float64(img.height)*scale
	content := fmt.Sprintf("q %s 0 0 %s %s %s cm /Im0 Do Q\n", num(w), num(h), num((pageWidth-w)/2), num((pageHeight-h)/2))
	p.begin(contentNr)
	p.printf("<< /Length %d >>\nstream\n%sendstream\nendobj\n", len(content), content)
	p.begin(pageNr)
	p.printf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %s %s] /Resources << /XObject << /Im0 %d 0 R >> >> /Contents %d 0 R >>\nendobj\n",
		pagesObj, num(pageWidth), num(pageHeight), imgNr, contentNr)
	p.kids = append(p.kids, pageNr)
	return p.err
}

// finish writes the page tree, the catalog, the cross-reference table and
// the trailer.
func (p *imagePDF) finish() error {
	p.begin(pagesObj)
	var kids strings.Builder
	for i, k := range p.kids {
		if i > 0 {
			kids.WriteByte(' ')
		}
		fmt.Fprintf(&kids, "%d 0 R", k)
	}
	p.printf("<< /Type /Pages /Kids [%s] /Count %d >>\nendobj\n", kids.String(), len(p.kids))
	p.begin(catalogObj)
	p.printf("<< /Type /Catalog /Pages %d 0 R >>\nendobj\n", pagesObj)
	xref := p.n
	p.printf("xref\n0 %d\n0000000000 65535 f\r\n", len(p.offsets)+1)
	for _, off := range p.offsets {
		p.printf("%010d 00000 n\r\n", off)
	}
	p.printf("trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(p.offsets)+1, catalogObj, xref)
	if p.err != nil {
		return p.err
	}
	return p.w.Flush()
}

// num formats a PDF real with at most three decimals.
func num(f float64) string {
	s := strconv.FormatFloat(f, 'f', 3, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-" {
		return "0"
	}
	return s
}
