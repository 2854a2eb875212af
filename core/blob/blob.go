// Package blob stores document bytes through gocloud.dev/blob: files in a
// local directory by default, an S3-compatible bucket at scale.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path/filepath"

	"github.com/faxhub/faxhub/core"
	gblob "gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
)

// Bucket implements core.BlobStore.
type Bucket struct {
	b *gblob.Bucket
}

var _ core.BlobStore = (*Bucket)(nil)

// Open opens the bucket named by rawURL:
//
//   - file:///abs/dir stores files under dir, creating it if needed.
//   - s3://bucket?region=…&endpoint=…&use_path_style=true uses S3 or a
//     compatible service (MinIO, R2, …) with the AWS SDK's usual credential
//     chain; see gocloud.dev/blob/s3blob.URLOpener for all parameters.
func Open(ctx context.Context, rawURL string) (*Bucket, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("blob store url: %w", err)
	}
	var b *gblob.Bucket
	switch u.Scheme {
	case "file":
		b, err = openDir(u)
	case "s3":
		b, err = (&s3blob.URLOpener{}).OpenBucketURL(ctx, u)
	default:
		return nil, fmt.Errorf("blob store url %q: scheme must be file or s3", redact(u))
	}
	if err != nil {
		return nil, fmt.Errorf("open blob store %s: %w", redact(u), err)
	}
	return &Bucket{b: b}, nil
}

func openDir(u *url.URL) (*gblob.Bucket, error) {
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("file url must be file:///absolute/path, not host %q", u.Host)
	}
	if len(u.Query()) > 0 {
		return nil, errors.New("file url takes no query parameters")
	}
	dir := filepath.FromSlash(u.Path)
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("file url path %q is not absolute", u.Path)
	}
	return fileblob.OpenBucket(dir, &fileblob.Options{
		CreateDir:   true,
		DirFileMode: 0o700,
		// Write temporary files next to their final names: a rename from
		// os.TempDir fails when it is another file system, and /tmp on
		// tmpfs would hold whole uploads in RAM.
		NoTempDir: true,
		// No .attrs sidecar per blob: the content type lives in our
		// database, and a sidecar doubles the files to back up and delete.
		Metadata: fileblob.MetadataDontWrite,
	})
}

// redact drops credentials a URL might carry before it is logged.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	return c.String()
}

// Put implements core.BlobStore. It streams r into the bucket; on any error
// the partial object is discarded.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, contentType string) (int64, error) {
	// Cancelling the writer's context before Close aborts the write, which
	// is how gocloud discards a partial upload.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.b.NewWriter(wctx, key, &gblob.WriterOptions{
		ContentType:                 contentType,
		DisableContentTypeDetection: contentType == "",
	})
	if err != nil {
		return 0, fmt.Errorf("put blob %s: %w", key, err)
	}
	n, err := io.Copy(w, r)
	if err != nil {
		cancel()
		_ = w.Close()
		return 0, fmt.Errorf("put blob %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		return 0, fmt.Errorf("put blob %s: %w", key, err)
	}
	return n, nil
}

// Open implements core.BlobStore. A missing key is an error that matches
// fs.ErrNotExist.
func (b *Bucket) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := b.b.NewReader(ctx, key, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, fmt.Errorf("open blob %s: %w", key, errors.Join(fs.ErrNotExist, err))
		}
		return nil, fmt.Errorf("open blob %s: %w", key, err)
	}
	return r, nil
}

// Delete implements core.BlobStore. Deleting a missing key succeeds, so
// cleanup can be retried.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := b.b.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("delete blob %s: %w", key, err)
	}
	return nil
}

// Close releases the bucket's resources.
func (b *Bucket) Close() error {
	return b.b.Close()
}
