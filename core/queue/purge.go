package queue

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
)

// KindPurge runs the garbage collector (retention.Service.Purge) once. River's
// leader inserts one every SchedulePurge interval; whichever replica
// fetches it runs it.
const KindPurge = "purge"

// KindSweepMachinePayments runs machine.Service.Sweep once
// (interrupted machine payments and due refunds), every
// ScheduleMachineSweep interval, the same way.
const KindSweepMachinePayments = "sweep_machine_payments"

// periodicMaxAttempts: a failed periodic run is retried a little, then
// left to the next one.
const periodicMaxAttempts = 3

type purgeArgs struct{}

func (purgeArgs) Kind() string { return KindPurge }

func (purgeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: periodicMaxAttempts}
}

type sweepArgs struct{}

func (sweepArgs) Kind() string { return KindSweepMachinePayments }

func (sweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: periodicMaxAttempts}
}

// periodicWorker runs the function a Schedule call installed. It is
// registered on every queue so that River knows the kind; a process that
// never scheduled it (an admin command, a test) fails the job, and River
// retries it on a replica that can run it.
type periodicWorker[T river.JobArgs] struct {
	river.WorkerDefaults[T]
	run atomic.Pointer[func(context.Context) error]
}

func (w *periodicWorker[T]) Work(ctx context.Context, job *river.Job[T]) error {
	run := w.run.Load()
	if run == nil {
		return fmt.Errorf("%s: this process has no handler", job.Kind)
	}
	if err := (*run)(ctx); err != nil {
		return fmt.Errorf("%s: %w", job.Kind, err)
	}
	return nil
}

// schedule makes the queue run w's function every interval, and once when
// this process becomes the leader. Only the elected leader among the
// replicas schedules, so one run happens per interval however many
// replicas there are.
func schedule[T river.JobArgs](q *Queue, w *periodicWorker[T], args T, run func(context.Context) error, every time.Duration) error {
	if q.insertOnly {
		return fmt.Errorf("schedule %s: an insert-only queue runs no jobs", args.Kind())
	}
	if run == nil || every <= 0 {
		return fmt.Errorf("schedule %s: need a function and a positive interval", args.Kind())
	}
	w.run.Store(&run)
	q.client.PeriodicJobs().Add(river.NewPeriodicJob(river.PeriodicInterval(every),
		func() (river.JobArgs, *river.InsertOpts) { return args, nil },
		&river.PeriodicJobOpts{RunOnStart: true}))
	return nil
}

// SchedulePurge makes the queue run purge every interval, and once when
// this process becomes the leader. Call it before Start.
func (q *Queue) SchedulePurge(run func(context.Context) error, every time.Duration) error {
	return schedule(q, q.purge, purgeArgs{}, run, every)
}

// ScheduleMachineSweep makes the queue run the machine-payments sweeper
// every interval (a minute in serve), and once when this process becomes
// the leader. Call it before Start.
func (q *Queue) ScheduleMachineSweep(run func(context.Context) error, every time.Duration) error {
	return schedule(q, q.sweep, sweepArgs{}, run, every)
}
