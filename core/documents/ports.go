package documents

import (
	"context"
)

// FileKind is what a file is, judged by its magic bytes.
type FileKind string

const (
	FilePDF  FileKind = "application/pdf"
	FilePNG  FileKind = "image/png"
	FileJPEG FileKind = "image/jpeg"
	FileTIFF FileKind = "image/tiff"
	FileGIF  FileKind = "image/gif"
	FileDOC  FileKind = "application/msword"
	FileDOCX FileKind = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	FileXLS  FileKind = "application/vnd.ms-excel"
	FileXLSX FileKind = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	FileODT  FileKind = "application/vnd.oasis.opendocument.text"
	FileODS  FileKind = "application/vnd.oasis.opendocument.spreadsheet"
	FileRTF  FileKind = "application/rtf"
)

// Converter turns an uploaded file into a fax-ready PDF and counts its pages.
// It works on files on local disk because LibreOffice does; a PDF already
// held in memory can be checked and counted where it is (CountPDF).
type Converter interface {
	// Detect names the kind of the file at path by its content; an
	// unsupported file is a *Error with CodeUnsupportedType.
	Detect(ctx context.Context, path string) (FileKind, error)
	// ToPDF converts req.Src (of req.Kind) into a PDF at req.Dst and
	// returns its page count. A PDF source is validated in place and Dst is
	// not written: the caller uses Src. Errors are *Error with
	// CodeCorruptDocument, CodeEncryptedDocument, CodeConversionFailed,
	// CodeTooManyPages, CodeLibreOfficeMissing or (too many conversions of
	// one owner waiting) CodeRateLimited.
	ToPDF(ctx context.Context, req ConvertRequest) (pages int, err error)
	// CountPDF checks a document held in memory as ToPDF checks a PDF
	// file, in the same slots (queued fairly per req.OwnerID), and returns
	// its page count; nothing is written. A document that Detect would not
	// call a PDF is a *Error with CodeUnsupportedType; the other errors
	// are ToPDF's for a PDF.
	CountPDF(ctx context.Context, req CountRequest) (pages int, err error)
}

// CountRequest is one check of a PDF held in memory, for
// Converter.CountPDF: a machine request's decoded document, which would
// otherwise be written to a file only to be read back (issue 32).
type CountRequest struct {
	PDF []byte
	// OwnerID and MaxPages are ConvertRequest's.
	OwnerID  string
	MaxPages int
}

// ConvertRequest is one conversion for Converter.ToPDF.
type ConvertRequest struct {
	Src  string
	Kind FileKind
	Dst  string
	// OwnerID is whose upload this is: conversions queue fairly per owner,
	// so one owner's slow files cannot hold every slot.
	OwnerID string
	// MaxPages refuses a longer document with CodeTooManyPages, before
	// its pages are decoded where the format allows; 0 means no limit.
	MaxPages int
}
