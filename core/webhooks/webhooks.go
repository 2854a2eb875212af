// Package webhooks tells owners what happens, as it happens: an owner
// registers endpoints (a URL, the event types it wants, how deliveries are
// signed), and every event of the log (core/events) that matches is POSTed
// to each, signed as Standard Webhooks says, by a durable delivery engine.
//
// The engine, in four steps, each crash-safe:
//
//  1. The feature that changes something appends its event in the change's
//     transaction; the store marks it dispatch when its owner and mode
//     have somewhere to send it.
//  2. A dispatcher (every replica runs one) takes marked events in
//     batches, oldest first, and in ONE transaction writes a delivery per
//     matching target (unique per event and target, so nothing is doubled
//     by a crash after the commit), the River job of each, and clears the
//     mark. A rollback leaves the events marked for the next pass.
//  3. The delivery's job claims an attempt (a row written before anything
//     is sent, under the owner's and the endpoint's in-flight caps), sends
//     it through the Sender port (core/webhooks/httpsender: the SSRF-guarded
//     client of core/safehttp), and records its outcome: delivered, or the
//     next attempt's time (exponential backoff with jitter, about three
//     days), or failed. A job that runs again after a crash finds the
//     attempt it had open, closes it as interrupted (the log says so) and
//     makes the next one: each attempt is sent at most once.
//  4. What an attempt means for its target is the target's business
//     (Destination.Attempted): an endpoint answering 410 is disabled at
//     once, one failing continuously for DisableAfter is disabled and its
//     owner told by mail (a job written in the same transaction) and on
//     the console.
//
// A delivery has a target kind and id, so that another kind of
// destination (A2A push notification configs: another body, other
// headers, matched by task) plugs in as a Destination without a second
// engine. docs/webhooks.md is the guide for receivers.
package webhooks

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/events"
)

// MaxEndpoints is how many endpoints an owner may have in each mode,
// enabled or not: enough for a few environments and tools, bounded so
// that one event's fan-out stays small.
const MaxEndpoints = 16

// Bounds of an endpoint's fields.
const (
	MaxURLBytes         = 2048
	MaxDescriptionRunes = 256
)

// Scheme is a Standard Webhooks signature scheme.
type Scheme string

const (
	// SchemeV1 is HMAC-SHA256 with the endpoint's whsec_ secret.
	SchemeV1 Scheme = "v1"
	// SchemeV1a is Ed25519 with faxhub's key (its whpk_ public key is
	// published).
	SchemeV1a Scheme = "v1a"
)

// DisabledReason says why an endpoint is disabled.
type DisabledReason string

const (
	// DisabledByOwner: the owner turned it off.
	DisabledByOwner DisabledReason = "owner"
	// DisabledGone: it answered 410 Gone.
	DisabledGone DisabledReason = "gone"
	// DisabledFailing: every attempt failed for Config.DisableAfter.
	DisabledFailing DisabledReason = "failing"
)

// Endpoint is where an owner's events of one mode are POSTed.
type Endpoint struct {
	ID          string    `json:"id"`
	OwnerID     string    `json:"-"`
	Mode        core.Mode `json:"mode"`
	URL         string    `json:"url"`
	Description string    `json:"description"`
	// EventTypes are the types delivered, and resource wildcards ("fax.*",
	// which take types of that resource added later); empty means every
	// type.
	EventTypes []events.Type `json:"eventTypes"`
	// Signing are the schemes each delivery is signed with.
	Signing []Scheme `json:"signing"`
	Enabled bool     `json:"enabled"`
	// DisabledReason and DisabledAt say why and since when a disabled
	// endpoint is.
	DisabledReason DisabledReason `json:"disabledReason,omitempty"`
	DisabledAt     *time.Time     `json:"disabledAt,omitempty"`
	// FailingSince is the first failed attempt since the last delivered
	// one: the endpoint is disabled when it reaches DisableAfter.
	FailingSince  *time.Time `json:"failingSince,omitempty"`
	LastSuccessAt *time.Time `json:"lastSuccessAt,omitempty"`
	// Secret is the sealed v1 secret; PreviousSecret the one it replaced,
	// still signing until PreviousSecretUntil (the rotation's overlap).
	Secret              []byte     `json:"-"`
	PreviousSecret      []byte     `json:"-"`
	PreviousSecretUntil *time.Time `json:"previousSecretExpiresAt,omitempty"`
	SecretRotatedAt     *time.Time `json:"secretRotatedAt,omitempty"`
	CreatedAt           time.Time  `json:"createdAt"`
	UpdatedAt           time.Time  `json:"updatedAt"`
}

// Matches reports whether the endpoint takes events of type t.
func (e *Endpoint) Matches(t events.Type) bool { return events.Match(e.EventTypes, t) }

// Signs reports whether the endpoint's deliveries carry sc.
func (e *Endpoint) Signs(sc Scheme) bool {
	for _, s := range e.Signing {
		if s == sc {
			return true
		}
	}
	return false
}

// WithSecret is an endpoint with its v1 secret in clear: the answer to a
// creation or a rotation, the only times the secret is shown.
type WithSecret struct {
	Endpoint
	Secret string `json:"secret"`
}

// TargetKind is a kind of destination.
type TargetKind string

// TargetWebhook is an owner's webhook endpoint.
const TargetWebhook TargetKind = "webhook"

// Target is one place an event is delivered to.
type Target struct {
	Kind TargetKind
	ID   string
}

// Origin says why a delivery was made.
type Origin string

const (
	// OriginEvent: the dispatcher, for an event of the log.
	OriginEvent Origin = "event"
	// OriginRedeliver: the owner asked for an event again.
	OriginRedeliver Origin = "redeliver"
	// OriginTest: the owner sent a webhook.test event.
	OriginTest Origin = "test"
)

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

const (
	// DeliveryPending: an attempt is due, running or scheduled.
	DeliveryPending DeliveryStatus = "pending"
	// DeliveryDelivered: an attempt was answered 2xx.
	DeliveryDelivered DeliveryStatus = "delivered"
	// DeliveryFailed: no attempt is left (the schedule ran out, the
	// endpoint answered 410, was disabled or deleted).
	DeliveryFailed DeliveryStatus = "failed"
	// DeliverySkipped: its destination found nothing new to send (an A2A
	// push whose body the receiver already acknowledged); webhook
	// endpoints never skip.
	DeliverySkipped DeliveryStatus = "skipped"
)

// Delivery is one event on its way to one target, over its attempts.
type Delivery struct {
	ID         string         `json:"id"`
	TargetKind TargetKind     `json:"-"`
	TargetID   string         `json:"endpointId"`
	OwnerID    string         `json:"-"`
	Mode       core.Mode      `json:"mode"`
	EventID    string         `json:"eventId"`
	EventType  events.Type    `json:"eventType"`
	Origin     Origin         `json:"origin"`
	Status     DeliveryStatus `json:"status"`
	// Payload is the body of a test event, which the log does not keep;
	// other deliveries read their event from the log.
	Payload []byte `json:"-"`
	// Attempts is how many attempts were made (or begun).
	Attempts      int        `json:"attemptCount"`
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	// LastStatusCode and LastError describe the last attempt (or why the
	// delivery ended without one).
	LastStatusCode int        `json:"lastStatusCode,omitempty"`
	LastError      string     `json:"lastError,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	CompletedAt    *time.Time `json:"completedAt,omitempty"`
	// AttemptLog is the delivery's attempts, oldest first (filled for the
	// delivery log).
	AttemptLog []Attempt `json:"attempts"`
}

// AttemptStatus is what became of one attempt.
type AttemptStatus string

const (
	// AttemptSending: claimed and being sent (or its process died).
	AttemptSending AttemptStatus = "sending"
	// AttemptSucceeded: answered 2xx.
	AttemptSucceeded AttemptStatus = "succeeded"
	// AttemptFailed: answered otherwise, or not at all.
	AttemptFailed AttemptStatus = "failed"
	// AttemptInterrupted: its process stopped before it recorded an
	// answer; whether the endpoint received it is unknown (it may have:
	// receivers drop duplicates by webhook-id).
	AttemptInterrupted AttemptStatus = "interrupted"
	// AttemptSkipped: claimed but not sent, its destination having
	// nothing new to say (Skip); its error says why.
	AttemptSkipped AttemptStatus = "skipped"
)

// Attempt is one POST of a delivery, in the delivery log.
type Attempt struct {
	DeliveryID string        `json:"-"`
	Number     int           `json:"number"`
	OwnerID    string        `json:"-"`
	TargetID   string        `json:"-"`
	Status     AttemptStatus `json:"status"`
	// StatusCode is the answer's HTTP status (0: none).
	StatusCode int `json:"statusCode,omitempty"`
	// Error says why there was no answer, or what was wrong with it.
	Error string `json:"error,omitempty"`
	// Response is the start of the answer's body (at most
	// MaxResponseExcerpt bytes, as text).
	Response   string     `json:"response,omitempty"`
	DurationMS int64      `json:"durationMs"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// MaxResponseExcerpt bounds the part of an answer the log keeps.
const MaxResponseExcerpt = 1024

// Request is one attempt's HTTP request, built by a Destination.
type Request struct {
	URL    string
	Header map[string]string
	Body   []byte
}

// Response is what the Sender got back.
type Response struct {
	StatusCode int
	// Body is the start of the answer's body (the Sender reads a few KiB
	// at most).
	Body []byte
	// Location is a redirect's target, which is never followed.
	Location string
	Duration time.Duration
}

// Sender sends one attempt (core/webhooks/httpsender). It must refuse
// addresses its policy forbids at dial time, never follow redirects,
// stop within the context's deadline and read a bounded part of the
// answer. An error is a sentence for the owner's delivery log: it must
// carry no secret.
type Sender interface {
	Send(ctx context.Context, r *Request) (*Response, error)
}

// Outcome is an attempt's result as the engine classified it.
type Outcome struct {
	At         time.Time
	Number     int
	StatusCode int
	Err        string
	Delivered  bool
	// Gone: the target answered 410, it wants nothing more.
	Gone bool
	// Final: no attempt follows (delivered, gone, or the schedule ran
	// out).
	Final bool
	// Test: a test delivery, which says nothing of the target's health.
	Test bool
	// Skipped: the attempt was not sent (its Finisher said Skip).
	Skipped bool
	// Body is what the attempt sent (nil when skipped or not prepared),
	// for a destination that remembers what its target has.
	Body []byte
}

// Destination is a kind of place events go. The engine (dispatch, claims,
// retries, the log) is shared; a destination says where an event goes,
// what one attempt sends, and what an attempt's outcome means for its
// target.
type Destination interface {
	Kind() TargetKind
	// Targets lists where e goes, read in the dispatcher's transaction.
	Targets(ctx context.Context, tx Tx, e *events.Event) ([]Target, error)
	// Request builds d's next attempt carrying body as message id at at,
	// read in the attempt's claim: a target gone or disabled since is a
	// *Refusal, which ends the delivery without an attempt.
	Request(ctx context.Context, tx Tx, d *Delivery, body []byte, at time.Time) (*Request, error)
	// Attempted applies an attempt's outcome to its target in the
	// transaction that records it.
	Attempted(ctx context.Context, tx Tx, d *Delivery, o *Outcome) error
}

// SerialDestination is a Destination whose targets take one attempt at a
// time (instead of Config.MaxInFlightPerEndpoint): A2A push notifications,
// whose bodies say how a task stands when they are sent, so that one sent
// later is never overtaken by an earlier one.
type SerialDestination interface {
	Destination
	Serial()
}

// Finisher is a Destination whose requests are completed after their
// attempt is claimed, outside the claim's transaction: what reads or
// writes through other connections (rendering the current state of a
// task, signing with a key that may be created on first use) must not run
// while the claim holds SQLite's one writer. A Finish error fails the
// attempt (it is retried on schedule), except a *Skip, which ends the
// delivery unsent; its text goes to the owner's delivery log, so it must
// carry no secret.
type Finisher interface {
	Destination
	Finish(ctx context.Context, d *Delivery, r *Request, at time.Time) error
}

// Skip, from Finisher.Finish, ends a delivery without sending its claimed
// attempt: the target already has what it would carry. The attempt and
// the delivery are logged skipped, with Reason.
type Skip struct{ Reason string }

func (s *Skip) Error() string { return s.Reason }

// Refusal ends a delivery without an attempt (its target is gone or
// disabled); Reason is for the log.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return r.Reason }

// WaitError asks the job to run again after After (the next attempt is
// not due yet, or the target has too many attempts in flight).
type WaitError struct {
	After time.Duration
	Why   string
}

func (w *WaitError) Error() string {
	return "webhook delivery waits " + w.After.String() + ": " + w.Why
}

// DeliveryFilter selects an endpoint's deliveries for the log.
type DeliveryFilter struct {
	OwnerID    string
	Mode       core.Mode
	TargetKind TargetKind
	TargetID   string
	// Status, when set, is the only status listed.
	Status DeliveryStatus
	// BeforeID, when set, lists deliveries older than this one (ids are
	// ordered by time).
	BeforeID string
	Limit    int
}

// SigningKey is faxhub's Ed25519 key for v1a signatures.
type SigningKey struct {
	ID        string
	PublicKey []byte
	// Sealed is the private key's seed sealed under the server secret.
	Sealed    []byte
	CreatedAt time.Time
}

// Queries are webhooks' data operations, on the store and in a
// transaction.
type Queries interface {
	CreateWebhookEndpoint(ctx context.Context, e *Endpoint) error
	GetWebhookEndpoint(ctx context.Context, ownerID string, mode core.Mode, id string) (*Endpoint, error)
	// GetWebhookEndpointByID reads an endpoint for the engine (no owner).
	GetWebhookEndpointByID(ctx context.Context, id string) (*Endpoint, error)
	// ListWebhookEndpoints lists an owner's endpoints of mode, oldest
	// first.
	ListWebhookEndpoints(ctx context.Context, ownerID string, mode core.Mode) ([]Endpoint, error)
	// UpdateWebhookEndpoint writes e's mutable fields; ErrNoRows if it is
	// gone.
	UpdateWebhookEndpoint(ctx context.Context, e *Endpoint) error
	DeleteWebhookEndpoint(ctx context.Context, ownerID string, mode core.Mode, id string) error
	// RecordWebhookOutcome keeps an endpoint's failure streak: delivered
	// clears failing_since (and sets last_success_at, at most once a
	// minute); failed sets failing_since unless it is set. It returns
	// failing_since as it stands after the statement.
	RecordWebhookOutcome(ctx context.Context, id string, delivered bool, at time.Time) (failingSince *time.Time, err error)
	// DisableWebhookEndpoint disables an enabled endpoint for reason;
	// false if it was disabled already (the owner is told once).
	DisableWebhookEndpoint(ctx context.Context, id string, reason DisabledReason, at time.Time) (bool, error)

	// EventsToDispatch returns up to limit events marked dispatch, oldest
	// first; in a transaction on PostgreSQL they are locked, and rows
	// another dispatcher holds are skipped.
	EventsToDispatch(ctx context.Context, limit int) ([]events.Event, error)
	// ClearDispatch unmarks the events of seqs.
	ClearDispatch(ctx context.Context, seqs []int64) error
	// GetEvent reads one event of the log (events.Store's).
	GetEvent(ctx context.Context, ownerID string, mode core.Mode, id string) (*events.Event, error)

	// InsertWebhookDelivery inserts d; ErrExists when the event already has a
	// delivery of origin event to the target.
	InsertWebhookDelivery(ctx context.Context, d *Delivery) error
	GetWebhookDelivery(ctx context.Context, id string) (*Delivery, error)
	// StalledWebhookDeliveries returns up to limit pending deliveries that
	// have not moved since before and were due by then, marking them moved
	// at now (Rescue).
	StalledWebhookDeliveries(ctx context.Context, before, now time.Time, limit int) ([]string, error)
	// UpdateWebhookDelivery writes d's mutable fields if the stored delivery is
	// pending with attempts attempts; ErrConflict otherwise.
	UpdateWebhookDelivery(ctx context.Context, d *Delivery, attempts int) error
	// ListWebhookDeliveries lists deliveries newest first.
	ListWebhookDeliveries(ctx context.Context, f DeliveryFilter) ([]Delivery, error)
	// WebhookTestPayload returns the body of a test delivery of eventID to the
	// target (test events are not in the log).
	WebhookTestPayload(ctx context.Context, ownerID string, kind TargetKind, targetID, eventID string) ([]byte, error)

	InsertWebhookAttempt(ctx context.Context, a *Attempt) error
	GetWebhookAttempt(ctx context.Context, deliveryID string, number int) (*Attempt, error)
	// FinishWebhookAttempt writes a's outcome if it is still sending;
	// ErrConflict otherwise (another run closed it as interrupted).
	FinishWebhookAttempt(ctx context.Context, a *Attempt) error
	// ListWebhookAttempts returns the attempts of deliveries, oldest first.
	ListWebhookAttempts(ctx context.Context, deliveryIDs []string) ([]Attempt, error)
	// LockWebhookOwner serializes attempt claims of one owner until the
	// transaction ends (PostgreSQL; SQLite's single writer already does).
	LockWebhookOwner(ctx context.Context, ownerID string) error
	// WebhookAttemptsInFlight counts the attempts sending, started after since, of the
	// owner and of the target.
	WebhookAttemptsInFlight(ctx context.Context, ownerID, targetID string, since time.Time) (owner, target int, err error)

	GetWebhookSigningKey(ctx context.Context, id string) (*SigningKey, error)
	// InsertWebhookSigningKey inserts k; ErrExists if its id is taken
	// (another replica created it first).
	InsertWebhookSigningKey(ctx context.Context, k *SigningKey) error

	// PurgeWebhookDeliveries deletes the deliveries (with their attempts)
	// created before before.
	PurgeWebhookDeliveries(ctx context.Context, before time.Time) (int64, error)
}

// Store keeps webhooks.
type Store interface {
	Queries
	core.Transactor
}

// Tx is a transaction of webhooks.
type Tx interface {
	core.Tx
	Queries
}

// Queue runs deliveries: the job of each is written in the transaction
// that makes it (core/queue, in its own River queue, so that webhooks
// never starve fax deliveries).
type Queue interface {
	EnqueueWebhookDeliveries(ctx context.Context, tx core.Tx, deliveryIDs []string) error
	// EnqueueWebhookNotice schedules the mail that tells an owner their
	// endpoint was disabled.
	EnqueueWebhookNotice(ctx context.Context, tx core.Tx, endpointID string) error
}

// Config tunes webhooks; zero values take the defaults.
type Config struct {
	// AllowLoopback accepts http:// endpoints on loopback hosts and
	// delivers to loopback addresses (developer mode, --dev).
	AllowLoopback bool
	// AllowPrivate also delivers to private, link-local and CGNAT
	// addresses, for receivers on an internal network
	// (--webhooks-allow-private); it implies AllowLoopback. Cloud
	// metadata services are never allowed.
	AllowPrivate bool
	// AttemptTimeout bounds one attempt (default 15 s).
	AttemptTimeout time.Duration
	// Schedule are the waits before each retry (default DefaultSchedule:
	// about three days); the delivery fails after the last.
	Schedule []time.Duration
	// Jitter spreads each wait by ± this fraction (default 0.2);
	// NoJitter turns it off (tests).
	Jitter   float64
	NoJitter bool
	// DisableAfter disables an endpoint whose attempts all failed for
	// this long (default 72 h).
	DisableAfter time.Duration
	// RotationOverlap is how long a rotated secret keeps signing beside
	// the new one (default 24 h).
	RotationOverlap time.Duration
	// MaxInFlightPerEndpoint and MaxInFlightPerOwner bound the attempts
	// sending at once (defaults 16 and 32, across every replica): a slow
	// endpoint holds at most that many of the webhook workers (64 per
	// process), and a delivery over a cap waits its turn.
	MaxInFlightPerEndpoint int
	MaxInFlightPerOwner    int
	// AttemptLease is how old an attempt still sending must be to be
	// presumed dead (its process crashed): default 60 s, beyond the
	// job's own timeout.
	AttemptLease time.Duration
	// PollInterval is how often the dispatcher looks for marked events
	// (default 200 ms); DispatchBatch how many it takes at once (200).
	PollInterval  time.Duration
	DispatchBatch int
	// StallAfter is how long a pending delivery may go without moving past
	// its due time before Rescue gives it a new job (default 1 h: a live
	// job runs a due delivery within minutes, so one that has not moved
	// for an hour lost its job, e.g. River discarded it after repeated
	// infrastructure errors); RescueEvery is how often the dispatcher
	// sweeps (default 10 min).
	StallAfter  time.Duration
	RescueEvery time.Duration
	// Retention is how long deliveries and their attempts are kept
	// (default 30 days, the event log's).
	Retention time.Duration
}

// DefaultSchedule are the waits between attempts: 13 attempts over about
// 70 hours (±20% each), so an endpoint that is down over a weekend gets
// its events when it is back (docs/webhooks.md, "Retries").
var DefaultSchedule = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 12 * time.Hour, 18 * time.Hour, 24 * time.Hour,
}

// SetDefaults fills zero values with the defaults.
func (c *Config) SetDefaults() {
	if c.AllowPrivate {
		c.AllowLoopback = true
	}
	c.AttemptTimeout = cmp.Or(c.AttemptTimeout, 15*time.Second)
	if len(c.Schedule) == 0 {
		c.Schedule = DefaultSchedule
	}
	if c.Jitter <= 0 || c.Jitter >= 1 {
		c.Jitter = 0.2
	}
	c.DisableAfter = cmp.Or(c.DisableAfter, 72*time.Hour)
	c.RotationOverlap = cmp.Or(c.RotationOverlap, 24*time.Hour)
	c.MaxInFlightPerEndpoint = cmp.Or(c.MaxInFlightPerEndpoint, 16)
	c.MaxInFlightPerOwner = cmp.Or(c.MaxInFlightPerOwner, 32)
	c.AttemptLease = cmp.Or(c.AttemptLease, 60*time.Second)
	c.PollInterval = cmp.Or(c.PollInterval, 200*time.Millisecond)
	c.DispatchBatch = cmp.Or(c.DispatchBatch, 200)
	c.StallAfter = cmp.Or(c.StallAfter, time.Hour)
	c.RescueEvery = cmp.Or(c.RescueEvery, 10*time.Minute)
	c.Retention = cmp.Or(c.Retention, 30*24*time.Hour)
}

// Deps are the ports webhooks drive.
type Deps struct {
	Store  Store
	Queue  Queue
	Sender Sender
	// Mailer tells owners an endpoint was disabled; nil: the log only.
	Mailer core.Mailer
	Logger *slog.Logger
	// Kernel: server secrets, rate limits, links, the clock.
	Kernel   *core.Kernel
	Accounts *accounts.Service
	// Metrics counts attempts that ended; nil counts nothing.
	Metrics Metrics
}

// Service manages endpoints and runs the delivery engine.
type Service struct {
	cfg   core.Config
	wc    Config
	d     Deps
	dests map[TargetKind]Destination

	// key caches faxhub's v1a signing key once read (it never changes).
	keyMu sync.Mutex
	key   *signer
}

// New returns the service; cfg is the kernel's configuration with its
// defaults applied.
func New(cfg core.Config, wc Config, d Deps) *Service {
	wc.SetDefaults()
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, wc: wc, d: d}
	s.dests = map[TargetKind]Destination{TargetWebhook: &endpoints{s: s}}
	return s
}

// Register adds a kind of destination (A2A push notification configs,
// core/tasks): the dispatcher matches every event against it too. Call it
// while the services are built, before the dispatcher and the workers run.
func (s *Service) Register(d Destination) {
	s.dests[d.Kind()] = d
}

// Config returns the effective configuration.
func (s *Service) Config() Config { return s.wc }

func (s *Service) now() time.Time {
	return core.Clock(s.cfg.Now).Now().UTC().Truncate(time.Microsecond)
}

func (s *Service) inTx(ctx context.Context, fn func(tx Tx) error) error {
	return s.d.Store.InTx(ctx, func(tx core.Tx) error { return fn(tx.(Tx)) })
}
