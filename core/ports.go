package core

import (
	"context"
	"io"
)

// BlobStore keeps document bytes: files in the data dir by default, an
// S3-compatible bucket at scale.
type BlobStore interface {
	// Put streams r to key; it never buffers the whole body in memory.
	Put(ctx context.Context, key string, r io.Reader, contentType string) (int64, error)
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	Delete(ctx context.Context, key string) error
}

// FileBlobStore is a BlobStore that can take a local file whole. A store on
// the same file system as the spool directory moves the file instead of
// copying it (an upload is written once, not twice). The file at path is
// gone afterwards whether it was moved or copied.
type FileBlobStore interface {
	PutFile(ctx context.Context, key, path, contentType string) (int64, error)
}

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

// DestinationChecker validates a destination fax number.
type DestinationChecker interface {
	// Check parses an E.164 number and returns it normalised with its ISO
	// country; *Error with CodeInvalidDestination, CodePremiumDestination or
	// CodeUnsupportedDestination otherwise.
	Check(number string) (e164, country string, err error)
}
