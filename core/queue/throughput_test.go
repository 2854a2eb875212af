package queue_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/queue"
)

// storeLoad imitates what faxes.Service.Deliver does to the database for one
// delivered fax with an instant provider: one transaction that reads the
// fax, moves it to sending and opens an attempt, then one that closes the
// attempt, completes the fax and writes a ledger line. It lets the
// throughput figure include the store's share of the single SQLite writer.
type storeLoad struct {
	db      *sql.DB
	dialect string
}

func newStoreLoad(t testing.TB, db *sql.DB, dialect string) *storeLoad {
	for _, stmt := range []string{
		"CREATE TABLE sim_fax (id TEXT PRIMARY KEY, status TEXT NOT NULL, attempts INTEGER NOT NULL, updated_at TEXT)",
		"CREATE TABLE sim_attempt (id TEXT PRIMARY KEY, fax_id TEXT NOT NULL, status TEXT NOT NULL)",
		"CREATE TABLE sim_ledger (id TEXT PRIMARY KEY, fax_id TEXT NOT NULL, amount INTEGER NOT NULL)",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	return &storeLoad{db: db, dialect: dialect}
}

func (s *storeLoad) ph(n int) string {
	if s.dialect == queue.DialectPostgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

func (s *storeLoad) q(query string) string {
	n := 0
	var b strings.Builder
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString(s.ph(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *storeLoad) createFax(ctx context.Context, tx *sql.Tx, id string) error {
	_, err := tx.ExecContext(ctx, s.q("INSERT INTO sim_fax (id, status, attempts, updated_at) VALUES (?, 'queued', 0, ?)"), id, time.Now().UTC().Format(time.RFC3339Nano))
	return err
}

func (s *storeLoad) deliver(ctx context.Context, faxID string) error {
	inTx := func(fn func(tx *sql.Tx) error) error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	now := func() string { return time.Now().UTC().Format(time.RFC3339Nano) }
	err := inTx(func(tx *sql.Tx) error {
		var status string
		var attempts int
		if err := tx.QueryRowContext(ctx, s.q("SELECT status, attempts FROM sim_fax WHERE id = ?"), faxID).Scan(&status, &attempts); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE sim_fax SET status = 'sending', attempts = ?, updated_at = ? WHERE id = ? AND status = ?"), attempts+1, now(), faxID, status); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q("INSERT INTO sim_attempt (id, fax_id, status) VALUES (?, ?, 'sending')"), faxID+"_a1", faxID)
		return err
	})
	if err != nil {
		return fmt.Errorf("start attempt: %w", err)
	}
	return inTx(func(tx *sql.Tx) error {
		var status string
		if err := tx.QueryRowContext(ctx, s.q("SELECT status FROM sim_fax WHERE id = ?"), faxID).Scan(&status); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE sim_attempt SET status = 'delivered' WHERE id = ?"), faxID+"_a1"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE sim_fax SET status = 'delivered', updated_at = ? WHERE id = ? AND status = 'sending'"), now(), faxID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q("INSERT INTO sim_ledger (id, fax_id, amount) VALUES (?, ?, 0)"), faxID+"_capture", faxID)
		return err
	})
}

type rateResult struct {
	jobs    int
	elapsed time.Duration
}

func (r rateResult) String() string {
	return fmt.Sprintf("%d jobs in %s = %.0f jobs/s", r.jobs, r.elapsed.Round(time.Millisecond), float64(r.jobs)/r.elapsed.Seconds())
}

// measure enqueues n faxes, each in its own transaction as the API does,
// from several goroutines while the workers run, and times until the last
// delivery returns. With withStore each delivery also does the store work;
// with backlog the faxes are all committed before the workers start and
// only the draining is timed.
func measure(t testing.TB, db *sql.DB, dialect string, n int, opts queue.Options, withStore, backlog bool) rateResult {
	ctx := context.Background()
	var load *storeLoad
	if withStore {
		load = newStoreLoad(t, db, dialect)
	}
	var delivered atomic.Int64
	all := make(chan struct{})
	deliver := func(ctx context.Context, faxID string) error {
		if load != nil {
			if err := load.deliver(ctx, faxID); err != nil {
				return err
			}
		}
		if delivered.Add(1) == int64(n) {
			close(all)
		}
		return nil
	}
	q, err := queue.New(db, dialect, queue.Handlers{Deliver: deliver, Outcome: ignoreOutcome}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := q.Stop(ctx); err != nil {
			t.Error(err)
		}
	}()
	if !backlog {
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	const producers = 8
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		wg.Go(func() {
			for i := p; i < n; i += producers {
				id := fmt.Sprintf("ord_%06d", i)
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					errs <- err
					return
				}
				if load != nil {
					if err := load.createFax(ctx, tx, id); err != nil {
						_ = tx.Rollback()
						errs <- err
						return
					}
				}
				if err := q.EnqueueDelivery(ctx, sqlTx{tx: tx}, id, time.Time{}); err != nil {
					_ = tx.Rollback()
					errs <- err
					return
				}
				if err := tx.Commit(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if backlog {
		start = time.Now()
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		t.Fatalf("only %d of %d jobs delivered in 2 minutes", delivered.Load(), n)
	}
	return rateResult{jobs: n, elapsed: time.Since(start)}
}

// TestThroughput logs how fast 1,000 faxes are delivered: enqueued while
// the workers run (each in its own transaction, from 8 goroutines), and
// drained from a committed backlog; each with an instant deliver and with
// two store transactions per delivery. It asserts nothing about speed
// (machines differ, -race is slow); the figures are what the defaults in
// queue.go were chosen from.
func TestThroughput(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.dialect, func(t *testing.T) {
			for _, c := range []struct {
				name           string
				conns          int
				store, backlog bool
			}{
				{"live, queue only", 0, false, false},
				{"live, with store work", 0, true, false},
				{"backlog, queue only", 0, false, true},
				{"backlog, with store work", 0, true, true},
				// With _txlock=immediate no transaction upgrades a read
				// lock, so several SQLite connections work without
				// SQLITE_BUSY.
				{"live, with store work, 8 connections", 8, true, false},
			} {
				if c.conns > 0 && b.dialect != queue.DialectSQLite {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					if (raceEnabled || testing.Short()) && (c.store || c.backlog || c.conns > 0) {
						t.Skip("skipped under -race and -short: the figures mean nothing there and take minutes")
					}
					db := b.open(t)
					if c.conns > 0 {
						db.SetMaxOpenConns(c.conns)
					}
					if err := queue.Migrate(t.Context(), db, b.dialect); err != nil {
						t.Fatal(err)
					}
					t.Logf("%s, %s: %s", b.dialect, c.name, measure(t, db, b.dialect, 1000, queue.Options{}, c.store, c.backlog))
				})
			}
		})
	}
}

// TestThroughputSweep tries worker and cooldown settings; it runs only with
// FAXHUB_QUEUE_SWEEP=1 (use it without -race to retune the defaults).
func TestThroughputSweep(t *testing.T) {
	if os.Getenv("FAXHUB_QUEUE_SWEEP") == "" {
		t.Skip("set FAXHUB_QUEUE_SWEEP=1 to sweep queue settings")
	}
	n := 5000
	for _, b := range backends(t) {
		for _, workers := range []int{10, 50, 100, 200} {
			for _, cooldown := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond} {
				for _, withStore := range []bool{false, true} {
					db := b.open(t)
					if err := queue.Migrate(t.Context(), db, b.dialect); err != nil {
						t.Fatal(err)
					}
					opts := queue.Options{Workers: workers, FetchCooldown: cooldown}
					r := measure(t, db, b.dialect, n, opts, withStore, false)
					t.Logf("%-8s workers=%-3d cooldown=%-5s store=%-5v %s", b.dialect, workers, cooldown, withStore, r)
				}
			}
		}
	}
}
