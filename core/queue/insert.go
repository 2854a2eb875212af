package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// On SQLite, River's driver inserts every job under a savepoint of its own
// and rewrites its query's schema template with regular expressions on
// every call: about 60 µs of the ~110 µs a delivery job cost the send's
// transaction, on the single writer every send waits for. A deliver_fax
// job is the one job inserted at that rate, so on SQLite it is inserted
// here, in one statement the store's statement cache keeps compiled.
//
// The river_job row is River's cross-language contract: its Ruby, Java and
// JavaScript clients insert jobs into it themselves for Go workers to run,
// and River's SQLite driver notifies nobody of an insert (it has no
// LISTEN), so a row written here is the job River would have written.
// TestDirectInsertMatchesRiver compares the two column by column for a job
// due now, one due within River's scheduler interval and one due later.
// PostgreSQL keeps River's insert: there a job costs a round trip either
// way, and River's driver needs no savepoint.
const insertDeliverySQLite = `INSERT INTO river_job (args, created_at, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags)
	VALUES (?, datetime('now', 'subsec'), ?, ?, '{}', 1, 'default', coalesce(?, datetime('now', 'subsec')), ?, '[]')`

// insertDelivery inserts a deliver_fax job in tx as River would: state and
// due time follow availableSoon and River's insert options (see
// EnqueueDelivery), every other column River's defaults for this client.
func (q *Queue) insertDelivery(ctx context.Context, tx *sql.Tx, faxID string, at time.Time) error {
	if q.dialect != DialectSQLite {
		opts := &river.InsertOpts{}
		if at.After(time.Now()) {
			opts.ScheduledAt = ceilMillisecond(at)
		}
		// The fast insert does not read the job back (River's InsertTx
		// returns every column of the row).
		_, err := q.client.InsertManyFastTx(ctx, tx, []river.InsertManyParams{{Args: deliverArgs{FaxID: faxID}, InsertOpts: opts}})
		return err
	}
	args, err := json.Marshal(deliverArgs{FaxID: faxID})
	if err != nil {
		return fmt.Errorf("encode job args: %w", err)
	}
	state, due := rivertype.JobStateAvailable, any(nil) // due: the database's now
	if at.After(time.Now()) {
		sched := ceilMillisecond(at)
		due = riverSQLiteTime(sched)
		if time.Until(sched) > riverSchedulerInterval { // as availableSoon decides
			state = rivertype.JobStateScheduled
		}
	}
	_, err = tx.ExecContext(ctx, insertDeliverySQLite, args, KindDeliverFax, q.maxAttempts, due, string(state))
	return err
}

// riverSQLiteTime is how River's SQLite driver writes a time: UTC, to the
// millisecond, trailing zeros of the fraction dropped. SQLite compares
// times as text, so another format would sort wrongly against River's.
func riverSQLiteTime(t time.Time) string {
	return t.UTC().Round(time.Millisecond).Format("2006-01-02 15:04:05.999")
}
