//go:build bench

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/rest"
)

// The send path is also measured at these concurrencies, for its
// throughput and latency (4 s each).
var sweepClients = []int{1, 8, 128}

const (
	sweepDuration = 4 * time.Second
	sweepWarmUp   = 500 * time.Millisecond
	httpClients   = 32
	sendDuration  = 10 * time.Second
	getDuration   = 5 * time.Second
	warmUp        = time.Second
)

// apiServer serves rest.New for env on a loopback httptest server whose
// own URL is the API's base URL.
func apiServer(t *testing.T, env *testenv.Env) *httptest.Server {
	var h http.Handler
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	r := web.NewRouter(web.Origins{web.OriginBase: srv.URL, web.OriginAPI: srv.URL})
	rest.New(env.Svc, rest.Options{BaseURL: srv.URL, APIURL: srv.URL}, testLogger(t)).Register(r)
	h = r
	return srv
}

// newUpload creates an upload capability over HTTP and returns its token.
func newUpload(ctx context.Context, c *http.Client, srv *httptest.Server, key string) (string, error) {
	return newUploadAt(ctx, c, srv.URL, key)
}

// postForID makes a send request, checks that its 200 names the fax and
// returns the fax's id.
func postForID(client *http.Client, req *http.Request) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	if err := call(client, req, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", fmt.Errorf("POST %s answered 200 without an id", req.URL.Path)
	}
	return out.ID, nil
}

// benchOwner makes an owner with test credits to spend for a whole run
// and a test API key; it returns the owner's id and the key.
func benchOwner(ctx context.Context, t *testing.T, svc *services.Set, email string) (string, string) {
	t.Helper()
	o, err := svc.Accounts.CreateOwner(ctx, email, "Bench", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Credits.Grant(ctx, o.ID, core.ModeTest, 100_000*core.MicrosPerDollar, "benchmark"); err != nil {
		t.Fatal(err)
	}
	key, _, err := svc.Accounts.CreateAPIKey(ctx, o.ID, core.ModeTest, "bench")
	if err != nil {
		t.Fatal(err)
	}
	return o.ID, key
}

// benchEnv is a service for the HTTP benchmarks: SQLite whatever
// FAXHUB_TESTENV_POSTGRES says, no delivery workers (faxes stay queued),
// a rate limit that never refuses, and a million USD of test credits.
func benchEnv(t *testing.T, postgres string, cfg func(*services.Config)) *testenv.Env {
	env := testenv.New(t, testenv.WithPostgres(postgres), testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitSend, core.Rate{Interval: time.Microsecond, Burst: 1 << 30})
		if cfg != nil {
			cfg(c)
		}
	}))
	if _, err := env.Svc.Credits.Grant(t.Context(), env.OwnerA.ID, core.ModeTest, 1_000_000*core.MicrosPerDollar, "benchmark"); err != nil {
		t.Fatal(err)
	}
	return env
}

// benchSendAndGet measures POST /api/v1/faxes and then GET
// /api/v1/faxes/{id} of the faxes it created, each against its baseline.
func benchSendAndGet(t *testing.T, rep *report) {
	ctx := t.Context()
	env := benchEnv(t, "", nil)
	srv := apiServer(t, env)
	base := newBaseline(t)
	baseSrv := serve(t, base.handler(testLogger(t)))
	client := newClient(httpClients)
	defer client.CloseIdleConnections()

	token, err := newUpload(ctx, client, srv, env.KeyATest)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, "PUT", srv.URL+"/api/v1/uploads/"+token, bytes.NewReader(testenv.MinimalPDF(1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := call(client, req, nil); err != nil {
		t.Fatal(err)
	}
	body := []byte(fmt.Sprintf(`{"to":"+12125550100","uploadToken":%q}`, token))
	// One send first: the floors write as much as it answers.
	first, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/v1/faxes", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	first.Header.Set("Authorization", "Bearer "+env.KeyATest)
	first.Header.Set("Content-Type", "application/json")
	first.Header.Set("Idempotency-Key", "bench-first")
	var presented json.RawMessage
	if err := call(client, first, &presented); err != nil {
		t.Fatal(err)
	}
	checkFloorPresented(t, presented)

	var seq atomic.Int64
	post := func(url string, ids *idSample) func(ctx context.Context, c int) error {
		return func(ctx context.Context, c int) error {
			req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+env.KeyATest)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%d", seq.Add(1)))
			id, err := postForID(client, req)
			if err != nil {
				return err
			}
			ids.add(id)
			return nil
		}
	}
	faxIDs, rowIDs := &idSample{max: 5000}, &idSample{max: 5000}
	// Throughput and latency at other concurrencies first (the 32-client
	// figure below is the target's), faxhub and baseline back to back.
	for _, n := range sweepClients {
		fx, err := hammer(ctx, n, sweepWarmUp, sweepDuration, post(srv.URL+"/api/v1/faxes", faxIDs))
		if err != nil {
			t.Fatalf("faxhub sendFax, %d clients: %v", n, err)
		}
		bl, err := hammer(ctx, n, sweepWarmUp, sweepDuration, post(baseSrv.URL+"/baseline/faxes", rowIDs))
		if err != nil {
			t.Fatalf("baseline insert, %d clients: %v", n, err)
		}
		addSendRows(rep, n, sweepDuration, fx, bl, noTarget(), "")
	}
	// The target's three loads take turns (interleaved), so that a drift
	// of the disk lands on each alike; only faxhub's writes go through
	// env's writer, so its counters are faxhub's alone.
	floorSrv := serve(t, newSendFloor(t).handler(func(ctx context.Context, err error) { t.Errorf("send floor: %v", err) }))
	writes0, batches0 := writerStats(env)
	rs, err := interleaved(ctx, httpClients, warmUp, sendDuration,
		post(srv.URL+"/api/v1/faxes", faxIDs), post(baseSrv.URL+"/baseline/faxes", rowIDs), post(floorSrv.URL+"/floor/faxes", &idSample{}))
	if err != nil {
		t.Fatalf("faxhub sendFax (load 0), the one-INSERT baseline (1) and the send floor (2): %v", err)
	}
	fx, bl, fl := rs[0], rs[1], rs[2]
	writes, batches := writerStats(env)
	t.Logf("sendFax: faxhub %d requests in %s, baseline %d in %s, floor %d in %s", fx.requests, fx.elapsed.Round(time.Millisecond),
		bl.requests, bl.elapsed.Round(time.Millisecond), fl.requests, fl.elapsed.Round(time.Millisecond))
	addSendRows(rep, httpClients, sendDuration, fx, bl, ratioAtLeast(0.5),
		fmt.Sprintf("sendFax: API-key lookup, strict JSON, destination check, the upload's document (one read), "+
			"then one transaction writing the idempotency record, charging the rate limiter, marking the document used and writing the fax, "+
			"credit hold and balance, delivery job and fax.queued event; "+
			"concurrent sends share SQLite's writer and commit together (%.1f sends per commit in this phase). "+
			"Baseline: one INSERT in an immediate transaction, one commit each. Clients share the 2 CPUs with the servers, equally for both. "+
			"faxhub, the baseline and the floor %s, so that a drift of the disk lands on all three.",
			float64(writes-writes0)/float64(max(batches-batches0, 1)), inTurns(sendDuration)))
	rep.add(fmt.Sprintf("sendFax  floor: its writes alone, SQLite, %d clients, %s", httpClients, sendDuration), "req/s",
		fl.perSecond(), bl.perSecond(), noTarget(), 0,
		"Send floor: an HTTP handler that commits exactly the rows a credit send commits (idempotency record, rate-limit charge, document use, "+
			"fax, credit hold and balance, delivery job, fax.queued event) with the store's statements on faxhub's own schema, through the same group writer, "+
			"and does nothing else (no API key, no reads, no validation). Its ratio is the most any sendFax could read against the one-INSERT baseline.")
	rep.add(fmt.Sprintf("sendFax  against its floor (faxhub / floor), %d clients", httpClients), "req/s", fx.perSecond(), fl.perSecond(), ratioAtLeast(0.85), 0, "")

	get := func(prefix string, ids []string) func(ctx context.Context, c int) error {
		return func(ctx context.Context, c int) error {
			id := ids[rand.IntN(len(ids))]
			req, err := http.NewRequestWithContext(ctx, "GET", prefix+id, nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+env.KeyATest)
			var out struct {
				ID string `json:"id"`
			}
			if err := call(client, req, &out); err != nil {
				return err
			}
			if out.ID != id {
				return fmt.Errorf("GET %s answered id %q", req.URL.Path, out.ID)
			}
			return nil
		}
	}
	fg, err := hammer(ctx, httpClients, warmUp, getDuration, get(srv.URL+"/api/v1/faxes/", faxIDs.get()))
	if err != nil {
		t.Fatalf("faxhub getFax: %v", err)
	}
	bg, err := hammer(ctx, httpClients, warmUp, getDuration, get(baseSrv.URL+"/baseline/faxes/", rowIDs.get()))
	if err != nil {
		t.Fatalf("baseline select: %v", err)
	}
	t.Logf("getFax: faxhub %d requests in %s, baseline %d in %s", fg.requests, fg.elapsed.Round(time.Millisecond), bg.requests, bg.elapsed.Round(time.Millisecond))
	rep.add(fmt.Sprintf("getFax   GET /api/v1/faxes/{id}, SQLite, %d clients, %s", httpClients, getDuration), "req/s",
		fg.perSecond(), bg.perSecond(), ratioAtLeast(0.6), 0,
		"getFax: API-key lookup, fax by id and owner, latest attempt. Baseline: one primary-key SELECT through a read-only pool "+
			"with the store's reader settings and size.")
}

// addSendRows reports a send phase: throughput against the baseline, then
// its median and 99th-percentile latency against the baseline's.
func addSendRows(rep *report, clients int, d time.Duration, fx, bl loadResult, g goal, note string) {
	rep.add(fmt.Sprintf("sendFax  POST /api/v1/faxes, SQLite, %d clients, %s", clients, d), "req/s",
		fx.perSecond(), bl.perSecond(), g, 0, note)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.50}, {"p99", 0.99}} {
		rep.add(fmt.Sprintf("sendFax  latency %s, %d clients", q.name, clients), "ms",
			ms(fx.percentile(q.q)), ms(bl.percentile(q.q)), noTarget(), 2, "")
	}
}

// writerStats reads how the SQLite writer batched: transactions, commits.
func writerStats(env *testenv.Env) (writes, batches int64) {
	if ws, ok := env.Store.(interface{ WriterStats() (int64, int64, int64) }); ok {
		writes, batches, _ = ws.WriterStats()
	}
	return writes, batches
}
