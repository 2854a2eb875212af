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

// TestFaxedDocumentAtItsLegacyKey: a fax whose document as faxed was
// composed and recorded before FaxedKey spread them over folders keeps it
// where it is: its next attempt transmits that blob (nothing is composed
// again), its file link serves it, and its document's purge deletes it.
func TestFaxedDocumentAtItsLegacyKey(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	o, _, err := e.Svc.Faxes.Send(ctx, p, "legacy", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 2)})
	if err != nil {
		t.Fatal(err)
	}
	if faxes.FaxedKey(o) == faxes.LegacyFaxedKey(o) {
		t.Fatalf("one key for both layouts: %s", faxes.FaxedKey(o))
	}
	blobs, err := blob.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(e.DataDir, "blobs")))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	earlier := testenv.MinimalPDF(2)
	sum := sha256.Sum256(earlier)
	if _, err := blobs.Put(ctx, faxes.LegacyFaxedKey(o), bytes.NewReader(earlier), "application/pdf"); err != nil {
		t.Fatal(err)
	}
	if err := e.DB.SetFaxedDocument(ctx, o.ID, hex.EncodeToString(sum[:]), 2); err != nil {
		t.Fatal(err)
	}

	if err := e.Svc.Faxes.Deliver(ctx, o.ID); err != nil {
		t.Fatal(err)
	}
	got, err := e.Svc.Faxes.Get(ctx, p, o.ID)
	if err != nil {
		t.Fatal(err)
	}
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
