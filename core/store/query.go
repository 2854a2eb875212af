package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/faxhub/faxhub/core"
)

// q runs core.Queries either on the DB's pools (tx nil) or in one
// transaction. Queries are written with ? placeholders and rebound for
// PostgreSQL.
type q struct {
	db *DB
	tx *sqlx.Tx
}

// reader is where reads go: the transaction, or else the read pool.
func (x q) reader() sqlx.QueryerContext {
	if x.tx != nil {
		return x.tx
	}
	return x.db.r
}

// writer is where writes go: the transaction, or else the write pool.
func (x q) writer() sqlx.ExtContext {
	if x.tx != nil {
		return x.tx
	}
	return x.db.w
}

func (x q) exec(ctx context.Context, query string, args ...any) (int64, error) {
	if x.tx == nil && x.db.gw != nil {
		// A write outside a transaction (an OAuth token, a consumed code)
		// joins the SQLite writer's next batch instead of paying a commit
		// of its own (groupcommit.go).
		var n int64
		err := x.write(ctx, func(x q) (err error) {
			n, err = x.exec(ctx, query, args...)
			return err
		})
		return n, err
	}
	res, err := x.writer().ExecContext(ctx, x.db.w.Rebind(query), x.db.args(args)...)
	if err != nil {
		return 0, dbErr(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("rows affected: %w", err)
	}
	return n, nil
}

// write runs fn, whose statements write and read rows back (INSERT …
// RETURNING), where a single write goes: on SQLite, outside a transaction,
// as one transaction of the writer's next batch (like exec's single
// writes) rather than on the writer's pool beside it; otherwise on x as
// it is.
func (x q) write(ctx context.Context, fn func(q) error) error {
	if x.tx == nil && x.db.gw != nil {
		return x.db.gw.inTx(ctx, func(t *sqlx.Tx) error { return fn(q{db: x.db, tx: t}) })
	}
	return fn(x)
}

// ownTx runs fn in a transaction of its own outside one, and directly in
// the caller's inside one: for a store operation on a hot path that, unlike
// atomic's savepoint, leaves nothing behind on the errors a caller may
// handle by ordering its statements (refusals before writes, or its write
// taken back).
func (x q) ownTx(ctx context.Context, fn func(q) error) error {
	if x.tx == nil {
		return x.db.inTx(ctx, func(t *sqlx.Tx) error { return fn(q{db: x.db, tx: t}) })
	}
	return fn(x)
}

// insert runs an INSERT … ON CONFLICT DO NOTHING with :name parameters from
// arg's db tags. A conflict is reported as ErrExists without failing the
// statement, so on PostgreSQL the surrounding transaction stays usable.
func (x q) insert(ctx context.Context, query string, arg any) error {
	query, args, err := x.db.named.bind(query, arg)
	if err != nil {
		return fmt.Errorf("bind %T: %w", arg, err)
	}
	n, err := x.exec(ctx, query, args...)
	if err != nil {
		return err
	}
	if n == 0 {
		return core.ErrExists
	}
	return nil
}

func (x q) get(ctx context.Context, on sqlx.QueryerContext, dest any, query string, args ...any) error {
	ctx, err := x.rowCtx(ctx, on)
	if err != nil {
		return err
	}
	return dbErr(sqlx.GetContext(ctx, on, dest, x.db.w.Rebind(query), x.db.args(args)...))
}

// rowCtx is the context of a read of one row on on. On SQLite's read pool
// it no longer carries ctx's cancellation: database/sql and the driver each
// start a goroutine per query to watch a context that can end, and for a
// read that answers one row (a lookup by key, a count or sum over indexed
// rows: microseconds to a few milliseconds, in process, never waiting on
// the writer under WAL) those two goroutines cost as much as the read
// itself. A context that has already ended still fails the read. Other
// reads (lists, and everything on PostgreSQL, where a query waits on the
// network) keep their cancellation.
func (x q) rowCtx(ctx context.Context, on sqlx.QueryerContext) (context.Context, error) {
	if x.db.dialect != DialectSQLite || x.db.r == x.db.w || on != sqlx.QueryerContext(x.db.r) {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

func (x q) sel(ctx context.Context, dest any, query string, args ...any) error {
	return x.selOn(ctx, x.reader(), dest, query, args...)
}

func (x q) selOn(ctx context.Context, on sqlx.QueryerContext, dest any, query string, args ...any) error {
	return dbErr(sqlx.SelectContext(ctx, on, dest, x.db.w.Rebind(query), x.db.args(args)...))
}

// missingOrConflict explains a compare-and-set that matched nothing:
// ErrConflict if the row is there (in another state), ErrNoRows if not.
func (x q) missingOrConflict(ctx context.Context, table string, where string, args ...any) error {
	var n int
	if err := x.get(ctx, x.reader(), &n, "SELECT count(*) FROM "+table+" WHERE "+where, args...); err != nil {
		return err
	}
	if n == 0 {
		return core.ErrNoRows
	}
	return core.ErrConflict
}

// savepoint names the savepoint atomic uses inside a caller's transaction.
const savepoint = "faxhub_store_op"

// atomic runs fn so that its statements commit or vanish together: in its
// own transaction outside one, under a savepoint inside one (so that an
// error the caller chooses to handle leaves no partial writes).
func (x q) atomic(ctx context.Context, fn func(q) error) error {
	if x.tx == nil {
		return x.db.inTx(ctx, func(t *sqlx.Tx) error { return fn(q{db: x.db, tx: t}) })
	}
	if _, err := x.tx.ExecContext(ctx, "SAVEPOINT "+savepoint); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := fn(x); err != nil {
		_, rerr := x.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+savepoint)
		if rerr == nil {
			_, rerr = x.tx.ExecContext(ctx, "RELEASE SAVEPOINT "+savepoint)
		}
		if rerr != nil {
			return errors.Join(err, fmt.Errorf("roll back to savepoint: %w", rerr))
		}
		return err
	}
	if _, err := x.tx.ExecContext(ctx, "RELEASE SAVEPOINT "+savepoint); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}

// sqliteTime is how times are written on SQLite: fixed width, so that text
// fax is time order, and UTC, with the microseconds PostgreSQL keeps.
const sqliteTime = "2006-01-02 15:04:05.000000Z"

// args converts query arguments to what both drivers store the same way:
// times in UTC truncated to microseconds (as text on SQLite), empty JSON as
// NULL, and named string types as plain strings.
func (db *DB) args(in []any) []any {
	out := make([]any, len(in))
	for i, a := range in {
		out[i] = db.arg(a)
	}
	return out
}

func (db *DB) arg(a any) any {
	switch v := a.(type) {
	case nil:
		return nil
	case time.Time:
		return db.timeArg(v)
	case *time.Time:
		if v == nil {
			return nil
		}
		return db.timeArg(*v)
	case *string:
		if v == nil {
			return nil
		}
		return *v
	case json.RawMessage:
		if len(v) == 0 {
			return nil
		}
		return string(v)
	case string, []byte, bool, int, int64:
		return v
	}
	if rv := reflect.ValueOf(a); rv.Kind() == reflect.String {
		return rv.String()
	}
	return a
}

func (db *DB) timeArg(t time.Time) any {
	t = t.UTC().Truncate(time.Microsecond)
	if db.dialect == DialectSQLite {
		return t.Format(sqliteTime)
	}
	return t
}

// dbErr maps driver errors to the core sentinels, keeping the driver's
// message.
func dbErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return core.ErrNoRows
	case isUniqueViolation(err):
		return fmt.Errorf("%w: %v", core.ErrExists, err)
	}
	return err
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return true
		}
	}
	return false
}

// limit renders a LIMIT clause; n <= 0 means no limit.
func limit(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" LIMIT %d", n)
}

// nestedCols qualifies each column of a comma-separated list with the
// table alias a and names it "a.column": the fields of the nested struct
// tagged a, for sqlx, when the query reads another table's columns of the
// same names.
func nestedCols(a, cols string) string {
	parts := fields(strings.ReplaceAll(cols, ",", " "))
	for i, c := range parts {
		parts[i] = a + "." + c + ` AS "` + a + "." + c + `"`
	}
	return strings.Join(parts, ", ")
}

// placeholders renders n comma-separated ? placeholders.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
