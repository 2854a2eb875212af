package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
)

func openTemp(t *testing.T) (*Bucket, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "blobs", "nested")
	b, err := Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, dir
}

func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	b, dir := openTemp(t)
	ctx := context.Background()
	key := "own_1/live/doc_1/document.pdf"
	body := []byte("%PDF-1.4 pretend")
	n, err := b.Put(ctx, key, bytes.NewReader(body), "application/pdf")
	if err != nil || n != int64(len(body)) {
		t.Fatalf("Put = %d, %v", n, err)
	}
	r, err := b.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %q, %v", got, err)
	}
	// Overwrite replaces.
	if _, err := b.Put(ctx, key, strings.NewReader("v2"), ""); err != nil {
		t.Fatal(err)
	}
	r, _ = b.Open(ctx, key)
	got, _ = io.ReadAll(r)
	r.Close()
	if string(got) != "v2" {
		t.Fatalf("after overwrite: %q", got)
	}
	// One file per blob: no .attrs sidecars, no stranded temp files.
	if files := listFiles(t, dir); len(files) != 1 || files[0] != filepath.FromSlash(key) {
		t.Errorf("files on disk: %v", files)
	}
	for _, k := range []string{key, "own_1/live/doc_1", "own_1/live/doc_1/other.pdf"} {
		if ok, err := b.Exists(ctx, k); ok != (k == key) || err != nil {
			t.Errorf("Exists(%s) = %v, %v", k, ok, err)
		}
	}
	if err := b.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(ctx, key); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open after Delete: %v, want fs.ErrNotExist", err)
	}
	if ok, err := b.Exists(ctx, key); ok || err != nil {
		t.Errorf("Exists after Delete = %v, %v", ok, err)
	}
	// Deleting again, or something never stored, is fine.
	if err := b.Delete(ctx, key); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if err := b.Delete(ctx, "never/was"); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
}

type failingReader struct {
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	k := min(len(p), f.n)
	clear(p[:k])
	f.n -= k
	return k, nil
}

// A body that fails half way must leave nothing behind: no object under the
// key and no temporary file.
func TestPutFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	b, dir := openTemp(t)
	ctx := context.Background()
	boom := errors.New("client went away")
	_, err := b.Put(ctx, "k/partial", &failingReader{n: 3 << 20, err: boom}, "application/pdf")
	if !errors.Is(err, boom) {
		t.Fatalf("Put = %v, want the reader's error", err)
	}
	if _, err := b.Open(ctx, "k/partial"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open after failed Put: %v", err)
	}
	if files := listFiles(t, dir); len(files) != 0 {
		t.Errorf("files left behind: %v", files)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Put(cctx, "k/cancelled", strings.NewReader("x"), ""); err == nil {
		t.Error("Put with a cancelled context succeeded")
	}
	if files := listFiles(t, dir); len(files) != 0 {
		t.Errorf("files left behind: %v", files)
	}
}

// patternReader yields n deterministic bytes without holding them.
type patternReader struct{ off, n int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	k := int(min(int64(len(b)), p.n-p.off))
	for i := range b[:k] {
		b[i] = byte((p.off + int64(i)) * 31 >> 3)
	}
	p.off += int64(k)
	return k, nil
}

func TestPutStreams64MB(t *testing.T) {
	b, _ := openTemp(t)
	ctx := context.Background()
	const size = 64 << 20
	want := sha256.New()
	if _, err := io.Copy(want, &patternReader{n: size}); err != nil {
		t.Fatal(err)
	}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n, err := b.Put(ctx, "big/blob", &patternReader{n: size}, "application/pdf")
	runtime.ReadMemStats(&after)
	if err != nil || n != size {
		t.Fatalf("Put = %d, %v", n, err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("Put of %d MB allocated %d KB in total", size>>20, alloc>>10)
	if alloc > 4<<20 {
		t.Errorf("Put allocated %d MB for a %d MB body; it must stream", alloc>>20, size>>20)
	}

	r, err := b.Open(ctx, "big/blob")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := sha256.New()
	runtime.ReadMemStats(&before)
	m, err := io.Copy(got, r)
	runtime.ReadMemStats(&after)
	if err != nil || m != size || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatalf("read back %d bytes, %v, digest match %v", m, err, bytes.Equal(got.Sum(nil), want.Sum(nil)))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("reading allocated %d MB; it must stream", alloc>>20)
	}
}

func TestOpenURLs(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	tests := []struct {
		url string
		ok  bool
	}{
		{"file://" + tmp + "/a", true},
		{"file://localhost" + tmp + "/b", true},
		{"file://./relative", false},
		{"file://otherhost/x", false},
		{"file://" + tmp + "/c?metadata=skip", false},
		{"gs://bucket", false},
		{"/just/a/path", false},
		{"::not a url", false},
		// Opening does not contact the service; credentials and the
		// endpoint are only used on the first request.
		{"s3://faxhub-docs?region=us-east-1&endpoint=http://127.0.0.1:9&use_path_style=true", true},
	}
	for _, tt := range tests {
		b, err := Open(context.Background(), tt.url)
		if (err == nil) != tt.ok {
			t.Errorf("Open(%q) = %v, want ok=%v", tt.url, err, tt.ok)
		}
		if b != nil {
			b.Close()
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "a")); err != nil {
		t.Errorf("file bucket directory not created: %v", err)
	}
}

func TestPutFileMovesIntoFileBucket(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	b, err := Open(ctx, "file://"+filepath.ToSlash(filepath.Join(root, "blobs")))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tests := []struct {
		name, key string
		moved     bool
	}{
		{"plain key is renamed", "own_x/test/doc_y/source", true},
		{"key fileblob escapes is streamed", "own_x//double-slash", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(root, "spool-"+tc.name)
			data := bytes.Repeat([]byte("fax"), 1000)
			if err := os.WriteFile(src, data, 0o600); err != nil {
				t.Fatal(err)
			}
			n, err := b.PutFile(ctx, tc.key, src, "application/pdf")
			if err != nil || n != int64(len(data)) {
				t.Fatalf("PutFile = %d, %v", n, err)
			}
			if _, err := os.Stat(src); !os.IsNotExist(err) {
				t.Fatalf("spool file still there: %v", err)
			}
			_, err = os.Stat(filepath.Join(root, "blobs", filepath.FromSlash(tc.key)))
			if moved := err == nil; moved != tc.moved {
				t.Fatalf("moved into place = %v, want %v", moved, tc.moved)
			}
			r, err := b.Open(ctx, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			r.Close()
			if !bytes.Equal(got, data) {
				t.Fatal("content differs after PutFile")
			}
		})
	}
}

// TestCreateNeverReplaces: Create writes a new key and refuses an existing
// one with core.ErrExists, leaving its bytes as they were.
func TestCreateNeverReplaces(t *testing.T) {
	t.Parallel()
	b, dir := openTemp(t)
	ctx := context.Background()
	key := "own_1/live/doc_1/faxed-fax_1.pdf"
	if _, err := b.Create(ctx, key, strings.NewReader("first"), "application/pdf"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, key, strings.NewReader("second"), "application/pdf"); !errors.Is(err, core.ErrExists) {
		t.Fatalf("second Create = %v, want core.ErrExists", err)
	}
	r, err := b.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(got) != "first" {
		t.Fatalf("blob = %q, %v; want the first bytes", got, err)
	}
	if files := listFiles(t, dir); len(files) != 1 {
		t.Fatalf("files after a refused Create: %v (no temporary left behind)", files)
	}
}
