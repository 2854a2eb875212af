package store

import (
	"context"
	"fmt"

	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
)

const eventSelect = `SELECT seq, id, owner_id, mode, type, subject_id, data AS raw_data, created_at, dispatch FROM events`

// eventRow reads data as bytes (SQLite returns TEXT as a string).
type eventRow struct {
	events.Event
	RawData []byte `db:"raw_data"`
}

func eventsOf(rows []eventRow) []events.Event {
	out := make([]events.Event, len(rows))
	for i, r := range rows {
		out[i] = r.Event
		out[i].Data = r.RawData
	}
	return out
}

// AppendEvent inserts e, marking it for dispatch when its owner has an
// enabled webhook endpoint or an A2A push config in its mode: an event with
// nowhere to go costs its insert and nothing more.
func (x q) AppendEvent(ctx context.Context, e *events.Event) error {
	if _, err := x.exec(ctx, appendEventSQL(""), appendEventArgs(e)...); err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	return nil
}

// appendEventSQL is AppendEvent's statement; from, when not empty, is the
// FROM clause of a CTE whose rows the INSERT takes (MoveFax).
func appendEventSQL(from string) string {
	return `INSERT INTO events (id, owner_id, mode, type, subject_id, data, created_at, dispatch)
		SELECT ?, ?, ?, ?, ?, ?, ?,
			EXISTS (SELECT 1 FROM webhook_endpoints WHERE owner_id = ? AND mode = ? AND enabled)
			OR EXISTS (SELECT 1 FROM a2a_push_configs WHERE owner_id = ? AND mode = ?)` + from
}

func appendEventArgs(e *events.Event) []any {
	return []any{e.ID, e.OwnerID, e.Mode, e.Type, e.SubjectID, string(e.Data), e.CreatedAt, e.OwnerID, e.Mode, e.OwnerID, e.Mode}
}

func (x q) ListEvents(ctx context.Context, f events.Filter) ([]events.Event, error) {
	where, args := "owner_id = ? AND mode = ?", []any{f.OwnerID, f.Mode}
	if len(f.Types) > 0 {
		where += " AND type IN (" + placeholders(len(f.Types)) + ")"
		for _, t := range f.Types {
			args = append(args, string(t))
		}
	}
	if f.BeforeSeq > 0 {
		where += " AND seq < ?"
		args = append(args, f.BeforeSeq)
	}
	var rows []eventRow
	if err := x.sel(ctx, &rows, eventSelect+" WHERE "+where+" ORDER BY seq DESC"+limit(f.Limit), args...); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return eventsOf(rows), nil
}

func (x q) GetEvent(ctx context.Context, ownerID string, mode core.Mode, id string) (*events.Event, error) {
	var r eventRow
	if err := x.get(ctx, x.reader(), &r, eventSelect+" WHERE id = ? AND owner_id = ? AND mode = ?", id, ownerID, mode); err != nil {
		return nil, fmt.Errorf("get event: %w", err)
	}
	e := r.Event
	e.Data = r.RawData
	return &e, nil
}

func (x q) EventsAfter(ctx context.Context, ownerID string, mode core.Mode, afterSeq int64, n int) ([]events.Event, error) {
	var rows []eventRow
	if err := x.sel(ctx, &rows, eventSelect+" WHERE owner_id = ? AND mode = ? AND seq > ? ORDER BY seq"+limit(n),
		ownerID, mode, afterSeq); err != nil {
		return nil, fmt.Errorf("events after %d: %w", afterSeq, err)
	}
	return eventsOf(rows), nil
}

func (x q) LastEventSeq(ctx context.Context, ownerID string, mode core.Mode) (int64, error) {
	var seq int64
	if err := x.get(ctx, x.reader(), &seq, "SELECT COALESCE(MAX(seq), 0) FROM events WHERE owner_id = ? AND mode = ?", ownerID, mode); err != nil {
		return 0, fmt.Errorf("last event: %w", err)
	}
	return seq, nil
}

// PurgeEvents deletes the events created before before. The log is written
// in time order, so they are the first rows by seq: the statement reads
// the expired rows and one more, never the whole table.
func (x q) PurgeEvents(ctx context.Context, before time.Time) (int64, error) {
	n, err := x.exec(ctx, `DELETE FROM events WHERE seq < COALESCE(
		(SELECT seq FROM events WHERE created_at >= ? ORDER BY seq LIMIT 1),
		(SELECT MAX(seq) + 1 FROM events))`, before)
	if err != nil {
		return 0, fmt.Errorf("purge events: %w", err)
	}
	return n, nil
}
