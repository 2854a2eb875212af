package storetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
)

func testTimeRoundTrip(t *testing.T, s services.Store) {
	ctx := t.Context()
	east := time.FixedZone("UTC+05:30", 5*3600+1800)
	west := time.FixedZone("UTC-07:00", -7*3600)
	for _, tc := range []struct {
		name string
		in   time.Time
	}{
		{"non-UTC with nanoseconds", time.Date(2026, 7, 8, 9, 10, 11, 123456789, east)},
		{"truncated, not rounded, below a second", time.Date(2026, 12, 31, 23, 59, 59, 999999999, west)},
		{"one microsecond", time.Date(2026, 1, 1, 0, 0, 0, 1000, time.UTC)},
		{"leap day across the date line", time.Date(2028, 2, 29, 2, 30, 0, 500000000, east)},
		{"unix epoch in the local zone", time.Unix(0, 0)},
		{"now, with a monotonic reading", time.Now()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.in.UTC().Truncate(time.Microsecond)
			check := func(what string, got time.Time) {
				t.Helper()
				if got.Location() != time.UTC || !got.Equal(want) || got != want {
					t.Fatalf("%s: stored %s, read back %s (%s), want %s", what, tc.in, got, got.Location(), want)
				}
			}
			o := &accounts.Owner{ID: core.NewID(core.PrefixOwner), Email: core.RandomString(8) + "@example.com", CreatedAt: tc.in, EmailVerifiedAt: &tc.in}
			must(t, s.CreateOwner(ctx, o))
			got, err := s.GetOwner(ctx, o.ID)
			must(t, err)
			check("time", got.CreatedAt)
			check("nullable time", *got.EmailVerifiedAt)

			e := &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: o.ID, Mode: core.ModeLive, Kind: credits.LedgerGrant, AmountMicros: 1, CreatedAt: tc.in}
			must(t, s.AppendLedger(ctx, e))
			entries, err := s.ListLedger(ctx, credits.LedgerFilter{OwnerID: o.ID, Mode: core.ModeLive})
			must(t, err)
			check("ledger time", entries[0].CreatedAt)
		})
	}

	// Times are compared as instants, whatever zone they were given in.
	o := newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeLive)
	noon := time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)
	a := faxOf(doc, noon.In(east))                         // 17:30 on the wall
	b := faxOf(doc, noon.Add(time.Hour).In(west))          // 06:00 on the wall
	c := faxOf(doc, noon.Add(30*time.Minute).In(time.UTC)) // 12:30 on the wall
	for _, ord := range []*faxes.Fax{a, b, c} {
		must(t, s.CreateFax(ctx, ord))
	}
	list, err := s.ListFaxes(ctx, faxes.Filter{OwnerID: o.ID, Mode: core.ModeLive})
	must(t, err)
	if len(list) != 3 || list[0].ID != b.ID || list[1].ID != c.ID || list[2].ID != a.ID {
		t.Fatalf("faxes given in mixed zones are not listed by instant: %s", dump(list))
	}
	page, err := s.ListFaxes(ctx, faxes.Filter{OwnerID: o.ID, Mode: core.ModeLive, StartingAfter: c.ID})
	must(t, err)
	if len(page) != 1 || page[0].ID != a.ID {
		t.Fatalf("faxes after %s: %s", c.ID, dump(page))
	}

	ap := &approvals.Approval{
		ID: core.NewID(core.PrefixApproval), OwnerID: o.ID, Mode: core.ModeTest, Kind: approvals.KindDevice, BindingHash: "h",
		Status: approvals.Pending, CreatedAt: noon.In(west), ExpiresAt: noon.In(west),
	}
	must(t, s.CreateApproval(ctx, ap))
	// One second before expiry, written in a zone whose wall clock is
	// hours later.
	must(t, s.DecideApproval(ctx, o.ID, ap.ID, approvals.Approved, nil, noon.Add(-time.Second).In(east)))
}

func testRateLimit(t *testing.T, s services.Store) {
	ctx := t.Context()
	const burst = 3
	interval := time.Minute
	t0 := at(0)
	allow := func(key string, now time.Time, wantOK bool, wantWait time.Duration) {
		t.Helper()
		ok, wait, err := s.AllowRate(ctx, key, now, interval, burst)
		must(t, err)
		if ok != wantOK || (!ok && wait != wantWait) {
			t.Fatalf("AllowRate(%s, t0+%s) = %v, wait %s; want %v, wait %s", key, now.Sub(t0), ok, wait, wantOK, wantWait)
		}
	}
	for range burst {
		allow("k", t0, true, 0)
	}
	allow("k", t0, false, interval)
	allow("k", t0.Add(20*time.Second), false, 40*time.Second)
	allow("other", t0, true, 0) // keys are independent
	allow("k", t0.Add(interval), true, 0)
	allow("k", t0.Add(interval), false, interval)
	// After a long pause the whole burst is available again, no more.
	later := t0.Add(10 * interval)
	for range burst {
		allow("k", later, true, 0)
	}
	allow("k", later, false, interval)

	// A burst of one admits one event per interval.
	ok, _, err := s.AllowRate(ctx, "single", t0, time.Second, 1)
	must(t, err)
	ok2, wait, err := s.AllowRate(ctx, "single", t0.Add(400*time.Millisecond), time.Second, 1)
	must(t, err)
	if !ok || ok2 || wait != 600*time.Millisecond {
		t.Fatalf("burst 1: got %v then %v (wait %s), want true then false (wait 600ms)", ok, ok2, wait)
	}
}

func testRateLimitConcurrent(t *testing.T, s services.Store) {
	ctx := t.Context()
	const burst = 7
	now := at(0)
	type result struct {
		ok   bool
		wait time.Duration
	}
	results := make([]result, concurrency)
	errs := race(concurrency, func(i int) (err error) {
		results[i].ok, results[i].wait, err = s.AllowRate(ctx, "burst", now, time.Hour, burst)
		return err
	})
	admitted := 0
	for i, err := range errs {
		must(t, err)
		if results[i].ok {
			admitted++
		} else if results[i].wait <= 0 {
			t.Fatalf("refused with retryAfter %s", results[i].wait)
		}
	}
	if admitted != burst {
		t.Fatalf("%d of %d concurrent calls admitted, want the burst of %d", admitted, concurrency, burst)
	}
	ok, wait, err := s.AllowRate(ctx, "burst", now, time.Hour, burst)
	must(t, err)
	if ok || wait != time.Hour {
		t.Fatalf("after the burst: ok %v, retryAfter %s; want refused for 1h", ok, wait)
	}
	ok, _, err = s.AllowRate(ctx, "burst", now.Add(time.Hour), time.Hour, burst)
	must(t, err)
	if !ok {
		t.Fatal("one interval after the burst: refused, want admitted")
	}
}

func testInTx(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeLive)
	grant(t, s, o, core.ModeLive, 1_000_000)

	// writeAll writes to every kind of table through tx.
	writeAll := func(tx services.Tx, owner *accounts.Owner, key string) error {
		if err := tx.CreateOwner(ctx, owner); err != nil {
			return err
		}
		if got, err := tx.GetOwner(ctx, owner.ID); err != nil || got.ID != owner.ID {
			return fmt.Errorf("transaction does not read its own write: %v", err)
		}
		ord := faxOf(doc, at(5))
		if err := tx.CreateFax(ctx, ord); err != nil {
			return err
		}
		if err := tx.PlaceHold(ctx, holdFor(ord, 400_000)); err != nil {
			return err
		}
		if err := tx.InsertIdempotency(ctx, &core.IdempotencyRecord{Scope: "s", Key: key, RequestHash: "h", ResponseCode: 200, Response: []byte(ord.ID), CreatedAt: at(5)}); err != nil {
			return err
		}
		if ok, _, err := tx.AllowRate(ctx, "tx:"+key, at(5), time.Hour, 1); err != nil || !ok {
			return fmt.Errorf("AllowRate in a transaction: %v %v", ok, err)
		}
		return nil
	}

	t.Run("rollback leaves nothing", func(t *testing.T) {
		sentinel := errors.New("changed my mind")
		owner := &accounts.Owner{ID: core.NewID(core.PrefixOwner), Email: "rollback@example.com", CreatedAt: at(5)}
		err := inTx(ctx, s, func(tx services.Tx) error {
			if err := writeAll(tx, owner, "rollback"); err != nil {
				return err
			}
			return sentinel
		})
		wantErr(t, "InTx", err, sentinel)
		_, err = s.GetOwner(ctx, owner.ID)
		wantErr(t, "owner of a rolled back transaction", err, core.ErrNoRows)
		_, err = s.GetIdempotency(ctx, "s", "rollback")
		wantErr(t, "record of a rolled back transaction", err, core.ErrNoRows)
		faxes, err := s.ListFaxes(ctx, faxes.Filter{OwnerID: o.ID, Mode: core.ModeLive})
		must(t, err)
		if len(faxes) != 0 {
			t.Fatalf("%d faxes after rollback", len(faxes))
		}
		wantBalance(t, s, o, core.ModeLive, 1_000_000, 0)
		if ok, _, err := s.AllowRate(ctx, "tx:rollback", at(5), time.Hour, 1); err != nil || !ok {
			t.Fatalf("rate limit state survived the rollback: %v %v", ok, err)
		}
	})

	t.Run("commit keeps everything", func(t *testing.T) {
		owner := &accounts.Owner{ID: core.NewID(core.PrefixOwner), Email: "commit@example.com", CreatedAt: at(5)}
		must(t, inTx(ctx, s, func(tx services.Tx) error { return writeAll(tx, owner, "commit") }))
		_, err := s.GetOwner(ctx, owner.ID)
		must(t, err)
		_, err = s.GetIdempotency(ctx, "s", "commit")
		must(t, err)
		wantBalance(t, s, o, core.ModeLive, 600_000, 400_000)
	})

	t.Run("panic rolls back", func(t *testing.T) {
		owner := &accounts.Owner{ID: core.NewID(core.PrefixOwner), Email: "panic@example.com", CreatedAt: at(5)}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("InTx swallowed a panic")
				}
			}()
			_ = inTx(ctx, s, func(tx services.Tx) error {
				must(t, tx.CreateOwner(ctx, owner))
				panic("boom")
			})
		}()
		_, err := s.GetOwner(ctx, owner.ID)
		wantErr(t, "owner of a panicked transaction", err, core.ErrNoRows)
	})

	// A caller may handle ErrExists, ErrInsufficientFunds or ErrConflict
	// and go on: the transaction stays usable and the refused call left
	// nothing (PostgreSQL would otherwise abort the whole transaction).
	t.Run("handled store errors leave the transaction usable", func(t *testing.T) {
		owner := &accounts.Owner{ID: core.NewID(core.PrefixOwner), Email: "handled@example.com", CreatedAt: at(5)}
		ord, held := faxOf(doc, at(6)), faxOf(doc, at(6))
		must(t, s.CreateFax(ctx, ord))
		must(t, s.CreateFax(ctx, held))
		must(t, s.PlaceHold(ctx, holdFor(held, 50_000)))
		err := inTx(ctx, s, func(tx services.Tx) error {
			// Refused after the balance row was already updated: the
			// update must be undone with the call.
			if err := tx.PlaceHold(ctx, holdFor(held, 20_000)); !errors.Is(err, core.ErrExists) {
				return fmt.Errorf("second hold for a fax: got %v, want ErrExists", err)
			}
			if err := tx.InsertIdempotency(ctx, &core.IdempotencyRecord{Scope: "s", Key: "commit", RequestHash: "h", ResponseCode: 200, CreatedAt: at(6)}); !errors.Is(err, core.ErrExists) {
				return fmt.Errorf("duplicate record: got %v, want ErrExists", err)
			}
			if err := tx.CreateOwner(ctx, o); !errors.Is(err, core.ErrExists) {
				return fmt.Errorf("duplicate owner: got %v, want ErrExists", err)
			}
			if err := tx.PlaceHold(ctx, holdFor(ord, 10_000_000)); !errors.Is(err, core.ErrInsufficientFunds) {
				return fmt.Errorf("oversized hold: got %v, want ErrInsufficientFunds", err)
			}
			if _, err := tx.SettleHold(ctx, ord.ID, credits.LedgerCapture, at(6)); !errors.Is(err, core.ErrNoRows) {
				return fmt.Errorf("settling a missing hold: got %v, want ErrNoRows", err)
			}
			if err := tx.MarkCheckoutPaid(ctx, "chk_missing", at(6)); !errors.Is(err, core.ErrNoRows) {
				return fmt.Errorf("paying a missing checkout: got %v, want ErrNoRows", err)
			}
			if err := tx.CreateOwner(ctx, owner); err != nil {
				return err
			}
			return tx.PlaceHold(ctx, holdFor(ord, 100_000))
		})
		must(t, err)
		_, err = s.GetOwner(ctx, owner.ID)
		must(t, err)
		wantBalance(t, s, o, core.ModeLive, 450_000, 550_000)
	})

	t.Run("exposes the SQL transaction", func(t *testing.T) {
		must(t, inTx(ctx, s, func(tx services.Tx) error {
			st, ok := tx.(interface{ SQLTx() *sql.Tx })
			if !ok || st.SQLTx() == nil {
				return fmt.Errorf("%T has no SQLTx() *sql.Tx for the job queue", tx)
			}
			var one int
			return st.SQLTx().QueryRowContext(ctx, "SELECT 1").Scan(&one)
		}))
	})
}

// testInTxConcurrent runs many writing transactions at once: all must
// succeed (on SQLite, by queueing for the single writer rather than failing
// with SQLITE_BUSY).
func testInTxConcurrent(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	errs := race(concurrency, func(i int) error {
		return inTx(ctx, s, func(tx services.Tx) error {
			if _, err := tx.GetOwner(ctx, o.ID); err != nil {
				return err
			}
			id := core.NewID(core.PrefixAPIKey)
			if err := tx.CreateAPIKey(ctx, &accounts.APIKey{ID: id, OwnerID: o.ID, Mode: core.ModeTest, Name: "k", Hash: core.HashSecret(id), CreatedAt: at(i)}); err != nil {
				return err
			}
			if err := tx.InsertIdempotency(ctx, &core.IdempotencyRecord{Scope: o.ID, Key: id, RequestHash: "h", ResponseCode: 201, CreatedAt: at(i)}); err != nil {
				return err
			}
			return tx.AppendLedger(ctx, &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: o.ID, Mode: core.ModeTest, Kind: credits.LedgerGrant, AmountMicros: 1, CreatedAt: at(i)})
		})
	})
	for _, err := range errs {
		must(t, err)
	}
	keys, err := s.ListAPIKeys(ctx, o.ID)
	must(t, err)
	if len(keys) != concurrency {
		t.Fatalf("%d keys after %d transactions", len(keys), concurrency)
	}
	wantBalance(t, s, o, core.ModeTest, concurrency, 0)
}

// inTx runs fn in a transaction of s, typed with every feature's queries.
func inTx(ctx context.Context, s services.Store, fn func(tx services.Tx) error) error {
	return s.InTx(ctx, func(tx core.Tx) error { return fn(tx.(services.Tx)) })
}

// readWay runs a read on the store itself or inside a transaction; name is
// "" or " in a transaction", to append to a check's description.
type readWay struct {
	name string
	run  func(func(services.Tx) error) error
}

// outsideAndInTx are the two ways a read is checked: outside a transaction
// (SQLite's read pool) and in one (its writer).
func outsideAndInTx(ctx context.Context, s services.Store) []readWay {
	return []readWay{
		{"", func(fn func(services.Tx) error) error { return fn(s) }},
		{" in a transaction", func(fn func(services.Tx) error) error { return inTx(ctx, s, fn) }},
	}
}
