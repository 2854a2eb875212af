package stripetest_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core/store"
	"github.com/faxhub/faxhub/internal/require"
	"github.com/faxhub/faxhub/internal/stripetest"
	"github.com/faxhub/faxhub/internal/testenv"
)

// opener makes a stand-in on a fresh state of the backend under test.
type opener func(t *testing.T, opts ...stripetest.Option) *stripetest.Server

// eachBackend runs test on every state backend: memory, and the database
// (the tables of faxhub's migrations, through faxhub's own store pools) on
// SQLite and on PostgreSQL.
func eachBackend(t *testing.T, test func(*testing.T, opener)) {
	t.Run("memory", func(t *testing.T) {
		test(t, func(_ *testing.T, opts ...stripetest.Option) *stripetest.Server { return stripetest.New(opts...) })
	})
	for _, dialect := range []string{store.DialectSQLite, store.DialectPostgres} {
		t.Run(dialect, func(t *testing.T) {
			test(t, func(t *testing.T, opts ...stripetest.Option) *stripetest.Server {
				db := openDB(t, freshDSN(t, dialect))
				return stripetest.New(append(opts, stripetest.WithDatabase(db.SQL(), db.Dialect()))...)
			})
		})
	}
}

// freshDSN is a new database of dialect: on SQLite a copy of one already
// migrated (testenv.MigratedDataDir), whose Migrate then finds nothing to do.
func freshDSN(t *testing.T, dialect string) string {
	t.Helper()
	if dialect == store.DialectSQLite {
		return filepath.Join(testenv.MigratedDataDir(t), "faxhub.db")
	}
	pg := os.Getenv(storetest.EnvPostgresURL)
	if pg == "" {
		pg = os.Getenv("FAXHUB_TESTENV_POSTGRES")
	}
	if pg == "" {
		require.Missing(t, "PostgreSQL", storetest.EnvPostgresURL+" is not set (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return storetest.OpenPostgresSchema(t, pg)
}

// openDB opens and migrates dsn as faxhub does; each call is its own pool,
// as each replica has its own.
func openDB(t *testing.T, dsn string) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestReplicas is two replicas sharing one database: what one mints,
// another settles; a replay and a refund land on either.
func TestReplicas(t *testing.T) {
	for _, dialect := range []string{store.DialectSQLite, store.DialectPostgres} {
		t.Run(dialect, func(t *testing.T) {
			dsn := freshDSN(t, dialect)
			replica := func() *stripetest.Server {
				db := openDB(t, dsn)
				return stripetest.New(stripetest.WithDatabase(db.SQL(), db.Dialect()))
			}
			a, b := replica(), replica()

			mint := do(t, a, "POST", "/v1/test_helpers/shared_payment/granted_tokens", "", url.Values{"payment_method": {"pm_card_visa"}, "usage_limits[currency]": {"usd"}, "usage_limits[max_amount]": {"500"}, "seller_details[network_id]": {stripetest.DefaultProfile}}, nil)
			if mint.status != 200 {
				t.Fatalf("mint on A: %v", mint.body)
			}
			spt := mint.body["id"].(string)
			paid := do(t, b, "POST", "/v1/payment_intents", "pay-1", piForm(spt, "500"), nil)
			if paid.status != 200 || paid.body["status"] != "succeeded" {
				t.Fatalf("settle on B: %d %v", paid.status, paid.body)
			}
			again := do(t, a, "POST", "/v1/payment_intents", "pay-1", piForm(spt, "500"), nil)
			if again.status != 200 || !again.replayed || again.body["id"] != paid.body["id"] {
				t.Fatalf("replay on A: %d replayed=%v %v", again.status, again.replayed, again.body)
			}
			if other := do(t, a, "POST", "/v1/payment_intents", "pay-1", piForm(spt, "499"), nil); other.errField("type") != "idempotency_error" {
				t.Fatalf("same key, other parameters, on A: %v", other.body)
			}
			id := paid.body["id"].(string)
			if g := do(t, a, "GET", "/v1/payment_intents/"+id, "", nil, nil); g.status != 200 || g.body["status"] != "succeeded" {
				t.Fatalf("retrieve on A: %v", g.body)
			}
			if re := do(t, b, "POST", "/v1/refunds", "refund-1", url.Values{"payment_intent": {id}, "amount": {"200"}}, nil); re.status != 200 {
				t.Fatalf("refund on B: %v", re.body)
			}
			if re := do(t, a, "POST", "/v1/refunds", "refund-2", url.Values{"payment_intent": {id}, "amount": {"301"}}, nil); re.errField("code") != "amount_too_large" {
				t.Fatalf("refund on A sees B's: %v", re.body)
			}
			for name, s := range map[string]*stripetest.Server{"A": a, "B": b} {
				if s.Charges() != 1 || s.Refunds() != 1 {
					t.Errorf("%s counts %d charges, %d refunds; want 1, 1", name, s.Charges(), s.Refunds())
				}
			}
		})
	}
}

// TestReplicasConcurrentSettle settles one token from both replicas at
// once, with distinct idempotency keys: exactly one charge succeeds and
// every other attempt is told the token was consumed.
func TestReplicasConcurrentSettle(t *testing.T) {
	for _, dialect := range []string{store.DialectSQLite, store.DialectPostgres} {
		t.Run(dialect, func(t *testing.T) {
			dsn := freshDSN(t, dialect)
			var replicas []*stripetest.Server
			for range 2 {
				db := openDB(t, dsn)
				replicas = append(replicas, stripetest.New(stripetest.WithDatabase(db.SQL(), db.Dialect())))
			}
			spt, err := replicas[0].Mint("pm_card_visa", 100, "usd")
			if err != nil {
				t.Fatal(err)
			}
			const perReplica = 4
			type result struct {
				status int
				code   string
			}
			results := make(chan result, 2*perReplica)
			var wg sync.WaitGroup
			for i, s := range replicas {
				for j := range perReplica {
					wg.Add(1)
					go func() {
						defer wg.Done()
						a := do(t, s, "POST", "/v1/payment_intents", "settle-"+string(rune('a'+i))+string(rune('0'+j)), piForm(spt, "100"), nil)
						results <- result{a.status, a.errField("code")}
					}()
				}
			}
			wg.Wait()
			close(results)
			ok := 0
			for r := range results {
				switch {
				case r.status == http.StatusOK:
					ok++
				case r.status == http.StatusBadRequest && r.code == "shared_payment_granted_token_consumed":
				default:
					t.Errorf("unexpected answer %d %q", r.status, r.code)
				}
			}
			if ok != 1 || replicas[1].Charges() != 1 {
				t.Fatalf("%d settles succeeded, %d charges; want exactly 1", ok, replicas[1].Charges())
			}
		})
	}
}

// TestIdempotencyExpires: a key is remembered for 24 hours, then a request
// with it executes afresh.
func TestIdempotencyExpires(t *testing.T) { eachBackend(t, idempotencyExpires) }

func idempotencyExpires(t *testing.T, open opener) {
	clk := &clock{t0}
	s := open(t, stripetest.WithClock(clk.now))
	declined, err := s.Mint("pm_card_chargeDeclined", 100, "usd")
	if err != nil {
		t.Fatal(err)
	}
	first := do(t, s, "POST", "/v1/payment_intents", "k", piForm(declined, "100"), nil)
	clk.t = clk.t.Add(23 * time.Hour)
	if a := do(t, s, "POST", "/v1/payment_intents", "k", piForm(declined, "100"), nil); !a.replayed {
		t.Fatalf("within 24 h: not replayed: %v", a.body)
	}
	clk.t = clk.t.Add(2 * time.Hour)
	// The token expired an hour after minting: a fresh execution says so,
	// where a replay would repeat the decline.
	a := do(t, s, "POST", "/v1/payment_intents", "k", piForm(declined, "100"), nil)
	if a.replayed || a.errField("code") != "shared_payment_granted_token_expired" {
		t.Fatalf("after 24 h: %d replayed=%v %v (first was %d)", a.status, a.replayed, a.body, first.status)
	}
}
