package storetest

import (
	"sync"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
)

// testBatches: a batch round-trips, lists newest first with a cursor, lists
// its faxes, and counts its faxes' ends down to 0 once.
func testBatches(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeTest)
	var made []*faxes.Batch
	for i := range 3 {
		b := &faxes.Batch{ID: core.NewID(core.PrefixBatch), OwnerID: o.ID, Mode: core.ModeTest, DocumentID: doc.ID,
			Recipients: 2, Remaining: 2, PriceMicros: 420_000, CreatedAt: at(10 + i)}
		must(t, s.CreateBatch(ctx, b))
		made = append(made, b)
	}
	wantErr(t, "batch with a taken id", s.CreateBatch(ctx, made[0]), core.ErrExists)
	got, err := s.GetBatch(ctx, o.ID, core.ModeTest, made[0].ID)
	must(t, err)
	wantEqual(t, "created batch", got, made[0])
	for _, c := range []struct {
		owner string
		mode  core.Mode
	}{{other.ID, core.ModeTest}, {o.ID, core.ModeLive}} {
		_, err := s.GetBatch(ctx, c.owner, c.mode, made[0].ID)
		wantErr(t, "GetBatch of another owner or mode", err, core.ErrNoRows)
	}

	page, err := s.ListBatches(ctx, faxes.BatchFilter{OwnerID: o.ID, Mode: core.ModeTest, Limit: 2})
	must(t, err)
	if len(page) != 2 || page[0].ID != made[2].ID || page[1].ID != made[1].ID {
		t.Fatalf("first page %v", page)
	}
	page, err = s.ListBatches(ctx, faxes.BatchFilter{OwnerID: o.ID, Mode: core.ModeTest, StartingAfter: made[1].ID, Limit: 2})
	must(t, err)
	if len(page) != 1 || page[0].ID != made[0].ID {
		t.Fatalf("second page %v", page)
	}
	_, err = s.ListBatches(ctx, faxes.BatchFilter{OwnerID: other.ID, Mode: core.ModeTest, StartingAfter: made[1].ID})
	wantErr(t, "a cursor of another owner", err, core.ErrNoRows)

	// Its faxes, in id order.
	b := made[0]
	var ids []string
	for range 2 {
		f := faxOf(doc, at(12))
		f.BatchID = &b.ID
		must(t, s.CreateFax(ctx, f))
		ids = append(ids, f.ID)
	}
	must(t, s.CreateFax(ctx, faxOf(doc, at(12)))) // not in the batch
	fs, err := s.ListBatchFaxes(ctx, b.ID)
	must(t, err)
	if len(fs) != 2 || fs[0].ID != min(ids[0], ids[1]) || fs[0].Status != faxes.Queued || fs[0].To != "+14155550123" {
		t.Fatalf("batch faxes %v", fs)
	}

	// Counting down: completed_at is set by the end that reaches 0, and
	// no more ends are counted after it.
	n, err := s.EndBatchFax(ctx, b.ID, at(20))
	must(t, err)
	if n != 1 {
		t.Fatalf("remaining %d after one end", n)
	}
	n, err = s.EndBatchFax(ctx, b.ID, at(21))
	must(t, err)
	got, _ = s.GetBatch(ctx, o.ID, core.ModeTest, b.ID)
	if n != 0 || got.Remaining != 0 || got.CompletedAt == nil || !got.CompletedAt.Equal(at(21)) {
		t.Fatalf("after the last end: %d, %+v", n, got)
	}
	_, err = s.EndBatchFax(ctx, b.ID, at(22))
	wantErr(t, "an end past the last", err, core.ErrNoRows)
	_, err = s.EndBatchFax(ctx, "bat_missing", at(22))
	wantErr(t, "an end of a missing batch", err, core.ErrNoRows)
}

// testBatchesConcurrent: many transactions ending a batch's faxes at once
// (deliveries on many replicas) count every end, and exactly one sees 0.
func testBatchesConcurrent(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeTest)
	b := &faxes.Batch{ID: core.NewID(core.PrefixBatch), OwnerID: o.ID, Mode: core.ModeTest, DocumentID: doc.ID,
		Recipients: concurrency, Remaining: concurrency, CreatedAt: at(10)}
	must(t, s.CreateBatch(ctx, b))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		zeros int
	)
	for range concurrency {
		wg.Go(func() {
			err := s.InTx(ctx, func(tx core.Tx) error {
				n, err := tx.(services.Tx).EndBatchFax(ctx, b.ID, at(20))
				if err == nil && n == 0 {
					mu.Lock()
					zeros++
					mu.Unlock()
				}
				return err
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := s.GetBatch(ctx, o.ID, core.ModeTest, b.ID)
	must(t, err)
	if zeros != 1 || got.Remaining != 0 || got.CompletedAt == nil {
		t.Fatalf("%d transactions saw 0; batch %+v", zeros, got)
	}
}
