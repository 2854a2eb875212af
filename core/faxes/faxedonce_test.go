package faxes_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/url"
	"path"
	"path/filepath"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/blob"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/testenv"
)

// TestFaxedBlobNeverReplaced: the document as faxed is composed before its
// attempt starts and its blob is created, never replaced. A blob already at
// the fax's key (a composition whose attempt never recorded it: a crash, a
// second worker composing the same fax) is the one recorded and sent; the
// hash recorded is its own, so the receipt attests the bytes sent.
func TestFaxedBlobNeverReplaced(t *testing.T) {
	e, p, o, blobs := queuedWithBlobs(t, "once")
	earlier := testenv.MinimalPDF(2)
	if _, err := blobs.Put(ctx, faxes.FaxedKey(o), bytes.NewReader(earlier), "application/pdf"); err != nil {
		t.Fatal(err)
	}
	got := deliverAndGet(t, e, p, o.ID)
	sum := sha256.Sum256(earlier)
	if got.Status != faxes.Delivered || got.FaxedSHA256 != hex.EncodeToString(sum[:]) || got.FaxedPages != 2 {
		t.Fatalf("fax %s %s, faxed %s (%d pages); want delivered with the blob's own hash %x", got.ID, got.Status, got.FaxedSHA256, got.FaxedPages, sum)
	}
	r, err := blobs.Open(ctx, faxes.FaxedKey(o))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b, err := io.ReadAll(r); err != nil || !bytes.Equal(b, earlier) {
		t.Fatalf("the blob was replaced (%d bytes, %v)", len(b), err)
	}

	// A fax without one gets its own, recorded with its first attempt.
	o2, _, err := e.Svc.Faxes.Send(ctx, p, "twice", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1), Cover: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Faxes.Deliver(ctx, o2.ID); err != nil {
		t.Fatal(err)
	}
	got2, err := e.Svc.Faxes.Get(ctx, p, o2.ID)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := e.Svc.Faxes.FaxedDocument(ctx, p, o2.ID)
	if err != nil || got2.Status != faxes.Delivered || got2.FaxedPages != 2 || doc.SHA256 != got2.FaxedSHA256 || len(doc.SHA256) != 64 {
		t.Fatalf("fax %+v, document as faxed %+v, %v", got2, doc, err)
	}
}

// queuedWithBlobs queues a fax of a 2-page upload (workers off) and opens
// its environment's blob store, to put blobs where the delivery looks.
func queuedWithBlobs(t *testing.T, key string) (*testenv.Env, core.Principal, *faxes.Fax, *blob.Bucket) {
	t.Helper()
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	o, _, err := e.Svc.Faxes.Send(ctx, p, key, faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 2)})
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(e.DataDir, "blobs")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blobs.Close() })
	return e, p, o, blobs
}

// TestFaxedDocumentAtItsLegacyKey: a fax whose document as faxed was
// composed and recorded before FaxedKey spread them over folders keeps it
// where it is: its next attempt transmits that blob (nothing is composed
// again), its file link serves it, and its document's purge deletes it.
func TestFaxedDocumentAtItsLegacyKey(t *testing.T) {
	e, p, o, blobs := queuedWithBlobs(t, "legacy")
	if faxes.FaxedKey(o) == faxes.LegacyFaxedKey(o) {
		t.Fatalf("one key for both layouts: %s", faxes.FaxedKey(o))
	}
	earlier := testenv.MinimalPDF(2)
	sum := sha256.Sum256(earlier)
	if _, err := blobs.Put(ctx, faxes.LegacyFaxedKey(o), bytes.NewReader(earlier), "application/pdf"); err != nil {
		t.Fatal(err)
	}
	if err := e.DB.SetFaxedDocument(ctx, o.ID, hex.EncodeToString(sum[:]), 2); err != nil {
		t.Fatal(err)
	}

	got := deliverAndGet(t, e, p, o.ID)
	if got.Status != faxes.Delivered || got.FaxedSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("fax %s %s, faxed %s; want delivered with the legacy blob's hash %x", got.ID, got.Status, got.FaxedSHA256, sum)
	}
	if _, err := blobs.Open(ctx, faxes.FaxedKey(o)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a document as faxed was composed again at %s: %v", faxes.FaxedKey(o), err)
	}

	files, err := e.Svc.Faxes.FaxedDocument(ctx, p, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(files.URL)
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.Svc.Faxes.OpenFile(ctx, core.LinkFaxFile, path.Base(u.Path))
	if err != nil {
		t.Fatalf("open the file link %s: %v", files.URL, err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || !bytes.Equal(b, earlier) {
		t.Fatalf("the file link served %d bytes (%v), not the legacy blob's %d", len(b), err, len(earlier))
	}
}

// deliverAndGet runs id's delivery and returns the fax as it then is.
func deliverAndGet(t *testing.T, e *testenv.Env, p core.Principal, id string) *faxes.Fax {
	t.Helper()
	if err := e.Svc.Faxes.Deliver(ctx, id); err != nil {
		t.Fatal(err)
	}
	got, err := e.Svc.Faxes.Get(ctx, p, id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// FaxedKey's folder is the id's last two characters; an id too short for
// that is its own folder, not a panic.
func TestFaxedKeyFolders(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"fax_06h3cawfsqxd7cgt4zgp570100", "own_1/test/doc_1/faxed/00/fax_06h3cawfsqxd7cgt4zgp570100.pdf"},
		{"x", "own_1/test/doc_1/faxed/x/x.pdf"},
		{"", "own_1/test/doc_1/faxed//.pdf"},
	} {
		if got := faxes.FaxedKey(&faxes.Fax{ID: tc.id, OwnerID: "own_1", Mode: core.ModeTest, DocumentID: "doc_1"}); got != tc.want {
			t.Errorf("FaxedKey of %q: %s, want %s", tc.id, got, tc.want)
		}
	}
}
