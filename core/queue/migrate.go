package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// migrateLockKey is the PostgreSQL advisory lock that serialises River
// migrations between replicas starting at once ("faxhub river" in ASCII).
const migrateLockKey int64 = 0x6661786875627276

// Migrate brings River's tables up to date. It is safe to run on every start
// and, on PostgreSQL, from several replicas at once: rivermigrate takes no
// lock of its own, so the replicas queue on an advisory lock and all but the
// first find nothing left to do. On PostgreSQL it needs two connections (one
// holds the lock while River migrates on another).
func Migrate(ctx context.Context, db *sql.DB, dialect string) error {
	quiet := slog.New(slog.DiscardHandler)
	switch dialect {
	case DialectSQLite:
		m, err := rivermigrate.New(riversqlite.New(db), &rivermigrate.Config{Logger: quiet})
		if err != nil {
			return fmt.Errorf("migrate river (sqlite): %w", err)
		}
		// One transaction for all steps: with _txlock=immediate it holds the
		// write lock from the start, so two processes opening the same file
		// cannot both apply a step. (MigrateTx is deprecated because some
		// PostgreSQL steps need a commit between them; SQLite's do not.)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate river (sqlite): begin: %w", err)
		}
		defer func() { _ = tx.Rollback() }()
		//lint:ignore SA1019 SQLite's steps need no commit between them (see above)
		if _, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("migrate river (sqlite): %w", err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate river (sqlite): commit: %w", err)
		}
		return nil
	case DialectPostgres:
		m, err := rivermigrate.New(riverdatabasesql.New(db), &rivermigrate.Config{Logger: quiet})
		if err != nil {
			return fmt.Errorf("migrate river (postgres): %w", err)
		}
		// A transaction-scoped lock is released however the transaction
		// ends, even if this process dies, so a failed migration never
		// leaves a pooled connection holding it.
		lockTx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate river (postgres): begin lock transaction: %w", err)
		}
		defer func() { _ = lockTx.Rollback() }()
		if _, err := lockTx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLockKey); err != nil {
			return fmt.Errorf("migrate river (postgres): take migration lock: %w", err)
		}
		if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("migrate river (postgres): %w", err)
		}
		return nil
	}
	return fmt.Errorf("migrate river: unknown dialect %q (want %q or %q)", dialect, DialectSQLite, DialectPostgres)
}

// Validate reports an error if River's migrations are not all applied (for
// readiness checks).
func Validate(ctx context.Context, db *sql.DB, dialect string) error {
	driver, err := newDriver(db, dialect)
	if err != nil {
		return fmt.Errorf("validate river migrations: %w", err)
	}
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("validate river migrations: %w", err)
	}
	res, err := m.Validate(ctx)
	if err != nil {
		return fmt.Errorf("validate river migrations: %w", err)
	}
	if !res.OK {
		return errors.New("river migrations pending: " + strings.Join(res.Messages, "; "))
	}
	return nil
}
