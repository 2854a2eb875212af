package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/webhooks"
)

var _ webhooks.Queries = (*DB)(nil)

const endpointCols = `id, owner_id, mode, url, description, event_types, signing, enabled, disabled_reason, disabled_at,
	failing_since, last_success_at, secret, previous_secret, previous_secret_until, secret_rotated_at, created_at, updated_at`

// endpointRow is an endpoint as stored: the event filter as a JSON array,
// the schemes space-separated.
type endpointRow struct {
	ID                  string     `db:"id"`
	OwnerID             string     `db:"owner_id"`
	Mode                core.Mode  `db:"mode"`
	URL                 string     `db:"url"`
	Description         string     `db:"description"`
	EventTypes          string     `db:"event_types"`
	Signing             string     `db:"signing"`
	Enabled             bool       `db:"enabled"`
	DisabledReason      string     `db:"disabled_reason"`
	DisabledAt          *time.Time `db:"disabled_at"`
	FailingSince        *time.Time `db:"failing_since"`
	LastSuccessAt       *time.Time `db:"last_success_at"`
	Secret              []byte     `db:"secret"`
	PreviousSecret      []byte     `db:"previous_secret"`
	PreviousSecretUntil *time.Time `db:"previous_secret_until"`
	SecretRotatedAt     *time.Time `db:"secret_rotated_at"`
	CreatedAt           time.Time  `db:"created_at"`
	UpdatedAt           time.Time  `db:"updated_at"`
}

func toEndpointRow(e *webhooks.Endpoint) (*endpointRow, error) {
	types := e.EventTypes
	if types == nil {
		types = []events.Type{}
	}
	b, err := json.Marshal(types)
	if err != nil {
		return nil, err
	}
	signing := make([]string, len(e.Signing))
	for i, s := range e.Signing {
		signing[i] = string(s)
	}
	return &endpointRow{
		ID: e.ID, OwnerID: e.OwnerID, Mode: e.Mode, URL: e.URL, Description: e.Description, EventTypes: string(b),
		Signing: strings.Join(signing, " "), Enabled: e.Enabled, DisabledReason: string(e.DisabledReason), DisabledAt: e.DisabledAt,
		FailingSince: e.FailingSince, LastSuccessAt: e.LastSuccessAt, Secret: e.Secret, PreviousSecret: e.PreviousSecret,
		PreviousSecretUntil: e.PreviousSecretUntil, SecretRotatedAt: e.SecretRotatedAt, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
	}, nil
}

func (r *endpointRow) endpoint() (*webhooks.Endpoint, error) {
	e := &webhooks.Endpoint{
		ID: r.ID, OwnerID: r.OwnerID, Mode: r.Mode, URL: r.URL, Description: r.Description, Enabled: r.Enabled,
		DisabledReason: webhooks.DisabledReason(r.DisabledReason), DisabledAt: r.DisabledAt, FailingSince: r.FailingSince,
		LastSuccessAt: r.LastSuccessAt, Secret: r.Secret, PreviousSecret: r.PreviousSecret, PreviousSecretUntil: r.PreviousSecretUntil,
		SecretRotatedAt: r.SecretRotatedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, EventTypes: []events.Type{},
	}
	if r.EventTypes != "" {
		if err := json.Unmarshal([]byte(r.EventTypes), &e.EventTypes); err != nil {
			return nil, fmt.Errorf("endpoint %s: event types: %w", r.ID, err)
		}
	}
	for _, s := range strings.Fields(r.Signing) {
		e.Signing = append(e.Signing, webhooks.Scheme(s))
	}
	if len(e.PreviousSecret) == 0 {
		e.PreviousSecret = nil
	}
	return e, nil
}

func (x q) CreateWebhookEndpoint(ctx context.Context, e *webhooks.Endpoint) error {
	r, err := toEndpointRow(e)
	if err != nil {
		return fmt.Errorf("create webhook endpoint: %w", err)
	}
	err = x.insert(ctx, `INSERT INTO webhook_endpoints (`+endpointCols+`)
		VALUES (:id, :owner_id, :mode, :url, :description, :event_types, :signing, :enabled, :disabled_reason, :disabled_at,
			:failing_since, :last_success_at, :secret, :previous_secret, :previous_secret_until, :secret_rotated_at, :created_at, :updated_at)
		ON CONFLICT DO NOTHING`, r)
	if err != nil {
		return fmt.Errorf("create webhook endpoint: %w", err)
	}
	return nil
}

func (x q) getEndpoint(ctx context.Context, what, where string, args ...any) (*webhooks.Endpoint, error) {
	var r endpointRow
	if err := x.get(ctx, x.reader(), &r, "SELECT "+endpointCols+" FROM webhook_endpoints WHERE "+where, args...); err != nil {
		return nil, fmt.Errorf("get webhook endpoint %s: %w", what, err)
	}
	return r.endpoint()
}

// GetWebhookEndpoint locks the row inside a transaction on PostgreSQL: an
// owner's update writes what it read, and must not undo a disabling the
// engine committed in between.
func (x q) GetWebhookEndpoint(ctx context.Context, ownerID string, mode core.Mode, id string) (*webhooks.Endpoint, error) {
	lock := ""
	if x.tx != nil {
		lock = x.forUpdate()
	}
	return x.getEndpoint(ctx, id, "id = ? AND owner_id = ? AND mode = ?"+lock, id, ownerID, mode)
}

func (x q) GetWebhookEndpointByID(ctx context.Context, id string) (*webhooks.Endpoint, error) {
	return x.getEndpoint(ctx, id, "id = ?", id)
}

func (x q) ListWebhookEndpoints(ctx context.Context, ownerID string, mode core.Mode) ([]webhooks.Endpoint, error) {
	var rows []endpointRow
	// At most webhooks.MaxEndpoints per owner and mode; the LIMIT only
	// bounds a table filled by something else.
	if err := x.sel(ctx, &rows, "SELECT "+endpointCols+` FROM webhook_endpoints WHERE owner_id = ? AND mode = ?
		ORDER BY created_at, id LIMIT 100`, ownerID, mode); err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	out := make([]webhooks.Endpoint, 0, len(rows))
	for i := range rows {
		e, err := rows[i].endpoint()
		if err != nil {
			return nil, err
		}
		out = append(out, *e)
	}
	return out, nil
}

func (x q) UpdateWebhookEndpoint(ctx context.Context, e *webhooks.Endpoint) error {
	r, err := toEndpointRow(e)
	if err != nil {
		return fmt.Errorf("update webhook endpoint: %w", err)
	}
	n, err := x.exec(ctx, `UPDATE webhook_endpoints SET url = ?, description = ?, event_types = ?, signing = ?, enabled = ?,
		disabled_reason = ?, disabled_at = ?, failing_since = ?, secret = ?, previous_secret = ?, previous_secret_until = ?,
		secret_rotated_at = ?, updated_at = ? WHERE id = ? AND owner_id = ?`,
		r.URL, r.Description, r.EventTypes, r.Signing, r.Enabled, r.DisabledReason, r.DisabledAt, r.FailingSince, r.Secret,
		r.PreviousSecret, r.PreviousSecretUntil, r.SecretRotatedAt, r.UpdatedAt, r.ID, r.OwnerID)
	if err != nil {
		return fmt.Errorf("update webhook endpoint: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("update webhook endpoint %s: %w", e.ID, core.ErrNoRows)
	}
	return nil
}

func (x q) DeleteWebhookEndpoint(ctx context.Context, ownerID string, mode core.Mode, id string) error {
	n, err := x.exec(ctx, "DELETE FROM webhook_endpoints WHERE id = ? AND owner_id = ? AND mode = ?", id, ownerID, mode)
	if err != nil {
		return fmt.Errorf("delete webhook endpoint: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("delete webhook endpoint %s: %w", id, core.ErrNoRows)
	}
	return nil
}

// RecordWebhookOutcome writes nothing for a delivered attempt when the
// endpoint has no streak and its last success was recorded within the
// minute: at a delivery per millisecond, the endpoint row is not written
// a thousand times a second.
func (x q) RecordWebhookOutcome(ctx context.Context, id string, delivered bool, at time.Time) (*time.Time, error) {
	if delivered {
		_, err := x.exec(ctx, `UPDATE webhook_endpoints SET failing_since = NULL, last_success_at = ?
			WHERE id = ? AND (failing_since IS NOT NULL OR last_success_at IS NULL OR last_success_at < ?)`,
			at, id, at.Add(-time.Minute))
		if err != nil {
			return nil, fmt.Errorf("record webhook outcome: %w", err)
		}
		return nil, nil
	}
	var since *time.Time
	err := x.write(ctx, func(x q) error {
		return x.get(ctx, x.writer(), &since, `UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, ?)
			WHERE id = ? RETURNING failing_since`, at, id)
	})
	if err != nil {
		return nil, fmt.Errorf("record webhook outcome: %w", err)
	}
	if since != nil {
		t := since.UTC()
		since = &t
	}
	return since, nil
}

func (x q) DisableWebhookEndpoint(ctx context.Context, id string, reason webhooks.DisabledReason, at time.Time) (bool, error) {
	n, err := x.exec(ctx, `UPDATE webhook_endpoints SET enabled = ?, disabled_reason = ?, disabled_at = ?, updated_at = ?
		WHERE id = ? AND enabled = ?`, false, reason, at, at, id, true)
	if err != nil {
		return false, fmt.Errorf("disable webhook endpoint: %w", err)
	}
	return n == 1, nil
}

// forUpdateSkipLocked, in a transaction on PostgreSQL, locks the selected
// rows and skips those another transaction holds, so replicas share work
// out instead of queueing behind one another (SQLite has one writer).
func (x q) forUpdateSkipLocked() string {
	if x.tx != nil && x.db.dialect == DialectPostgres {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// EventsToDispatch locks what it returns on PostgreSQL inside a
// transaction and skips rows another dispatcher holds, so replicas share
// the marked events out instead of queueing behind one another.
func (x q) EventsToDispatch(ctx context.Context, n int) ([]events.Event, error) {
	var rows []eventRow
	if err := x.sel(ctx, &rows, eventSelect+" WHERE dispatch ORDER BY seq"+limit(n)+x.forUpdateSkipLocked()); err != nil {
		return nil, fmt.Errorf("events to dispatch: %w", err)
	}
	return eventsOf(rows), nil
}

func (x q) ClearDispatch(ctx context.Context, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	args := make([]any, 0, len(seqs)+1)
	args = append(args, false)
	for _, s := range seqs {
		args = append(args, s)
	}
	if _, err := x.exec(ctx, "UPDATE events SET dispatch = ? WHERE seq IN ("+placeholders(len(seqs))+")", args...); err != nil {
		return fmt.Errorf("clear dispatch: %w", err)
	}
	return nil
}

const webhookDeliveryCols = `id, target_kind, target_id, owner_id, mode, event_id, event_type, origin, payload, status, attempts,
	next_attempt_at, last_status_code, last_error, created_at, updated_at, completed_at`

// webhookDeliveryRow reads payload as bytes (SQLite returns TEXT as a string).
type webhookDeliveryRow struct {
	ID             string     `db:"id"`
	TargetKind     string     `db:"target_kind"`
	TargetID       string     `db:"target_id"`
	OwnerID        string     `db:"owner_id"`
	Mode           core.Mode  `db:"mode"`
	EventID        string     `db:"event_id"`
	EventType      string     `db:"event_type"`
	Origin         string     `db:"origin"`
	Payload        []byte     `db:"payload"`
	Status         string     `db:"status"`
	Attempts       int        `db:"attempts"`
	NextAttemptAt  *time.Time `db:"next_attempt_at"`
	LastStatusCode int        `db:"last_status_code"`
	LastError      string     `db:"last_error"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
	CompletedAt    *time.Time `db:"completed_at"`
}

func (r *webhookDeliveryRow) delivery() webhooks.Delivery {
	d := webhooks.Delivery{
		ID: r.ID, TargetKind: webhooks.TargetKind(r.TargetKind), TargetID: r.TargetID, OwnerID: r.OwnerID, Mode: r.Mode,
		EventID: r.EventID, EventType: events.Type(r.EventType), Origin: webhooks.Origin(r.Origin), Status: webhooks.DeliveryStatus(r.Status),
		Attempts: r.Attempts, NextAttemptAt: r.NextAttemptAt, LastStatusCode: r.LastStatusCode, LastError: r.LastError,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, CompletedAt: r.CompletedAt,
	}
	if len(r.Payload) > 0 {
		d.Payload = r.Payload
	}
	return d
}

func (x q) InsertWebhookDelivery(ctx context.Context, d *webhooks.Delivery) error {
	var payload any
	if len(d.Payload) > 0 {
		payload = string(d.Payload)
	}
	n, err := x.exec(ctx, `INSERT INTO webhook_deliveries (`+webhookDeliveryCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		d.ID, d.TargetKind, d.TargetID, d.OwnerID, d.Mode, d.EventID, d.EventType, d.Origin, payload, d.Status, d.Attempts,
		d.NextAttemptAt, d.LastStatusCode, d.LastError, d.CreatedAt, d.UpdatedAt, d.CompletedAt)
	if err != nil {
		return fmt.Errorf("insert webhook delivery: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("insert webhook delivery of %s to %s: %w", d.EventID, d.TargetID, core.ErrExists)
	}
	return nil
}

func (x q) GetWebhookDelivery(ctx context.Context, id string) (*webhooks.Delivery, error) {
	var r webhookDeliveryRow
	lock := ""
	if x.tx != nil {
		lock = x.forUpdate()
	}
	if err := x.get(ctx, x.reader(), &r, "SELECT "+webhookDeliveryCols+" FROM webhook_deliveries WHERE id = ?"+lock, id); err != nil {
		return nil, fmt.Errorf("get webhook delivery %s: %w", id, err)
	}
	d := r.delivery()
	return &d, nil
}

func (x q) UpdateWebhookDelivery(ctx context.Context, d *webhooks.Delivery, attempts int) error {
	n, err := x.exec(ctx, `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_status_code = ?,
		last_error = ?, updated_at = ?, completed_at = ? WHERE id = ? AND status = ? AND attempts = ?`,
		d.Status, d.Attempts, d.NextAttemptAt, d.LastStatusCode, d.LastError, d.UpdatedAt, d.CompletedAt,
		d.ID, webhooks.DeliveryPending, attempts)
	if err != nil {
		return fmt.Errorf("update webhook delivery: %w", err)
	}
	if n == 0 {
		if err := x.missingOrConflict(ctx, "webhook_deliveries", "id = ?", d.ID); err != nil {
			return fmt.Errorf("update webhook delivery %s: %w", d.ID, err)
		}
	}
	return nil
}

func (x q) ListWebhookDeliveries(ctx context.Context, f webhooks.DeliveryFilter) ([]webhooks.Delivery, error) {
	where := "target_kind = ? AND target_id = ? AND owner_id = ? AND mode = ?"
	args := []any{f.TargetKind, f.TargetID, f.OwnerID, f.Mode}
	if f.Status != "" {
		where += " AND status = ?"
		args = append(args, f.Status)
	}
	if f.BeforeID != "" {
		where += " AND id < ?"
		args = append(args, f.BeforeID)
	}
	var rows []webhookDeliveryRow
	if err := x.sel(ctx, &rows, "SELECT "+webhookDeliveryCols+" FROM webhook_deliveries WHERE "+where+" ORDER BY id DESC"+limit(f.Limit), args...); err != nil {
		return nil, fmt.Errorf("list webhook deliveries: %w", err)
	}
	out := make([]webhooks.Delivery, len(rows))
	for i := range rows {
		out[i] = rows[i].delivery()
	}
	return out, nil
}

func (x q) WebhookTestPayload(ctx context.Context, ownerID string, kind webhooks.TargetKind, targetID, eventID string) ([]byte, error) {
	var p []byte
	if err := x.get(ctx, x.reader(), &p, `SELECT payload FROM webhook_deliveries WHERE target_kind = ? AND target_id = ?
		AND owner_id = ? AND event_id = ? AND origin = ? AND payload IS NOT NULL ORDER BY id LIMIT 1`,
		kind, targetID, ownerID, eventID, webhooks.OriginTest); err != nil {
		return nil, fmt.Errorf("test payload of %s: %w", eventID, err)
	}
	return p, nil
}

const webhookAttemptCols = `delivery_id, number, owner_id, target_id, status, status_code, error, response, duration_ms, started_at, finished_at`

type webhookAttemptRow struct {
	DeliveryID string     `db:"delivery_id"`
	Number     int        `db:"number"`
	OwnerID    string     `db:"owner_id"`
	TargetID   string     `db:"target_id"`
	Status     string     `db:"status"`
	StatusCode int        `db:"status_code"`
	Error      string     `db:"error"`
	Response   string     `db:"response"`
	DurationMS int64      `db:"duration_ms"`
	StartedAt  time.Time  `db:"started_at"`
	FinishedAt *time.Time `db:"finished_at"`
}

func (r *webhookAttemptRow) attempt() webhooks.Attempt {
	return webhooks.Attempt{
		DeliveryID: r.DeliveryID, Number: r.Number, OwnerID: r.OwnerID, TargetID: r.TargetID, Status: webhooks.AttemptStatus(r.Status),
		StatusCode: r.StatusCode, Error: r.Error, Response: r.Response, DurationMS: r.DurationMS, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
	}
}

func (x q) InsertWebhookAttempt(ctx context.Context, a *webhooks.Attempt) error {
	n, err := x.exec(ctx, `INSERT INTO webhook_attempts (`+webhookAttemptCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		a.DeliveryID, a.Number, a.OwnerID, a.TargetID, a.Status, a.StatusCode, a.Error, a.Response, a.DurationMS, a.StartedAt, a.FinishedAt)
	if err != nil {
		return fmt.Errorf("insert webhook attempt: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("insert webhook attempt %d of %s: %w", a.Number, a.DeliveryID, core.ErrExists)
	}
	return nil
}

func (x q) GetWebhookAttempt(ctx context.Context, deliveryID string, number int) (*webhooks.Attempt, error) {
	var r webhookAttemptRow
	if err := x.get(ctx, x.reader(), &r, "SELECT "+webhookAttemptCols+" FROM webhook_attempts WHERE delivery_id = ? AND number = ?", deliveryID, number); err != nil {
		return nil, fmt.Errorf("get webhook attempt %d of %s: %w", number, deliveryID, err)
	}
	a := r.attempt()
	return &a, nil
}

func (x q) FinishWebhookAttempt(ctx context.Context, a *webhooks.Attempt) error {
	n, err := x.exec(ctx, `UPDATE webhook_attempts SET status = ?, status_code = ?, error = ?, response = ?, duration_ms = ?, finished_at = ?
		WHERE delivery_id = ? AND number = ? AND status = ?`,
		a.Status, a.StatusCode, a.Error, a.Response, a.DurationMS, a.FinishedAt, a.DeliveryID, a.Number, webhooks.AttemptSending)
	if err != nil {
		return fmt.Errorf("finish webhook attempt: %w", err)
	}
	if n == 0 {
		if err := x.missingOrConflict(ctx, "webhook_attempts", "delivery_id = ? AND number = ?", a.DeliveryID, a.Number); err != nil {
			return fmt.Errorf("finish webhook attempt %d of %s: %w", a.Number, a.DeliveryID, err)
		}
	}
	return nil
}

func (x q) ListWebhookAttempts(ctx context.Context, deliveryIDs []string) ([]webhooks.Attempt, error) {
	if len(deliveryIDs) == 0 {
		return nil, nil
	}
	args := make([]any, len(deliveryIDs))
	for i, id := range deliveryIDs {
		args[i] = id
	}
	var rows []webhookAttemptRow
	if err := x.sel(ctx, &rows, "SELECT "+webhookAttemptCols+" FROM webhook_attempts WHERE delivery_id IN ("+placeholders(len(args))+
		") ORDER BY delivery_id, number", args...); err != nil {
		return nil, fmt.Errorf("list webhook attempts: %w", err)
	}
	out := make([]webhooks.Attempt, len(rows))
	for i := range rows {
		out[i] = rows[i].attempt()
	}
	return out, nil
}

// LockWebhookOwner takes the owner's lock row (created on first use) until
// the transaction ends. SQLite's transactions hold the database's one
// write lock already.
func (x q) LockWebhookOwner(ctx context.Context, ownerID string) error {
	if x.db.dialect != DialectPostgres {
		return nil
	}
	if _, err := x.exec(ctx, "INSERT INTO webhook_owner_locks (owner_id) VALUES (?) ON CONFLICT DO NOTHING", ownerID); err != nil {
		return fmt.Errorf("lock webhook owner: %w", err)
	}
	var id string
	if err := x.get(ctx, x.writer(), &id, "SELECT owner_id FROM webhook_owner_locks WHERE owner_id = ? FOR UPDATE", ownerID); err != nil {
		return fmt.Errorf("lock webhook owner: %w", err)
	}
	return nil
}

func (x q) WebhookAttemptsInFlight(ctx context.Context, ownerID, targetID string, since time.Time) (int, int, error) {
	var n struct {
		Owner  int `db:"owner"`
		Target int `db:"target"`
	}
	// The status is a literal, not a parameter: only then may either
	// database use the partial indexes of attempts in flight, which hold a
	// few rows, instead of every attempt of the owner.
	err := x.get(ctx, x.reader(), &n, `SELECT
		(SELECT count(*) FROM webhook_attempts WHERE owner_id = ? AND status = 'sending' AND started_at > ?) AS owner,
		(SELECT count(*) FROM webhook_attempts WHERE target_id = ? AND status = 'sending' AND started_at > ?) AS target`,
		ownerID, since, targetID, since)
	if err != nil {
		return 0, 0, fmt.Errorf("attempts in flight: %w", err)
	}
	return n.Owner, n.Target, nil
}

func (x q) GetWebhookSigningKey(ctx context.Context, id string) (*webhooks.SigningKey, error) {
	var k struct {
		ID        string    `db:"id"`
		PublicKey []byte    `db:"public_key"`
		Sealed    []byte    `db:"sealed"`
		CreatedAt time.Time `db:"created_at"`
	}
	if err := x.get(ctx, x.reader(), &k, "SELECT id, public_key, sealed, created_at FROM webhook_signing_keys WHERE id = ?", id); err != nil {
		return nil, fmt.Errorf("get webhook signing key: %w", err)
	}
	return &webhooks.SigningKey{ID: k.ID, PublicKey: k.PublicKey, Sealed: k.Sealed, CreatedAt: k.CreatedAt}, nil
}

func (x q) InsertWebhookSigningKey(ctx context.Context, k *webhooks.SigningKey) error {
	n, err := x.exec(ctx, "INSERT INTO webhook_signing_keys (id, public_key, sealed, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
		k.ID, k.PublicKey, k.Sealed, k.CreatedAt)
	if err != nil {
		return fmt.Errorf("insert webhook signing key: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("insert webhook signing key %s: %w", k.ID, core.ErrExists)
	}
	return nil
}

// purgeDeliveryBatch bounds one purge's statement, so a backlog of expired
// deliveries is deleted over several runs rather than in one long write.
const purgeDeliveryBatch = 10_000

// PurgeWebhookDeliveries deletes the oldest expired deliveries; their
// attempts go with them (ON DELETE CASCADE).
func (x q) PurgeWebhookDeliveries(ctx context.Context, before time.Time) (int64, error) {
	n, err := x.exec(ctx, `DELETE FROM webhook_deliveries WHERE id IN (
		SELECT id FROM webhook_deliveries WHERE created_at < ? ORDER BY created_at LIMIT ?)`, before, purgeDeliveryBatch)
	if err != nil {
		return 0, fmt.Errorf("purge webhook deliveries: %w", err)
	}
	return n, nil
}

// StalledWebhookDeliveries returns up to limit pending deliveries that have
// not moved since before and were due by then (or never attempted), and
// marks them moved at now, so that a sweep on another replica leaves them
// for the next hour. Run it in a transaction with the jobs it enqueues.
func (x q) StalledWebhookDeliveries(ctx context.Context, before, now time.Time, n int) ([]string, error) {
	var ids []string
	if err := x.sel(ctx, &ids, `SELECT id FROM webhook_deliveries WHERE status = 'pending' AND updated_at < ?
		AND (next_attempt_at IS NULL OR next_attempt_at < ?) ORDER BY updated_at`+limit(n)+x.forUpdateSkipLocked(), before, before); err != nil {
		return nil, fmt.Errorf("stalled webhook deliveries: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	args := []any{now}
	for _, id := range ids {
		args = append(args, id)
	}
	if _, err := x.exec(ctx, "UPDATE webhook_deliveries SET updated_at = ? WHERE status = 'pending' AND id IN ("+placeholders(len(ids))+")", args...); err != nil {
		return nil, fmt.Errorf("stalled webhook deliveries: %w", err)
	}
	return ids, nil
}
