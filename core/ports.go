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
	// Create is Put for a key that must not exist yet: when it does, it
	// writes nothing and returns an error matching ErrExists. A blob only
	// ever created is one whose every reader sees the same bytes.
	Create(ctx context.Context, key string, r io.Reader, contentType string) (int64, error)
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Exists reports whether a blob is at key, without reading it.
	Exists(ctx context.Context, key string) (bool, error)
	Delete(ctx context.Context, key string) error
}

// FileBlobStore is a BlobStore that can take a local file whole. A store on
// the same file system as the spool directory moves the file instead of
// copying it (an upload is written once, not twice). The file at path is
// gone afterwards whether it was moved or copied.
type FileBlobStore interface {
	PutFile(ctx context.Context, key, path, contentType string) (int64, error)
}

// DestinationChecker validates a destination fax number.
type DestinationChecker interface {
	// Check parses an E.164 number and returns it normalised with its ISO
	// country; *Error with CodeInvalidDestination, CodePremiumDestination or
	// CodeUnsupportedDestination otherwise.
	Check(number string) (e164, country string, err error)
	// Describe is Check with the number type too, for a form that checks a
	// number as it is typed (the owner console's send page).
	Describe(number string) (Destination, error)
}

// Destination is a checked destination number: E.164, its ISO 3166
// country, and its type as libphonenumber classifies the number range
// (fixed_line, mobile, fixed_line_or_mobile, toll_free, voip, uan).
type Destination struct {
	E164    string `json:"e164"`
	Country string `json:"country"`
	Type    string `json:"numberType"`
}
