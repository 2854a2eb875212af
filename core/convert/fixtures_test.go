package convert

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"golang.org/x/image/tiff"
)

// pdfSpec describes a hand-written PDF with a classic xref table.
type pdfSpec struct {
	pages int
	// imageBytes, if set, gives every page an uncompressed grey image stream
	// of about that many bytes; the bulk of a large scanned PDF.
	imageBytes int
	// indirectLengths writes /Length as a reference, as LibreOffice does.
	indirectLengths bool
	// junk is written before the %PDF- header.
	junk string
}

// writePDF writes spec to w, streaming, so a 100 MB fixture costs no memory.
func writePDF(t testing.TB, w io.Writer, spec pdfSpec) {
	t.Helper()
	bw := bufio.NewWriterSize(w, 1<<20)
	var off int64
	var offs []int64
	put := func(s string) {
		n, err := bw.WriteString(s)
		if err != nil {
			t.Fatal(err)
		}
		off += int64(n)
	}
	// Objects are numbered by the order in which they are begun.
	begin := func() int {
		offs = append(offs, off)
		put(fmt.Sprintf("%d 0 obj\n", len(offs)))
		return len(offs)
	}
	// stream writes a stream object whose body is n bytes written by body.
	stream := func(dict string, n int64, body func()) {
		nr := begin()
		length := fmt.Sprint(n)
		if spec.indirectLengths {
			length = fmt.Sprintf("%d 0 R", nr+1)
		}
		put(fmt.Sprintf("<< %s /Length %s >>\nstream\n", dict, length))
		body()
		put("\nendstream\nendobj\n")
		if spec.indirectLengths {
			begin()
			put(fmt.Sprintf("%d\nendobj\n", n))
		}
	}
	objsPerStream := 1
	if spec.indirectLengths {
		objsPerStream = 2
	}
	perPage := 1 + objsPerStream
	if spec.imageBytes > 0 {
		perPage += objsPerStream
	}
	put(spec.junk + "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	begin()
	put("<< /Type /Catalog /Pages 2 0 R >>\nendobj\n")
	var kids []string
	for i := 0; i < spec.pages; i++ {
		kids = append(kids, fmt.Sprintf("%d 0 R", 3+i*perPage))
	}
	begin()
	put(fmt.Sprintf("<< /Type /Pages /Count %d /Kids [%s] >>\nendobj\n", spec.pages, strings.Join(kids, " ")))
	side := 1
	for side*side < spec.imageBytes {
		side++
	}
	row := string(bytes.Repeat([]byte{0x5a}, side))
	font := "/Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >>"
	for i := 0; i < spec.pages; i++ {
		pageNr := begin()
		res := "<< " + font + " >>"
		content := fmt.Sprintf("BT /F1 24 Tf 72 700 Td (Page %d) Tj ET", i+1)
		contentsNr := pageNr + 1
		if spec.imageBytes > 0 {
			res = fmt.Sprintf("<< /XObject << /Im0 %d 0 R >> %s >>", pageNr+1, font)
			content = "q 612 0 0 792 0 0 cm /Im0 Do Q " + content
			contentsNr += objsPerStream
		}
		put(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %s /Contents %d 0 R >>\nendobj\n", res, contentsNr))
		if spec.imageBytes > 0 {
			stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8", side, side),
				int64(side*side), func() {
					for r := 0; r < side; r++ {
						put(row)
					}
				})
		}
		stream("", int64(len(content)), func() { put(content) })
	}
	xref := off
	put(fmt.Sprintf("xref\n0 %d\n0000000000 65535 f \n", len(offs)+1))
	for _, o := range offs {
		put(fmt.Sprintf("%010d 00000 n \n", o))
	}
	put(fmt.Sprintf("trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref))
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
}

func pdfBytes(t testing.TB, spec pdfSpec) []byte {
	var b bytes.Buffer
	writePDF(t, &b, spec)
	return b.Bytes()
}

func writeTemp(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// rewritePDF has pdfcpu read and write src, which gives a PDF 1.5 file with
// an xref stream and object streams, the layout most modern writers use.
func rewritePDF(t testing.TB, src []byte) []byte {
	t.Helper()
	ctx, err := api.ReadContext(bytes.NewReader(src), pdfConfig(model.VALIDATE))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := api.WriteContext(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte("/XRef")) || !bytes.Contains(out.Bytes(), []byte("/ObjStm")) {
		t.Fatal("pdfcpu wrote no xref stream or object stream")
	}
	return out.Bytes()
}

// encryptPDF encrypts src with AES-256; an empty user password gives a file
// that opens without one (owner password only).
func encryptPDF(t testing.TB, src []byte, userPW string) []byte {
	t.Helper()
	conf := pdfConfig(model.ENCRYPT)
	conf.UserPW, conf.OwnerPW = userPW, "owner-secret"
	conf.Permissions = model.PermissionsPrint
	var out bytes.Buffer
	if err := api.Encrypt(bytes.NewReader(src), &out, conf); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// appendUpdate adds an incremental update that replaces the catalog, so the
// file has two xref sections linked by /Prev.
func appendUpdate(t testing.TB, src []byte) []byte {
	t.Helper()
	i := bytes.LastIndex(src, []byte("startxref"))
	var prev, size int
	if _, err := fmt.Sscanf(string(src[i:]), "startxref\n%d", &prev); err != nil {
		t.Fatal(err)
	}
	j := bytes.LastIndex(src, []byte("/Size "))
	if _, err := fmt.Sscanf(string(src[j:]), "/Size %d", &size); err != nil {
		t.Fatal(err)
	}
	b := bytes.Clone(src)
	objOff := len(b)
	b = append(b, "1 0 obj\n<< /Type /Catalog /Pages 2 0 R /Lang (en) >>\nendobj\n"...)
	xref := len(b)
	b = fmt.Appendf(b, "xref\n1 1\n%010d 00000 n\r\ntrailer\n<< /Size %d /Root 1 0 R /Prev %d >>\nstartxref\n%d\n%%%%EOF\n", objOff, size, prev, xref)
	return b
}

func testImage(w, h int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 128, 255})
		}
	}
	return img
}

func pngBytes(t testing.TB) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, testImage(120, 80)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegBytes(t testing.TB) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, testImage(80, 120), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gifBytes(t testing.TB) []byte {
	var b bytes.Buffer
	if err := gif.Encode(&b, testImage(64, 64), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func tiffBytes(t testing.TB) []byte {
	var b bytes.Buffer
	if err := tiff.Encode(&b, testImage(100, 100), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type zipEntry struct{ name, body string }

func zipBytes(t testing.TB, entries ...zipEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.name == "mimetype" {
			h.Method = zip.Store // OpenDocument requires it stored, first
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const ooxmlRels = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="%s"/>
</Relationships>`

// docxBytes is a minimal Word document with the given pages separated by
// hard page breaks.
func docxBytes(t testing.TB, pages int) []byte {
	var body strings.Builder
	for i := 1; i <= pages; i++ {
		if i > 1 {
			body.WriteString(`<w:p><w:r><w:br w:type="page"/></w:r></w:p>`)
		}
		fmt.Fprintf(&body, `<w:p><w:r><w:t>This is page %d of the test fax.</w:t></w:r></w:p>`, i)
	}
	return zipBytes(t,
		zipEntry{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
</Types>`},
		zipEntry{"_rels/.rels", fmt.Sprintf(ooxmlRels, "word/document.xml")},
		zipEntry{"word/document.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `</w:body></w:document>`},
	)
}

func xlsxBytes(t testing.TB) []byte {
	return zipBytes(t,
		zipEntry{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>
<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>
</Types>`},
		zipEntry{"_rels/.rels", fmt.Sprintf(ooxmlRels, "xl/workbook.xml")},
		zipEntry{"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">
<sheets><sheet name="Invoice" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		zipEntry{"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>
</Relationships>`},
		zipEntry{"xl/worksheets/sheet1.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>
<row r="1"><c r="A1" t="inlineStr"><is><t>Item</t></is></c><c r="B1" t="inlineStr"><is><t>Amount</t></is></c></row>
<row r="2"><c r="A2" t="inlineStr"><is><t>Pages</t></is></c><c r="B2"><v>42</v></c></row>
</sheetData></worksheet>`},
	)
}

func odfBytes(t testing.TB, mimetype, body string) []byte {
	return zipBytes(t,
		zipEntry{"mimetype", mimetype},
		zipEntry{"META-INF/manifest.xml", `<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">
<manifest:file-entry manifest:full-path="/" manifest:media-type="` + mimetype + `"/>
<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>
</manifest:manifest>`},
		zipEntry{"content.xml", `<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.2"><office:body>` + body + `</office:body></office:document-content>`},
	)
}

func odtBytes(t testing.TB) []byte {
	return odfBytes(t, "application/vnd.oasis.opendocument.text",
		`<office:text><text:p>Hello from an OpenDocument text.</text:p></office:text>`)
}

func odsBytes(t testing.TB) []byte {
	return odfBytes(t, "application/vnd.oasis.opendocument.spreadsheet",
		`<office:spreadsheet><table:table table:name="Sheet1"><table:table-row><table:table-cell><text:p>42</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet>`)
}

// cfbBytes builds a minimal OLE2 compound file (512-byte sectors: header, one
// FAT sector, directory sectors) with the given root-level stream names, plus
// a storage holding nested streams, which must not count.
func cfbBytes(root []string, nested []string) []byte {
	le := binary.LittleEndian
	type ent struct {
		name               string
		typ                byte
		left, right, child uint32
	}
	const none = 0xFFFFFFFF
	ents := []ent{{name: "Root Entry", typ: 5, left: none, right: none, child: none}}
	// link chains names as children of parent through right-sibling
	// pointers (a degenerate but valid red-black tree) and returns the last.
	link := func(parent int, names []string, typ byte) int {
		last := -1
		for _, n := range names {
			ents = append(ents, ent{name: n, typ: typ, left: none, right: none, child: none})
			id := len(ents) - 1
			if last < 0 {
				ents[parent].child = uint32(id)
			} else {
				ents[last].right = uint32(id)
			}
			last = id
		}
		return last
	}
	last := link(0, root, 2)
	if len(nested) > 0 {
		ents = append(ents, ent{name: "ObjectPool", typ: 1, left: none, right: none, child: none})
		pool := len(ents) - 1
		if last < 0 {
			ents[0].child = uint32(pool)
		} else {
			ents[last].right = uint32(pool)
		}
		link(pool, nested, 2)
	}
	dirSectors := (len(ents) + 3) / 4
	b := make([]byte, 512*(2+dirSectors))
	copy(b, cfbMagic)
	le.PutUint16(b[0x18:], 0x3E)
	le.PutUint16(b[0x1A:], 3)
	le.PutUint16(b[0x1C:], 0xFFFE)
	le.PutUint16(b[0x1E:], 9)
	le.PutUint16(b[0x20:], 6)
	le.PutUint32(b[0x2C:], 1)
	le.PutUint32(b[0x30:], 1)
	le.PutUint32(b[0x38:], 4096)
	le.PutUint32(b[0x3C:], 0xFFFFFFFE)
	le.PutUint32(b[0x44:], 0xFFFFFFFE)
	for i := 0; i < 109; i++ {
		le.PutUint32(b[0x4C+4*i:], none)
	}
	le.PutUint32(b[0x4C:], 0) // FAT is sector 0
	fat := b[512:1024]
	for i := 0; i < 128; i++ {
		le.PutUint32(fat[4*i:], none)
	}
	le.PutUint32(fat[0:], 0xFFFFFFFD)
	for s := 1; s <= dirSectors; s++ {
		next := uint32(s + 1)
		if s == dirSectors {
			next = 0xFFFFFFFE
		}
		le.PutUint32(fat[4*s:], next)
	}
	for i, e := range ents {
		d := b[1024+128*i : 1024+128*(i+1)]
		u := utf16.Encode([]rune(e.name))
		for j, c := range u {
			le.PutUint16(d[2*j:], c)
		}
		le.PutUint16(d[0x40:], uint16(2*len(u)+2))
		d[0x42] = e.typ
		le.PutUint32(d[0x44:], e.left)
		le.PutUint32(d[0x48:], e.right)
		le.PutUint32(d[0x4C:], e.child)
	}
	for i := len(ents); i < 4*dirSectors; i++ {
		d := b[1024+128*i : 1024+128*(i+1)]
		le.PutUint32(d[0x44:], none)
		le.PutUint32(d[0x48:], none)
		le.PutUint32(d[0x4C:], none)
	}
	return b
}
