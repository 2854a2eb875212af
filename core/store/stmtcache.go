package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"
)

// The modernc driver compiles every query string anew on each call: profiles
// of the send and delivery paths spent about a third of their CPU in SQLite's
// parser. cachingConn keeps each connection's compiled statements and reuses
// them, which SQLite is built for (a statement is reset, not finalized,
// between runs, and re-prepares itself if the schema changes). The cache is
// per connection, below database/sql's pool, so it needs no lock (a pool
// hands a connection to one goroutine at a time) and cannot deadlock the
// one-connection writer pool inside a transaction.

// stmtCacheSize bounds the statements kept per connection; faxhub and River
// together issue about a hundred distinct query strings.
const stmtCacheSize = 512

// openCachedSQLite opens dsn with the modernc driver wrapped in the cache.
// With detach, statements ignore their context's cancellation (see
// cachingConn.detach).
func openCachedSQLite(dsn string, detach bool) *sqlx.DB {
	return sqlx.NewDb(sql.OpenDB(cachingConnector{dsn: dsn, d: &sqlite.Driver{}, detach: detach}), "sqlite")
}

type cachingConnector struct {
	dsn    string
	d      driver.Driver
	detach bool
}

func (c cachingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(sqliteConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("sqlite driver connection %T lacks the context interfaces", conn)
	}
	return &cachingConn{sqliteConn: inner, stmts: map[string]*cachedStmt{}, detach: c.detach}, nil
}

func (c cachingConnector) Driver() driver.Driver { return c.d }

// sqliteConn is what the modernc connection implements and database/sql
// looks for.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type cachingConn struct {
	sqliteConn
	stmts map[string]*cachedStmt
	// detach is set on the writer: the driver answers a cancelled context
	// by interrupting the connection, and SQLite may then roll back the
	// whole transaction, which on the writer is shared by a batch of
	// requests (groupcommit.go). A writer statement therefore runs to its
	// end (they are short; a lock held by another process is bounded by
	// the busy timeout), and database/sql still refuses to start one for a
	// context that is already done.
	detach bool
}

func (c *cachingConn) ctx(ctx context.Context) context.Context {
	if c.detach {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// BeginTx begins with the connection's context rule.
func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.sqliteConn.BeginTx(c.ctx(ctx), opts)
}

type cachedStmt struct {
	stmt interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}
	// open is true while rows of this statement are being read; a nested
	// use of the same query then runs uncached instead of resetting them.
	open bool
}

var (
	_ sqliteConn = (*cachingConn)(nil)
)

// stmt returns the cached statement for query, preparing it on first use;
// nil when it cannot be cached now.
func (c *cachingConn) stmt(ctx context.Context, query string) (*cachedStmt, error) {
	if s, ok := c.stmts[query]; ok {
		if s.open {
			return nil, nil
		}
		return s, nil
	}
	ds, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	st, ok := ds.(interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	})
	if !ok {
		ds.Close()
		return nil, nil
	}
	if len(c.stmts) >= stmtCacheSize {
		c.evictOne()
	}
	s := &cachedStmt{stmt: st}
	c.stmts[query] = s
	return s, nil
}

func (c *cachingConn) evictOne() {
	for q, s := range c.stmts {
		if !s.open {
			s.stmt.Close()
			delete(c.stmts, q)
			return
		}
	}
}

// ExecContext runs parameterised statements and savepoints from the cache.
// Other statements without arguments (pragmas, migration scripts of several
// statements) run as before: they are rare or not reusable. Savepoints are
// neither: a send runs several (its batch's, its hold's, the job queue's),
// under a few fixed names.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ctx = c.ctx(ctx)
	if len(args) == 0 && !isSavepoint(query) {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	return s.stmt.ExecContext(ctx, args)
}

// isSavepoint reports a SAVEPOINT, RELEASE or ROLLBACK TO statement: one
// statement, no arguments, run again and again under the same names.
func isSavepoint(query string) bool {
	for _, p := range [...]string{"SAVEPOINT ", "RELEASE SAVEPOINT ", "RELEASE ", "ROLLBACK TO SAVEPOINT ", "ROLLBACK TO "} {
		if len(query) > len(p) && strings.EqualFold(query[:len(p)], p) && !strings.ContainsRune(query, ';') {
			return true
		}
	}
	return false
}

// QueryContext is ExecContext for statements that return rows.
func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	ctx = c.ctx(ctx)
	if len(args) == 0 {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	rows, err := s.stmt.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	s.open = true
	return &cachedRows{Rows: rows, s: s}, nil
}

// Close finalizes the cached statements, then the connection.
func (c *cachingConn) Close() error {
	var errs []error
	for q, s := range c.stmts {
		errs = append(errs, s.stmt.Close())
		delete(c.stmts, q)
	}
	return errors.Join(append(errs, c.sqliteConn.Close())...)
}

// cachedRows hands its statement back to the cache when closed.
type cachedRows struct {
	driver.Rows
	s *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.s.open = false
	return err
}

// ColumnTypeDatabaseTypeName is forwarded: the store and River read
// TIMESTAMP columns by their declared type.
func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

// ColumnTypeScanType is forwarded like ColumnTypeDatabaseTypeName.
func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

// ColumnTypeNullable is forwarded.
func (r *cachedRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

// ColumnTypeLength is forwarded.
func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

// ColumnTypePrecisionScale is forwarded.
func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}
