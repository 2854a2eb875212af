package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/faxes"
)

var _ faxes.StatsStore = (*DB)(nil)

// Reader is the pool that only reads (on SQLite, apart from the single
// writer connection), for monitoring queries that must not wait behind
// writes.
func (db *DB) Reader() *sql.DB { return db.r.DB }

// Stats counts what faxes.Snapshot reports. Each query reads a partial
// index that holds only what is not yet finished: faxes_unfinished,
// approvals_pending (migration 00014), ledger_entries_open_holds (00031).
func (db *DB) Stats(ctx context.Context, now time.Time) (*faxes.Snapshot, error) {
	x := db.q
	snap := &faxes.Snapshot{ApprovalsPending: map[approvals.Kind]int64{}, Holds: map[core.Mode]faxes.HoldTotal{}}

	var unfinished []struct {
		Mode   core.Mode    `db:"mode"`
		Status faxes.Status `db:"status"`
		N      int64        `db:"n"`
	}
	if err := x.sel(ctx, &unfinished, `SELECT mode, status, count(*) AS n FROM faxes
		WHERE status IN ('queued', 'sending') GROUP BY mode, status`); err != nil {
		return nil, fmt.Errorf("count unfinished faxes: %w", err)
	}
	for _, f := range unfinished {
		snap.Faxes = append(snap.Faxes, faxes.Count{Mode: f.Mode, State: f.Status, Count: f.N})
	}

	var approvals []struct {
		Kind approvals.Kind `db:"kind"`
		N    int64          `db:"n"`
	}
	if err := x.sel(ctx, &approvals, `SELECT kind, count(*) AS n FROM approvals
		WHERE status = 'pending' AND expires_at > ? GROUP BY kind`, now); err != nil {
		return nil, fmt.Errorf("count pending approvals: %w", err)
	}
	for _, a := range approvals {
		snap.ApprovalsPending[a.Kind] = a.N
	}

	var holds []struct {
		Mode     core.Mode `db:"mode"`
		Balances int64     `db:"balances"`
		Micros   int64     `db:"micros"`
	}
	if err := x.sel(ctx, &holds, `SELECT mode, count(DISTINCT owner_id) AS balances, coalesce(sum(-amount_micros), 0) AS micros
		FROM ledger_entries WHERE `+openHolds+` GROUP BY mode`); err != nil {
		return nil, fmt.Errorf("sum held credits: %w", err)
	}
	for _, h := range holds {
		snap.Holds[h.Mode] = faxes.HoldTotal{Balances: h.Balances, Micros: h.Micros}
	}
	return snap, nil
}
