package queue

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
)

// KindPurge runs the garbage collector (core.Service.Purge) once. River's
// leader inserts one every SchedulePurge interval; whichever replica
// fetches it runs it.
const KindPurge = "purge"

// purgeMaxAttempts: a failed purge is retried a little, then left to the
// next periodic run.
const purgeMaxAttempts = 3

type purgeArgs struct{}

func (purgeArgs) Kind() string { return KindPurge }

func (purgeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: purgeMaxAttempts}
}

// purgeWorker runs the purge SchedulePurge installed. It is registered on
// every queue so that River knows the kind; a process that never scheduled
// purges (an admin command, a test) fails the job, and River retries it
// on a replica that can run it.
type purgeWorker struct {
	river.WorkerDefaults[purgeArgs]
	run atomic.Pointer[func(context.Context) error]
}

func (w *purgeWorker) Work(ctx context.Context, _ *river.Job[purgeArgs]) error {
	run := w.run.Load()
	if run == nil {
		return errors.New("purge: this process has no purge handler")
	}
	if err := (*run)(ctx); err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	return nil
}

// SchedulePurge makes the queue run purge every interval, and once when
// this process becomes the leader. Call it before Start. Only the elected
// leader among the replicas schedules, so one purge runs per interval
// however many replicas there are.
func (q *Queue) SchedulePurge(run func(context.Context) error, every time.Duration) error {
	if q.insertOnly {
		return errors.New("schedule purge: an insert-only queue runs no jobs")
	}
	if run == nil || every <= 0 {
		return errors.New("schedule purge: need a function and a positive interval")
	}
	q.purge.run.Store(&run)
	q.client.PeriodicJobs().Add(river.NewPeriodicJob(river.PeriodicInterval(every),
		func() (river.JobArgs, *river.InsertOpts) { return purgeArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true}))
	return nil
}
