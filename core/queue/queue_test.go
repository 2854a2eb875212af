package queue_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/queue"
	"github.com/faxhub/faxhub/internal/require"
)

// The real service's Deliver is what cmd/faxhub passes to New.
var _ func(context.Context, string) error = (*faxes.Service)(nil).Deliver

// sqlTx stands in for the store's transaction: a core.Tx that exposes its
// *sql.Tx. The embedded nil core.Tx is never called.
type sqlTx struct {
	core.Tx
	tx *sql.Tx
}

func (t sqlTx) SQLTx() *sql.Tx { return t.tx }

type backend struct {
	dialect string
	open    func(t *testing.T) *sql.DB
}

func backends(t *testing.T) []backend {
	bs := []backend{{queue.DialectSQLite, openSQLite}}
	if os.Getenv("FAXHUB_TEST_POSTGRES_URL") != "" {
		bs = append(bs, backend{queue.DialectPostgres, openPostgres})
	} else if os.Getenv(require.EnvRequireAll) == "1" {
		t.Fatal("PostgreSQL is required by make check but FAXHUB_TEST_POSTGRES_URL is not set")
	} else {
		t.Log("FAXHUB_TEST_POSTGRES_URL is not set: PostgreSQL cases skipped")
	}
	return bs
}

// forEach runs fn on a fresh, migrated database of every available backend.
func forEach(t *testing.T, fn func(t *testing.T, db *sql.DB, dialect string)) {
	for _, b := range backends(t) {
		t.Run(b.dialect, func(t *testing.T) {
			db := b.open(t)
			if err := queue.Migrate(t.Context(), db, b.dialect); err != nil {
				t.Fatal(err)
			}
			fn(t, db, b.dialect)
		})
	}
}

func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_txlock=immediate"
}

func openSQLite(t *testing.T) *sql.DB {
	db, err := sql.Open("sqlite", sqliteDSN(filepath.Join(t.TempDir(), "faxhub.db")))
	if err != nil {
		t.Fatal(err)
	}
	// River's SQLite driver requires a single connection (see New).
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// openPostgres opens a fresh schema so tests never see each other's jobs.
func openPostgres(t *testing.T) *sql.DB {
	base := os.Getenv("FAXHUB_TEST_POSTGRES_URL")
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "queue_test_" + hex.EncodeToString(b)
	if _, err := admin.ExecContext(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(20)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// recorder is a deliver function that remembers every call.
type recorder struct {
	mu    sync.Mutex
	calls map[string][]time.Time
	seen  chan string
}

func newRecorder() *recorder {
	return &recorder{calls: map[string][]time.Time{}, seen: make(chan string, 10_000)}
}

func (r *recorder) deliver(_ context.Context, faxID string) error {
	r.mu.Lock()
	r.calls[faxID] = append(r.calls[faxID], time.Now())
	r.mu.Unlock()
	r.seen <- faxID
	return nil
}

func (r *recorder) count(faxID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls[faxID])
}

func (r *recorder) first(faxID string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[faxID][0]
}

func (r *recorder) waitFor(t *testing.T, faxID string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		if r.count(faxID) > 0 {
			return
		}
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("fax %s was not delivered within %s", faxID, within)
		}
	}
}

func startQueue(t *testing.T, db *sql.DB, dialect string, deliver func(context.Context, string) error, opts queue.Options) *queue.Queue {
	t.Helper()
	q, err := queue.New(db, dialect, queue.Handlers{Deliver: deliver, Outcome: ignoreOutcome}, opts, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := q.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return q
}

// enqueue inserts one job in its own transaction and commits or rolls back.
func enqueue(t *testing.T, db *sql.DB, q *queue.Queue, faxID string, at time.Time, commit bool) {
	t.Helper()
	ctx := t.Context()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.EnqueueDelivery(ctx, sqlTx{tx: tx}, faxID, at); err != nil {
		_ = tx.Rollback()
		t.Fatal(err)
	}
	if commit {
		err = tx.Commit()
	} else {
		err = tx.Rollback()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func jobStates(t *testing.T, db *sql.DB) map[string]int {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT state, count(*) FROM river_job WHERE kind = 'deliver_fax' GROUP BY state")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		out[s] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func waitState(t *testing.T, db *sql.DB, want map[string]int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := jobStates(t, db)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job states = %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCommittedJobRunsExactlyOnce(t *testing.T) {
	forEach(t, func(t *testing.T, db *sql.DB, dialect string) {
		rec := newRecorder()
		q := startQueue(t, db, dialect, rec.deliver, queue.Options{})
		enqueue(t, db, q, "ord_committed", time.Time{}, true)
		rec.waitFor(t, "ord_committed", 10*time.Second)
		waitState(t, db, map[string]int{"completed": 1}, 5*time.Second)
		// A job enqueued after it completed is worked only by a later
		// fetch: by then a second run of the first would have happened.
		enqueue(t, db, q, "ord_later", time.Time{}, true)
		rec.waitFor(t, "ord_later", 10*time.Second)
		if n := rec.count("ord_committed"); n != 1 {
			t.Fatalf("delivered %d times, want 1", n)
		}
	})
}

func TestRolledBackJobNeverRuns(t *testing.T) {
	forEach(t, func(t *testing.T, db *sql.DB, dialect string) {
		rec := newRecorder()
		q := startQueue(t, db, dialect, rec.deliver, queue.Options{})
		enqueue(t, db, q, "ord_rolled_back", time.Time{}, false)
		// A job committed after it is worked; by then the rolled-back one
		// would have been seen if it existed.
		enqueue(t, db, q, "ord_sentinel", time.Time{}, true)
		rec.waitFor(t, "ord_sentinel", 10*time.Second)
		if n := rec.count("ord_rolled_back"); n != 0 {
			t.Fatalf("rolled-back job delivered %d times", n)
		}
		waitState(t, db, map[string]int{"completed": 1}, 5*time.Second)
	})
}

func TestScheduledJobWaits(t *testing.T) {
	forEach(t, func(t *testing.T, db *sql.DB, dialect string) {
		rec := newRecorder()
		q := startQueue(t, db, dialect, rec.deliver, queue.Options{})
		at := time.Now().Add(200 * time.Millisecond)
		enqueue(t, db, q, "ord_soon", at, true)
		enqueue(t, db, q, "ord_later", time.Now().Add(time.Hour), true)
		rec.waitFor(t, "ord_soon", 10*time.Second)
		ran := rec.first("ord_soon")
		if ran.Before(at) {
			t.Fatalf("job due at %s ran %s early", at.Format(time.StampMicro), at.Sub(ran))
		}
		t.Logf("job due in 200ms ran %s after its time", ran.Sub(at))
		// Beyond River's scheduler interval a job is stored as scheduled.
		waitState(t, db, map[string]int{"completed": 1, "scheduled": 1}, 5*time.Second)
		if n := rec.count("ord_later"); n != 0 {
			t.Fatalf("job due in an hour ran %d times", n)
		}
	})
}

func TestDeliverErrorIsRetriedByRiver(t *testing.T) {
	forEach(t, func(t *testing.T, db *sql.DB, dialect string) {
		var mu sync.Mutex
		calls := 0
		done := make(chan struct{})
		deliver := func(ctx context.Context, faxID string) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 1 {
				return errors.New("database went away")
			}
			close(done)
			return nil
		}
		q := startQueue(t, db, dialect, deliver, queue.Options{})
		enqueue(t, db, q, "ord_flaky", time.Time{}, true)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Fatal("the failed job was not retried")
		}
		waitState(t, db, map[string]int{"completed": 1}, 5*time.Second)
		var attempt int
		var errs string
		if err := db.QueryRowContext(t.Context(), "SELECT attempt, CAST(errors AS TEXT) FROM river_job").Scan(&attempt, &errs); err != nil {
			t.Fatal(err)
		}
		if attempt != 2 {
			t.Fatalf("attempt = %d, want 2", attempt)
		}
		t.Logf("recorded errors: %s", errs)
	})
}

func TestEnqueueNeedsSQLTx(t *testing.T) {
	db := openSQLite(t)
	if err := queue.Migrate(t.Context(), db, queue.DialectSQLite); err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(db, queue.DialectSQLite, queue.Handlers{}, queue.Options{InsertOnly: true}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	var plain struct{ core.Tx }
	err = q.EnqueueDelivery(t.Context(), plain, "ord_x", time.Time{})
	if err == nil {
		t.Fatal("EnqueueDelivery accepted a transaction without SQLTx")
	}
	t.Log(err)
}

func TestNewRejectsBadInput(t *testing.T) {
	db := openSQLite(t)
	if _, err := queue.New(db, "mysql", queue.Handlers{}, queue.Options{InsertOnly: true}, nil); err == nil {
		t.Error("unknown dialect accepted")
	}
	if _, err := queue.New(db, queue.DialectSQLite, queue.Handlers{}, queue.Options{}, nil); err == nil {
		t.Error("working queue without a deliver function accepted")
	}
	if err := queue.Migrate(t.Context(), db, "mysql"); err == nil {
		t.Error("Migrate accepted an unknown dialect")
	}
}

func TestInsertOnlyQueue(t *testing.T) {
	forEach(t, func(t *testing.T, db *sql.DB, dialect string) {
		admin, err := queue.New(db, dialect, queue.Handlers{}, queue.Options{InsertOnly: true}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := admin.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		enqueue(t, db, admin, "ord_from_admin", time.Time{}, true)
		if err := admin.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
		waitState(t, db, map[string]int{"available": 1}, time.Second)

		rec := newRecorder()
		startQueue(t, db, dialect, rec.deliver, queue.Options{})
		rec.waitFor(t, "ord_from_admin", 10*time.Second)
	})
}

func TestMigrate(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.dialect, func(t *testing.T) {
			db := b.open(t)
			if err := queue.Validate(t.Context(), db, b.dialect); err == nil {
				t.Fatal("Validate passed on an empty database")
			}
			// Replicas starting together: every one must succeed.
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for range 4 {
				wg.Go(func() { errs <- queue.Migrate(t.Context(), db, b.dialect) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := queue.Migrate(t.Context(), db, b.dialect); err != nil {
				t.Fatalf("second run: %v", err)
			}
			if err := queue.Validate(t.Context(), db, b.dialect); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Processes migrating River on one SQLite file at once (separate pools):
// the immediate transaction makes each wait for the one before.
func TestMigrateSQLiteSeparatePools(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	// The file exists in WAL mode already, as it does once the store has
	// opened it. (Connections racing to switch a brand-new file to WAL can
	// get SQLITE_BUSY without waiting: SQLite will not let two lock upgrades
	// wait on each other.)
	first, err := sql.Open("sqlite", sqliteDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.PingContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	_ = first.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		db, err := sql.Open("sqlite", sqliteDSN(path))
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { _ = db.Close() })
		wg.Go(func() { errs <- queue.Migrate(t.Context(), db, queue.DialectSQLite) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestStopIsGraceful(t *testing.T) {
	forEach(t, func(t *testing.T, db *sql.DB, dialect string) {
		started := make(chan struct{})
		release := make(chan struct{})
		var finished sync.WaitGroup
		finished.Add(1)
		deliver := func(ctx context.Context, faxID string) error {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			finished.Done()
			return nil
		}
		q, err := queue.New(db, dialect, queue.Handlers{Deliver: deliver, Outcome: ignoreOutcome}, queue.Options{}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		enqueue(t, db, q, "ord_long", time.Time{}, true)
		<-started
		stopped := make(chan error, 1)
		go func() { stopped <- q.Stop(context.Background()) }()
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) while a delivery was running", err)
		case <-time.After(300 * time.Millisecond):
		}
		close(release)
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		finished.Wait()
		waitState(t, db, map[string]int{"completed": 1}, time.Second)
	})
}

func TestStopDeadlineCancelsWithoutUsingAnAttempt(t *testing.T) {
	forEach(t, func(t *testing.T, db *sql.DB, dialect string) {
		started := make(chan struct{}, 1)
		deliver := func(ctx context.Context, faxID string) error {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}
		q, err := queue.New(db, dialect, queue.Handlers{Deliver: deliver, Outcome: ignoreOutcome}, queue.Options{}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		enqueue(t, db, q, "ord_stuck", time.Time{}, true)
		<-started
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		if err := q.Stop(ctx); err == nil {
			t.Fatal("Stop reported a clean stop although it cancelled a delivery")
		} else {
			t.Log(err)
		}
		// The interrupted job waits for the next start with its attempt
		// given back.
		waitState(t, db, map[string]int{"available": 1}, time.Second)
		var attempt int
		if err := db.QueryRowContext(t.Context(), "SELECT attempt FROM river_job").Scan(&attempt); err != nil {
			t.Fatal(err)
		}
		if attempt != 0 {
			t.Fatalf("attempt = %d after a shutdown, want 0", attempt)
		}

		rec := newRecorder()
		startQueue(t, db, dialect, rec.deliver, queue.Options{})
		rec.waitFor(t, "ord_stuck", 10*time.Second)
	})
}

func ignoreOutcome(context.Context, string, string, faxes.ProviderResult) error { return nil }

// A scheduled provider outcome is recorded by a worker once it is due, and
// not before.
func TestScheduleOutcome(t *testing.T) {
	forEach(t, func(t *testing.T, db *sql.DB, dialect string) {
		got := make(chan time.Time, 1)
		record := func(_ context.Context, faxID, attemptID string, res faxes.ProviderResult) error {
			if faxID != "fax_1" || attemptID != "att_1" || res.Status != faxes.AttemptDelivered || res.PagesSent != 3 || res.Duration != 2*time.Second {
				t.Errorf("recorded %s %s %+v", faxID, attemptID, res)
			}
			got <- time.Now()
			return nil
		}
		q, err := queue.New(db, dialect, queue.Handlers{Deliver: func(context.Context, string) error { return nil }, Outcome: record}, queue.Options{}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		due := time.Now().Add(300 * time.Millisecond)
		if placed, err := q.ScheduleOutcome(t.Context(), due, "fax_1", "att_1", faxes.ProviderResult{Status: faxes.AttemptDelivered, PagesSent: 3, Duration: 2 * time.Second, ProviderRef: "simfax_1"}); err != nil || !placed {
			t.Fatalf("placed %v, err %v", placed, err)
		}
		// The same attempt sent again (a delivery resumed after a crash):
		// the simulator's idempotency key finds the call already placed.
		if placed, err := q.ScheduleOutcome(t.Context(), due.Add(time.Second), "fax_1", "att_1", faxes.ProviderResult{Status: faxes.AttemptDelivered, PagesSent: 3, Duration: 3 * time.Second, ProviderRef: "simfax_1"}); err != nil || placed {
			t.Fatalf("resend: placed %v, err %v", placed, err)
		}
		var n int
		if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM river_job WHERE kind = 'provider_outcome'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d provider_outcome jobs for one attempt (%v)", n, err)
		}
		if err := q.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Stop(context.Background()) })
		select {
		case at := <-got:
			if at.Before(due) {
				t.Fatalf("recorded at %v, before it was due at %v", at, due)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the outcome was not recorded")
		}
	})
}

// A delivery job left running by a process that died (kill -9) is run
// again by the next process within about a minute of its start, not after
// an hour.
func TestOrphanedJobIsRescued(t *testing.T) {
	forEach(t, func(t *testing.T, db *sql.DB, dialect string) {
		admin, err := queue.New(db, dialect, queue.Handlers{}, queue.Options{InsertOnly: true}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		enqueue(t, db, admin, "fax_orphan", time.Time{}, true)
		// What a worker that died mid-job leaves: running, attempted 45 s
		// ago (past the 30 s timeout and the 10 s margin).
		q := "UPDATE river_job SET state = 'running', attempt = 1, attempted_at = ? WHERE kind = 'deliver_fax'"
		arg := any(time.Now().Add(-45 * time.Second).UTC())
		if dialect == queue.DialectPostgres {
			q = strings.Replace(q, "?", "$1", 1)
		} else {
			arg = time.Now().Add(-45 * time.Second).UTC().Format("2006-01-02 15:04:05.000000")
		}
		if _, err := db.ExecContext(t.Context(), q, arg); err != nil {
			t.Fatal(err)
		}
		r := newRecorder()
		start := time.Now()
		startQueue(t, db, dialect, r.deliver, queue.Options{})
		r.waitFor(t, "fax_orphan", 40*time.Second)
		t.Logf("rescued and run %s after the restart", time.Since(start).Round(100*time.Millisecond))
	})
}

// A process_inbound job runs with a timeout of its own, longer than a
// delivery's (a received fax is converted and read), and one whose handler
// stored the document but left its text for another run
// (inbox.ContinueError) runs again at once without using up an attempt.
func TestInboundJobContinuesWithItsOwnTimeout(t *testing.T) {
	forEach(t, func(t *testing.T, db *sql.DB, dialect string) {
		type call struct {
			left time.Duration
			last bool
		}
		calls := make(chan call, 10)
		var runs atomic.Int32
		process := func(ctx context.Context, id string, last bool) error {
			d, _ := ctx.Deadline()
			calls <- call{time.Until(d), last}
			if runs.Add(1) == 1 {
				return &inbox.ContinueError{ID: id}
			}
			return nil
		}
		q, err := queue.New(db, dialect, queue.Handlers{Deliver: newRecorder().deliver, Outcome: ignoreOutcome, ProcessInbound: process},
			queue.Options{InboundJobTimeout: 2 * time.Minute}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		tx, err := db.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.EnqueueInbound(t.Context(), sqlTx{tx: tx}, "inb_large"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := q.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = q.Stop(ctx)
		})
		for i := range 2 {
			select {
			case c := <-calls:
				if c.left < time.Minute || c.left > 2*time.Minute || c.last {
					t.Fatalf("run %d: %s left of the job, last attempt %v; want the inbound timeout (2 min) and not the last attempt", i+1, c.left, c.last)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("run %d of the inbound job did not happen", i+1)
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			var state string
			var attempt int
			if err := db.QueryRowContext(t.Context(), "SELECT state, attempt FROM river_job WHERE kind = 'process_inbound'").Scan(&state, &attempt); err != nil {
				t.Fatal(err)
			}
			if state == "completed" {
				if attempt != 1 {
					t.Fatalf("attempt = %d after a continuation, want 1", attempt)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("inbound job %s after its second run", state)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
