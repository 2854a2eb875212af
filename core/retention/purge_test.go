package retention_test

import (
	"bytes"
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// recordingBlobs is a BlobStore that only records deletions.
type recordingBlobs struct {
	mu      sync.Mutex
	deleted []string
}

func (b *recordingBlobs) Put(context.Context, string, io.Reader, string) (int64, error) {
	return 0, nil
}
func (b *recordingBlobs) Create(context.Context, string, io.Reader, string) (int64, error) {
	return 0, nil
}
func (b *recordingBlobs) Open(context.Context, string) (io.ReadCloser, error) {
	return nil, core.ErrNoRows
}
func (b *recordingBlobs) Exists(context.Context, string) (bool, error) {
	return false, nil
}
func (b *recordingBlobs) Delete(_ context.Context, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deleted = append(b.deleted, key)
	return nil
}

// TestPurgeRetention: unsent documents lose their blobs 7 days after
// upload, sent ones (and what was faxed of them) 7 days after their fax
// ended; the fax record stays,
// the document and its upload token are gone. Injected clock.
func TestPurgeRetention(t *testing.T) {
	clock := testenv.NewClock()
	e := testenv.New(t, testenv.WithConfig(func(c *services.Config) { c.Now = clock.Now }))
	p := e.Principal(t, e.KeyATest)
	put := func() (string, *documents.Document) {
		t.Helper()
		c, err := e.Svc.Documents.CreateUpload(ctx, p, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := e.Svc.Documents.ReceiveUpload(ctx, c.UploadToken, bytes.NewReader(testenv.MinimalPDF(1)))
		if err != nil {
			t.Fatal(err)
		}
		return c.UploadToken, d
	}
	unsentTok, unsent := put()
	sentTok, sent := put()
	fax, _, err := e.Svc.Faxes.Send(ctx, p, "purge-1", faxes.SendRequest{To: "+12125550100", UploadToken: sentTok})
	if err != nil {
		t.Fatal(err)
	}
	e.DrainQueue(t)
	clock.Advance(6 * 24 * time.Hour)
	_, fresh := put()

	blobs := &recordingBlobs{}
	secret := make([]byte, 32)
	gc, err := services.New(services.Config{Config: core.Config{BaseURL: "http://faxhub.test", Now: clock.Now}, Documents: documents.Config{UploadSecret: secret}}, services.Deps{Store: e.Store, Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	got, err := gc.Retention.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := testenv.PurgeCounts(got); c["documents"] != 0 || c["idempotency_records"] != 1 {
		t.Fatalf("after 6 days: %v, want no documents and the day-old idempotency record", c)
	}

	clock.Advance(24*time.Hour + time.Minute)
	got, err = gc.Retention.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := testenv.PurgeCounts(got); c["documents"] != 2 || c["uploads"] != 2 {
		t.Fatalf("after 7 days: %v, want 2 documents and their 2 uploads", c)
	}
	slices.Sort(blobs.deleted)
	// The document as faxed goes with its document, at its key and at the
	// key of a fax composed before FaxedKey's folders.
	want := []string{unsent.SourceKey, sent.SourceKey, faxes.FaxedKey(fax), faxes.LegacyFaxedKey(fax)}
	slices.Sort(want)
	if !slices.Equal(blobs.deleted, want) {
		t.Fatalf("deleted blobs %v, want %v", blobs.deleted, want)
	}
	for _, d := range []*documents.Document{unsent, sent} {
		_, err := e.Svc.Documents.Get(ctx, p, d.ID)
		testenv.WantCode(t, err, core.CodeNotFound)
	}
	if _, err := e.Svc.Documents.Get(ctx, p, fresh.ID); err != nil {
		t.Fatalf("a 1-day-old document was purged: %v", err)
	}
	_, _, err = e.Svc.Faxes.Send(ctx, p, "purge-2", faxes.SendRequest{To: "+12125550100", UploadToken: unsentTok})
	testenv.WantCode(t, err, core.CodeNotFound)
	if f, err := e.Svc.Faxes.Get(ctx, p, fax.ID); err != nil || f.Status != faxes.Delivered {
		t.Fatalf("the fax record must stay: %+v %v", f, err)
	}

	again, err := gc.Retention.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range again {
		if c.N != 0 && c.What != "rate_limits" {
			t.Fatalf("second run purged %d %s", c.N, c.What)
		}
	}
}
