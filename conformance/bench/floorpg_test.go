//go:build bench

package bench

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/store"
	"github.com/faxhub/faxhub/internal/testenv"
)

// floorPGOwners is how many owners the PostgreSQL send floor and the
// sends it is compared with go round robin over. One owner would measure
// its row locks instead: every send updates the owner's rate-limit and
// balance rows, and on PostgreSQL each waits for the one before to commit
// (SQLite's single writer serialises every send anyway).
const floorPGOwners = 256

// sendFloorPG is sendFloor on PostgreSQL: an HTTP handler that commits,
// in one transaction, the rows a credit send commits (idempotency record
// with the response, rate-limit charge, document use, fax, credit hold
// and balance, delivery job, and the fax.queued event), with the
// statements faxhub's store and River run on PostgreSQL, on faxhub's own
// schema (its migrations and River's, on a fresh schema), through the
// store's InTx; and nothing else. The owner is the X-Floor-Owner header's
// number.
type sendFloorPG struct {
	db *store.DB
}

func newSendFloorPG(t *testing.T, pgURL string) *sendFloorPG {
	t.Helper()
	ctx := t.Context()
	db := openFloorDB(t, storetest.OpenPostgresSchema(t, pgURL))
	now := time.Now()
	for i := range floorPGOwners {
		own, doc := floorID("own", i), floorID("doc", i)
		for _, q := range []struct {
			query string
			args  []any
		}{
			{`INSERT INTO owners (id, email, created_at) VALUES ($1, $2, $3)`, []any{own, own + "@example.com", now}},
			{`INSERT INTO documents (id, owner_id, mode, source_type, source_bytes, source_key, pdf_key, pdf_bytes, pages, sha256, created_at)
				VALUES ($1, $2, 'test', 'application/pdf', 1000, 'k', 'k', 1000, 1, 'x', $3)`, []any{doc, own, now}},
			{`INSERT INTO credit_balances (owner_id, mode, available_micros) VALUES ($1, 'test', 1000000000000000)`, []any{own}},
		} {
			if _, err := db.SQL().ExecContext(ctx, q.query, q.args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkFloorFaxCols(t, db)
	return &sendFloorPG{db: db}
}

// The store's statements for a send on PostgreSQL (core/store:
// InsertIdempotency, AllowRate, UseDocument, CreateFax, PlaceHold,
// AppendEvent) and a one-row equivalent of River's delivery job insert.
const (
	floorPGIdempotency = `INSERT INTO idempotency_records (scope, key, request_hash, response_code, response, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`
	floorPGRate = `INSERT INTO rate_limits (key, tat) VALUES ($1, CAST($2 AS BIGINT))
		ON CONFLICT (key) DO UPDATE SET tat = GREATEST(rate_limits.tat, CAST($3 AS BIGINT)) + CAST($4 AS BIGINT)
		WHERE GREATEST(rate_limits.tat, CAST($5 AS BIGINT)) + CAST($6 AS BIGINT) - CAST($7 AS BIGINT) <= CAST($8 AS BIGINT)
		RETURNING tat`
	floorPGDocument = `UPDATE documents SET used_at = $1 WHERE id = $2 AND purged_at IS NULL`
	floorPGFax      = `INSERT INTO faxes (` + floorFaxCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27,
		$28, $29) ON CONFLICT DO NOTHING`
	floorPGHold = `INSERT INTO ledger_entries (id, owner_id, mode, kind, amount_micros, fax_id, hold_id, reason, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`
	floorPGBalance = `UPDATE credit_balances SET available_micros = available_micros - $1
		WHERE owner_id = $2 AND mode = $3 AND available_micros >= $4
		RETURNING available_micros, low_threshold_micros`
	floorPGJob = `INSERT INTO river_job (args, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags)
		VALUES ($1, 'deliver_fax', 25, '{}', 1, 'default', now(), 'available', '{}')`
	floorPGEvent = `INSERT INTO events (id, owner_id, mode, type, subject_id, data, created_at, dispatch)
		SELECT $1, $2, $3, $4, $5, $6, $7,
			EXISTS (SELECT 1 FROM webhook_endpoints WHERE owner_id = $8 AND mode = $9 AND enabled)
			OR EXISTS (SELECT 1 FROM a2a_push_configs WHERE owner_id = $10 AND mode = $11)`
)

func (f *sendFloorPG) handler(log func(ctx context.Context, err error)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /floor/faxes", func(w http.ResponseWriter, r *http.Request) {
		// The request is read, as a send's is; what the floor writes is
		// faxhub's answer to it (floorPresented).
		if _, err := io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20)); err != nil {
			log(r.Context(), err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		n, err := strconv.Atoi(r.Header.Get("X-Floor-Owner"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		now := time.Now()
		faxID := core.NewID(core.PrefixFax)
		resp := floorPresented(faxID, floorID("doc", n), now)
		err = f.db.InTx(r.Context(), func(tx core.Tx) error {
			return f.write(r.Context(), tx.(interface{ SQLTx() *sql.Tx }).SQLTx(), n, faxID, r.Header.Get("Idempotency-Key"), resp, now)
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

// write runs a send's statements for owner n in tx.
func (f *sendFloorPG) write(ctx context.Context, tx *sql.Tx, n int, faxID, key string, resp []byte, now time.Time) error {
	own, doc := floorID("own", n), floorID("doc", n)
	us := now.UnixMicro()
	const price = 100_000
	if _, err := tx.ExecContext(ctx, floorPGIdempotency, own+":test:send_fax", key, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 200, resp, now); err != nil {
		return fmt.Errorf("idempotency record: %w", err)
	}
	var tat int64
	if err := tx.QueryRowContext(ctx, floorPGRate, "send:"+own+":test", us+1, us, 1, us, 1, int64(1)<<40, us).Scan(&tat); err != nil {
		return fmt.Errorf("rate limit: %w", err)
	}
	if _, err := tx.ExecContext(ctx, floorPGDocument, now, doc); err != nil {
		return fmt.Errorf("document: %w", err)
	}
	if _, err := tx.ExecContext(ctx, floorPGFax, floorFaxArgs(faxID, own, doc, price, now)...); err != nil {
		return fmt.Errorf("fax: %w", err)
	}
	if _, err := tx.ExecContext(ctx, floorPGHold, core.NewID(core.PrefixLedger), own, "test", "hold", -price, faxID, nil,
		"hold for fax "+faxID+" to +12125550100", now); err != nil {
		return fmt.Errorf("hold: %w", err)
	}
	var avail, low sql.NullInt64
	if err := tx.QueryRowContext(ctx, floorPGBalance, price, own, "test", price).Scan(&avail, &low); err != nil {
		return fmt.Errorf("balance: %w", err)
	}
	if _, err := tx.ExecContext(ctx, floorPGJob, []byte(`{"fax_id":"`+faxID+`"}`)); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	if _, err := tx.ExecContext(ctx, floorPGEvent, core.NewID(core.PrefixEvent), own, "test", "fax.queued", faxID, resp, now,
		own, "test", own, "test"); err != nil {
		return fmt.Errorf("event: %w", err)
	}
	return nil
}

// benchSendFloorPostgres measures faxhub's POST /api/v1/faxes in process
// on PostgreSQL (workers off, as the SQLite sendFax row) against the
// PostgreSQL send floor, both over floorPGOwners owners, 32 clients, 10 s,
// back to back.
func benchSendFloorPostgres(t *testing.T, rep *report) {
	name := fmt.Sprintf("sendFax  against its floor, PostgreSQL, in process, %d clients, %s", httpClients, sendDuration)
	pgURL := os.Getenv(storetest.EnvPostgresURL)
	if pgURL == "" {
		rep.skipped(name, storetest.EnvPostgresURL+" is not set (make bench sets it)")
		t.Skip(storetest.EnvPostgresURL + " is not set")
	}
	ctx := t.Context()
	env := benchEnv(t, pgURL, nil)
	srv := apiServer(t, env)
	client := newClient(httpClients)
	defer client.CloseIdleConnections()
	var keys []string
	var bodies [][]byte
	pdf := testenv.MinimalPDF(1)
	for i := range floorPGOwners {
		_, key := benchOwner(ctx, t, env.Svc, fmt.Sprintf("floorpg-%d@example.com", i))
		token, err := newUploadAt(ctx, client, srv.URL, key)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, "PUT", srv.URL+"/api/v1/uploads/"+token, bytes.NewReader(pdf))
		if err != nil {
			t.Fatal(err)
		}
		if err := call(client, req, nil); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
		bodies = append(bodies, []byte(fmt.Sprintf(`{"to":"+12125550100","uploadToken":%q}`, token)))
	}
	floorSrv := serve(t, newSendFloorPG(t, pgURL).handler(func(ctx context.Context, err error) { t.Errorf("send floor: %v", err) }))

	var seq atomic.Int64
	post := func(url string) func(ctx context.Context, c int) error {
		return func(ctx context.Context, c int) error {
			n := seq.Add(1)
			o := int(n % floorPGOwners)
			req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(bodies[o]))
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+keys[o])
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", fmt.Sprintf("floorpg-%d", n))
			req.Header.Set("X-Floor-Owner", strconv.Itoa(o))
			_, err = postForID(client, req)
			return err
		}
	}
	rs, err := interleaved(ctx, httpClients, warmUp, sendDuration, post(srv.URL+"/api/v1/faxes"), post(floorSrv.URL+"/floor/faxes"))
	if err != nil {
		t.Fatalf("faxhub sendFax (load 0) and its floor (load 1) on PostgreSQL: %v", err)
	}
	fx, fl := rs[0], rs[1]
	t.Logf("sendFax PostgreSQL in process: faxhub %d requests in %s (%.0f/s), floor %d in %s (%.0f/s)", fx.requests, fx.elapsed.Round(time.Millisecond), fx.perSecond(),
		fl.requests, fl.elapsed.Round(time.Millisecond), fl.perSecond())
	rep.add(fmt.Sprintf("sendFax  floor: its writes alone, PostgreSQL, %d clients, %s", httpClients, sendDuration), "req/s", fl.perSecond(), nan, noTarget(), 0,
		fmt.Sprintf("Send floor on PostgreSQL: the SQLite floor's handler with the statements faxhub's store and River run on PostgreSQL (and the fax.queued event, "+
			"which a send also commits), on a fresh schema with faxhub's and River's migrations, through store.DB.InTx; nothing else. "+
			"It and faxhub's sendFax (in process, workers off, as the SQLite row) %s, so that a drift "+
			"of the machine lands on both, and go round robin over %d owners: with one, each send waits for the one before on the owner's "+
			"rate-limit and balance rows.", inTurns(sendDuration), floorPGOwners))
	rep.add(name, "req/s", fx.perSecond(), fl.perSecond(), ratioAtLeast(0.8), 0, "")
}
