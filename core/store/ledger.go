package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
)

// The ledger is append-only but for one flag: a hold is marked settled
// with its capture or release (in the same statement or transaction), so
// settled says whether the hold has its settlement entry. credit_balances
// caches, per owner and mode, available_micros (the sum of all entries),
// which every entry that moves it updates in the same transaction: reading
// the available balance never sums the ledger, and a hold is checked
// against it in one conditional UPDATE. The amount held is not cached
// there: it is the sum of the open holds, read through a partial index that
// holds only those. A capture, every delivered fax's end, then writes its
// own entry and its own hold and nothing that the owner's other faxes
// share; with held_micros on the balance row every settlement of an owner
// queued on that row's lock (migration 00031).

const ledgerCols = "id, owner_id, mode, kind, amount_micros, fax_id, hold_id, reason, created_at"

func (x q) insertEntry(ctx context.Context, e *credits.LedgerEntry) error {
	return x.insert(ctx, `INSERT INTO ledger_entries (`+ledgerCols+`)
		VALUES (:id, :owner_id, :mode, :kind, :amount_micros, :fax_id, :hold_id, :reason, :created_at)
		ON CONFLICT DO NOTHING`, e)
}

// AppendLedger appends a credit (grant, purchase, refund: positive amounts)
// or the capture or release of the hold named by e.HoldID.
func (x q) AppendLedger(ctx context.Context, e *credits.LedgerEntry) error {
	var err error
	switch e.Kind {
	case credits.LedgerGrant, credits.LedgerPurchase, credits.LedgerRefund:
		if e.AmountMicros <= 0 {
			return fmt.Errorf("append ledger: a %s must be positive, got %d", e.Kind, e.AmountMicros)
		}
		err = x.atomic(ctx, func(x q) error {
			if err := x.insertEntry(ctx, e); err != nil {
				return err
			}
			_, err := x.exec(ctx, `INSERT INTO credit_balances (owner_id, mode, available_micros) VALUES (?, ?, ?)
				ON CONFLICT (owner_id, mode) DO UPDATE SET available_micros = credit_balances.available_micros + excluded.available_micros`,
				e.OwnerID, e.Mode, e.AmountMicros)
			return err
		})
	case credits.LedgerCapture, credits.LedgerRelease:
		if e.HoldID == nil {
			return fmt.Errorf("append ledger: a %s needs the hold it settles", e.Kind)
		}
		err = x.atomic(ctx, func(x q) error {
			var hold credits.LedgerEntry
			if err := x.get(ctx, x.reader(), &hold, "SELECT "+ledgerCols+" FROM ledger_entries WHERE id = ? AND kind = ?", *e.HoldID, credits.LedgerHold); err != nil {
				return fmt.Errorf("hold %s: %w", *e.HoldID, err)
			}
			return x.settle(ctx, &hold, e)
		})
	case credits.LedgerHold:
		return errors.New("append ledger: holds are placed with PlaceHold")
	default:
		return fmt.Errorf("append ledger: unknown kind %q", e.Kind)
	}
	if err != nil {
		return fmt.Errorf("append ledger: %w", err)
	}
	return nil
}

// position is a balance row as a statement that changed it returns it.
type position struct {
	Available int64         `db:"available_micros"`
	Threshold sql.NullInt64 `db:"low_threshold_micros"`
}

func (p position) position() *credits.Position {
	out := &credits.Position{AvailableMicros: p.Available}
	if p.Threshold.Valid {
		out.ThresholdMicros = &p.Threshold.Int64
	}
	return out
}

// PlaceHold reserves -e.AmountMicros of the available balance. The
// conditional UPDATE is the check: it matches only while the balance covers
// the hold, so concurrent holds cannot overdraw on either database. It
// returns the row it left (e.After), so the low-balance rule sees exactly
// this hold's before and after, whatever else commits around it.
//
// It is on every send's path, so inside a transaction it runs without a
// savepoint of its own (three statements fewer) and still leaves nothing
// behind when it refuses: the entry goes first (a second hold for the fax
// is ErrExists before anything is written), and if the balance then does
// not cover it, the entry is deleted again before ErrInsufficientFunds.
// A missing balance row is a balance of zero: nothing to update.
func (x q) PlaceHold(ctx context.Context, e *credits.LedgerEntry) error {
	if e.Kind == "" {
		e.Kind = credits.LedgerHold
	}
	if e.Kind != credits.LedgerHold || e.AmountMicros >= 0 {
		return fmt.Errorf("place hold: want a %s with a negative amount, got %s %d", credits.LedgerHold, e.Kind, e.AmountMicros)
	}
	amount := -e.AmountMicros
	err := x.ownTx(ctx, func(x q) error {
		if err := x.insertEntry(ctx, e); err != nil {
			return err
		}
		// Scanned directly, as AllowRate's: every credit send runs this in
		// SQLite's one writer, where sqlx's reflection is its own cost.
		var after position
		err := dbErr(x.writer().QueryRowxContext(ctx, x.db.w.Rebind(`UPDATE credit_balances SET available_micros = available_micros - ?
			WHERE owner_id = ? AND mode = ? AND available_micros >= ?
			RETURNING available_micros, low_threshold_micros`), amount, e.OwnerID, e.Mode, amount).Scan(&after.Available, &after.Threshold))
		if errors.Is(err, core.ErrNoRows) {
			if _, err := x.exec(ctx, "DELETE FROM ledger_entries WHERE id = ?", e.ID); err != nil {
				return fmt.Errorf("take back the refused entry: %w", err)
			}
			return core.ErrInsufficientFunds
		}
		if err != nil {
			return err
		}
		e.After = after.position()
		return nil
	})
	if err != nil {
		return fmt.Errorf("place hold: %w", err)
	}
	return nil
}

// ReverseCredits takes back what it can of a reversal. The balance row's
// available amount is read and then lowered only if it is still that
// amount (a compare-and-set), so a concurrent hold or credit makes it read
// again instead of taking more than is there.
func (x q) ReverseCredits(ctx context.Context, e *credits.LedgerEntry) (int64, error) {
	if e.Kind != credits.LedgerReversal || e.AmountMicros >= 0 {
		return 0, fmt.Errorf("reverse credits: want a %s with a negative amount, got %s %d", credits.LedgerReversal, e.Kind, e.AmountMicros)
	}
	want := -e.AmountMicros
	var took int64
	err := x.atomic(ctx, func(x q) error {
		for range 10 {
			var avail int64
			err := x.get(ctx, x.reader(), &avail, "SELECT available_micros FROM credit_balances WHERE owner_id = ? AND mode = ?", e.OwnerID, e.Mode)
			if errors.Is(err, core.ErrNoRows) {
				return nil
			} else if err != nil {
				return err
			}
			amount := min(want, avail)
			if amount <= 0 {
				return nil
			}
			var after position
			err = x.get(ctx, x.reader(), &after, `UPDATE credit_balances SET available_micros = available_micros - ?
				WHERE owner_id = ? AND mode = ? AND available_micros = ?
				RETURNING available_micros, low_threshold_micros`, amount, e.OwnerID, e.Mode, avail)
			if errors.Is(err, core.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			entry := *e
			entry.AmountMicros, entry.After = -amount, after.position()
			if err := x.insertEntry(ctx, &entry); err != nil {
				return err
			}
			took, *e = amount, entry
			return nil
		}
		return errors.New("the balance kept changing")
	})
	if err != nil {
		return 0, fmt.Errorf("reverse credits: %w", err)
	}
	return took, nil
}

// SettleHold captures or releases the hold of faxID, once. Every delivery
// ends with it, so inside a transaction it runs without a savepoint of its
// own: its refusals (no hold, settled already) come before it writes, and
// one after its entry (a release whose balance row is missing, which only
// a hand-edited database has) takes back what it wrote: on SQLite settle
// does, on PostgreSQL the statement fails, and with it the caller's
// transaction.
func (x q) SettleHold(ctx context.Context, faxID string, kind credits.LedgerKind, at time.Time) (*credits.LedgerEntry, error) {
	var e *credits.LedgerEntry
	err := x.ownTx(ctx, func(x q) error {
		if x.db.dialect == DialectPostgres {
			var err error
			e, err = x.settleHoldPG(ctx, faxID, kind, at)
			return err
		}
		var hold credits.LedgerEntry
		if err := x.get(ctx, x.reader(), &hold, "SELECT "+ledgerCols+" FROM ledger_entries WHERE fax_id = ? AND kind = ?", faxID, credits.LedgerHold); err != nil {
			return err
		}
		e = &credits.LedgerEntry{
			ID: core.NewID(core.PrefixLedger), OwnerID: hold.OwnerID, Mode: hold.Mode, Kind: kind,
			FaxID: hold.FaxID, HoldID: &hold.ID, Reason: fmt.Sprintf("%s of the hold for fax %s", kind, faxID),
			CreatedAt: at,
		}
		return x.settle(ctx, &hold, e)
	})
	if err != nil {
		return nil, fmt.Errorf("settle hold of %s: %w", faxID, err)
	}
	e.CreatedAt = e.CreatedAt.UTC().Truncate(time.Microsecond)
	return e, nil
}

// settleHoldPG is SettleHold on PostgreSQL, where each statement is a round
// trip: the hold's lookup, the entry, the hold's mark and, for a release,
// the balance's update are one statement (three or four in settle). A
// conflict (the hold settled already, or a taken id) inserts nothing and so
// writes nothing else; a part after the entry that writes nothing (a
// release whose balance row is missing) fails the statement (faxhub_refuse),
// which takes back what it wrote.
func (x q) settleHoldPG(ctx context.Context, faxID string, kind credits.LedgerKind, at time.Time) (*credits.LedgerEntry, error) {
	st, err := settleHoldCTEs(faxID, kind, at, "")
	if err != nil {
		return nil, err
	}
	var row struct {
		HoldID   string    `db:"id"`
		OwnerID  string    `db:"owner_id"`
		Mode     core.Mode `db:"mode"`
		FaxID    *string   `db:"fax_id"`
		Settled  int64     `db:"settled"`
		Inserted int       `db:"inserted"`
		// Written is not read: it is the CASE whose arms refuse.
		Written int `db:"written"`
	}
	err = x.get(ctx, x.reader(), &row, `WITH `+st.ctes+`
		SELECT id, owner_id, mode, fax_id, coalesce((SELECT amount_micros FROM ins), 0) AS settled,
			(SELECT count(*) FROM ins) AS inserted,
			CASE WHEN NOT EXISTS (SELECT 1 FROM ins) THEN 0`+st.refusals()+` ELSE 1 END AS written FROM hold`, st.args...)
	var refused *pgconn.PgError
	if errors.As(err, &refused) && refused.Code == refuseCode {
		return nil, fmt.Errorf("%s of the hold for fax %s: %s", kind, faxID, refused.Message)
	}
	if err != nil {
		return nil, err
	}
	e := st.entry
	e.OwnerID, e.Mode, e.AmountMicros, e.FaxID, e.HoldID = row.OwnerID, row.Mode, row.Settled, row.FaxID, &row.HoldID
	if row.Inserted == 0 {
		return nil, x.whySettleRefused(ctx, row.HoldID)
	}
	return e, nil
}

// settleStatement is a settlement of a fax's hold on PostgreSQL as common
// table expressions, for a statement to put in its WITH (settleHoldCTEs).
type settleStatement struct {
	// ctes are hold (the hold, a row or none), ins (the capture or
	// release, a row unless the hold is settled already), mark (the hold
	// marked settled, a row if ins has one) and, for a release, bal (the
	// balance row given the amount back, a row if ins has one and the
	// balance row exists).
	ctes string
	args []any
	// entry is the entry ins inserts, its account and amount still to be
	// read (ins returns them).
	entry *credits.LedgerEntry
	// after are the parts after ins, each of which must write a row
	// when ins does, with the reason the statement refuses itself when
	// one did not.
	after []settlePart
}

type settlePart struct{ cte, refusal string }

// refusals are the CASE arms that fail the statement when ins wrote a row
// and a part after it did not: to follow an arm that has ruled out a
// statement in which ins wrote nothing.
func (st settleStatement) refusals() string {
	var b strings.Builder
	for _, p := range st.after {
		b.WriteString(" WHEN NOT EXISTS (SELECT 1 FROM " + p.cte + ") THEN faxhub_refuse('" + p.refusal + "')")
	}
	return b.String()
}

// settleHoldCTEs is the settlement of faxID's hold by kind on PostgreSQL.
// onlyIf, if not empty, is a condition the entry's insert also needs (a
// fax's move, MoveFax).
func settleHoldCTEs(faxID string, kind credits.LedgerKind, at time.Time, onlyIf string) (settleStatement, error) {
	// back is the share of the hold that returns to available: all of it
	// for a release, none for a capture.
	var back int64
	switch kind {
	case credits.LedgerCapture:
	case credits.LedgerRelease:
		back = 1
	default:
		return settleStatement{}, fmt.Errorf("a hold is settled by %s or %s, not %q", credits.LedgerCapture, credits.LedgerRelease, kind)
	}
	e := &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), Kind: kind, Reason: fmt.Sprintf("%s of the hold for fax %s", kind, faxID), CreatedAt: at}
	where := ""
	if onlyIf != "" {
		where = " WHERE " + onlyIf
	}
	// A hold's amount is negative: the held amount is -amount_micros, and
	// a release's entry gives it back (a capture's is 0).
	st := settleStatement{
		ctes: `hold AS (
			SELECT id, owner_id, mode, amount_micros, fax_id FROM ledger_entries WHERE fax_id = ? AND kind = '` + string(credits.LedgerHold) + `'
		), ins AS (
			INSERT INTO ledger_entries (` + ledgerCols + `)
			SELECT ?, owner_id, mode, ?, -amount_micros * ?, fax_id, id, ?, ? FROM hold` + where + `
			ON CONFLICT DO NOTHING
			RETURNING owner_id, mode, amount_micros, hold_id
		), mark AS (
			UPDATE ledger_entries l SET settled = TRUE FROM ins WHERE l.id = ins.hold_id AND NOT l.settled
			RETURNING 1
		)`,
		args:  []any{faxID, e.ID, kind, back, e.Reason, at},
		entry: e,
		after: []settlePart{{"mark", refuseUnmarked}},
	}
	if kind == credits.LedgerRelease {
		st.ctes += `, bal AS (
			UPDATE credit_balances b SET available_micros = b.available_micros + ins.amount_micros
			FROM ins WHERE b.owner_id = ins.owner_id AND b.mode = ins.mode
			RETURNING 1
		)`
		st.after = append(st.after, settlePart{"bal", refuseNoBalance})
	}
	return st, nil
}

// whySettleRefused explains a settlement of hold whose entry was not
// inserted: ErrConflict if the hold is settled already, else ErrExists
// (the entry's id was taken).
func (x q) whySettleRefused(ctx context.Context, holdID string) error {
	var n int
	if err := x.get(ctx, x.reader(), &n, "SELECT count(*) FROM ledger_entries WHERE hold_id = ? AND kind IN (?, ?)",
		holdID, credits.LedgerCapture, credits.LedgerRelease); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("hold %s is already settled: %w", holdID, core.ErrConflict)
	}
	return core.ErrExists
}

// settle appends e, the capture or release of hold, and marks the hold
// settled; a release gives its amount back to available. The unique index
// on settled holds makes it happen once however many callers race. It
// runs without a savepoint of its own (SettleHold), so a part that writes
// nothing after the entry takes back what came before it.
func (x q) settle(ctx context.Context, hold, e *credits.LedgerEntry) error {
	amount := -hold.AmountMicros
	var want int64
	switch e.Kind {
	case credits.LedgerCapture:
	case credits.LedgerRelease:
		want = amount
	default:
		return fmt.Errorf("a hold is settled by %s or %s, not %q", credits.LedgerCapture, credits.LedgerRelease, e.Kind)
	}
	if e.AmountMicros != 0 && e.AmountMicros != want {
		return fmt.Errorf("a %s of hold %s is %d, not %d", e.Kind, hold.ID, want, e.AmountMicros)
	}
	if (e.OwnerID != "" && e.OwnerID != hold.OwnerID) || (e.Mode != "" && e.Mode != hold.Mode) {
		return fmt.Errorf("hold %s belongs to another account", hold.ID)
	}
	e.AmountMicros, e.OwnerID, e.Mode = want, hold.OwnerID, hold.Mode
	if e.FaxID == nil {
		e.FaxID = hold.FaxID
	}
	if err := x.insertEntry(ctx, e); err != nil {
		if !errors.Is(err, core.ErrExists) {
			return err
		}
		return x.whySettleRefused(ctx, hold.ID)
	}
	n, err := x.exec(ctx, "UPDATE ledger_entries SET settled = TRUE WHERE id = ? AND NOT settled", hold.ID)
	if err != nil {
		return err
	}
	marked := n == 1
	refusal := ""
	switch {
	case !marked:
		refusal = refuseUnmarked
	case e.Kind == credits.LedgerRelease:
		n, err := x.exec(ctx, "UPDATE credit_balances SET available_micros = available_micros + ? WHERE owner_id = ? AND mode = ?", amount, hold.OwnerID, hold.Mode)
		if err != nil {
			return err
		}
		if n != 1 {
			refusal = refuseNoBalance
		}
	}
	if refusal == "" {
		return nil
	}
	if _, err := x.exec(ctx, "DELETE FROM ledger_entries WHERE id = ?", e.ID); err != nil {
		return fmt.Errorf("%s of hold %s: %s, and taking back the entry: %w", e.Kind, hold.ID, refusal, err)
	}
	if marked {
		if _, err := x.exec(ctx, "UPDATE ledger_entries SET settled = FALSE WHERE id = ?", hold.ID); err != nil {
			return fmt.Errorf("%s of hold %s: %s, and taking back its mark: %w", e.Kind, hold.ID, refusal, err)
		}
	}
	return fmt.Errorf("%s of hold %s: %s", e.Kind, hold.ID, refusal)
}

// GetBalance reads the available balance from the balance row and sums
// the open holds (ledger_entries_open_holds holds exactly those: the sum
// reads the index alone).
func (x q) GetBalance(ctx context.Context, ownerID string, mode core.Mode) (*credits.Balance, error) {
	var row struct {
		position
		Held int64 `db:"held_micros"`
	}
	err := x.get(ctx, x.reader(), &row, `SELECT b.available_micros, b.low_threshold_micros, (`+openHoldsSQL+`) AS held_micros
		FROM credit_balances b WHERE b.owner_id = ? AND b.mode = ?`, ownerID, mode, ownerID, mode)
	if err != nil && !errors.Is(err, core.ErrNoRows) {
		return nil, fmt.Errorf("get balance: %w", err)
	}
	return &credits.Balance{Mode: mode, Currency: core.Currency, AvailableMicros: row.Available, HeldMicros: row.Held,
		ThresholdMicros: row.position.position().ThresholdMicros}, nil
}

// openHolds is ledger_entries_open_holds' predicate (migration 00031),
// written as the index has it so that the planners read that index.
const openHolds = "kind = 'hold' AND NOT settled"

// openHoldsSQL sums an owner's open holds in a mode (its two arguments),
// as a positive amount.
const openHoldsSQL = `SELECT coalesce(sum(-amount_micros), 0) FROM ledger_entries
	WHERE owner_id = ? AND mode = ? AND ` + openHolds

// SetLowBalanceThreshold sets the alert on the balance row, creating an
// empty row for an account that has never had credits.
func (x q) SetLowBalanceThreshold(ctx context.Context, ownerID string, mode core.Mode, threshold *int64) error {
	_, err := x.exec(ctx, `INSERT INTO credit_balances (owner_id, mode, available_micros, low_threshold_micros) VALUES (?, ?, 0, ?)
		ON CONFLICT (owner_id, mode) DO UPDATE SET low_threshold_micros = excluded.low_threshold_micros`, ownerID, mode, threshold)
	if err != nil {
		return fmt.Errorf("set low-balance threshold: %w", err)
	}
	return nil
}

// ListLedger lists newest first; StartingAfter must name an entry of the
// same owner and mode (ErrNoRows otherwise).
func (x q) ListLedger(ctx context.Context, f credits.LedgerFilter) ([]credits.LedgerEntry, error) {
	where, args := "owner_id = ? AND mode = ?", []any{f.OwnerID, f.Mode}
	if f.StartingAfter != "" {
		var c cursor
		if err := x.get(ctx, x.reader(), &c, "SELECT created_at, id FROM ledger_entries WHERE id = ? AND owner_id = ? AND mode = ?",
			f.StartingAfter, f.OwnerID, f.Mode); err != nil {
			return nil, fmt.Errorf("list ledger: cursor: %w", err)
		}
		where += " AND (created_at < ? OR (created_at = ? AND id < ?))"
		args = append(args, c.CreatedAt, c.CreatedAt, c.ID)
	}
	var out []credits.LedgerEntry
	if err := x.sel(ctx, &out, "SELECT "+ledgerCols+" FROM ledger_entries WHERE "+where+" ORDER BY created_at DESC, id DESC"+limit(f.Limit), args...); err != nil {
		return nil, fmt.Errorf("list ledger: %w", err)
	}
	return out, nil
}
