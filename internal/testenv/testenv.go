// Package testenv builds a real, fully wired faxhub service for tests: a
// SQLite database in a temp dir (or PostgreSQL with WithPostgres), file
// blobs, the real converter and destination checker, the River queue with
// workers, the simulated provider at zero delay and the test checkout. Two
// owners with keys and test credits are ready to use.
package testenv

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/queue"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/store"
	"github.com/faxhub/faxhub/internal/app"
)

// EnvPostgres names the variable that moves every Env onto PostgreSQL.
const EnvPostgres = "FAXHUB_TESTENV_POSTGRES"

// Env is a running service and its fixtures.
type Env struct {
	// App is the wired process (its Handler is the whole HTTP surface).
	App    *app.App
	Svc    *services.Set
	Store  services.Store
	DB     *store.DB
	Queue  *queue.Queue
	Server *httptest.Server
	// DataDir is the process's data directory (its file blobs under
	// blobs/).
	DataDir string

	OwnerA, OwnerB               *accounts.Owner
	KeyATest, KeyALive, KeyBTest string

	t testing.TB
}

type options struct {
	credits  bool
	postgres string
	cfg      func(*services.Config)
	workers  bool
	machine  bool
	stripe   app.StripeOptions
	telnyx   app.TelnyxOptions
	metrics  bool
	webhooks app.WebhookOptions
	mcpOAuth bool
}

// Option changes how New builds the environment.
type Option func(*options)

// WithMCPOAuth turns on authorization for OAuth clients (--mcp-oauth on,
// serve's default): chat apps and faxhub login.
func WithMCPOAuth() Option { return func(o *options) { o.mcpOAuth = true } }

// WithoutCredits leaves both owners with a zero balance.
func WithoutCredits() Option { return func(o *options) { o.credits = false } }

// WithConfig adjusts the service configuration before it is built.
func WithConfig(f func(*services.Config)) Option {
	return func(o *options) {
		prev := o.cfg
		o.cfg = func(c *services.Config) {
			if prev != nil {
				prev(c)
			}
			f(c)
		}
	}
}

// WithPostgres runs on a fresh schema of the PostgreSQL server at baseURL.
func WithPostgres(baseURL string) Option { return func(o *options) { o.postgres = baseURL } }

// WithStripe configures Stripe (live checkouts through Stripe Checkout and
// its webhook), usually against stripe-mock or a stand-in.
func WithStripe(st app.StripeOptions) Option { return func(o *options) { o.stripe = st } }

// WithTelnyx configures Telnyx as live mode's provider, usually against
// the stand-in (internal/telnyxstandin).
func WithTelnyx(tx app.TelnyxOptions) Option { return func(o *options) { o.telnyx = tx } }

// WithWebhooks sets the operator's webhook options (a sender of the
// test's own, private addresses allowed, the dispatcher's poll).
func WithWebhooks(w app.WebhookOptions) Option { return func(o *options) { o.webhooks = w } }

// WithoutWorkers builds an insert-only queue: jobs wait until the test
// delivers them with DeliverAll.
func WithoutWorkers() Option { return func(o *options) { o.workers = false } }

// WithMachinePayments turns machine payments on, with the embedded
// default methods (the built-in Stripe test backend).
func WithMachinePayments() Option { return func(o *options) { o.machine = true } }

// WithMetrics turns metrics on (app.Options.MetricsAddr on a free
// loopback port): the HTTP surface and core count, and App.StartMetrics
// serves them.
func WithMetrics() Option { return func(o *options) { o.metrics = true } }

// migrated is the SQLite database every env on SQLite starts from: faxhub's
// and River's migrations applied once per test binary (app.OpenDB), then
// copied. It is the one package-level variable here, because tests that
// never meet share it; see storetest.SQLiteTemplate for why it exists.
var migrated = storetest.SQLiteTemplate{Make: func(ctx context.Context, path string) error {
	db, err := app.OpenDB(ctx, filepath.Dir(path), path)
	if err != nil {
		return err
	}
	return db.Close()
}}

// MigratedDataDir returns a new data dir (removed when t ends) holding a
// migrated SQLite database where app.Open looks for it when
// Options.Database is empty.
func MigratedDataDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	migrated.CopyTo(t, filepath.Join(dir, "faxhub.db"))
	return dir
}

// DataDirFor is the data dir of an app.Options whose Database is dsn: a
// MigratedDataDir on SQLite (dsn empty), else an empty new one.
func DataDirFor(t testing.TB, dsn string) string {
	t.Helper()
	if dsn == "" {
		return MigratedDataDir(t)
	}
	return t.TempDir()
}

// New builds and starts the environment; everything stops at test cleanup.
func New(t testing.TB, opts ...Option) *Env {
	// FAXHUB_TESTENV_POSTGRES runs every testenv-based suite on PostgreSQL;
	// make check does so in a second pass.
	o := options{credits: true, workers: true, postgres: os.Getenv(EnvPostgres)}
	for _, f := range opts {
		f(&o)
	}
	ctx := context.Background()
	dsn := ""
	if o.postgres != "" {
		dsn = storetest.OpenPostgresSchema(t, o.postgres)
	}
	dir := DataDirFor(t, dsn)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := app.Open(ctx, app.Options{
		BaseURL: "http://faxhub.test", DataDir: dir, Database: dsn,
		SimTimeScale: 0, PollInterval: 20 * time.Millisecond, InsertOnly: !o.workers, MachinePayments: o.machine, MCPOAuth: o.mcpOAuth,
		Core: func(c *services.Config) {
			c.Faxes.NoRetryDelay = true
			if o.cfg != nil {
				o.cfg(c)
			}
		},
		Stripe:      o.stripe,
		Telnyx:      o.telnyx,
		Webhooks:    o.webhooks,
		MetricsAddr: metricsAddr(o.metrics),
		Logger:      log,
	})
	must(t, err)
	t.Cleanup(func() { a.Close() })
	if o.workers {
		// The queue's workers and the webhook dispatcher, as serve runs
		// them.
		must(t, a.Start(ctx))
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = a.Stop(sctx)
		})
	}
	db, q, svc := a.DB, a.Queue, a.Svc

	e := &Env{App: a, Svc: svc, Store: db, DB: db, Queue: q, DataDir: dir, t: t}
	e.OwnerA, e.KeyATest, e.KeyALive = e.owner(t, "a@example.com", o.credits)
	e.OwnerB, e.KeyBTest, _ = e.owner(t, "b@example.com", o.credits)
	return e
}

func (e *Env) owner(t testing.TB, email string, credits bool) (*accounts.Owner, string, string) {
	ctx := context.Background()
	o, err := e.Svc.Accounts.CreateOwner(ctx, email, "Owner "+email, true)
	must(t, err)
	test, _, err := e.Svc.Accounts.CreateAPIKey(ctx, o.ID, core.ModeTest, "test")
	must(t, err)
	live, _, err := e.Svc.Accounts.CreateAPIKey(ctx, o.ID, core.ModeLive, "live")
	must(t, err)
	if credits {
		_, err = e.Svc.Credits.Grant(ctx, o.ID, core.ModeTest, 10*core.MicrosPerDollar, "test fixture")
		must(t, err)
	}
	return o, test, live
}

// Principal returns the principal of an API key secret.
func (e *Env) Principal(t testing.TB, key string) core.Principal {
	p, err := e.Svc.Accounts.AuthenticateAPIKey(context.Background(), key)
	must(t, err)
	return p
}

// Serve starts h on an httptest server (closed at cleanup).
func (e *Env) Serve(h http.Handler) *httptest.Server {
	e.Server = httptest.NewServer(h)
	e.t.Cleanup(e.Server.Close)
	return e.Server
}

// DrainQueue waits until no delivery job is waiting or running (scheduled
// retries included), failing the test after 20 seconds.
func (e *Env) DrainQueue(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := PendingJobs(context.Background(), e.DB.SQL())
		must(t, err)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue still has %d pending jobs after 20s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PendingJobs counts River jobs that will still run.
func PendingJobs(ctx context.Context, db *sql.DB) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM river_job WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending')`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count pending jobs: %w", err)
	}
	return n, nil
}

func metricsAddr(on bool) string {
	if on {
		return "127.0.0.1:0"
	}
	return ""
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testWriter sends log lines to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
