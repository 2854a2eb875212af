package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faxhub/faxhub/core"
)

// openBatchTest opens a SQLite store with one table, inside the caller's
// synctest bubble (the writer's goroutine must belong to it).
func openBatchTest(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "batch.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.InTx(t.Context(), func(tx core.Tx) error {
		_, err := tx.(*Tx).SQLTx().Exec("CREATE TABLE rows (name TEXT PRIMARY KEY)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return db
}

func insertRow(ctx context.Context, tx core.Tx, name string) error {
	_, err := tx.(*Tx).SQLTx().ExecContext(ctx, "INSERT INTO rows (name) VALUES (?)", name)
	return err
}

func rowNames(t *testing.T, db *DB) map[string]bool {
	t.Helper()
	rows, err := db.r.Query("SELECT name FROM rows")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got[n] = true
	}
	return got
}

// hold starts a transaction that keeps the writer until release is
// closed, so that the transactions started next wait and form one batch.
func hold(t *testing.T, db *DB, name string) (release func(), result chan error) {
	gate := make(chan struct{})
	result = make(chan error, 1)
	go func() {
		result <- db.InTx(t.Context(), func(tx core.Tx) error {
			<-gate
			return insertRow(t.Context(), tx, name)
		})
	}()
	synctest.Wait()
	return func() { close(gate) }, result
}

var errRefused = errors.New("refused")

// Requests that wait together commit together, and each keeps its own
// outcome: a refusal, a conflict with an earlier request of the batch or a
// panic undoes that request's writes only.
func TestGroupCommitKeepsEachOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openBatchTest(t)
		release, first := hold(t, db, "first")

		type outcome struct {
			err      error
			panicked any
		}
		cases := []struct {
			name string
			fn   func(ctx context.Context, tx core.Tx) error
			want string // "ok", "refused", "conflict", "panic"
		}{
			{"a", func(ctx context.Context, tx core.Tx) error { return insertRow(ctx, tx, "a") }, "ok"},
			{"b", func(ctx context.Context, tx core.Tx) error {
				if err := insertRow(ctx, tx, "b"); err != nil {
					return err
				}
				return errRefused
			}, "refused"},
			{"c", func(ctx context.Context, tx core.Tx) error { return insertRow(ctx, tx, "c") }, "ok"},
			// The same key as a request earlier in the batch: a conflict,
			// as if "a" had committed first.
			{"a-again", func(ctx context.Context, tx core.Tx) error {
				if err := insertRow(ctx, tx, "d"); err != nil {
					return err
				}
				return insertRow(ctx, tx, "a")
			}, "conflict"},
			{"e", func(ctx context.Context, tx core.Tx) error {
				if err := insertRow(ctx, tx, "e"); err != nil {
					return err
				}
				panic("boom")
			}, "panic"},
			{"f", func(ctx context.Context, tx core.Tx) error { return insertRow(ctx, tx, "f") }, "ok"},
		}
		out := make([]outcome, len(cases))
		var wg sync.WaitGroup
		for i, c := range cases {
			wg.Go(func() {
				defer func() { out[i].panicked = recover() }()
				out[i].err = db.InTx(t.Context(), func(tx core.Tx) error { return c.fn(t.Context(), tx) })
			})
			// One at a time, so that the batch's order is the table's.
			synctest.Wait()
		}
		release()
		wg.Wait()
		if err := <-first; err != nil {
			t.Fatalf("first: %v", err)
		}
		for i, c := range cases {
			o := out[i]
			var got string
			switch {
			case o.panicked != nil:
				got = "panic"
			case o.err == nil:
				got = "ok"
			case errors.Is(o.err, errRefused):
				got = "refused"
			case o.err != nil:
				got = "conflict"
			}
			if got != c.want {
				t.Errorf("%s: got %s (err %v, panic %v), want %s", c.name, got, o.err, o.panicked, c.want)
			}
		}
		want := map[string]bool{"first": true, "a": true, "c": true, "f": true}
		if got := rowNames(t, db); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("rows = %v, want %v (refused, conflicting and panicking requests leave nothing)", got, want)
		}
	})
}

// When the batch's commit fails, nobody's writes stay, so every request in
// it is told so, including those whose own function succeeded: nothing is
// acknowledged before it is durable.
func TestGroupCommitFailedCommitFailsEveryone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openBatchTest(t)
		if err := db.InTx(t.Context(), func(tx core.Tx) error {
			_, err := tx.(*Tx).SQLTx().Exec("CREATE TABLE children (parent TEXT REFERENCES rows (name))")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		release, first := hold(t, db, "first")
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				errs[i] = db.InTx(t.Context(), func(tx core.Tx) error {
					sqlTx := tx.(*Tx).SQLTx()
					if i == 1 {
						// A foreign key checked only at COMMIT: the whole
						// batch's commit fails.
						if _, err := sqlTx.Exec("PRAGMA defer_foreign_keys = ON"); err != nil {
							return err
						}
						_, err := sqlTx.Exec("INSERT INTO children (parent) VALUES ('nobody')")
						return err
					}
					return insertRow(t.Context(), tx, fmt.Sprint("r", i))
				})
			})
			synctest.Wait()
		}
		release()
		wg.Wait()
		// The held transaction was a batch of its own.
		if err := <-first; err != nil {
			t.Fatalf("first: %v", err)
		}
		for i, err := range errs {
			if err == nil {
				t.Errorf("request %d: nil error, want the batch's commit error", i)
			}
		}
		if got := rowNames(t, db); len(got) != 1 || !got["first"] {
			t.Errorf("rows = %v, want only the held transaction's", got)
		}
		// The writer goes on.
		if err := db.InTx(t.Context(), func(tx core.Tx) error { return insertRow(t.Context(), tx, "after") }); err != nil {
			t.Fatalf("after a failed batch: %v", err)
		}
	})
}

// A request whose context ends while it waits is not run; one whose
// context ends after it was taken is answered with its real outcome, and a
// cancelled caller never rolls back the others.
func TestGroupCommitCancelledCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openBatchTest(t)
		release, first := hold(t, db, "first")

		ctx, cancel := context.WithCancel(t.Context())
		var waited error
		var wg sync.WaitGroup
		ran := false
		wg.Go(func() {
			waited = db.InTx(ctx, func(tx core.Tx) error { ran = true; return insertRow(ctx, tx, "cancelled") })
		})
		synctest.Wait()
		var other error
		wg.Go(func() {
			other = db.InTx(t.Context(), func(tx core.Tx) error { return insertRow(t.Context(), tx, "other") })
		})
		synctest.Wait()
		cancel()
		synctest.Wait()
		release()
		wg.Wait()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if !errors.Is(waited, context.Canceled) || ran {
			t.Errorf("cancelled while waiting: err %v, ran %v; want context.Canceled, not run", waited, ran)
		}
		if other != nil {
			t.Errorf("other: %v", other)
		}
		if got := rowNames(t, db); !got["other"] || got["cancelled"] {
			t.Errorf("rows = %v", got)
		}

		// Cancelled in the middle of its function: its statements after the
		// cancellation fail (database/sql refuses them), the writer is not
		// interrupted, and the batch commits the others.
		release, first = hold(t, db, "second")
		ctx2, cancel2 := context.WithCancel(t.Context())
		var midway, bystander error
		wg.Go(func() {
			midway = db.InTx(ctx2, func(tx core.Tx) error {
				if err := insertRow(ctx2, tx, "midway-1"); err != nil {
					return err
				}
				cancel2()
				return insertRow(ctx2, tx, "midway-2")
			})
		})
		synctest.Wait()
		wg.Go(func() {
			bystander = db.InTx(t.Context(), func(tx core.Tx) error { return insertRow(t.Context(), tx, "bystander") })
		})
		synctest.Wait()
		release()
		wg.Wait()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if midway == nil || bystander != nil {
			t.Errorf("midway %v (want an error), bystander %v (want nil)", midway, bystander)
		}
		if got := rowNames(t, db); got["midway-1"] || !got["bystander"] || !got["second"] {
			t.Errorf("rows = %v", got)
		}
	})
}

// After Close, a transaction is refused instead of waiting forever.
func TestGroupCommitClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openBatchTest(t)
		db.Close()
		err := db.InTx(t.Context(), func(tx core.Tx) error { return nil })
		if !errors.Is(err, errWriterClosed) {
			t.Fatalf("InTx after Close = %v, want errWriterClosed", err)
		}
	})
}

// A write outside a transaction (the store's single statements: OAuth
// tokens, consumed codes, secrets) joins the writer's batch too.
func TestGroupCommitSingleStatements(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openBatchTest(t)
		if err := db.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		release, first := hold(t, db, "first")
		txs0, batches0, _ := db.WriterStats()
		var wg sync.WaitGroup
		secrets := make([][]byte, 5)
		for i := range secrets {
			wg.Go(func() {
				var err error
				if secrets[i], err = db.Secret(t.Context(), fmt.Sprint("secret-", i)); err != nil {
					t.Error(err)
				}
			})
		}
		// A rate limit charged outside a transaction reads its row back
		// (INSERT … RETURNING), and joins the batch too: three charges
		// of a burst of two, the third refused with its wait.
		allowed := make([]bool, 3)
		for i := range allowed {
			wg.Go(func() {
				ok, wait, err := db.AllowRate(t.Context(), "batched", time.Unix(1000, 0), time.Second, 2)
				if err != nil || !ok && wait != time.Second {
					t.Errorf("AllowRate: %v, wait %v", err, wait)
				}
				allowed[i] = ok
			})
		}
		synctest.Wait()
		if _, _, waiting := db.WriterStats(); waiting != 8 {
			t.Fatalf("%d writes wait for the writer, want 8", waiting)
		}
		release()
		wg.Wait()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if txs, batches, _ := db.WriterStats(); txs-txs0 != 8 || batches-batches0 != 1 {
			t.Fatalf("%d writes in %d batches, want 8 in 1", txs-txs0, batches-batches0)
		}
		if n := countTrue(allowed); n != 2 {
			t.Errorf("%d of 3 charges allowed, want 2", n)
		}
		for i, s := range secrets {
			if len(s) != 32 {
				t.Fatalf("secret %d: %d bytes", i, len(s))
			}
		}
	})
}

// The WAL is copied into the database file in the background, from a
// read-only connection, every checkpointEvery commits: the writer's own
// automatic checkpoint (at writerAutoCheckpoint pages) is not what did it.
func TestBackgroundCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		db, err := Open(t.Context(), filepath.Join(dir, "ckpt.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.w.Exec("CREATE TABLE blobs (b BLOB)"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		before := fileSize(t, filepath.Join(dir, "ckpt.db"))
		runs0 := db.ckpt.runs.Load()
		// Two rounds, each waited out: the checkpointer coalesces the
		// kicks that arrive while it runs, so on a busy machine commits
		// made back to back could be one checkpoint, not two.
		for range 2 {
			for range checkpointEvery {
				if err := db.InTx(t.Context(), func(tx core.Tx) error {
					_, err := tx.(*Tx).SQLTx().Exec("INSERT INTO blobs (b) VALUES (zeroblob(16384))")
					return err
				}); err != nil {
					t.Fatal(err)
				}
			}
			synctest.Wait()
		}
		if runs := db.ckpt.runs.Load() - runs0; runs < 2 {
			t.Errorf("%d background checkpoints after %d commits, want 2", runs, 2*checkpointEvery)
		}
		if f := db.ckpt.failures.Load(); f != 0 {
			t.Errorf("%d background checkpoints failed", f)
		}
		// 2×8 transactions of 16 KiB: all but the last checkpoint's
		// worth is in the database file now.
		if after := fileSize(t, filepath.Join(dir, "ckpt.db")); after-before < checkpointEvery*16384 {
			t.Errorf("database file grew by %d bytes, want at least %d: the WAL was not copied", after-before, checkpointEvery*16384)
		}
	})
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// More requests than a batch holds wait their turn: the writer commits the
// first maxBatch together and the rest in the next batch, each once.
func TestGroupCommitSplitsLongQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openBatchTest(t)
		release, first := hold(t, db, "first")
		txs0, batches0, _ := db.WriterStats()
		n := maxBatch + 5
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				errs[i] = db.InTx(t.Context(), func(tx core.Tx) error { return insertRow(t.Context(), tx, fmt.Sprint("row-", i)) })
			})
		}
		synctest.Wait()
		if _, _, waiting := db.WriterStats(); waiting != int64(n) {
			t.Fatalf("%d transactions wait, want %d", waiting, n)
		}
		release()
		wg.Wait()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		// The held transaction was one batch (counted when it started).
		if txs, batches, _ := db.WriterStats(); txs-txs0 != int64(n) || batches-batches0 != 2 {
			t.Errorf("%d transactions in %d batches, want %d in 2", txs-txs0, batches-batches0, n)
		}
		if got := rowNames(t, db); len(got) != n+1 {
			t.Errorf("%d rows, want %d", len(got), n+1)
		}
	})
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// A secret is read from the database once per process: asking again (a
// delivery signs its media link with one on every fax) writes nothing.
// Another process on the same database gets the same value.
func TestSecretReadOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "secret.db")
		db, err := Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		first, err := db.Secret(t.Context(), "link")
		if err != nil {
			t.Fatal(err)
		}
		txs0, _, _ := db.WriterStats()
		for range 3 {
			again, err := db.Secret(t.Context(), "link")
			if err != nil || !bytes.Equal(again, first) {
				t.Fatalf("Secret again = %x, %v; want %x", again, err, first)
			}
			again[0] ^= 0xff // the caller's copy, not the cache
		}
		if txs, _, _ := db.WriterStats(); txs != txs0 {
			t.Errorf("%d writer transactions for a secret already read, want 0", txs-txs0)
		}
		other, err := Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if got, err := other.Secret(t.Context(), "link"); err != nil || !bytes.Equal(got, first) {
			t.Errorf("another process: %x, %v; want %x", got, err, first)
		}
	})
}
