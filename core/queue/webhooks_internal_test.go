package queue

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/riverqueue/river"
)

// sqlTx is a core.Tx over a bare *sql.Tx, for the direct insert.
type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) SQLTx() *sql.Tx { return t.tx }

// The deliver_webhook jobs the dispatcher inserts many at a time on SQLite
// (webhooks.go) are the rows River's own insert writes, in the webhooks
// queue, column by column; only the ids and the database's "now" differ.
func TestDirectWebhookInsertMatchesRiver(t *testing.T) {
	ctx := t.Context()
	db, q := insertOnlySQLite(t)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.client.InsertManyFastTx(ctx, tx, []river.InsertManyParams{{Args: deliverWebhookArgs{DeliveryID: "whd_river"}}}); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, webhookInsertBatch+3) // two statements
	for i := range ids {
		ids[i] = fmt.Sprintf("whd_%04d", i)
	}
	if err := q.insertWebhooksSQLite(ctx, sqlTx{tx}, ids); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	const columns = `typeof(args), attempt, quote(attempted_at), quote(attempted_by), typeof(created_at), length(created_at) > 18,
		quote(errors), quote(finalized_at), quote(kind), max_attempts, quote(metadata), typeof(metadata), priority, quote(queue), quote(state),
		typeof(scheduled_at), quote(tags), typeof(tags), quote(unique_key), quote(unique_states)`
	rows, err := db.QueryContext(ctx, "SELECT DISTINCT "+columns+" FROM river_job")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		vals := make([]any, 20)
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("the rows differ from River's:\n%v", got)
	}
	t.Logf("row: %s", got[0])
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM river_job WHERE queue = ? AND kind = ? AND args = ?", QueueWebhooks, KindDeliverWebhook, []byte(`{"delivery_id":"whd_0502"}`)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the last job: %d rows (%v)", n, err)
	}
}
