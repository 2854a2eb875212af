package faxes_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// writerStats is what the SQLite store reports of its group commit.
type writerStats interface {
	WriterStats() (txs, batches, waiting int64)
}

// Sends that SQLite commits together, in one batch, keep every money
// guarantee a transaction of their own gave them: one fax and one hold per
// idempotency key, no overdraft, and refusals that leave nothing behind.
// The writer is held while thirty sends queue, so they are one batch; on
// PostgreSQL (no batches) the same sends simply race.
func TestBatchedSendsKeepMoneyGuarantees(t *testing.T) {
	e := testenv.New(t, testenv.WithoutCredits(), testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.SetLimit(core.LimitSend, core.Rate{Burst: 1000}) }))
	p := e.Principal(t, e.KeyATest)
	if _, err := e.Svc.Credits.Grant(ctx, p.OwnerID, core.ModeTest, 500_000, "five faxes"); err != nil {
		t.Fatal(err)
	}
	tok := e.Upload(t, p, 1) // 0.10 each: the balance pays for five
	req := faxes.SendRequest{To: "+12125550100", UploadToken: tok}

	ws, batched := e.Store.(writerStats)
	if d, ok := e.Store.(interface{ Dialect() string }); !ok || d.Dialect() != "sqlite" {
		batched = false
	}
	release := func() {}
	var txs0, batches0 int64
	if batched {
		gate, held := make(chan struct{}), make(chan struct{})
		go e.Store.InTx(ctx, func(core.Tx) error { close(held); <-gate; return nil })
		<-held
		txs0, batches0, _ = ws.WriterStats()
		release = func() { close(gate) }
	}

	const sameKey, distinct = 10, 20
	type result struct {
		key string
		fax *faxes.Fax
		err error
	}
	results := make([]result, sameKey+distinct)
	var wg sync.WaitGroup
	for i := range results {
		key := "same"
		if i >= sameKey {
			key = fmt.Sprint("k", i)
		}
		wg.Go(func() {
			o, _, err := e.Svc.Faxes.Send(ctx, p, key, req)
			results[i] = result{key, o, err}
		})
	}
	if batched {
		deadline := time.Now().Add(30 * time.Second)
		for _, _, waiting := ws.WriterStats(); waiting < int64(len(results)); _, _, waiting = ws.WriterStats() {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d sends reached the writer", waiting, len(results))
			}
			time.Sleep(time.Millisecond) // polling a condition, not timing
		}
	}
	release()
	wg.Wait()

	if batched {
		txs, batches, _ := ws.WriterStats()
		// The held transaction counted before; the thirty sends are one
		// batch (maxBatch is 64).
		if txs-txs0 != int64(len(results)) || batches-batches0 != 1 {
			t.Fatalf("writer ran %d transactions in %d batches, want %d in 1", txs-txs0, batches-batches0, len(results))
		}
	}
	queued := map[string]bool{}
	var sameFax string
	for i, r := range results {
		switch {
		case r.err == nil:
			queued[r.fax.ID] = true
		case core.ErrorCode(r.err) != credits.CodeInsufficientCredits:
			t.Fatalf("request %d (%s): %v, want a fax or insufficient_credits", i, r.key, r.err)
		}
		if r.key == "same" {
			got := "402"
			if r.err == nil {
				got = r.fax.ID
			}
			if i == 0 {
				sameFax = got
			} else if got != sameFax {
				t.Fatalf("one key answered %s and %s", sameFax, got)
			}
		}
	}
	page, err := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(queued) != 5 || len(page.Data) != 5 {
		t.Fatalf("%d faxes answered, %d stored; want 5 of each (the balance pays for five)", len(queued), len(page.Data))
	}
	for _, f := range page.Data {
		if !queued[f.ID] {
			t.Fatalf("fax %s is stored but was never answered", f.ID)
		}
	}
	c := e.Credits(t, p)
	if c.HeldMicros != 500_000 || c.AvailableMicros != 0 {
		t.Fatalf("held %d, available %d micros; want five holds of 0.10 and nothing left", c.HeldMicros, c.AvailableMicros)
	}
}
