//go:build bench

package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/queue"
	"github.com/faxhub/faxhub/core/store"
)

// sendFloor is what the sendFax target asks of the writes alone: an HTTP
// handler that commits the rows a credit send must commit, and nothing
// else. It answers POST /floor/faxes by writing, in one transaction, the
// idempotency record (with the response), the rate limiter's charge, the
// document's use, the fax, its credit hold and the balance it comes out
// of, the delivery job and the fax.queued event: the statements faxhub's
// store runs for a send,
// on faxhub's own schema (its migrations, so the same tables, indexes,
// checks and foreign keys), through the same group writer (store.DB.InTx),
// so concurrent requests commit together as faxhub's do.
//
// What it leaves out is everything else a send does: the API key lookup,
// strict JSON, the destination check, the idempotency and document reads,
// pricing, the response's encoding. So faxhub's sendFax cannot be faster
// than this row; its ratio to the one-INSERT baseline is the most any
// implementation of these writes could read.
type sendFloor struct {
	db *store.DB
}

// openFloorDB opens a floor's database at dsn with faxhub's schema and
// River's: the same tables, indexes, checks and foreign keys a send
// writes through.
func openFloorDB(t *testing.T, dsn string) *store.DB {
	t.Helper()
	ctx := t.Context()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := queue.Migrate(ctx, db.SQL(), db.Dialect()); err != nil {
		t.Fatal(err)
	}
	return db
}

func newSendFloor(t *testing.T) *sendFloor {
	t.Helper()
	ctx := t.Context()
	db := openFloorDB(t, filepath.Join(t.TempDir(), "floor.db"))
	now := floorTime(time.Now())
	for _, q := range []string{
		`INSERT INTO owners (id, email, created_at) VALUES ('own_floor', 'floor@example.com', '` + now + `')`,
		`INSERT INTO documents (id, owner_id, mode, source_type, source_bytes, source_key, pdf_key, pdf_bytes, pages, sha256, created_at)
			VALUES ('doc_floor', 'own_floor', 'test', 'application/pdf', 1000, 'k', 'k', 1000, 1, 'x', '` + now + `')`,
		`INSERT INTO credit_balances (owner_id, mode, available_micros) VALUES ('own_floor', 'test', 1000000000000000)`,
	} {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return &sendFloor{db: db}
}

// The store's statements for a send (core/store: InsertIdempotency,
// AllowRate, UseDocument, CreateFax, PlaceHold, AppendEvent) and the
// queue's delivery insert (core/queue/insert.go), with their parameters
// written out.
const (
	floorIdempotency = `INSERT INTO idempotency_records (scope, key, request_hash, response_code, response, created_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	floorRate = `INSERT INTO rate_limits (key, tat) VALUES (?, CAST(? AS BIGINT))
		ON CONFLICT (key) DO UPDATE SET tat = max(rate_limits.tat, CAST(? AS BIGINT)) + CAST(? AS BIGINT)
		WHERE max(rate_limits.tat, CAST(? AS BIGINT)) + CAST(? AS BIGINT) - CAST(? AS BIGINT) <= CAST(? AS BIGINT)
		RETURNING tat`
	floorDocument = `UPDATE documents SET used_at = ? WHERE id = ? AND purged_at IS NULL`
	floorFax      = `INSERT INTO faxes (id, owner_id, mode, status, destination, document_id, pages, cover, cover_text, price_micros,
		currency, payment_method, pages_sent, attempts, failure_code, failure_reason, draft_id, created_at, updated_at, completed_at,
		next_attempt_at, from_number) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	floorHold = `INSERT INTO ledger_entries (id, owner_id, mode, kind, amount_micros, fax_id, hold_id, reason, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	floorBalance = `UPDATE credit_balances SET available_micros = available_micros - ?, held_micros = held_micros + ?
		WHERE owner_id = ? AND mode = ? AND available_micros >= ?
		RETURNING available_micros, held_micros, low_threshold_micros`
	floorJob = `INSERT INTO river_job (args, created_at, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags)
		VALUES (?, datetime('now', 'subsec'), 'deliver_fax', 25, '{}', 1, 'default', datetime('now', 'subsec'), 'available', '[]')`
	floorEvent = `INSERT INTO events (id, owner_id, mode, type, subject_id, data, created_at, dispatch)
		SELECT ?, ?, ?, ?, ?, ?, ?,
			EXISTS (SELECT 1 FROM webhook_endpoints WHERE owner_id = ? AND mode = ? AND enabled)
			OR EXISTS (SELECT 1 FROM a2a_push_configs WHERE owner_id = ? AND mode = ?)`
)

func floorTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000000Z") }

func (f *sendFloor) handler(log func(ctx context.Context, err error)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /floor/faxes", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			log(r.Context(), err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		now := time.Now()
		faxID := core.NewID(core.PrefixFax)
		resp := []byte(`{"id":"` + faxID + `","status":"queued","request":` + strconv.Quote(string(body)) + `}`)
		err = f.db.InTx(r.Context(), func(tx core.Tx) error {
			return f.write(r.Context(), tx.(interface{ SQLTx() *sql.Tx }).SQLTx(), faxID, r.Header.Get("Idempotency-Key"), resp, now)
		})
		if err != nil {
			log(r.Context(), err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(resp)
	})
	return mux
}

// write runs a send's statements in tx.
func (f *sendFloor) write(ctx context.Context, tx *sql.Tx, faxID, key string, resp []byte, now time.Time) error {
	ts, us := floorTime(now), now.UnixMicro()
	const price = 100_000
	if _, err := tx.ExecContext(ctx, floorIdempotency, "own_floor:test:send_fax", key, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 200, resp, ts); err != nil {
		return fmt.Errorf("idempotency record: %w", err)
	}
	var tat int64
	if err := tx.QueryRowContext(ctx, floorRate, "send:own_floor:test", us+1, us, 1, us, 1, int64(1)<<40, us).Scan(&tat); err != nil {
		return fmt.Errorf("rate limit: %w", err)
	}
	for _, s := range []struct {
		what, query string
		args        []any
	}{
		{"document", floorDocument, []any{ts, "doc_floor"}},
		{"fax", floorFax, []any{faxID, "own_floor", "test", "queued", "+12125550100", "doc_floor", 1, false, "", price,
			"USD", "credits", 0, 0, "", "", nil, ts, ts, nil, nil, ""}},
		{"hold", floorHold, []any{core.NewID(core.PrefixLedger), "own_floor", "test", "hold", -price, faxID, nil,
			"hold for fax " + faxID + " to +12125550100", ts}},
	} {
		if _, err := tx.ExecContext(ctx, s.query, s.args...); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	var avail, held, low sql.NullInt64
	if err := tx.QueryRowContext(ctx, floorBalance, price, price, "own_floor", "test", price).Scan(&avail, &held, &low); err != nil {
		return fmt.Errorf("balance: %w", err)
	}
	if _, err := tx.ExecContext(ctx, floorJob, []byte(`{"fax_id":"`+faxID+`"}`)); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	data := `{"id":"` + faxID + `","status":"queued"}`
	if _, err := tx.ExecContext(ctx, floorEvent, core.NewID(core.PrefixEvent), "own_floor", "test", "fax.queued", faxID, data, ts,
		"own_floor", "test", "own_floor", "test"); err != nil {
		return fmt.Errorf("event: %w", err)
	}
	return nil
}
