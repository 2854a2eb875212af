// Package store is faxhub's one implementation of services.Store, on SQLite
// (modernc.org/sqlite, the embedded default) and PostgreSQL (pgx through
// database/sql, for many replicas). Both dialects run the same queries
// except where SQL differs (GREATEST versus max, column types in the
// migrations); conformance/storetest is the suite both pass.
package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
)

// Dialects, as reported by DB.Dialect.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrations embed.FS

// pgMaxConns is the default bound on each replica's share of PostgreSQL's
// connection limit (100 by default), leaving room for other replicas; the
// DSN parameter pool_max_conns (as pgxpool spells it) overrides it.
const pgMaxConns = 10

// pgQueueConns bounds the job queue's own pool on PostgreSQL (QueuePool):
// River's fetches, completions, polls and maintenance, two producers (the
// deliveries' queue and the webhooks') and a leader's services at once.
const pgQueueConns = 4

// sqliteBusyTimeout is how long a statement waits for another process's
// write lock (a CLI next to the server) before failing with SQLITE_BUSY.
const sqliteBusyTimeout = "10000"

// DB is a services.Store (the kernel's core.Store and every feature's queries).
//
// On SQLite it holds two pools: a writer with a single connection, through
// which every write and every transaction goes, so writers queue in Go
// instead of failing with SQLITE_BUSY; and read-only connections for reads
// outside transactions, which WAL lets run beside the writer. On PostgreSQL
// both are the same pool.
type DB struct {
	q       // the Queries, run outside transactions
	dialect string
	w       *sqlx.DB
	r       *sqlx.DB
	// gw commits SQLite's transactions in batches (groupcommit.go); nil on
	// PostgreSQL, where transactions run side by side.
	gw *groupWriter
	// named binds :name parameters (named.go).
	named *namedCache
	// secrets caches Secret's values (name → []byte): they never change.
	secrets sync.Map
	// caches keep the rows credentials are checked against, on SQLite
	// (rowcache.go); on PostgreSQL each of its caches is nil, which keeps
	// nothing.
	caches *rowCaches
	// docsToUse keeps documents for DocumentToUse (documents.go), on either
	// database.
	docsToUse *lru.Cache[string, *documents.Document]
	// ckpt checkpoints SQLite's WAL in the background (nil in memory and
	// on PostgreSQL).
	ckpt *checkpointer
	// queue is the job queue's own small pool on PostgreSQL (QueuePool);
	// nil on SQLite.
	queue *sql.DB
	// lockID is the PostgreSQL advisory lock migrations hold; it is derived
	// from the database and schema so that separate schemas (tests, tenants)
	// migrate independently while replicas of one schema exclude each other.
	lockID int64
}

var (
	_ core.Store = (*DB)(nil)
	_ core.Tx    = (*Tx)(nil)
)

// Open connects to dsn: a postgres:// or postgresql:// URL, or else a SQLite
// file path or file: URI. It does not migrate; call Migrate.
func Open(ctx context.Context, dsn string) (*DB, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("open database: empty DSN")
	}
	if dialectOf(dsn) == DialectPostgres {
		return openPostgres(ctx, dsn)
	}
	return openSQLite(ctx, dsn)
}

func dialectOf(dsn string) string {
	l := strings.ToLower(strings.TrimSpace(dsn))
	if strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://") {
		return DialectPostgres
	}
	return DialectSQLite
}

func openPostgres(ctx context.Context, dsn string) (*DB, error) {
	dsn, maxConns, err := poolSize(dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	// pgx returns timestamptz in the local zone; the store promises UTC.
	utc := stdlib.OptionAfterConnect(func(_ context.Context, c *pgx.Conn) error {
		c.TypeMap().RegisterType(&pgtype.Type{
			Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC},
		})
		return nil
	})
	db := sqlx.NewDb(sql.OpenDB(textArrayConnector{stdlib.GetConnector(*cfg, utc)}), "pgx")
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	var database, schema sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT current_database(), current_schema()").Scan(&database, &schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if !schema.Valid {
		db.Close()
		return nil, errors.New("open postgres: no schema of the search_path exists")
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "faxhub-migrate\x00%s\x00%s", database.String, schema.String)
	// Connections open on first use, so a process without workers (a CLI)
	// opens none of the queue's.
	queue := sql.OpenDB(textArrayConnector{stdlib.GetConnector(*cfg, utc)})
	queue.SetMaxOpenConns(pgQueueConns)
	queue.SetMaxIdleConns(pgQueueConns)
	queue.SetConnMaxIdleTime(5 * time.Minute)
	out := &DB{dialect: DialectPostgres, w: db, r: db, queue: queue, lockID: int64(h.Sum64()), named: newNamedCache(db.Mapper),
		caches: &rowCaches{}, docsToUse: newDocsToUse()}
	out.q = q{db: out}
	return out, nil
}

// poolSize takes pool_max_conns out of a PostgreSQL URL: pgx would send it
// to the server as a setting, which the server rejects.
func poolSize(dsn string) (string, int, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		// pgx reports it, without the password that url.Parse's error
		// would quote.
		return dsn, pgMaxConns, nil
	}
	v := u.Query()
	if !v.Has("pool_max_conns") {
		return dsn, pgMaxConns, nil
	}
	n, err := strconv.Atoi(v.Get("pool_max_conns"))
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("pool_max_conns must be a positive integer, got %q", v.Get("pool_max_conns"))
	}
	v.Del("pool_max_conns")
	u.RawQuery = v.Encode()
	return u.String(), n, nil
}

func openSQLite(ctx context.Context, dsn string) (*DB, error) {
	sqlx.BindDriver("sqlite", sqlx.QUESTION)
	wdsn, err := sqliteDSN(dsn, false)
	if err != nil {
		return nil, err
	}
	w := openCachedSQLite(wdsn, true)
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	// The writer connects first: it creates the file and switches it to WAL,
	// which the read-only connections cannot do.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	db := &DB{dialect: DialectSQLite, w: w, r: w, gw: newGroupWriter(w), named: newNamedCache(w.Mapper), caches: newRowCaches(),
		docsToUse: newDocsToUse()}
	db.gw.ended = db.caches.ended
	db.q = q{db: db}
	if inMemory(dsn) {
		// Every connection would get its own in-memory database.
		return db, nil
	}
	rdsn, err := sqliteDSN(dsn, true)
	if err != nil {
		db.gw.close()
		w.Close()
		return nil, err
	}
	r := openCachedSQLite(rdsn, false)
	n := max(4, runtime.NumCPU())
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	if err := r.PingContext(ctx); err != nil {
		db.gw.close()
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	db.r = r
	db.ckpt = newCheckpointer(r, checkpointEvery)
	db.gw.committed = db.ckpt.committed
	return db, nil
}

func inMemory(dsn string) bool {
	base, query, _ := strings.Cut(dsn, "?")
	return base == ":memory:" || base == "file::memory:" || strings.Contains(query, "mode=memory")
}

// sqliteDSN adds the connection settings the store relies on to a SQLite
// path or URI, keeping the caller's other parameters. The writer gets WAL;
// readers are query-only so a write that strays onto them fails loudly.
func sqliteDSN(dsn string, readOnly bool) (string, error) {
	base, query, _ := strings.Cut(dsn, "?")
	v, err := url.ParseQuery(query)
	if err != nil {
		return "", fmt.Errorf("open sqlite: parse DSN parameters: %w", err)
	}
	if !v.Has("_busy_timeout") && !v.Has("_timeout") {
		v.Set("_busy_timeout", sqliteBusyTimeout)
	}
	if !v.Has("_synchronous") && !v.Has("_sync") {
		// NORMAL is durable in WAL mode except for the last transactions
		// before a power loss, and much faster than FULL.
		v.Set("_synchronous", "NORMAL")
	}
	// The remaining settings are not the caller's to change: the store's
	// integrity and concurrency depend on them. The driver lets an alias
	// override its primary key, so aliases are removed.
	v.Del("_fk")
	v.Set("_foreign_keys", "1")
	v.Set("_txlock", "immediate")
	v.Del("_journal")
	v.Del("_journal_mode")
	v.Del("_query_only")
	if readOnly {
		v.Set("_query_only", "1")
	} else if !inMemory(dsn) {
		v.Set("_journal_mode", "WAL")
	}
	if !readOnly {
		// Savepoints (every transaction of a group commit has one) journal
		// the pages they change: in memory, not in a temporary file. A
		// batch is bounded (maxBatch), and so is that journal.
		v.Add("_pragma", "temp_store(MEMORY)")
		v.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", writerAutoCheckpoint))
	}
	return base + "?" + v.Encode(), nil
}

// Dialect is "sqlite" or "postgres".
func (db *DB) Dialect() string { return db.dialect }

// SQL is the pool that writes, for the job queue to share. On SQLite it has
// a single connection: do not hold it across a call into the store.
func (db *DB) SQL() *sql.DB { return db.w.DB }

// QueuePool is the pool for the job queue's own statements (River's
// fetches, completions, polls and maintenance; a job inserted with a fax
// still goes through the store's transaction). On SQLite it is SQL(): the
// one writer. On PostgreSQL it is a second pool of a few connections, so
// that the queue's fetch never waits behind the workers' own store
// transactions: database/sql hands a freed connection to a random waiter,
// and with every connection of SQL() busy with deliveries a fetch waited
// a random turn among dozens, which was the tail of the latency from a
// send's commit to its delivery's start.
func (db *DB) QueuePool() *sql.DB {
	if db.queue != nil {
		return db.queue
	}
	return db.w.DB
}

// Close closes both pools.
func (db *DB) Close() error {
	if db.gw != nil {
		db.gw.close()
	}
	if db.ckpt != nil {
		db.ckpt.close()
	}
	err := db.w.Close()
	if db.r != db.w {
		err = errors.Join(err, db.r.Close())
	}
	if db.queue != nil {
		err = errors.Join(err, db.queue.Close())
	}
	return err
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.r.PingContext(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

func (db *DB) migrationsFS() (fs.FS, goose.Dialect, error) {
	dialect, dir := goose.DialectSQLite3, "migrations/sqlite"
	if db.dialect == DialectPostgres {
		dialect, dir = goose.DialectPostgres, "migrations/postgres"
	}
	sub, err := fs.Sub(migrations, dir)
	return sub, dialect, err
}

// provider builds a goose provider on pool. It is cheap (migration files are
// parsed only when run), so each call builds its own and DB keeps no goose
// state.
func (db *DB) provider(pool *sql.DB, locked bool) (*goose.Provider, error) {
	fsys, dialect, err := db.migrationsFS()
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	if locked && db.dialect == DialectPostgres {
		// Poll every second for up to ten minutes: replicas starting
		// together wait for the first one's migration instead of failing.
		l, err := lock.NewPostgresSessionLocker(lock.WithLockID(db.lockID), lock.WithLockTimeout(1, 600))
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(l))
	}
	return goose.NewProvider(dialect, pool, fsys, opts...)
}

// Migrate applies every pending migration. On PostgreSQL it holds a session
// advisory lock meanwhile, so replicas may call it concurrently.
func (db *DB) Migrate(ctx context.Context) error {
	p, err := db.provider(db.w.DB, true)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Ready checks that the database answers and every embedded migration is
// applied.
func (db *DB) Ready(ctx context.Context) error {
	if err := db.Ping(ctx); err != nil {
		return err
	}
	// goose would create its version table when asked for versions; a
	// readiness probe must not write, so look for the table first.
	q := "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version'"
	if db.dialect == DialectPostgres {
		q = "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'goose_db_version'"
	}
	var n int
	if err := db.r.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return fmt.Errorf("check migrations: %w", err)
	}
	if n == 0 {
		return errors.New("database is not migrated")
	}
	p, err := db.provider(db.r.DB, false)
	if err != nil {
		return fmt.Errorf("check migrations: %w", err)
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("check migrations: %w", err)
	}
	if current < target {
		return fmt.Errorf("database is at migration %d of %d", current, target)
	}
	return nil
}

// Secret returns the named 32-byte secret, creating it on first use. Every
// caller, on any replica, gets the value of the first insert. A secret
// never changes once stored, so each process reads it once: signing a
// delivery's media link, for one, asks for its key on every fax, and
// that was a write (the insert that finds the row there) and a read each
// time.
func (db *DB) Secret(ctx context.Context, name string) ([]byte, error) {
	if v, ok := db.secrets.Load(name); ok {
		return bytes.Clone(v.([]byte)), nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	x := db.q
	if _, err := x.exec(ctx, "INSERT INTO secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
		name, b, time.Now()); err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	var v []byte
	// Read through the writer: it has just written, and on SQLite a reader
	// is a separate connection.
	if err := x.get(ctx, db.w, &v, "SELECT value FROM secrets WHERE name = ?", name); err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	db.secrets.Store(name, bytes.Clone(v))
	return v, nil
}

// InTx runs fn in a transaction, committed if fn returns nil. On SQLite the
// transaction begins IMMEDIATE on the single writer connection, so
// transactions run one at a time, and concurrent ones are committed
// together, each under its own savepoint (groupcommit.go).
func (db *DB) InTx(ctx context.Context, fn func(tx core.Tx) error) error {
	return db.inTx(ctx, func(t *sqlx.Tx) error { return fn(&Tx{q: q{db: db, tx: t}}) })
}

func (db *DB) inTx(ctx context.Context, fn func(*sqlx.Tx) error) (err error) {
	if db.gw != nil {
		return db.gw.inTx(ctx, fn)
	}
	t, err := db.w.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = t.Rollback()
			panic(p)
		}
	}()
	if err := fn(t); err != nil {
		if rerr := t.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
			return errors.Join(err, fmt.Errorf("roll back: %w", rerr))
		}
		return err
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("commit: %w", dbErr(err))
	}
	return nil
}

// Tx is the core.Tx that InTx passes to its function.
type Tx struct{ q }

// SQLTx is the underlying transaction, so that the job queue can insert its
// job in the same transaction as the rows that need it.
func (t *Tx) SQLTx() *sql.Tx { return t.tx.Tx }
