//go:build bench

package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
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
		`INSERT INTO owners (id, email, created_at) VALUES ('` + floorOwner + `', 'floor@example.com', '` + now + `')`,
		`INSERT INTO documents (id, owner_id, mode, source_type, source_bytes, source_key, pdf_key, pdf_bytes, pages, sha256, created_at)
			VALUES ('` + floorDoc + `', '` + floorOwner + `', 'test', 'application/pdf', 1000, 'k', 'k', 1000, 1, 'x', '` + now + `')`,
		`INSERT INTO credit_balances (owner_id, mode, available_micros) VALUES ('` + floorOwner + `', 'test', 1000000000000000)`,
	} {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	checkFloorFaxCols(t, db)
	return &sendFloor{db: db}
}

// checkFloorFaxCols fails the run when the faxes table has a column that
// floorFaxCols lacks: a column added to the fax is one the store's
// CreateFax writes, and the floors must write it too.
func checkFloorFaxCols(t *testing.T, db *store.DB) {
	t.Helper()
	rows, err := db.SQL().QueryContext(t.Context(), "SELECT * FROM faxes WHERE 1 = 0")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]bool{}
	for _, c := range strings.Split(floorFaxCols, ",") {
		written[strings.TrimSpace(c)] = true
	}
	for _, c := range cols {
		if !written[c] {
			t.Errorf("the floors do not write the fax's column %s (floorFaxCols)", c)
		}
	}
}

// checkFloorPresented fails the run when the floors' presented fax is not
// as long as faxhub's answer to the bench's send, resp (within the few
// bytes a timestamp's trailing zeros make).
func checkFloorPresented(t *testing.T, resp []byte) {
	t.Helper()
	got := len(floorPresented(core.NewID(core.PrefixFax), floorDoc, time.Now()))
	if d := got - len(resp); d < -8 || d > 8 {
		t.Errorf("the floors write a fax of %d bytes, faxhub answers with %d: floorPresented is out of date\n%s", got, len(resp), resp)
	}
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
	floorFax      = `INSERT INTO faxes (` + floorFaxCols + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	floorHold = `INSERT INTO ledger_entries (id, owner_id, mode, kind, amount_micros, fax_id, hold_id, reason, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	floorBalance = `UPDATE credit_balances SET available_micros = available_micros - ?
		WHERE owner_id = ? AND mode = ? AND available_micros >= ?
		RETURNING available_micros, low_threshold_micros`
	floorJob = `INSERT INTO river_job (args, created_at, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags)
		VALUES (?, datetime('now', 'subsec'), 'deliver_fax', 25, '{}', 1, 'default', datetime('now', 'subsec'), 'available', '[]')`
	floorEvent = `INSERT INTO events (id, owner_id, mode, type, subject_id, data, created_at, dispatch)
		SELECT ?, ?, ?, ?, ?, ?, ?,
			EXISTS (SELECT 1 FROM webhook_endpoints WHERE owner_id = ? AND mode = ? AND enabled)
			OR EXISTS (SELECT 1 FROM a2a_push_configs WHERE owner_id = ? AND mode = ?)`
)

// What the floors write is as long as what faxhub writes for the bench's
// send: ids of a prefix and 26 characters (floorID), every column of the
// fax the store's CreateFax writes, with the values a send by API key
// gives them, and the fax as faxhub presents it (floorPresented) as the
// idempotent response and the fax.queued event's data. Until 2026-11-30
// the floors wrote 22 of the fax's 29 columns (those added since, options
// and sent_by among them, took their defaults), 9-character ids and a
// 60-byte event, about 700 bytes a send less than faxhub.
var (
	floorOwner = floorID("own", 0)
	floorDoc   = floorID("doc", 0)
	floorKey   = floorID("key", 0)
)

// floorID is the floor's id n of prefix, as long as core.NewID's.
func floorID(prefix string, n int) string { return fmt.Sprintf("%s_floor%021d", prefix, n) }

// floorFaxCols are the columns of core/store's CreateFax (faxCols).
const floorFaxCols = `id, owner_id, mode, status, destination, document_id, pages, cover, cover_text, price_micros, currency,
	payment_method, pages_sent, attempts, failure_code, failure_reason, draft_id, created_at, updated_at, completed_at,
	next_attempt_at, from_number, options, batch_id, faxed_sha256, faxed_pages, sent_by_kind, sent_by_id, sent_by_name`

// floorFaxArgs are the values of floorFaxCols for a credit send by API
// key of a 1-page document, at ts (a time or its text).
func floorFaxArgs(faxID, owner, doc string, price int64, ts any) []any {
	return []any{faxID, owner, "test", "queued", "+12125550100", doc, 1, false, "", price,
		"usd", "credits", 0, 0, "", "", nil, ts, ts, nil, nil, "",
		`{"resolution":"standard"}`, nil, "", 0, "api_key", floorKey, "test"}
}

// floorPresented is a fax as faxhub presents a credit send's (its JSON,
// as long as faxhub's for the bench's send).
func floorPresented(faxID, doc string, at time.Time) []byte {
	ts := at.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	return []byte(`{"id":"` + faxID + `","mode":"test","status":"queued","to":"+12125550100","documentId":"` + doc +
		`","pages":1,"cover":false,"currency":"usd","paymentMethod":"credits","pagesSent":0,"attemptCount":0,"createdAt":"` + ts +
		`","updatedAt":"` + ts + `","sentBy":{"kind":"api_key","id":"` + floorKey + `","name":"test"},"price":"0.10","priceCents":10,` +
		`"latestAttempt":null,"resolution":"standard"}`)
}

func floorTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000000Z") }

func (f *sendFloor) handler(log func(ctx context.Context, err error)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /floor/faxes", func(w http.ResponseWriter, r *http.Request) {
		// The request is read, as a send's is; what the floor writes is
		// faxhub's answer to it (floorPresented).
		if _, err := io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20)); err != nil {
			log(r.Context(), err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		now := time.Now()
		faxID := core.NewID(core.PrefixFax)
		resp := floorPresented(faxID, floorDoc, now)
		err := f.db.InTx(r.Context(), func(tx core.Tx) error {
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
	if _, err := tx.ExecContext(ctx, floorIdempotency, floorOwner+":test:send_fax", key, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 200, resp, ts); err != nil {
		return fmt.Errorf("idempotency record: %w", err)
	}
	var tat int64
	if err := tx.QueryRowContext(ctx, floorRate, "send:"+floorOwner+":test", us+1, us, 1, us, 1, int64(1)<<40, us).Scan(&tat); err != nil {
		return fmt.Errorf("rate limit: %w", err)
	}
	for _, s := range []struct {
		what, query string
		args        []any
	}{
		{"document", floorDocument, []any{ts, floorDoc}},
		{"fax", floorFax, floorFaxArgs(faxID, floorOwner, floorDoc, price, ts)},
		{"hold", floorHold, []any{core.NewID(core.PrefixLedger), floorOwner, "test", "hold", -price, faxID, nil,
			"hold for fax " + faxID + " to +12125550100", ts}},
	} {
		if _, err := tx.ExecContext(ctx, s.query, s.args...); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	var avail, low sql.NullInt64
	if err := tx.QueryRowContext(ctx, floorBalance, price, floorOwner, "test", price).Scan(&avail, &low); err != nil {
		return fmt.Errorf("balance: %w", err)
	}
	if _, err := tx.ExecContext(ctx, floorJob, []byte(`{"fax_id":"`+faxID+`"}`)); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	if _, err := tx.ExecContext(ctx, floorEvent, core.NewID(core.PrefixEvent), floorOwner, "test", "fax.queued", faxID, resp, ts,
		floorOwner, "test", floorOwner, "test"); err != nil {
		return fmt.Errorf("event: %w", err)
	}
	return nil
}
