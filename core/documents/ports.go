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
// It works on files on local disk because LibreOffice and pdfcpu do.
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
