package queue

import (
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/riverqueue/river"
	_ "modernc.org/sqlite"
)

// A deliver_fax job inserted directly on SQLite (insert.go) is the row
// River's own insert writes, column by column and type by type, for a job
// due now, one due within River's scheduler interval (available at once)
// and one due later (scheduled). Only the id differs, and the database's
// "now" for a job due now.
func TestDirectInsertMatchesRiver(t *testing.T) {
	ctx := t.Context()
	db, q := insertOnlySQLite(t)
	const columns = `quote(args), typeof(args), attempt, quote(attempted_at), quote(attempted_by), typeof(created_at), length(created_at),
		quote(errors), quote(finalized_at), quote(kind), max_attempts, quote(metadata), typeof(metadata), priority, quote(queue), quote(state),
		typeof(scheduled_at), quote(tags), typeof(tags), quote(unique_key), quote(unique_states)`
	for _, tc := range []struct {
		name  string
		at    time.Time
		state string
	}{
		{"due now", time.Time{}, "available"},
		{"due in 2 s", time.Now().Add(2*time.Second + 123456*time.Nanosecond), "available"},
		{"due in an hour", time.Now().Add(time.Hour + 7*time.Microsecond), "scheduled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faxID := "fax_" + tc.name
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			opts := &river.InsertOpts{}
			if !tc.at.IsZero() {
				opts.ScheduledAt = ceilMillisecond(tc.at)
			}
			if _, err := q.client.InsertManyFastTx(ctx, tx, []river.InsertManyParams{{Args: deliverArgs{FaxID: faxID}, InsertOpts: opts}}); err != nil {
				t.Fatal(err)
			}
			if err := q.insertDelivery(ctx, tx, faxID, tc.at); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			rows, err := db.QueryContext(ctx, "SELECT "+columns+", created_at || '', scheduled_at || '' FROM river_job WHERE args = ? ORDER BY id",
				[]byte(fmt.Sprintf(`{"fax_id":%q}`, faxID)))
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var got []string
			var times [][2]string
			for rows.Next() {
				vals := make([]any, 23)
				ptrs := make([]any, len(vals))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprint(vals[:21]))
				times = append(times, [2]string{fmt.Sprint(vals[21]), fmt.Sprint(vals[22])})
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("%d rows for the job, want River's and ours", len(got))
			}
			if got[0] != got[1] {
				t.Errorf("rows differ:\nRiver: %s\nours:  %s", got[0], got[1])
			}
			t.Logf("row: %s", got[1])
			const layout = "2006-01-02 15:04:05.999"
			for i, name := range []string{"created_at", "scheduled_at"} {
				river, err1 := time.Parse(layout, times[0][i])
				ours, err2 := time.Parse(layout, times[1][i])
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: %q, %q: %v %v", name, times[0][i], times[1][i], err1, err2)
				}
				if d := ours.Sub(river); d < 0 || d > time.Second {
					t.Errorf("%s: River %s, ours %s", name, times[0][i], times[1][i])
				}
				if name == "scheduled_at" && !tc.at.IsZero() && times[0][i] != times[1][i] {
					t.Errorf("due at %s, River's job at %s", times[1][i], times[0][i])
				}
			}
			var state string
			if err := db.QueryRowContext(ctx, "SELECT state FROM river_job WHERE args = ? ORDER BY id DESC", []byte(fmt.Sprintf(`{"fax_id":%q}`, faxID))).Scan(&state); err != nil || state != tc.state {
				t.Errorf("state %q (%v), want %q", state, err, tc.state)
			}
		})
	}
}

// insertOnlySQLite is an insert-only queue (MaxAttempts 7) on a fresh
// SQLite file with River's tables, the settings the store uses and one
// connection, as River advises.
func insertOnlySQLite(t *testing.T) (*sql.DB, *Queue) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "q.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if err := Migrate(t.Context(), db, DialectSQLite); err != nil {
		t.Fatal(err)
	}
	q, err := New(db, DialectSQLite, Handlers{}, Options{InsertOnly: true, MaxAttempts: 7}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return db, q
}
