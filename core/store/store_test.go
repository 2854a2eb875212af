package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/internal/require"
)

func TestDialectOf(t *testing.T) {
	for _, tc := range []struct {
		dsn  string
		want string
	}{
		{"postgres://u@h:5432/db?sslmode=disable", DialectPostgres},
		{"postgresql://u@h/db", DialectPostgres},
		{"POSTGRES://u@h/db", DialectPostgres},
		{"  postgres://u@h/db", DialectPostgres},
		{"/var/lib/faxhub/faxhub.db", DialectSQLite},
		{"faxhub.db", DialectSQLite},
		{"file:/tmp/faxhub.db?cache=shared", DialectSQLite},
		{"file:postgres.db", DialectSQLite},
		{"./postgres://not-a-url.db", DialectSQLite},
	} {
		if got := dialectOf(tc.dsn); got != tc.want {
			t.Errorf("dialectOf(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
	}
}

func TestSQLiteDSN(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dsn      string
		readOnly bool
		want     map[string]string // "" means absent
	}{
		{
			name: "writer defaults", dsn: "/data/faxhub.db",
			want: map[string]string{"_txlock": "immediate", "_foreign_keys": "1", "_journal_mode": "WAL", "_busy_timeout": sqliteBusyTimeout, "_query_only": ""},
		},
		{
			name: "reader is query-only", dsn: "/data/faxhub.db", readOnly: true,
			want: map[string]string{"_txlock": "immediate", "_query_only": "1", "_journal_mode": ""},
		},
		{
			name: "caller's busy timeout and other keys kept, integrity settings forced",
			dsn:  "file:/data/faxhub.db?_busy_timeout=50&_fk=0&_txlock=deferred&cache=private",
			want: map[string]string{"_busy_timeout": "50", "_fk": "", "_foreign_keys": "1", "_txlock": "immediate", "cache": "private"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sqliteDSN(tc.dsn, tc.readOnly)
			if err != nil {
				t.Fatal(err)
			}
			base, query, _ := strings.Cut(got, "?")
			if want, _, _ := strings.Cut(tc.dsn, "?"); base != want {
				t.Errorf("base = %q, want %q", base, want)
			}
			v, err := url.ParseQuery(query)
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if got := v.Get(k); got != want {
					t.Errorf("%s = %q, want %q (dsn %s)", k, got, want, got)
				}
			}
		})
	}
}

func TestOpenSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "faxhub.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Dialect() != DialectSQLite {
		t.Errorf("Dialect() = %q", db.Dialect())
	}
	if err := db.Ready(ctx); err == nil {
		t.Error("Ready before Migrate: want an error")
	}
	for range 2 { // migrating twice is a no-op
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Ready(ctx); err != nil {
		t.Errorf("Ready after Migrate: %v", err)
	}
	var mode string
	if err := db.SQL().QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var fk int
	if err := db.r.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("reader foreign_keys = %d, %v; want 1", fk, err)
	}
	// No memory map: a reader that maps the file unmaps it whenever a write
	// elsewhere changed the database, and that munmap cost a hostagent call
	// a fifth of its CPU (docs/benchmarks.md, "the memory map, undone").
	for name, pool := range map[string]*sqlx.DB{"reader": db.r, "writer": db.w} {
		var mmap int64
		if err := pool.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&mmap); err != nil || mmap != 0 {
			t.Errorf("%s mmap_size = %d, %v; want 0", name, mmap, err)
		}
	}
	if _, err := db.r.ExecContext(ctx, "DELETE FROM secrets"); err == nil {
		t.Error("a write on the read pool succeeded; want it refused")
	}
}

// openMigratedSQLite opens a migrated SQLite store in a file of the test's
// own, closed at cleanup.
func openMigratedSQLite(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "faxhub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestSQLiteRowReadContext checks that a read of one row on SQLite's read
// pool, which does not carry its context's cancellation into the driver
// (rowCtx), still fails at once when its context has already ended, and
// answers as before when it has not.
func TestSQLiteRowReadContext(t *testing.T) {
	ctx := context.Background()
	db := openMigratedSQLite(t)
	if _, err := db.GetOwner(ctx, "own_missing"); !errors.Is(err, core.ErrNoRows) {
		t.Errorf("GetOwner of a missing owner: %v; want ErrNoRows", err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.GetOwner(ended, "own_missing"); !errors.Is(err, context.Canceled) {
		t.Errorf("GetOwner with an ended context: %v; want context.Canceled", err)
	}
	if _, _, err := db.GetDelegatedAgentWithHost(ended, "agt_missing"); !errors.Is(err, context.Canceled) {
		t.Errorf("GetDelegatedAgentWithHost with an ended context: %v; want context.Canceled", err)
	}
}

// TestSQLiteWritersQueue checks that concurrent transactions, each reading
// then writing, wait for the single writer instead of failing with
// SQLITE_BUSY, and that they really are serialized (no lost update).
func TestSQLiteWritersQueue(t *testing.T) {
	ctx := context.Background()
	db := openMigratedSQLite(t)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			errs <- db.InTx(ctx, func(tx core.Tx) error {
				sqlTx := tx.(interface{ SQLTx() *sql.Tx }).SQLTx()
				var v int64
				err := sqlTx.QueryRowContext(ctx, "SELECT tat FROM rate_limits WHERE key = 'counter'").Scan(&v)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return err
				}
				// Give another transaction the chance to interleave, were
				// it not serialized.
				time.Sleep(time.Millisecond)
				_, err = sqlTx.ExecContext(ctx, "INSERT INTO rate_limits (key, tat) VALUES ('counter', ?) ON CONFLICT (key) DO UPDATE SET tat = excluded.tat", v+1)
				return err
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("InTx: %v", err)
		}
	}
	var v int64
	if err := db.SQL().QueryRowContext(ctx, "SELECT tat FROM rate_limits WHERE key = 'counter'").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != n {
		t.Errorf("counter = %d after %d serialized increments", v, n)
	}
}

func postgresURL(t *testing.T) string {
	u := os.Getenv(storetest.EnvPostgresURL)
	if u == "" {
		require.Missing(t, "PostgreSQL", storetest.EnvPostgresURL+" is not set (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return u
}

// TestPostgresConcurrentMigrate is several replicas starting at once on a
// fresh schema: the advisory lock makes one migrate and the others find
// nothing left to do.
func TestPostgresConcurrentMigrate(t *testing.T) {
	dsn := storetest.OpenPostgresSchema(t, postgresURL(t))
	ctx := context.Background()
	const replicas = 4
	dbs := make([]*DB, replicas)
	for i := range dbs {
		db, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if db.Dialect() != DialectPostgres {
			t.Fatalf("Dialect() = %q", db.Dialect())
		}
		dbs[i] = db
	}
	if err := dbs[0].Ready(ctx); err == nil {
		t.Error("Ready before Migrate: want an error")
	}
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i, db := range dbs {
		wg.Go(func() { errs[i] = db.Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: Migrate: %v", i, err)
		}
	}
	for i, db := range dbs {
		if err := db.Ready(ctx); err != nil {
			t.Errorf("replica %d: Ready: %v", i, err)
		}
	}
	var applied int
	if err := dbs[0].SQL().QueryRowContext(ctx, "SELECT count(*) FROM goose_db_version WHERE version_id > 0").Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != len(mustSources(t)) {
		t.Errorf("%d migrations recorded, want each of %d once", applied, len(mustSources(t)))
	}
}

func mustSources(t *testing.T) []string {
	fsys, _, err := (&DB{dialect: DialectPostgres}).migrationsFS()
	if err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestPoolSize(t *testing.T) {
	for _, tc := range []struct {
		dsn     string
		wantDSN string
		want    int
		wantErr bool
	}{
		{"postgres://u@h/db?sslmode=disable", "postgres://u@h/db?sslmode=disable", pgMaxConns, false},
		{"postgres://u@h/db?pool_max_conns=40&sslmode=disable", "postgres://u@h/db?sslmode=disable", 40, false},
		{"postgres://u@h/db?pool_max_conns=0", "", 0, true},
		{"postgres://u@h/db?pool_max_conns=lots", "", 0, true},
	} {
		dsn, n, err := poolSize(tc.dsn)
		if (err != nil) != tc.wantErr || dsn != tc.wantDSN || n != tc.want {
			t.Errorf("poolSize(%q) = %q, %d, %v; want %q, %d, error %v", tc.dsn, dsn, n, err, tc.wantDSN, tc.want, tc.wantErr)
		}
	}
}

// TestMigrateDownUp checks that the down migrations undo the up ones
// cleanly (on PostgreSQL too when it is configured), so a release can be
// rolled back.
func TestMigrateDownUp(t *testing.T) {
	eachMigratedDB(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		// Rows with every foreign key in place, including the cycle
		// between drafts and faxes.
		o := &accounts.Owner{ID: "own_1", Email: "a@example.com", CreatedAt: time.Now()}
		d := &documents.Document{ID: "doc_1", OwnerID: o.ID, Mode: core.ModeTest, CreatedAt: time.Now()}
		dr := &faxes.Draft{ID: "drf_1", OwnerID: o.ID, Mode: core.ModeTest, DocumentID: d.ID, Status: faxes.DraftOpen}
		ord := &faxes.Fax{ID: "fax_1", OwnerID: o.ID, Mode: core.ModeTest, DocumentID: d.ID, Status: faxes.Queued, DraftID: &dr.ID}
		for _, err := range []error{
			db.CreateOwner(ctx, o), db.CreateDocument(ctx, d), db.CreateDraft(ctx, dr), db.CreateFax(ctx, ord),
			db.MarkDraftPaid(ctx, dr.ID, ord.ID),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		p, err := db.provider(db.w.DB, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.DownTo(ctx, 0); err != nil {
			t.Fatalf("down: %v", err)
		}
		if err := db.Ready(ctx); err == nil {
			t.Fatal("Ready after migrating down: want an error")
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("up again: %v", err)
		}
		if err := db.Ready(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// eachMigratedDB runs fn on a fresh, migrated database of each dialect:
// SQLite, and PostgreSQL when it is configured.
func eachMigratedDB(t *testing.T, fn func(t *testing.T, db *DB)) {
	dsns := map[string]string{DialectSQLite: filepath.Join(t.TempDir(), "faxhub.db")}
	if u := os.Getenv(storetest.EnvPostgresURL); u != "" {
		dsns[DialectPostgres] = storetest.OpenPostgresSchema(t, u)
	}
	for dialect, dsn := range dsns {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db, err := Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			fn(t, db)
		})
	}
}

// TestMigrateSentByBackfill checks what migration 00027 says of the faxes
// made before it: a machine payment's fax and a delegated agent's approved
// send are known from their tables (the agent's id and name); every other
// fax is "unknown". The rows are made on the full schema, the migration
// taken down and up again, as an upgrade from 00026 would meet them.
func TestMigrateSentByBackfill(t *testing.T) {
	eachMigratedDB(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		o := &accounts.Owner{ID: "own_1", Email: "a@example.com", CreatedAt: now}
		d := &documents.Document{ID: "doc_1", OwnerID: o.ID, Mode: core.ModeTest, CreatedAt: now}
		pk, tp := "{}", "host-thumbprint"
		h := &hosts.Host{ID: "hst_1", OwnerID: o.ID, Name: "laptop", PublicKey: &pk, Thumbprint: &tp, Status: hosts.Active, CreatedAt: now}
		a := &hosts.Agent{ID: "dag_1", HostID: h.ID, OwnerID: o.ID, Name: "Claude on laptop", PublicKey: "{}", Thumbprint: "agent-thumbprint",
			Status: hosts.AgentActive, DeviceExpires: now, CreatedAt: now}
		s := &hosts.Send{ID: "dsd_1", OwnerID: o.ID, Mode: core.ModeTest, HostID: h.ID, AgentID: a.ID, ApprovalID: "apr_1", DocumentID: d.ID,
			DocumentSHA: "00", To: "+14155550123", Pages: 1, PriceMicros: 70000, Currency: "usd", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		fax := func(id string, pay faxes.PaymentMethod) *faxes.Fax {
			return &faxes.Fax{ID: id, OwnerID: o.ID, Mode: core.ModeTest, DocumentID: d.ID, Status: faxes.Queued, PaymentMethod: pay,
				SentBy: faxes.SentBy{Kind: core.PrincipalAPIKey, ID: "key_1", Name: "made after 00027"}, CreatedAt: now}
		}
		plain, machine, delegated := fax("fax_plain", faxes.PayCredits), fax("fax_machine", faxes.PayMachine), fax("fax_delegated", faxes.PayCredits)
		for _, err := range []error{
			db.CreateOwner(ctx, o), db.CreateDocument(ctx, d), db.CreateHost(ctx, h, 10), db.CreateDelegatedAgent(ctx, a, 10),
			db.CreateDelegatedSend(ctx, s), db.CreateFax(ctx, plain), db.CreateFax(ctx, machine), db.CreateFax(ctx, delegated),
			db.MarkDelegatedSendSent(ctx, s.ID, delegated.ID),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		p, err := db.provider(db.w.DB, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.DownTo(ctx, 26); err != nil {
			t.Fatalf("down to 00026: %v", err)
		}
		if _, err := p.UpTo(ctx, 27); err != nil {
			t.Fatalf("up to 00027: %v", err)
		}
		for id, want := range map[string]faxes.SentBy{
			plain.ID:     {Kind: faxes.SentByUnknown},
			machine.ID:   {Kind: core.PrincipalMachinePayer},
			delegated.ID: {Kind: core.PrincipalDelegated, ID: a.ID, Name: a.Name},
		} {
			f, err := db.GetFax(ctx, o.ID, core.ModeTest, id)
			if err != nil {
				t.Fatal(err)
			}
			if f.SentBy != want {
				t.Errorf("%s after 00027: sentBy %+v, want %+v", id, f.SentBy, want)
			}
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("the rest of the migrations: %v", err)
		}
	})
}

// TestMigrateOneActiveKey checks what migration 00029 does to a database
// that met the first-keys race before it: of a role's active keys all but
// the newest are retired at the newest's creation (still published, no
// longer signing), an already retired key and the other roles are left
// alone, and after it a second active key of a role is refused.
func TestMigrateOneActiveKey(t *testing.T) {
	eachMigratedDB(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		p, err := db.provider(db.w.DB, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.DownTo(ctx, 28); err != nil {
			t.Fatalf("down to 00028: %v", err)
		}
		t0 := time.Now().UTC().Truncate(time.Second)
		key := func(id, alg string, sec int, retired *time.Time) *authstate.OAuthKey {
			return &authstate.OAuthKey{ID: id, Purpose: authstate.KeyPurposeToken, Alg: alg, PublicJWK: []byte(`{}`), Sealed: []byte{1},
				CreatedAt: t0.Add(time.Duration(sec) * time.Second), RetiredAt: retired}
		}
		old := t0.Add(-time.Hour)
		keys := []*authstate.OAuthKey{
			key("e0", "EdDSA", -7200, &old), key("e1", "EdDSA", 0, nil), key("e2", "EdDSA", 1, nil), key("e3", "EdDSA", 2, nil),
			key("r1", "RS256", 0, nil),
		}
		for _, k := range keys {
			if err := db.CreateOAuthKey(ctx, k); err != nil {
				t.Fatalf("before 00029, key %s: %v", k.ID, err)
			}
		}
		if _, err := p.UpTo(ctx, 29); err != nil {
			t.Fatalf("up to 00029: %v", err)
		}
		got, err := db.ListOAuthKeys(ctx, authstate.KeyPurposeToken, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		retired := map[string]*time.Time{}
		for _, k := range got {
			retired[k.ID] = k.RetiredAt
		}
		newest := keys[3].CreatedAt
		for id, want := range map[string]*time.Time{"e0": &old, "e1": &newest, "e2": &newest, "e3": nil, "r1": nil} {
			switch r := retired[id]; {
			case want == nil && r != nil, want != nil && (r == nil || !r.Equal(*want)):
				t.Errorf("%s after 00029: retired at %v, want %v", id, r, want)
			}
		}
		if err := db.CreateOAuthKey(ctx, key("e4", "EdDSA", 3, nil)); !errors.Is(err, core.ErrExists) {
			t.Errorf("a second active EdDSA key after 00029: %v, want ErrExists", err)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("the rest of the migrations: %v", err)
		}
	})
}

// TestMigrateOpenHolds checks what migration 00031 does to a ledger kept
// before it: the holds with a capture or a release are marked settled, the
// open one is not, and the amount held (no longer on the balance row) is
// the open hold's; its Down puts that amount back on the balance row.
func TestMigrateOpenHolds(t *testing.T) {
	eachMigratedDB(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		p, err := db.provider(db.w.DB, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.DownTo(ctx, 30); err != nil {
			t.Fatalf("down to 00030: %v", err)
		}
		now := time.Now().UTC().Truncate(time.Second)
		if err := db.CreateOwner(ctx, &accounts.Owner{ID: "own_1", Email: "a@example.com", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		exec := func(query string, args ...any) {
			t.Helper()
			if _, err := db.SQL().ExecContext(ctx, db.w.Rebind(query), args...); err != nil {
				t.Fatal(err)
			}
		}
		entry := func(id string, kind credits.LedgerKind, amount int64, hold any) {
			exec(`INSERT INTO ledger_entries (id, owner_id, mode, kind, amount_micros, hold_id, reason, created_at)
				VALUES (?, 'own_1', 'test', ?, ?, ?, '', ?)`, id, kind, amount, hold, now)
		}
		entry("led_grant", credits.LedgerGrant, 10_000_000, nil)
		entry("led_h1", credits.LedgerHold, -2_000_000, nil)
		entry("led_c1", credits.LedgerCapture, 0, "led_h1")
		entry("led_h2", credits.LedgerHold, -3_000_000, nil)
		entry("led_r2", credits.LedgerRelease, 3_000_000, "led_h2")
		entry("led_h3", credits.LedgerHold, -4_000_000, nil)
		exec(`INSERT INTO credit_balances (owner_id, mode, available_micros, held_micros) VALUES ('own_1', 'test', 4000000, 4000000)`)
		if _, err := p.UpTo(ctx, 31); err != nil {
			t.Fatalf("up to 00031: %v", err)
		}
		for id, want := range map[string]bool{"led_grant": false, "led_h1": true, "led_c1": false, "led_h2": true, "led_r2": false, "led_h3": false} {
			var settled bool
			if err := db.SQL().QueryRowContext(ctx, db.w.Rebind("SELECT settled FROM ledger_entries WHERE id = ?"), id).Scan(&settled); err != nil {
				t.Fatal(err)
			}
			if settled != want {
				t.Errorf("%s after 00031: settled %v, want %v", id, settled, want)
			}
		}
		b, err := db.GetBalance(ctx, "own_1", core.ModeTest)
		if err != nil {
			t.Fatal(err)
		}
		if b.AvailableMicros != 4_000_000 || b.HeldMicros != 4_000_000 {
			t.Errorf("after 00031: available %d, held %d; want 4000000 and 4000000", b.AvailableMicros, b.HeldMicros)
		}
		if _, err := p.DownTo(ctx, 30); err != nil {
			t.Fatalf("00031 down: %v", err)
		}
		var held int64
		if err := db.SQL().QueryRowContext(ctx, "SELECT held_micros FROM credit_balances").Scan(&held); err != nil {
			t.Fatal(err)
		}
		if held != 4_000_000 {
			t.Errorf("after 00031's down: held_micros %d, want 4000000", held)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("the migrations again: %v", err)
		}
	})
}

// TestCaptureLeavesBalanceRowAlone checks what migration 00031 is for: a
// capture (a delivered fax's end) writes no row that the owner's other
// faxes share, so it completes while another transaction holds the
// owner's balance row (a concurrent send's hold, say), where before it
// waited for that transaction to end. PostgreSQL only: SQLite has no row
// locks, only its one writer.
func TestCaptureLeavesBalanceRowAlone(t *testing.T) {
	eachMigratedDB(t, func(t *testing.T, db *DB) {
		if db.Dialect() != DialectPostgres {
			return
		}
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		o := &accounts.Owner{ID: "own_1", Email: "a@example.com", CreatedAt: now}
		d := &documents.Document{ID: "doc_1", OwnerID: o.ID, Mode: core.ModeTest, CreatedAt: now}
		errs := []error{db.CreateOwner(ctx, o), db.CreateDocument(ctx, d),
			db.AppendLedger(ctx, &credits.LedgerEntry{ID: "led_grant", OwnerID: o.ID, Mode: core.ModeTest, Kind: credits.LedgerGrant, AmountMicros: 5_000_000, CreatedAt: now})}
		for i, id := range []string{"fax_1", "fax_2"} {
			f := &faxes.Fax{ID: id, OwnerID: o.ID, Mode: core.ModeTest, DocumentID: d.ID, Status: faxes.Sending, PaymentMethod: faxes.PayCredits, CreatedAt: now}
			errs = append(errs, db.CreateFax(ctx, f),
				db.PlaceHold(ctx, &credits.LedgerEntry{ID: fmt.Sprintf("led_hold%d", i), OwnerID: o.ID, Mode: core.ModeTest, AmountMicros: -1_000_000, FaxID: &f.ID, CreatedAt: now}))
		}
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		locker, err := db.SQL().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = locker.Rollback() }() // rolled back below; this is for a test that fails first
		if _, err := locker.ExecContext(ctx, "SELECT 1 FROM credit_balances WHERE owner_id = $1 FOR UPDATE", o.ID); err != nil {
			t.Fatal(err)
		}
		// Regressed, the capture waits for the lock until this deadline.
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := db.SettleHold(cctx, "fax_1", credits.LedgerCapture, now); err != nil {
			t.Fatalf("a capture while the balance row is locked: %v", err)
		}
		if err := locker.Rollback(); err != nil {
			t.Fatal(err)
		}
		if _, err := db.SettleHold(ctx, "fax_2", credits.LedgerRelease, now); err != nil {
			t.Fatal(err)
		}
		b, err := db.GetBalance(ctx, o.ID, core.ModeTest)
		if err != nil {
			t.Fatal(err)
		}
		if b.AvailableMicros != 4_000_000 || b.HeldMicros != 0 {
			t.Fatalf("after one capture and one release: available %d, held %d; want 4000000 and 0", b.AvailableMicros, b.HeldMicros)
		}
	})
}

// TestSettleHoldWithoutBalanceRow checks SettleHold's refusal that comes
// after its entry is written: a release whose hold's balance row is gone,
// which only a hand-edited database has (its PostgreSQL statement writes
// the entry, the hold's mark and the balance's update at once). The entry
// is taken back and the hold stays open, outside a transaction and in
// one. A capture, which leaves the balance row alone, still settles.
func TestSettleHoldWithoutBalanceRow(t *testing.T) {
	eachMigratedDB(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		o := &accounts.Owner{ID: "own_1", Email: "a@example.com", CreatedAt: now}
		d := &documents.Document{ID: "doc_1", OwnerID: o.ID, Mode: core.ModeTest, CreatedAt: now}
		f := &faxes.Fax{ID: "fax_1", OwnerID: o.ID, Mode: core.ModeTest, DocumentID: d.ID, Status: faxes.Sending, PaymentMethod: faxes.PayCredits, CreatedAt: now}
		for _, err := range []error{
			db.CreateOwner(ctx, o), db.CreateDocument(ctx, d), db.CreateFax(ctx, f),
			db.AppendLedger(ctx, &credits.LedgerEntry{ID: "led_grant", OwnerID: o.ID, Mode: core.ModeTest, Kind: credits.LedgerGrant, AmountMicros: 5_000_000, CreatedAt: now}),
			db.PlaceHold(ctx, &credits.LedgerEntry{ID: "led_hold", OwnerID: o.ID, Mode: core.ModeTest, AmountMicros: -1_000_000, FaxID: &f.ID, CreatedAt: now}),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.SQL().ExecContext(ctx, "DELETE FROM credit_balances"); err != nil {
			t.Fatal(err)
		}
		state := func() (entries int, held int64) {
			t.Helper()
			if err := db.SQL().QueryRowContext(ctx, "SELECT count(*) FROM ledger_entries").Scan(&entries); err != nil {
				t.Fatal(err)
			}
			if err := db.SQL().QueryRowContext(ctx, db.w.Rebind(openHoldsSQL), o.ID, core.ModeTest).Scan(&held); err != nil {
				t.Fatal(err)
			}
			return entries, held
		}
		for _, tc := range []struct {
			name string
			run  func(func(faxes.Tx) error) error
		}{
			{"outside a transaction", func(fn func(faxes.Tx) error) error { return fn(db) }},
			{"in a transaction", func(fn func(faxes.Tx) error) error {
				return db.InTx(ctx, func(tx core.Tx) error { return fn(tx.(faxes.Tx)) })
			}},
		} {
			err := tc.run(func(tx faxes.Tx) error {
				_, err := tx.SettleHold(ctx, f.ID, credits.LedgerRelease, now)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), refuseNoBalance) {
				t.Fatalf("release %s without a balance row: %v, want %q", tc.name, err, refuseNoBalance)
			}
			if n, held := state(); n != 2 || held != 1_000_000 {
				t.Fatalf("release %s without a balance row: %d ledger entries, %d held; want the grant and the hold, still open", tc.name, n, held)
			}
		}
		if _, err := db.SettleHold(ctx, f.ID, credits.LedgerCapture, now); err != nil {
			t.Fatalf("capture without a balance row: %v", err)
		}
		if n, held := state(); n != 3 || held != 0 {
			t.Fatalf("capture without a balance row: %d ledger entries, %d held; want the capture too, and the hold settled", n, held)
		}
	})
}
