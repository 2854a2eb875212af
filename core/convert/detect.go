package convert

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf16"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
)

// supported lists what Detect accepts, in the order error messages name them.
var supported = [...]struct {
	kind documents.FileKind
	name string
}{
	{documents.FilePDF, "PDF"}, {documents.FilePNG, "PNG"}, {documents.FileJPEG, "JPEG"}, {documents.FileTIFF, "TIFF"}, {documents.FileGIF, "GIF"},
	{documents.FileDOC, "DOC"}, {documents.FileDOCX, "DOCX"}, {documents.FileXLS, "XLS"}, {documents.FileXLSX, "XLSX"},
	{documents.FileODT, "ODT"}, {documents.FileODS, "ODS"}, {documents.FileRTF, "RTF"},
}

func unsupported(format string, args ...any) *core.Error {
	names := make([]string, len(supported))
	types := make([]string, len(supported))
	for i, s := range supported {
		names[i], types[i] = s.name, string(s.kind)
	}
	return core.Errorf(core.KindUnsupportedMedia, documents.CodeUnsupportedType,
		"%s; supported are %s", fmt.Sprintf(format, args...), strings.Join(names, ", ")).
		With("supported", types)
}

// Detect implements documents.Converter. It trusts only the file's content: names
// and declared types are whatever the client says.
func (c *Converter) Detect(ctx context.Context, path string) (documents.FileKind, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("detect file type: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("detect file type: %w", err)
	}
	return detectAt(f, st.Size())
}

// detectAt is Detect on the size bytes of r: a file, or a document held in
// memory (CountPDF).
func detectAt(r io.ReaderAt, size int64) (documents.FileKind, error) {
	head := make([]byte, min(size, 4096))
	n, err := r.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("detect file type: %w", err)
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return documents.FilePNG, nil
	case bytes.HasPrefix(head, []byte{0xFF, 0xD8, 0xFF}):
		return documents.FileJPEG, nil
	case bytes.HasPrefix(head, []byte("II*\x00")), bytes.HasPrefix(head, []byte("MM\x00*")):
		return documents.FileTIFF, nil
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return documents.FileGIF, nil
	case bytes.HasPrefix(head, []byte(`{\rtf`)):
		return documents.FileRTF, nil
	case bytes.HasPrefix(head, cfbMagic):
		return detectCFB(r)
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return detectZip(r, size)
	case bytes.Contains(head[:min(len(head), 1024)], []byte("%PDF-")):
		// Readers accept the header anywhere in the first 1024 bytes, and
		// some mail gateways and scanners do put junk before it.
		return documents.FilePDF, nil
	}
	return "", unsupported("the file is not a supported document type")
}

// detectZip tells OOXML and OpenDocument files apart from other ZIP archives
// by their entries.
func detectZip(r io.ReaderAt, size int64) (documents.FileKind, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return "", unsupported("the file looks like a ZIP archive but cannot be read as one (%v)", err)
	}
	var contentTypes, word, xl bool
	for _, e := range zr.File {
		switch {
		case e.Name == "mimetype":
			// OpenDocument stores its media type uncompressed in this entry.
			if mt, err := readSmallEntry(e, 128); err == nil {
				switch strings.TrimSpace(mt) {
				case "application/vnd.oasis.opendocument.text":
					return documents.FileODT, nil
				case "application/vnd.oasis.opendocument.spreadsheet":
					return documents.FileODS, nil
				}
			}
		case e.Name == "[Content_Types].xml":
			contentTypes = true
		case strings.HasPrefix(e.Name, "word/"):
			word = true
		case strings.HasPrefix(e.Name, "xl/"):
			xl = true
		}
	}
	switch {
	case contentTypes && word:
		return documents.FileDOCX, nil
	case contentTypes && xl:
		return documents.FileXLSX, nil
	}
	return "", unsupported("the file is a ZIP archive but not a DOCX, XLSX, ODT or ODS document")
}

func readSmallEntry(e *zip.File, max int64) (string, error) {
	if e.UncompressedSize64 > uint64(max) {
		return "", errors.New("entry too large")
	}
	r, err := e.Open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, max))
	return string(b), err
}

var cfbMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

// Limits on the compound-file walk: real documents stay far below them, and
// a crafted file must not make us loop or allocate without bound.
const (
	maxCFBDirSectors = 1 << 12
	maxCFBEntries    = 1 << 16
)

const (
	cfbEndOfChain = 0xFFFFFFFE
	cfbNoStream   = 0xFFFFFFFF
)

// detectCFB reads just enough of an OLE2 compound file (MS-CFB) to list the
// streams directly under the root storage: Word keeps its text in
// "WordDocument", Excel in "Workbook" (BIFF8) or "Book" (BIFF5). Only the
// root counts, because documents embed one another in sub-storages.
func detectCFB(r io.ReaderAt) (documents.FileKind, error) {
	names, err := cfbRootNames(r)
	if err != nil {
		return "", unsupported("the file is an OLE2 compound document that cannot be read (%v)", err)
	}
	switch {
	case names["WordDocument"]:
		return documents.FileDOC, nil
	case names["Workbook"], names["Book"]:
		return documents.FileXLS, nil
	}
	return "", unsupported("the file is an OLE2 compound document but neither a Word (DOC) nor an Excel (XLS) file")
}

type cfbEntry struct {
	name               string
	typ                byte
	left, right, child uint32
}

func cfbRootNames(r io.ReaderAt) (map[string]bool, error) {
	var hdr [512]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	le := binary.LittleEndian
	shift := le.Uint16(hdr[0x1E:])
	if shift != 9 && shift != 12 {
		return nil, fmt.Errorf("bad sector size 2^%d", shift)
	}
	secSize := int64(1) << shift
	perSector := uint32(secSize / 4)
	difatHead := make([]uint32, 109)
	for i := range difatHead {
		difatHead[i] = le.Uint32(hdr[0x4C+4*i:])
	}
	difatStart := le.Uint32(hdr[0x44:])
	sector := make([]byte, secSize)
	readSector := func(n uint32) ([]byte, error) {
		if n >= 0xFFFFFFFA {
			return nil, fmt.Errorf("bad sector number %#x", n)
		}
		if _, err := r.ReadAt(sector, (int64(n)+1)*secSize); err != nil {
			return nil, fmt.Errorf("read sector %d: %w", n, err)
		}
		return sector, nil
	}
	// fatSector finds the location of the i-th FAT sector through the DIFAT:
	// 109 entries in the header, the rest in a chain of DIFAT sectors.
	fatSector := func(i uint32) (uint32, error) {
		if i < 109 {
			return difatHead[i], nil
		}
		i -= 109
		d := difatStart
		for hops := 0; ; hops++ {
			if hops > maxCFBDirSectors {
				return 0, errors.New("DIFAT chain too long")
			}
			s, err := readSector(d)
			if err != nil {
				return 0, err
			}
			if i < perSector-1 {
				return le.Uint32(s[4*i:]), nil
			}
			i -= perSector - 1
			d = le.Uint32(s[secSize-4:])
		}
	}
	next := func(n uint32) (uint32, error) {
		fs, err := fatSector(n / perSector)
		if err != nil {
			return 0, err
		}
		s, err := readSector(fs)
		if err != nil {
			return 0, err
		}
		return le.Uint32(s[4*(n%perSector):]), nil
	}

	var entries []cfbEntry
	dir := le.Uint32(hdr[0x30:])
	for hops := 0; dir != cfbEndOfChain; hops++ {
		if hops >= maxCFBDirSectors || len(entries) >= maxCFBEntries {
			return nil, errors.New("directory too large or cyclic")
		}
		s, err := readSector(dir)
		if err != nil {
			return nil, err
		}
		for off := int64(0); off+128 <= secSize; off += 128 {
			e := s[off : off+128]
			nameLen := int(le.Uint16(e[0x40:]))
			if nameLen > 64 {
				nameLen = 64
			}
			u := make([]uint16, 0, 32)
			for i := 0; i+1 < nameLen; i += 2 {
				if c := le.Uint16(e[i:]); c != 0 {
					u = append(u, c)
				}
			}
			entries = append(entries, cfbEntry{
				name: string(utf16.Decode(u)), typ: e[0x42],
				left: le.Uint32(e[0x44:]), right: le.Uint32(e[0x48:]), child: le.Uint32(e[0x4C:]),
			})
		}
		if dir, err = next(dir); err != nil {
			return nil, err
		}
	}
	if len(entries) == 0 || entries[0].typ != 5 {
		return nil, errors.New("no root storage")
	}
	// The root's children form a tree linked by left/right siblings.
	names := map[string]bool{}
	seen := map[uint32]bool{}
	stack := []uint32{entries[0].child}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if id == cfbNoStream || int(id) >= len(entries) || seen[id] {
			continue
		}
		seen[id] = true
		e := entries[id]
		if e.typ == 2 {
			names[e.name] = true
		}
		stack = append(stack, e.left, e.right)
	}
	return names, nil
}
