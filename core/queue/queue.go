// Package queue is faxhub's durable job queue: River on SQLite (the embedded
// default) or PostgreSQL, behind the queue ports of faxes, numbers and the
// inbox.
//
// Both databases are reached through database/sql so that a delivery job is
// inserted with the very *sql.Tx the store uses for the fax: the fax row
// and its job commit or vanish together. Neither database/sql driver of River
// can LISTEN, so workers find new jobs by polling; the poll interval and the
// fetch cooldown below are what bound latency and throughput.
package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
)

// Dialects accepted by New and Migrate.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// River job kinds. They are stored in every job row, so they must never
// change.
const (
	// KindDeliverFax hands one attempt of a fax to its provider.
	KindDeliverFax = "deliver_fax"
	// KindProviderOutcome records an outcome a provider reported (the
	// simulated provider schedules its own for the end of each call).
	KindProviderOutcome = "provider_outcome"
)

// Defaults, chosen by measurement (see the package tests' throughput log).
const (
	// On SQLite every write is serialised on one writer, so the database,
	// not the queue, bounds throughput: 100 workers fetched at most every
	// 2 ms could start 50,000 jobs a second. Idle workers poll every 50 ms
	// (a cheap UPDATE that matches nothing); that is the delay between a
	// commit and the start of its delivery, since a job inserted in the
	// store's transaction cannot wake the workers itself.
	defaultWorkersSQLite       = 100
	defaultPollIntervalSQLite  = 50 * time.Millisecond
	defaultFetchCooldownSQLite = 2 * time.Millisecond

	// On PostgreSQL each replica polls the shared database, so the interval
	// is a little longer; the cooldown bounds throughput per replica at
	// Workers/FetchCooldown jobs per second.
	defaultWorkersPostgres       = 50
	defaultPollIntervalPostgres  = 100 * time.Millisecond
	defaultFetchCooldownPostgres = 5 * time.Millisecond

	defaultMaxAttempts = 25
	// A delivery job only hands the fax to the provider (providers are
	// asynchronous: the call's outcome arrives later, as a webhook or a
	// provider_outcome job), so it is short. The timeout also sets how soon
	// a job left running by a crashed process is run again: River's rescuer
	// (every 30 s, on the elected leader) takes jobs running longer than
	// timeout + rescueMargin, so a dead process's deliveries resume within
	// about 70 s of their start.
	defaultJobTimeout = 30 * time.Second
	rescueMargin      = 10 * time.Second

	// River's scheduler promotes scheduled jobs to available every 5 s (not
	// configurable in v0.31.0); River itself inserts shorter snoozes and
	// retries as available-with-a-future-scheduled_at, and so do we.
	riverSchedulerInterval = 5 * time.Second
)

// Options tune the queue; zero values take the defaults for the dialect.
type Options struct {
	// Workers is how many deliveries this process runs at once.
	Workers int
	// PollInterval is how often an idle worker pool looks for new jobs; it
	// is the worst-case latency between a commit and the start of delivery.
	PollInterval time.Duration
	// FetchCooldown is the minimum gap between two fetches; a busy pool
	// fetches at most Workers jobs per cooldown.
	FetchCooldown time.Duration
	// MaxAttempts bounds how often River retries a job whose delivery
	// returned an error (infrastructure trouble, not a fax failure: those
	// are retried by core with new jobs).
	MaxAttempts int
	// JobTimeout cancels a job that runs longer than this (default 30 s).
	// A job left running by a crashed process is run again 10 s after its
	// timeout, at the rescuer's next pass.
	JobTimeout time.Duration
	// InboundJobTimeout is one run of a process_inbound job (default
	// 3 min): received faxes are converted and read as text, which takes
	// longer than a delivery.
	InboundJobTimeout time.Duration
	// WebhookWorkers is how many webhook attempts this process runs at
	// once, in the webhooks River queue beside the deliveries' (default
	// 64).
	WebhookWorkers int
	// InsertOnly builds a queue that only enqueues (for `faxhub migrate` and
	// admin commands): Start and Stop do nothing and deliver may be nil.
	InsertOnly bool
	// StatsDB is the pool JobStats reads (a read-only pool, so a scrape
	// never waits behind SQLite's single writer); default: db.
	StatsDB *sql.DB
}

// Queue implements services.Queue on River.
type Queue struct {
	client     *river.Client[*sql.Tx]
	insertOnly bool
	logger     *slog.Logger
	purge      *periodicWorker[purgeArgs]
	sweep      *periodicWorker[sweepArgs]
	// numberSweep runs numbers.Service.Sweep.
	numberSweep *periodicWorker[numberSweepArgs]
	// statsDB and dialect serve JobStats (stats.go).
	statsDB *sql.DB
	dialect string
	// maxAttempts is River's for every job of this client; the direct
	// delivery insert writes it (insert.go).
	maxAttempts int
}

var (
	_ faxes.DeliveryQueue = (*Queue)(nil)
	_ numbers.Queue       = (*Queue)(nil)
	_ inbox.Queue         = (*Queue)(nil)
)

// SQLTxer is what EnqueueDelivery needs from a core.Tx: the database/sql
// transaction underneath, so the job commits with the fax.
type SQLTxer interface {
	SQLTx() *sql.Tx
}

// Handlers are what the jobs call (faxes.Service's Deliver and
// RecordProviderOutcome). An insert-only queue needs none.
type Handlers struct {
	Deliver func(ctx context.Context, faxID string) error
	Outcome func(ctx context.Context, faxID, attemptID string, res faxes.ProviderResult) error
	// Numbers and the inbox (optional: a process without them leaves
	// their jobs to one that has them).
	OrderNumber func(ctx context.Context, numberID string) error
	// GiveUpNumberOrder ends an order whose last attempt failed.
	GiveUpNumberOrder func(ctx context.Context, numberID string, cause error) error
	NumberOutcome     func(ctx context.Context, provider, orderRef string, res numbers.OrderResult) error
	ProcessInbound    func(ctx context.Context, inboundID string, lastAttempt bool) error
	// Webhooks (optional, like numbers): a delivery's attempts
	// (webhooks.Service.Deliver) and the mail that an endpoint was
	// disabled.
	DeliverWebhook func(ctx context.Context, deliveryID string) error
	WebhookNotice  func(ctx context.Context, endpointID string) error
}

// New builds a queue on db, the pool River's own statements use (its
// fetches, completions, polls and maintenance): on PostgreSQL a pool of
// its own (store.DB.QueuePool), so that they never wait behind the
// workers' store transactions; a delivery job is inserted in the store's
// transaction all the same (EnqueueDelivery). River's tables must exist
// (Migrate). On SQLite
// the DSN must set WAL, a busy_timeout and _txlock=immediate; River advises
// a single open connection (db.SetMaxOpenConns(1)), and with that DSN more
// connections also work, because no transaction ever upgrades a read lock.
func New(db *sql.DB, dialect string, h Handlers, opts Options, logger *slog.Logger) (*Queue, error) {
	if db == nil {
		return nil, errors.New("new queue: nil database")
	}
	if logger == nil {
		logger = slog.Default()
	}
	driver, err := newDriver(db, dialect)
	if err != nil {
		return nil, fmt.Errorf("new queue: %w", err)
	}
	if !opts.InsertOnly && (h.Deliver == nil || h.Outcome == nil) {
		return nil, errors.New("new queue: a working queue needs its handlers")
	}
	opts = withDefaults(opts, dialect)

	workers := river.NewWorkers()
	// Registered even when insert-only, so River rejects an unknown kind at
	// insert time rather than leaving a job no worker can run.
	if err := river.AddWorkerSafely(workers, &deliverWorker{deliver: h.Deliver}); err != nil {
		return nil, fmt.Errorf("new queue: register worker: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &outcomeWorker{record: h.Outcome}); err != nil {
		return nil, fmt.Errorf("new queue: register worker: %w", err)
	}
	purge, sweep := &periodicWorker[purgeArgs]{}, &periodicWorker[sweepArgs]{}
	if err := river.AddWorkerSafely(workers, purge); err != nil {
		return nil, fmt.Errorf("new queue: register worker: %w", err)
	}
	if err := river.AddWorkerSafely(workers, sweep); err != nil {
		return nil, fmt.Errorf("new queue: register worker: %w", err)
	}
	numberSweep := &periodicWorker[numberSweepArgs]{}
	if err := addNumberWorkers(workers, h, numberSweep, opts.InboundJobTimeout); err != nil {
		return nil, fmt.Errorf("new queue: %w", err)
	}
	if err := addWebhookWorkers(workers, h); err != nil {
		return nil, fmt.Errorf("new queue: %w", err)
	}
	cfg := &river.Config{
		Logger:        logger.With("component", "river"),
		Workers:       workers,
		MaxAttempts:   opts.MaxAttempts,
		JobTimeout:    opts.JobTimeout,
		FetchCooldown: opts.FetchCooldown,
		// A job running longer than this is presumed orphaned by a crashed
		// process and run again, so it must exceed JobTimeout.
		RescueStuckJobsAfter: opts.JobTimeout + rescueMargin,
		FetchPollInterval:    opts.PollInterval,
		// Faxes and attempts are the record of a delivery; a completed job
		// row is only clutter, and at a thousand jobs a second a day's worth
		// would swell the SQLite file.
		CompletedJobRetentionPeriod: time.Hour,
		Middleware:                  []rivertype.Middleware{river.JobInsertMiddlewareFunc(availableSoon)},
	}
	if !opts.InsertOnly {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: opts.Workers}, QueueWebhooks: {MaxWorkers: opts.WebhookWorkers}}
	}
	client, err := river.NewClient(driver, cfg)
	if err != nil {
		return nil, fmt.Errorf("new queue: river client: %w", err)
	}
	statsDB := opts.StatsDB
	if statsDB == nil {
		statsDB = db
	}
	return &Queue{
		client: client, insertOnly: opts.InsertOnly, logger: logger, purge: purge, sweep: sweep, numberSweep: numberSweep,
		statsDB: statsDB, dialect: dialect, maxAttempts: opts.MaxAttempts,
	}, nil
}

func newDriver(db *sql.DB, dialect string) (riverdriver.Driver[*sql.Tx], error) {
	switch dialect {
	case DialectSQLite:
		return riversqlite.New(db), nil
	case DialectPostgres:
		return pgDriver{riverdatabasesql.New(db)}, nil
	}
	return nil, fmt.Errorf("unknown dialect %q (want %q or %q)", dialect, DialectSQLite, DialectPostgres)
}

// pgDriver is River's database/sql driver for PostgreSQL without its
// NOTIFY on insert. River sends pg_notify in the inserting transaction
// whenever its driver can, for clients that LISTEN; riverdatabasesql
// (v0.31.0) cannot LISTEN, and every faxhub replica uses it, so the
// notification reached nobody and cost a send one round trip in most
// transactions (River limits it to one per queue per fetch cooldown, 5 ms).
// Workers find jobs by polling either way; an insert outside a transaction
// (a provider outcome) still wakes this process's own workers, which River
// does without a notification when its driver has no listener.
type pgDriver struct {
	*riverdatabasesql.Driver
}

// SupportsListenNotify reports false so that River sends no NOTIFY (see
// pgDriver).
func (pgDriver) SupportsListenNotify() bool { return false }

func withDefaults(o Options, dialect string) Options {
	workers, poll, cooldown := defaultWorkersPostgres, defaultPollIntervalPostgres, defaultFetchCooldownPostgres
	if dialect == DialectSQLite {
		workers, poll, cooldown = defaultWorkersSQLite, defaultPollIntervalSQLite, defaultFetchCooldownSQLite
	}
	if o.Workers <= 0 {
		o.Workers = workers
	}
	if o.PollInterval <= 0 {
		o.PollInterval = poll
	}
	if o.FetchCooldown <= 0 {
		o.FetchCooldown = min(cooldown, o.PollInterval)
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = defaultMaxAttempts
	}
	if o.WebhookWorkers <= 0 {
		o.WebhookWorkers = defaultWebhookWorkers
	}
	if o.JobTimeout <= 0 {
		o.JobTimeout = defaultJobTimeout
	}
	if o.InboundJobTimeout <= 0 {
		o.InboundJobTimeout = defaultInboundJobTimeout
	}
	return o
}

// Start starts the workers and returns. They run until Stop, not until ctx
// ends: a cancelled context would abort in-flight faxes, and shutdown should
// let them finish (Stop decides how long to wait).
func (q *Queue) Start(ctx context.Context) error {
	if q.insertOnly {
		return nil
	}
	if err := q.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start queue: %w", err)
	}
	return nil
}

// Stop stops fetching jobs and waits for running deliveries to finish. If ctx
// ends first, running deliveries are cancelled (their jobs run again on the
// next start) and Stop waits a few more seconds for them to record that.
func (q *Queue) Stop(ctx context.Context) error {
	if q.insertOnly {
		return nil
	}
	err := q.client.Stop(ctx)
	if err == nil {
		return nil
	}
	q.logger.WarnContext(ctx, "queue: graceful stop timed out; cancelling running deliveries", "error", err)
	hardCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := q.client.StopAndCancel(hardCtx); err != nil {
		return fmt.Errorf("stop queue: running deliveries did not return after cancellation: %w", err)
	}
	return fmt.Errorf("stop queue: running deliveries were cancelled: %w", err)
}

// EnqueueDelivery inserts a deliver_fax job in tx, due at at (now if at is
// not in the future). tx must expose its *sql.Tx (SQLTxer).
func (q *Queue) EnqueueDelivery(ctx context.Context, tx core.Tx, faxID string, at time.Time) error {
	txer, ok := tx.(SQLTxer)
	if !ok {
		return fmt.Errorf("enqueue delivery of %s: transaction %T does not expose its *sql.Tx (SQLTx method)", faxID, tx)
	}
	sqlTx := txer.SQLTx()
	if sqlTx == nil {
		return fmt.Errorf("enqueue delivery of %s: transaction has no *sql.Tx", faxID)
	}
	if faxID == "" {
		return errors.New("enqueue delivery: empty fax id")
	}
	// A job due later is due at at rounded up to the millisecond (SQLite
	// keeps milliseconds and would round to the nearest one): it never comes
	// due before the fax's next_attempt_at, which faxes.Service.Deliver would read
	// as a stale job.
	if err := q.insertDelivery(ctx, sqlTx, faxID, at); err != nil {
		return fmt.Errorf("enqueue delivery of %s: %w", faxID, err)
	}
	return nil
}

// ScheduleOutcome inserts a provider_outcome job due at at: the outcome of
// an accepted attempt, recorded then by whichever process runs it. It is
// the simulated provider's durable record of an idempotency key: one job
// per attempt (River's unique insert on fax and attempt id, across every
// state but cancelled and discarded, until the completed job is cleaned
// out after an hour), so placed is false for an attempt sent again after a
// crash and no second call is scheduled.
func (q *Queue) ScheduleOutcome(ctx context.Context, at time.Time, faxID, attemptID string, res faxes.ProviderResult) (placed bool, err error) {
	opts := &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
	if at.After(time.Now()) {
		opts.ScheduledAt = ceilMillisecond(at)
	}
	ins, err := q.client.Insert(ctx, outcomeArgs{FaxID: faxID, AttemptID: attemptID, Result: res}, opts)
	if err != nil {
		return false, fmt.Errorf("schedule outcome of %s: %w", attemptID, err)
	}
	return !ins.UniqueSkippedAsDuplicate, nil
}

func ceilMillisecond(t time.Time) time.Time {
	if c := t.Truncate(time.Millisecond); !c.Equal(t) {
		return c.Add(time.Millisecond)
	}
	return t
}

// availableSoon inserts a delivery due within River's scheduler interval as
// available with a future scheduled_at instead of scheduled: fetches skip it
// until it is due, so a short retry backoff is honoured within a poll
// interval rather than up to five seconds late. River does the same for its
// own short snoozes and retries.
func availableSoon(ctx context.Context, params []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	for _, p := range params {
		if (p.Kind == KindDeliverFax || p.Kind == KindProviderOutcome || p.Kind == KindNumberOutcome) && p.State == rivertype.JobStateScheduled && p.ScheduledAt != nil &&
			time.Until(*p.ScheduledAt) <= riverSchedulerInterval {
			p.State = rivertype.JobStateAvailable
		}
	}
	return doInner(ctx)
}

// deliverArgs are a deliver_fax job's arguments. Everything else about the
// delivery lives on the fax row, read fresh when the job runs.
type deliverArgs struct {
	FaxID string `json:"fax_id"`
	// LegacyOrderID is the key jobs queued before the rename (migration
	// 00005) carry; such jobs are delivered like new ones.
	LegacyOrderID string `json:"order_id,omitempty"`
}

func (deliverArgs) Kind() string { return KindDeliverFax }

type deliverWorker struct {
	river.WorkerDefaults[deliverArgs]
	deliver func(ctx context.Context, faxID string) error
}

func (w *deliverWorker) Work(ctx context.Context, job *river.Job[deliverArgs]) error {
	if job.Args.FaxID == "" {
		job.Args.FaxID = job.Args.LegacyOrderID
	}
	if job.Args.FaxID == "" {
		return river.JobCancel(errors.New("deliver_fax job without a fax_id"))
	}
	// The database's clock said the job is due; core compares the fax's
	// next_attempt_at with this process's clock, and a job it sees as early
	// is dropped as stale. Wait for our clock to agree (it can lag another
	// replica's or the database's by a few milliseconds).
	if wait := time.Until(job.ScheduledAt); wait > 0 {
		return river.JobSnooze(wait + time.Millisecond)
	}
	err := w.deliver(ctx, job.Args.FaxID)
	if err == nil {
		return nil
	}
	var early *faxes.NotBeforeError
	if errors.As(err, &early) {
		return river.JobSnooze(max(time.Until(early.At), 0) + time.Millisecond)
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil && !errors.Is(context.Cause(ctx), rivertype.ErrJobCancelledRemotely) {
		// Shutdown interrupted the delivery: not a failure, so it must not
		// use up one of the job's attempts. It runs again on the next start.
		return river.JobSnooze(time.Second)
	}
	return fmt.Errorf("deliver fax %s: %w", job.Args.FaxID, err)
}

// outcomeArgs are a provider_outcome job's arguments.
type outcomeArgs struct {
	// The unique tags make ScheduleOutcome's unique insert compare these
	// two only: a resend's result may differ (its duration).
	FaxID     string               `json:"fax_id" river:"unique"`
	AttemptID string               `json:"attempt_id" river:"unique"`
	Result    faxes.ProviderResult `json:"result"`
}

func (outcomeArgs) Kind() string { return KindProviderOutcome }

type outcomeWorker struct {
	river.WorkerDefaults[outcomeArgs]
	record func(ctx context.Context, faxID, attemptID string, res faxes.ProviderResult) error
}

func (w *outcomeWorker) Work(ctx context.Context, job *river.Job[outcomeArgs]) error {
	if job.Args.FaxID == "" || job.Args.AttemptID == "" {
		return river.JobCancel(errors.New("provider_outcome job without fax_id or attempt_id"))
	}
	if wait := time.Until(job.ScheduledAt); wait > 0 {
		return river.JobSnooze(wait + time.Millisecond)
	}
	if err := w.record(ctx, job.Args.FaxID, job.Args.AttemptID, job.Args.Result); err != nil {
		return fmt.Errorf("record outcome of %s: %w", job.Args.AttemptID, err)
	}
	return nil
}
