package convert

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"

	"github.com/pdfcpu/pdfcpu/pkg/filter"
)

// Why this file exists: pdfcpu v0.15.0 reads every stream body of a PDF into
// memory while it builds its cross-reference table (pdfcpu.Read →
// dereferenceObjects → loadEncodedStreamContent), whatever the
// configuration: relaxed validation, Optimize=false and DecodeAllStreams=false
// only avoid *decoding* and rewriting. Validating a 100 MB PDF whose bulk is
// ten 10 MB image streams grows peak RSS by 103 MB that way.
//
// Validation itself never looks at stream bodies except the catalog's XMP
// metadata, and nothing else reads them before validation. So we index the
// file ourselves (xref sections and stream dictionaries only, reading small
// windows), then give pdfcpu a view of the file in which every ordinary
// stream's /Length says 1. pdfcpu then loads one byte per stream and still
// checks everything it normally checks: the page tree, resources, fonts,
// annotations; the page count it reports is its own. Through the view the
// same file grows peak RSS by about 2 MB (TestPDFMemoryBounded measures
// both), and on the ~500 PDFs shipped with pdfcpu the verdicts and page
// counts are identical (TestPDFCPUCorpus).
//
// Stream bodies pdfcpu no longer sees are checked here instead: each must end
// inside the file, which is what catches truncated uploads.

const (
	// Streams up to this size stay visible to pdfcpu: hiding them saves
	// little. Object streams, xref streams and XMP metadata always stay
	// visible, whatever their size: pdfcpu needs their bodies.
	keepStreamBytes = 4 << 10

	maxXRefSections = 4096
	maxObjectNumber = 8 << 20
	// maxObjects bounds the index (about 40 bytes an object). pdfcpu keeps
	// every object in memory at many times that, so a document near this
	// limit is in trouble anyway; real ones have a few per page.
	maxObjects = 1 << 20
	// maxXRefStreamBytes bounds one decoded xref stream (about 1.2 million
	// entries at the usual 7 bytes each).
	maxXRefStreamBytes = 8 << 20
	firstWindow        = 1 << 10
	maxWindow          = 1 << 20
)

// inObjectStream is the offset recorded for objects stored in object
// streams: never streams themselves, so the index need not look at them.
const inObjectStream = -1

type patch struct {
	off int64
	b   []byte
}

// pdfIndex is what indexPDF learnt about a PDF.
type pdfIndex struct {
	encrypted bool
	patches   []patch // sorted by offset
	// declaredPages is the page tree root's /Count, or -1 when the index
	// could not resolve it; pageObjects counts the /Type /Page objects
	// stored at an offset (those in object streams are not looked at).
	// Either one above the page limit refuses the file before pdfcpu
	// builds its object graph, at ~7 KB a page.
	declaredPages, pageObjects int
}

type indexer struct {
	r      io.ReaderAt
	size   int64
	header int64 // offset of "%PDF-"; some files carry junk before it
	// entries maps object numbers to offsets (or inObjectStream).
	entries map[int64]int64
	// objStm maps objects stored in object streams to their stream.
	objStm map[int64]int64
	// root is the catalog's object number from the newest trailer, 0 if
	// none was found.
	root int64
	idx  pdfIndex
}

func indexPDF(ctx context.Context, r io.ReaderAt, size int64) (*pdfIndex, error) {
	ix := &indexer{r: r, size: size, entries: map[int64]int64{}, objStm: map[int64]int64{}, idx: pdfIndex{declaredPages: -1}}
	head := make([]byte, min(size, 1024))
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read header: %w", err)
	}
	h := bytes.Index(head, []byte("%PDF-"))
	if h < 0 {
		return nil, errors.New("no %PDF- header")
	}
	ix.header = int64(h)
	start, err := ix.startXRef()
	if err != nil {
		return nil, err
	}
	if err := ix.readXRefChain(ctx, start); err != nil {
		return nil, err
	}
	if ix.idx.encrypted {
		return &ix.idx, nil
	}
	if err := ix.scanStreams(ctx); err != nil {
		return nil, err
	}
	sort.Slice(ix.idx.patches, func(i, j int) bool { return ix.idx.patches[i].off < ix.idx.patches[j].off })
	ix.idx.declaredPages = ix.declaredPages()
	return &ix.idx, nil
}

// objectStreamData reads and decodes an object stream of at most
// maxXRefStreamBytes, encoded and decoded.
func (ix *indexer) objectStreamData(o object) ([]byte, bool) {
	length, ok := o.val.int("Length")
	if lv := o.val.field("Length"); lv.kind == valRef {
		if loff, found := ix.entries[lv.num]; found && loff != inObjectStream {
			if lo, err := ix.lookup(loff); err == nil && lo.val.kind == valInt {
				length, ok = lo.val.num, true
			}
		}
	}
	if !ok || length < 0 || length > maxXRefStreamBytes || o.bodyOffset+length > ix.size {
		return nil, false
	}
	raw := make([]byte, length)
	if _, err := ix.r.ReadAt(raw, o.bodyOffset); err != nil {
		return nil, false
	}
	data, err := decodeStream(o.val, raw)
	return data, err == nil
}

// pageTypeRE matches a page dictionary's type entry (not /Pages).
var pageTypeRE = regexp.MustCompile(`/Type\s*/Page(?:[^A-Za-z0-9#_.-]|$)`)

// countPagesInObjectStream counts the page objects an object stream holds,
// by their /Type entries: a page tree can hide its kids there behind a
// small /Count. A stream the index cannot decode counts nothing; pdfcpu
// judges it.
func (ix *indexer) countPagesInObjectStream(o object) int {
	data, ok := ix.objectStreamData(o)
	if !ok {
		return 0
	}
	return len(pageTypeRE.FindAllIndex(data, -1))
}

// declaredPages resolves /Root /Pages /Count, or returns -1.
func (ix *indexer) declaredPages() int {
	catalog, ok := ix.resolve(ix.root)
	if !ok || catalog.kind != valDict || catalog.field("Pages").kind != valRef {
		return -1
	}
	pages, ok := ix.resolve(catalog.field("Pages").num)
	if !ok || pages.kind != valDict {
		return -1
	}
	n, ok := pages.int("Count")
	if !ok || n < 0 {
		return -1
	}
	return int(min(n, 1<<30))
}

// resolve returns the value of object nr, stored at an offset or in an
// object stream.
func (ix *indexer) resolve(nr int64) (pdfVal, bool) {
	if off, ok := ix.entries[nr]; ok && off != inObjectStream {
		o, err := ix.lookup(off)
		return o.val, err == nil && o.nr == nr
	}
	stm, ok := ix.objStm[nr]
	if !ok {
		return pdfVal{}, false
	}
	off, ok := ix.entries[stm]
	if !ok || off == inObjectStream {
		return pdfVal{}, false
	}
	o, err := ix.lookup(off)
	if err != nil || !o.isStream || o.val.name("Type") != "ObjStm" {
		return pdfVal{}, false
	}
	data, ok := ix.objectStreamData(o)
	n, _ := o.val.int("N")
	first, _ := o.val.int("First")
	if !ok || n < 0 || first < 0 || first > int64(len(data)) {
		return pdfVal{}, false
	}
	// The header is N pairs of object number and offset from /First.
	l := &lexer{b: data[:first], atEOF: true}
	for range min(n, 1<<20) {
		t1, _, err1 := l.token()
		t2, _, err2 := l.token()
		if err1 != nil || err2 != nil {
			return pdfVal{}, false
		}
		onr, ok1 := parseInt(t1)
		rel, ok2 := parseInt(t2)
		if !ok1 || !ok2 {
			return pdfVal{}, false
		}
		if onr == nr {
			if rel < 0 || first+rel >= int64(len(data)) {
				return pdfVal{}, false
			}
			v, err := (&lexer{b: data[first+rel:], atEOF: true}).value(0)
			return v, err == nil
		}
	}
	return pdfVal{}, false
}

// startXRef finds the last "startxref" near the end of the file.
func (ix *indexer) startXRef() (int64, error) {
	n := min(ix.size, 64<<10)
	tail := make([]byte, n)
	if _, err := ix.r.ReadAt(tail, ix.size-n); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("read trailer: %w", err)
	}
	i := bytes.LastIndex(tail, []byte("startxref"))
	if i < 0 {
		return 0, errors.New("no startxref: the file is truncated or not a complete PDF")
	}
	l := &lexer{b: tail[i+len("startxref"):], atEOF: true}
	tok, _, err := l.token()
	if err != nil {
		return 0, fmt.Errorf("startxref: %w", err)
	}
	off, ok := parseInt(tok)
	if !ok || off < 0 || off >= ix.size {
		return 0, fmt.Errorf("startxref %q is not an offset in the file", tok)
	}
	return off, nil
}

// readXRefChain follows xref sections from the newest through /XRefStm and
// /Prev. The first definition of an object number wins, as in a reader.
func (ix *indexer) readXRefChain(ctx context.Context, start int64) error {
	todo := []int64{start}
	seen := map[int64]bool{}
	for len(todo) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		off := todo[0]
		todo = todo[1:]
		if seen[off] {
			continue
		}
		if len(seen) >= maxXRefSections {
			return errors.New("too many cross-reference sections")
		}
		seen[off] = true
		trailer, err := ix.readXRefSection(off)
		if err != nil && ix.header > 0 {
			// Offsets may count from the header rather than the file start.
			if t2, err2 := ix.readXRefSection(off + ix.header); err2 == nil {
				trailer, err = t2, nil
			}
		}
		if err != nil {
			return fmt.Errorf("cross-reference section at %d: %w", off, err)
		}
		if r := trailer.field("Root"); r.kind == valRef && ix.root == 0 {
			ix.root = r.num
		}
		if _, ok := trailer.get("Encrypt"); ok {
			ix.idx.encrypted = true
			return nil
		}
		// A hybrid file's /XRefStm supplements its own table and comes
		// before older sections.
		var next []int64
		for _, k := range []string{"XRefStm", "Prev"} {
			if o, ok := trailer.int(k); ok && o >= 0 && o < ix.size {
				next = append(next, o)
			}
		}
		todo = append(next, todo...)
	}
	return nil
}

func (ix *indexer) readXRefSection(off int64) (pdfVal, error) {
	w, err := ix.window(off, 16)
	if err != nil {
		return pdfVal{}, err
	}
	if bytes.HasPrefix(bytes.TrimLeft(w, " \t\r\n\f\x00"), []byte("xref")) {
		return ix.readXRefTable(off)
	}
	return ix.readXRefStream(off)
}

func (ix *indexer) define(nr, offset int64) error {
	if nr < 0 || nr > maxObjectNumber {
		return fmt.Errorf("object number %d out of range", nr)
	}
	if _, ok := ix.entries[nr]; !ok {
		if len(ix.entries) >= maxObjects {
			return fmt.Errorf("more than %d objects", maxObjects)
		}
		ix.entries[nr] = offset
	}
	return nil
}

// readXRefTable reads a classic "xref" table and the trailer dictionary after
// it. Entries are read as whitespace-separated words because real files get
// the fixed 20-byte layout wrong in every possible way.
func (ix *indexer) readXRefTable(off int64) (pdfVal, error) {
	// The buffer is no larger than what is left of the file: a small PDF
	// (a machine request's, checked on every 402) should not cost a
	// 64 KiB allocation.
	br := bufio.NewReaderSize(io.NewSectionReader(ix.r, off, ix.size-off), int(min(64<<10, ix.size-off)))
	pos := off
	word := func() (string, int64, error) {
		var b []byte
		for {
			c, err := br.ReadByte()
			if err != nil {
				if len(b) > 0 && errors.Is(err, io.EOF) {
					return string(b), pos - int64(len(b)), nil
				}
				return "", pos, err
			}
			pos++
			if isSpace(c) {
				if len(b) > 0 {
					return string(b), pos - 1 - int64(len(b)), nil
				}
				continue
			}
			b = append(b, c)
			if string(b) == "trailer" {
				// The dictionary may follow with no space.
				return string(b), pos - int64(len(b)), nil
			}
			if len(b) > 64 {
				return "", pos, errors.New("malformed cross-reference table")
			}
		}
	}
	if w, _, err := word(); err != nil || w != "xref" {
		return pdfVal{}, errors.New("missing xref keyword")
	}
	for {
		w, at, err := word()
		if err != nil {
			return pdfVal{}, fmt.Errorf("read cross-reference table: %w", err)
		}
		if w == "trailer" {
			return ix.readTrailer(at + 7)
		}
		first, ok1 := parseInt(w)
		cw, _, err := word()
		if err != nil {
			return pdfVal{}, fmt.Errorf("read cross-reference table: %w", err)
		}
		count, ok2 := parseInt(cw)
		if !ok1 || !ok2 || first < 0 || count < 0 || first+count > maxObjectNumber {
			return pdfVal{}, fmt.Errorf("malformed subsection header %q %q", w, cw)
		}
		for i := int64(0); i < count; i++ {
			ow, _, err1 := word()
			gw, _, err2 := word()
			tw, _, err3 := word()
			if err := errors.Join(err1, err2, err3); err != nil {
				return pdfVal{}, fmt.Errorf("read cross-reference entry: %w", err)
			}
			o, ok1 := parseInt(ow)
			_, ok2 := parseInt(gw)
			if !ok1 || !ok2 || (tw != "n" && tw != "f") {
				return pdfVal{}, fmt.Errorf("malformed cross-reference entry %q %q %q", ow, gw, tw)
			}
			// Free entries do not shadow older definitions: hybrid files
			// mark objects that live in object streams as free here.
			if tw == "n" && o > 0 {
				if err := ix.define(first+i, o); err != nil {
					return pdfVal{}, err
				}
			}
		}
	}
}

func (ix *indexer) readTrailer(off int64) (pdfVal, error) {
	for size := firstWindow; ; size *= 4 {
		w, err := ix.window(off, size)
		if err != nil {
			return pdfVal{}, err
		}
		l := &lexer{b: w, atEOF: off+int64(len(w)) >= ix.size}
		v, err := l.value(0)
		if errors.Is(err, errShortWindow) && size < maxWindow {
			continue
		}
		if err != nil {
			return pdfVal{}, fmt.Errorf("trailer: %w", err)
		}
		if v.kind != valDict {
			return pdfVal{}, errors.New("trailer is not a dictionary")
		}
		return v, nil
	}
}

// object is an indirect object as parsed from one window of the file.
type object struct {
	nr, gen    int64
	val        pdfVal
	isStream   bool
	bodyOffset int64
	window     int64 // file offset of val's spans
}

// object parses the object header and value at off, widening the window
// until the object fits. For a stream it also finds the body's offset.
func (ix *indexer) object(off int64) (object, error) {
	for size := firstWindow; ; size *= 4 {
		w, err := ix.window(off, size)
		if err != nil {
			return object{}, err
		}
		o, err := parseObject(w, off+int64(len(w)) >= ix.size)
		if errors.Is(err, errShortWindow) && size < maxWindow {
			continue
		}
		if err != nil {
			return object{}, err
		}
		o.window = off
		o.bodyOffset += off
		return o, nil
	}
}

func parseObject(w []byte, atEOF bool) (object, error) {
	l := &lexer{b: w, atEOF: atEOF}
	var o object
	var ok bool
	t1, _, err := l.token()
	if err != nil {
		return o, err
	}
	t2, _, err := l.token()
	if err != nil {
		return o, err
	}
	t3, _, err := l.token()
	if err != nil {
		return o, err
	}
	o.nr, ok = parseInt(t1)
	if g, ok2 := parseInt(t2); ok && ok2 && t3 == "obj" {
		o.gen = g
	} else {
		return o, fmt.Errorf("no object header (found %.20q)", t1+" "+t2+" "+t3)
	}
	if o.val, err = l.value(0); err != nil {
		return o, err
	}
	if o.val.kind != valDict {
		return o, nil
	}
	save := l.pos
	kw, _, err := l.token()
	if errors.Is(err, errShortWindow) {
		return o, err
	}
	if err != nil || kw != "stream" {
		// endobj, or a missing one; either way not a stream.
		l.pos = save
		return o, nil
	}
	// The keyword is followed by CRLF or LF (a lone CR is tolerated).
	if l.pos < len(l.b) && l.b[l.pos] == '\r' {
		l.pos++
	}
	if l.pos < len(l.b) && l.b[l.pos] == '\n' {
		l.pos++
	}
	o.isStream = true
	o.bodyOffset = int64(l.pos)
	return o, nil
}

// readXRefStream reads a PDF 1.5 cross-reference stream.
func (ix *indexer) readXRefStream(off int64) (pdfVal, error) {
	o, err := ix.lookup(off)
	if err != nil {
		return pdfVal{}, err
	}
	d := o.val
	if !o.isStream || d.name("Type") != "XRef" {
		return pdfVal{}, errors.New("neither an xref table nor an xref stream")
	}
	length, ok := d.int("Length")
	if !ok || length < 0 || length > maxXRefStreamBytes || o.bodyOffset+length > ix.size {
		return pdfVal{}, errors.New("xref stream has no usable direct /Length")
	}
	raw := make([]byte, length)
	if _, err := ix.r.ReadAt(raw, o.bodyOffset); err != nil {
		return pdfVal{}, fmt.Errorf("read xref stream: %w", err)
	}
	data, err := decodeStream(d, raw)
	if err != nil {
		return pdfVal{}, fmt.Errorf("decode xref stream: %w", err)
	}
	wv := d.field("W")
	if wv.kind != valArray || len(wv.arr) != 3 {
		return pdfVal{}, errors.New("xref stream /W is not an array of three widths")
	}
	var widths [3]int
	for i, x := range wv.arr {
		if x.kind != valInt || x.num < 0 || x.num > 8 {
			return pdfVal{}, errors.New("xref stream /W has a bad width")
		}
		widths[i] = int(x.num)
	}
	rowLen := widths[0] + widths[1] + widths[2]
	if rowLen == 0 {
		return pdfVal{}, errors.New("xref stream /W is all zeros")
	}
	size, _ := d.int("Size")
	index := []int64{0, size}
	if iv, ok := d.get("Index"); ok {
		if iv.kind != valArray || len(iv.arr)%2 != 0 {
			return pdfVal{}, errors.New("xref stream /Index is malformed")
		}
		index = index[:0]
		for _, x := range iv.arr {
			if x.kind != valInt || x.num < 0 {
				return pdfVal{}, errors.New("xref stream /Index is malformed")
			}
			index = append(index, x.num)
		}
	}
	field := func(b []byte) int64 {
		var n int64
		for _, c := range b {
			n = n<<8 | int64(c)
		}
		return n
	}
	p := 0
	for i := 0; i < len(index); i += 2 {
		first, count := index[i], index[i+1]
		if first+count > maxObjectNumber {
			return pdfVal{}, errors.New("xref stream /Index out of range")
		}
		for j := int64(0); j < count; j++ {
			if p+rowLen > len(data) {
				return pdfVal{}, errors.New("xref stream is shorter than its /Index says")
			}
			row := data[p : p+rowLen]
			p += rowLen
			typ := int64(1)
			if widths[0] > 0 {
				typ = field(row[:widths[0]])
			}
			// The third field (generation or index in the object stream)
			// does not matter here.
			f2 := field(row[widths[0] : widths[0]+widths[1]])
			var err error
			switch typ {
			case 1:
				if f2 > 0 {
					err = ix.define(first+j, f2)
				}
			case 2:
				if err = ix.define(first+j, inObjectStream); err == nil {
					if _, ok := ix.objStm[first+j]; !ok {
						ix.objStm[first+j] = f2
					}
				}
			}
			if err != nil {
				return pdfVal{}, err
			}
		}
	}
	return d, nil
}

// decodeStream applies the filters of a stream dictionary to raw. Only used
// for xref streams, which are small and almost always plain Flate.
func decodeStream(d pdfVal, raw []byte) ([]byte, error) {
	var names []string
	var parms []pdfVal
	switch f := d.field("Filter"); f.kind {
	case 0:
	case valName:
		names = []string{f.str}
		parms = []pdfVal{d.field("DecodeParms")}
	case valArray:
		dp := d.field("DecodeParms")
		for i, x := range f.arr {
			if x.kind != valName {
				return nil, errors.New("bad /Filter")
			}
			names = append(names, x.str)
			if dp.kind == valArray && i < len(dp.arr) {
				parms = append(parms, dp.arr[i])
			} else {
				parms = append(parms, pdfVal{})
			}
		}
	default:
		return nil, errors.New("bad /Filter")
	}
	var r io.Reader = bytes.NewReader(raw)
	for i, name := range names {
		pm := map[string]int{}
		if parms[i].kind == valDict {
			for _, e := range parms[i].dict {
				if e.val.kind == valInt {
					pm[e.key] = int(e.val.num)
				}
			}
		}
		f, err := filter.NewFilter(name, pm, maxXRefStreamBytes)
		if err != nil {
			return nil, err
		}
		if r, err = f.Decode(r); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(r, maxXRefStreamBytes+1))
}

// lookup parses the object at a cross-reference offset. Some writers count
// offsets from the %PDF- header rather than from the start of the file.
func (ix *indexer) lookup(off int64) (object, error) {
	o, err := ix.object(off)
	if err != nil && ix.header > 0 {
		if o2, err2 := ix.object(off + ix.header); err2 == nil {
			return o2, nil
		}
	}
	return o, err
}

// scanStreams visits every object stored at an offset and records a patch for
// each ordinary stream.
func (ix *indexer) scanStreams(ctx context.Context) error {
	nrs := make([]int64, 0, len(ix.entries))
	for nr, off := range ix.entries {
		if off != inObjectStream {
			nrs = append(nrs, nr)
		}
	}
	// Offset fax reads the file front to back, which the page cache likes.
	sort.Slice(nrs, func(i, j int) bool { return ix.entries[nrs[i]] < ix.entries[nrs[j]] })
	for i, nr := range nrs {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		off := ix.entries[nr]
		if off >= ix.size {
			return fmt.Errorf("object %d lies beyond the end of the file: the file is truncated", nr)
		}
		o, err := ix.lookup(off)
		if err != nil {
			return fmt.Errorf("object %d at offset %d: %w", nr, off, err)
		}
		if o.nr != nr {
			return fmt.Errorf("cross-reference entry for object %d points at object %d", nr, o.nr)
		}
		switch {
		case o.val.kind != valDict:
		case o.val.name("Type") == "Page":
			ix.idx.pageObjects++
		case o.isStream && o.val.name("Type") == "ObjStm":
			ix.idx.pageObjects += ix.countPagesInObjectStream(o)
		}
		if !o.isStream {
			continue
		}
		if err := ix.checkStream(nr, o); err != nil {
			return err
		}
	}
	return nil
}

func (ix *indexer) checkStream(nr int64, o object) error {
	lv, ok := o.val.get("Length")
	if !ok {
		return fmt.Errorf("stream object %d has no /Length", nr)
	}
	length := int64(-1)
	switch lv.kind {
	case valInt:
		length = lv.num
	case valRef:
		// Indirect lengths are common (LibreOffice writes them). Resolve
		// those stored at an offset; one inside an object stream stays
		// unknown and the body is not checked.
		if off, ok := ix.entries[lv.num]; ok && off != inObjectStream {
			lo, err := ix.lookup(off)
			if err != nil {
				return fmt.Errorf("length of stream object %d: %w", nr, err)
			}
			if lo.val.kind != valInt {
				return fmt.Errorf("length of stream object %d is not an integer", nr)
			}
			length = lo.val.num
		}
	default:
		return fmt.Errorf("stream object %d has a malformed /Length", nr)
	}
	if length >= 0 && (length > ix.size || o.bodyOffset+length > ix.size) {
		return fmt.Errorf("stream object %d runs past the end of the file: the file is truncated", nr)
	}
	switch o.val.name("Type") {
	case "XRef", "ObjStm", "Metadata":
		return nil
	}
	if length >= 0 && length <= keepStreamBytes {
		return nil
	}
	// Same byte count, so every offset in the file stays valid.
	b := bytes.Repeat([]byte{' '}, lv.end-lv.start)
	b[0] = '1'
	ix.idx.patches = append(ix.idx.patches, patch{off: o.window + int64(lv.start), b: b})
	return nil
}

func (ix *indexer) window(off int64, n int) ([]byte, error) {
	if off < 0 || off >= ix.size {
		return nil, fmt.Errorf("offset %d outside the file", off)
	}
	n = int(min(int64(n), ix.size-off))
	b := make([]byte, n)
	if _, err := ix.r.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read at %d: %w", off, err)
	}
	return b, nil
}

// patchedReader is the file as pdfcpu sees it: the original bytes with the
// index's patches applied.
type patchedReader struct {
	r       io.ReaderAt
	size    int64
	pos     int64
	patches []patch
}

func (p *patchedReader) Read(b []byte) (int, error) {
	if p.pos >= p.size {
		return 0, io.EOF
	}
	if rem := p.size - p.pos; int64(len(b)) > rem {
		b = b[:rem]
	}
	n, err := p.r.ReadAt(b, p.pos)
	if n > 0 {
		end := p.pos + int64(n)
		i := sort.Search(len(p.patches), func(i int) bool {
			return p.patches[i].off+int64(len(p.patches[i].b)) > p.pos
		})
		for ; i < len(p.patches) && p.patches[i].off < end; i++ {
			pt := p.patches[i]
			lo, hi := max(pt.off, p.pos), min(pt.off+int64(len(pt.b)), end)
			copy(b[lo-p.pos:hi-p.pos], pt.b[lo-pt.off:hi-pt.off])
		}
		p.pos = end
	}
	if errors.Is(err, io.EOF) && n > 0 {
		err = nil
	}
	return n, err
}

func (p *patchedReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += p.pos
	case io.SeekEnd:
		offset += p.size
	default:
		return 0, errors.New("seek: bad whence " + strconv.Itoa(whence))
	}
	if offset < 0 {
		return 0, errors.New("seek: negative position")
	}
	p.pos = offset
	return offset, nil
}
