package faxes_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path/filepath"
	"testing"

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
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	o, _, err := e.Svc.Faxes.Send(ctx, p, "once", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 2)})
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(e.DataDir, "blobs")))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	earlier := testenv.MinimalPDF(2)
	if _, err := blobs.Put(ctx, faxes.FaxedKey(o), bytes.NewReader(earlier), "application/pdf"); err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Faxes.Deliver(ctx, o.ID); err != nil {
		t.Fatal(err)
	}
	got, err := e.Svc.Faxes.Get(ctx, p, o.ID)
	if err != nil {
		t.Fatal(err)
	}
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
