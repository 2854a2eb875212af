package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
)

// Job kinds of numbers and the inbox. Stored in job rows: never change them.
const (
	// KindOrderNumber orders a paid number at its provider
	// (numbers.Service.PlaceOrder).
	KindOrderNumber = "order_number"
	// KindNumberOutcome records a provider's answer to a number order that
	// the simulator scheduled for later (numbers.Service.RecordOrder).
	KindNumberOutcome = "number_outcome"
	// KindProcessInbound fetches, stores and reads a received fax
	// (inbox.Service.Process).
	KindProcessInbound = "process_inbound"
	// KindSweepNumbers runs numbers.Service.Sweep (reservations,
	// renewals, releases) every ScheduleNumberSweep interval.
	KindSweepNumbers = "sweep_numbers"
)

// inboundMaxAttempts: fetching a received fax is retried with River's
// backoff (attempt⁴ seconds) for about a day before the fax is marked
// failed by its handler (core decides on the last attempt). Only trouble
// that may pass (the provider's media link, the blob store, a busy text
// reader) is retried: a document too slow to convert fails at once (the
// converter's own timeout), and one too slow to read is received with the
// text read so far.
const inboundMaxAttempts = 14

// defaultInboundJobTimeout is one run of a process_inbound job: fetching a
// document of up to 50 MB and 350 pages, converting it (at most the
// converter's 60 s once it has a slot) and reading its text (at most the
// reader's 2 minutes, OCR of at most 50 pages), with time kept back to
// record each step. A run that stores the document with less than a minute
// left reads its text in a second run (inbox.ContinueError), so a fax
// ends within two runs unless something transient fails. River's rescuer
// honours a kind's own timeout, so a crashed process's inbound job runs
// again about this long after it started (at the rescuer's next pass, every
// 30 s), while deliveries keep the client's shorter timeout.
const defaultInboundJobTimeout = 3 * time.Minute

type orderNumberArgs struct {
	NumberID string `json:"number_id"`
}

func (orderNumberArgs) Kind() string { return KindOrderNumber }

// orderMaxAttempts: an order the provider keeps refusing (its API down)
// is retried for about four hours of River's backoff; then the handler
// gives up (the number fails and its month is credited back).
const orderMaxAttempts = 10

func (orderNumberArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: orderMaxAttempts}
}

type numberOutcomeArgs struct {
	Provider string              `json:"provider"`
	OrderRef string              `json:"order_ref"`
	Result   numbers.OrderResult `json:"result"`
}

func (numberOutcomeArgs) Kind() string { return KindNumberOutcome }

type inboundArgs struct {
	InboundID string `json:"inbound_id"`
}

func (inboundArgs) Kind() string { return KindProcessInbound }

func (inboundArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: inboundMaxAttempts}
}

type numberSweepArgs struct{}

func (numberSweepArgs) Kind() string { return KindSweepNumbers }

func (numberSweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: periodicMaxAttempts}
}

// funcWorker runs one handler for jobs of kind T; a process without the
// handler (an admin command) fails the job, which River retries on a
// replica that has it.
type funcWorker[T river.JobArgs] struct {
	river.WorkerDefaults[T]
	run func(ctx context.Context, job *river.Job[T]) error
	// timeout is the kind's own job timeout; 0 takes the client's.
	timeout time.Duration
}

// Timeout implements river.Worker.
func (w *funcWorker[T]) Timeout(*river.Job[T]) time.Duration { return w.timeout }

func (w *funcWorker[T]) Work(ctx context.Context, job *river.Job[T]) error {
	if w.run == nil {
		return fmt.Errorf("%s: this process has no handler", job.Kind)
	}
	if wait := time.Until(job.ScheduledAt); wait > 0 {
		return river.JobSnooze(wait + time.Millisecond)
	}
	return w.run(ctx, job)
}

func addNumberWorkers(workers *river.Workers, h Handlers, sweep *periodicWorker[numberSweepArgs], inboundTimeout time.Duration) error {
	order := &funcWorker[orderNumberArgs]{}
	if h.OrderNumber != nil {
		order.run = func(ctx context.Context, job *river.Job[orderNumberArgs]) error {
			if job.Args.NumberID == "" {
				return river.JobCancel(errors.New("order_number job without a number_id"))
			}
			err := h.OrderNumber(ctx, job.Args.NumberID)
			if err != nil && job.Attempt >= job.MaxAttempts && h.GiveUpNumberOrder != nil {
				return h.GiveUpNumberOrder(ctx, job.Args.NumberID, err)
			}
			return err
		}
	}
	outcome := &funcWorker[numberOutcomeArgs]{}
	if h.NumberOutcome != nil {
		outcome.run = func(ctx context.Context, job *river.Job[numberOutcomeArgs]) error {
			return h.NumberOutcome(ctx, job.Args.Provider, job.Args.OrderRef, job.Args.Result)
		}
	}
	inbound := &funcWorker[inboundArgs]{timeout: inboundTimeout}
	if h.ProcessInbound != nil {
		inbound.run = func(ctx context.Context, job *river.Job[inboundArgs]) error {
			if job.Args.InboundID == "" {
				return river.JobCancel(errors.New("process_inbound job without an inbound_id"))
			}
			err := h.ProcessInbound(ctx, job.Args.InboundID, job.Attempt >= job.MaxAttempts)
			var later *inbox.ContinueError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &later):
				// The document is stored; its text is read in a run of
				// its own, at once. A snooze uses up no attempt.
				return river.JobSnooze(0)
			case errors.Is(err, context.Canceled) && ctx.Err() != nil && !errors.Is(context.Cause(ctx), rivertype.ErrJobCancelledRemotely):
				// Shutdown interrupted it: not a failure. The next start
				// resumes after the last step it recorded.
				return river.JobSnooze(time.Second)
			}
			return fmt.Errorf("process inbound fax %s: %w", job.Args.InboundID, err)
		}
	}
	for _, add := range []func() error{
		func() error { return river.AddWorkerSafely(workers, order) },
		func() error { return river.AddWorkerSafely(workers, outcome) },
		func() error { return river.AddWorkerSafely(workers, inbound) },
		func() error { return river.AddWorkerSafely(workers, sweep) },
	} {
		if err := add(); err != nil {
			return fmt.Errorf("register worker: %w", err)
		}
	}
	return nil
}

func (q *Queue) insertTx(ctx context.Context, tx core.Tx, args river.JobArgs) error {
	txer, ok := tx.(SQLTxer)
	if !ok || txer.SQLTx() == nil {
		return fmt.Errorf("enqueue %s: transaction %T does not expose its *sql.Tx", args.Kind(), tx)
	}
	if _, err := q.client.InsertTx(ctx, txer.SQLTx(), args, nil); err != nil {
		return fmt.Errorf("enqueue %s: %w", args.Kind(), err)
	}
	return nil
}

// EnqueueNumberOrder inserts an order_number job in tx.
func (q *Queue) EnqueueNumberOrder(ctx context.Context, tx core.Tx, numberID string) error {
	if numberID == "" {
		return errors.New("enqueue number order: empty number id")
	}
	return q.insertTx(ctx, tx, orderNumberArgs{NumberID: numberID})
}

// EnqueueInbound inserts a process_inbound job in tx.
func (q *Queue) EnqueueInbound(ctx context.Context, tx core.Tx, inboundID string) error {
	if inboundID == "" {
		return errors.New("enqueue inbound: empty id")
	}
	return q.insertTx(ctx, tx, inboundArgs{InboundID: inboundID})
}

// ScheduleNumberOutcome inserts a number_outcome job due at at: the
// simulator's answer to an order, recorded then by whichever process runs it.
func (q *Queue) ScheduleNumberOutcome(ctx context.Context, at time.Time, provider, orderRef string, res numbers.OrderResult) error {
	opts := &river.InsertOpts{}
	if at.After(time.Now()) {
		opts.ScheduledAt = ceilMillisecond(at)
	}
	if _, err := q.client.Insert(ctx, numberOutcomeArgs{Provider: provider, OrderRef: orderRef, Result: res}, opts); err != nil {
		return fmt.Errorf("schedule number outcome of %s: %w", orderRef, err)
	}
	return nil
}

// ScheduleNumberSweep makes the queue run the numbers sweeper every
// interval, and once when this process becomes the leader. Call it before
// Start.
func (q *Queue) ScheduleNumberSweep(run func(context.Context) error, every time.Duration) error {
	return schedule(q, q.numberSweep, numberSweepArgs{}, run, every)
}
