package stripetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/jmoiron/sqlx"
)

// state keeps the stand-in's objects (tokens, intents, refunds, charges by
// kind and id, as JSON) and its idempotency records.
type state interface {
	// do runs fn as one request: serialized with every other request on
	// the same state (in every process sharing it) and all or nothing —
	// if fn fails, none of its writes is kept.
	do(ctx context.Context, fn func(stateTx) error) error
}

// stateTx is what one request reads and writes.
type stateTx interface {
	// get decodes the object kind/id into v; ok is false if there is none.
	get(kind, id string, v any) (ok bool, err error)
	// put creates or replaces the object kind/id.
	put(kind, id string, created int64, v any) error
	// count is the number of objects of kind.
	count(kind string) (int, error)
	// idem is the record saved under scope at or after since, or nil.
	idem(scope string, since int64) (*saved, error)
	// saveIdem saves rec under scope, forgetting records older than
	// purgeBefore (scope's included).
	saveIdem(scope string, rec saved, created, purgeBefore int64) error
}

// saved is the answer to an idempotent request, and a digest of the
// request (endpoint and parameters) it answered.
type saved struct {
	Fingerprint string
	Status      int
	Body        []byte
}

// memState is the state of one process, behind one mutex.
type memState struct {
	mu      sync.Mutex
	objects map[objectKey][]byte
	idems   map[string]memIdem
}

type objectKey struct{ kind, id string }

type memIdem struct {
	saved
	created int64
}

func newMemState() *memState {
	return &memState{objects: map[objectKey][]byte{}, idems: map[string]memIdem{}}
}

func (m *memState) do(ctx context.Context, fn func(stateTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Writes wait in tx until fn returns, so a failed request leaves
	// nothing behind, as a rolled-back transaction does.
	tx := &memTx{m: m, objects: map[objectKey][]byte{}, idems: map[string]memIdem{}}
	if err := fn(tx); err != nil {
		return err
	}
	for k, v := range tx.objects {
		m.objects[k] = v
	}
	if tx.purgeBefore != 0 {
		for k, r := range m.idems {
			if r.created < tx.purgeBefore {
				delete(m.idems, k)
			}
		}
	}
	for k, v := range tx.idems {
		m.idems[k] = v
	}
	return nil
}

type memTx struct {
	m           *memState
	objects     map[objectKey][]byte
	idems       map[string]memIdem
	purgeBefore int64
}

func (t *memTx) get(kind, id string, v any) (bool, error) {
	k := objectKey{kind, id}
	b, ok := t.objects[k]
	if !ok {
		b, ok = t.m.objects[k]
	}
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("stripetest: decoding %s %s: %w", kind, id, err)
	}
	return true, nil
}

func (t *memTx) put(kind, id string, _ int64, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("stripetest: encoding %s %s: %w", kind, id, err)
	}
	t.objects[objectKey{kind, id}] = b
	return nil
}

func (t *memTx) count(kind string) (int, error) {
	n := 0
	for k := range t.m.objects {
		if k.kind == kind {
			n++
		}
	}
	for k := range t.objects {
		if _, old := t.m.objects[k]; k.kind == kind && !old {
			n++
		}
	}
	return n, nil
}

func (t *memTx) idem(scope string, since int64) (*saved, error) {
	r, ok := t.idems[scope]
	if !ok {
		r, ok = t.m.idems[scope]
	}
	if !ok || r.created < since {
		return nil, nil
	}
	return &r.saved, nil
}

func (t *memTx) saveIdem(scope string, rec saved, created, purgeBefore int64) error {
	t.idems[scope] = memIdem{saved: rec, created: created}
	t.purgeBefore = max(t.purgeBefore, purgeBefore)
	return nil
}

// dbState is the state in faxhub's database, shared by every process on
// it: tables stripe_standin_objects and stripe_standin_idempotency
// (migration 00015).
type dbState struct {
	db       *sql.DB
	dialect  string
	postgres bool
}

// standinLockKey is the PostgreSQL advisory lock every request of the
// stand-in takes first, so requests from all replicas run one at a time as
// the mutex makes them in one process ("fxstripe").
const standinLockKey int64 = 0x6678737472697065

func (d *dbState) do(ctx context.Context, fn func(stateTx) error) error {
	if !d.postgres && d.dialect != "sqlite" {
		return fmt.Errorf("stripetest: unknown database dialect %q (want sqlite or postgres)", d.dialect)
	}
	// On SQLite the transaction begins with the write lock
	// (_txlock=immediate), which serializes it with every other writer.
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("stripetest: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if d.postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", standinLockKey); err != nil {
			return fmt.Errorf("stripetest: taking the stand-in's lock: %w", err)
		}
	}
	if err := fn(&dbTx{ctx: ctx, tx: tx, postgres: d.postgres}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("stripetest: commit: %w", err)
	}
	return nil
}

type dbTx struct {
	ctx      context.Context
	tx       *sql.Tx
	postgres bool
}

// q writes query's ? placeholders as $1, $2, … for PostgreSQL.
func (t *dbTx) q(query string) string {
	if !t.postgres {
		return query
	}
	return sqlx.Rebind(sqlx.DOLLAR, query)
}

func (t *dbTx) get(kind, id string, v any) (bool, error) {
	var body string
	err := t.tx.QueryRowContext(t.ctx, t.q("SELECT body FROM stripe_standin_objects WHERE kind = ? AND id = ?"), kind, id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stripetest: reading %s %s: %w", kind, id, err)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		return false, fmt.Errorf("stripetest: decoding %s %s: %w", kind, id, err)
	}
	return true, nil
}

func (t *dbTx) put(kind, id string, created int64, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("stripetest: encoding %s %s: %w", kind, id, err)
	}
	_, err = t.tx.ExecContext(t.ctx, t.q(`INSERT INTO stripe_standin_objects (kind, id, body, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body`), kind, id, string(b), created)
	if err != nil {
		return fmt.Errorf("stripetest: writing %s %s: %w", kind, id, err)
	}
	return nil
}

func (t *dbTx) count(kind string) (int, error) {
	var n int
	if err := t.tx.QueryRowContext(t.ctx, t.q("SELECT count(*) FROM stripe_standin_objects WHERE kind = ?"), kind).Scan(&n); err != nil {
		return 0, fmt.Errorf("stripetest: counting %ss: %w", kind, err)
	}
	return n, nil
}

func (t *dbTx) idem(scope string, since int64) (*saved, error) {
	var r saved
	var body string
	err := t.tx.QueryRowContext(t.ctx, t.q("SELECT fingerprint, status, body FROM stripe_standin_idempotency WHERE scope = ? AND created_at >= ?"), scope, since).
		Scan(&r.Fingerprint, &r.Status, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stripetest: reading an idempotency record: %w", err)
	}
	r.Body = []byte(body)
	return &r, nil
}

func (t *dbTx) saveIdem(scope string, rec saved, created, purgeBefore int64) error {
	// Purging here keeps the table to a day of records without a sweeper;
	// the index on created_at makes it cheap.
	if _, err := t.tx.ExecContext(t.ctx, t.q("DELETE FROM stripe_standin_idempotency WHERE created_at < ?"), purgeBefore); err != nil {
		return fmt.Errorf("stripetest: purging idempotency records: %w", err)
	}
	_, err := t.tx.ExecContext(t.ctx, t.q(`INSERT INTO stripe_standin_idempotency (scope, fingerprint, status, body, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (scope) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status, body = excluded.body, created_at = excluded.created_at`),
		scope, rec.Fingerprint, rec.Status, string(rec.Body), created)
	if err != nil {
		return fmt.Errorf("stripetest: saving an idempotency record: %w", err)
	}
	return nil
}
