package queue_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/queue"
)

// TestSchedulePurgeRunsPeriodically: a started queue runs the purge when it
// becomes the leader and again every interval, on both databases.
func TestSchedulePurgeRunsPeriodically(t *testing.T) {
	forEach(t, func(t *testing.T, db *sql.DB, dialect string) {
		q, err := queue.New(db, dialect, queue.Handlers{Deliver: newRecorder().deliver, Outcome: ignoreOutcome},
			queue.Options{PollInterval: 20 * time.Millisecond}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		runs := make(chan struct{}, 100)
		if err := q.SchedulePurge(func(context.Context) error { runs <- struct{}{}; return nil }, time.Second); err != nil {
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
		// The bound is generous (leader election, a loaded CI machine); the
		// test ends as soon as the second run arrives.
		deadline := time.After(60 * time.Second)
		for i := range 2 {
			select {
			case <-runs:
			case <-deadline:
				t.Fatalf("purge ran %d times within 60 s, want 2 (on leadership and one interval later)", i)
			}
		}
	})
}

// TestSchedulePurgeNeedsWorkers: an insert-only queue (admin commands)
// cannot run purges, and says so.
func TestSchedulePurgeNeedsWorkers(t *testing.T) {
	db := openSQLite(t)
	if err := queue.Migrate(t.Context(), db, queue.DialectSQLite); err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(db, queue.DialectSQLite, queue.Handlers{}, queue.Options{InsertOnly: true}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SchedulePurge(func(context.Context) error { return nil }, time.Minute); err == nil {
		t.Fatal("an insert-only queue accepted a purge schedule")
	}
}
