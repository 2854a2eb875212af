package queue_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/queue"
)

// periodic names each Schedule method of the queue.
var periodic = map[string]func(q *queue.Queue, run func(context.Context) error, every time.Duration) error{
	queue.KindPurge:                (*queue.Queue).SchedulePurge,
	queue.KindSweepMachinePayments: (*queue.Queue).ScheduleMachineSweep,
}

// TestScheduleRunsPeriodically: a started queue runs a periodic job (the
// purge, the machine-payments sweep) when it becomes the leader and again
// every interval, on both databases.
func TestScheduleRunsPeriodically(t *testing.T) {
	for kind, schedule := range periodic {
		t.Run(kind, func(t *testing.T) { testSchedule(t, schedule) })
	}
}

func testSchedule(t *testing.T, schedule func(q *queue.Queue, run func(context.Context) error, every time.Duration) error) {
	forEach(t, func(t *testing.T, db *sql.DB, dialect string) {
		q, err := queue.New(db, dialect, queue.Handlers{Deliver: newRecorder().deliver, Outcome: ignoreOutcome},
			queue.Options{PollInterval: 20 * time.Millisecond}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		runs := make(chan struct{}, 100)
		if err := schedule(q, func(context.Context) error { runs <- struct{}{}; return nil }, time.Second); err != nil {
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
				t.Fatalf("ran %d times within 60 s, want 2 (on leadership and one interval later)", i)
			}
		}
	})
}

// TestScheduleNeedsWorkers: an insert-only queue (admin commands)
// cannot run periodic jobs, and says so.
func TestScheduleNeedsWorkers(t *testing.T) {
	db := openSQLite(t)
	if err := queue.Migrate(t.Context(), db, queue.DialectSQLite); err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(db, queue.DialectSQLite, queue.Handlers{}, queue.Options{InsertOnly: true}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for kind, schedule := range periodic {
		if err := schedule(q, func(context.Context) error { return nil }, time.Minute); err == nil {
			t.Fatalf("an insert-only queue accepted a %s schedule", kind)
		}
	}
}
