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
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/faxhub/faxhub/core"
	gblob "gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
)

// Bucket implements core.BlobStore.
type Bucket struct {
	b *gblob.Bucket
	// dir is the root of a file:// bucket, where PutFile can move files in.
	dir string
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
	var (
		b   *gblob.Bucket
		dir string
	)
	switch u.Scheme {
	case "file":
		b, err = openDir(u)
		dir = filepath.FromSlash(u.Path)
	case "s3":
		b, err = (&s3blob.URLOpener{}).OpenBucketURL(ctx, u)
	default:
		return nil, fmt.Errorf("blob store url %q: scheme must be file or s3", redact(u))
	}
	if err != nil {
		return nil, fmt.Errorf("open blob store %s: %w", redact(u), err)
	}
	return &Bucket{b: b, dir: dir}, nil
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
	return b.write(ctx, key, r, contentType, false)
}

// Create implements core.BlobStore: gocloud's conditional write, which a
// file:// bucket checks and renames under one lock (so within one process)
// and S3 with If-None-Match.
func (b *Bucket) Create(ctx context.Context, key string, r io.Reader, contentType string) (int64, error) {
	return b.write(ctx, key, r, contentType, true)
}

func (b *Bucket) write(ctx context.Context, key string, r io.Reader, contentType string, ifNotExist bool) (int64, error) {
	// Cancelling the writer's context before Close aborts the write, which
	// is how gocloud discards a partial upload.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.b.NewWriter(wctx, key, &gblob.WriterOptions{
		ContentType:                 contentType,
		DisableContentTypeDetection: contentType == "",
		IfNotExist:                  ifNotExist,
	})
	if err != nil {
		return 0, fmt.Errorf("put blob %s: %w", key, existed(err))
	}
	n, err := io.Copy(w, r)
	if err != nil {
		cancel()
		_ = w.Close()
		return 0, fmt.Errorf("put blob %s: %w", key, existed(err))
	}
	if err := w.Close(); err != nil {
		return 0, fmt.Errorf("put blob %s: %w", key, existed(err))
	}
	return n, nil
}

// existed makes a conditional write's refusal match core.ErrExists.
func existed(err error) error {
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return errors.Join(core.ErrExists, err)
	}
	return err
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

// Exists implements core.BlobStore: a stat on a file:// bucket, a HEAD on
// S3.
func (b *Bucket) Exists(ctx context.Context, key string) (bool, error) {
	ok, err := b.b.Exists(ctx, key)
	if err != nil {
		return false, fmt.Errorf("look for blob %s: %w", key, err)
	}
	return ok, nil
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

// movableKey matches keys that fileblob stores under their own name (it
// escapes other characters), so a file renamed to dir/key is what Open
// reads back.
var movableKey = regexp.MustCompile(`^[a-z0-9_-]+(/[a-z0-9_.-]+)*$`)

// PutFile implements core.FileBlobStore: on a file:// bucket the file is
// renamed into place (no second write of up to 50 MB); across file systems,
// or on S3, it is streamed with Put and then removed.
func (b *Bucket) PutFile(ctx context.Context, key, path, contentType string) (int64, error) {
	if b.dir != "" && movableKey.MatchString(key) && !strings.Contains(key, "..") {
		dst := filepath.Join(b.dir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return 0, fmt.Errorf("put blob %s: %w", key, err)
		}
		if err := os.Rename(path, dst); err == nil {
			st, err := os.Stat(dst)
			if err != nil {
				return 0, fmt.Errorf("put blob %s: %w", key, err)
			}
			return st.Size(), nil
		}
		// Another file system (EXDEV) or a permission problem: copy.
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("put blob %s: %w", key, err)
	}
	defer os.Remove(path)
	defer f.Close()
	return b.Put(ctx, key, f, contentType)
}
