//go:build bench

package bench

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/queue"
	"github.com/faxhub/faxhub/internal/testenv"
)

const (
	deliveryFaxes    = 10_000
	deliveryTarget   = 1000 // faxes/s on SQLite
	deliveryTimeout  = 10 * time.Minute
	deliveryCreators = 8
)

// deliverySQLiteName is the SQLite delivery row, which the PostgreSQL
// figure is compared with.
func deliverySQLiteName() string {
	return fmt.Sprintf("delivery %s faxes, simulated provider at 0 delay, SQLite", group(deliveryFaxes, 0))
}

func benchDeliverySQLite(t *testing.T, rep *report) {
	rate, note := deliveryRate(t, "")
	rep.add(deliverySQLiteName(), "faxes/s", rate, nan, atLeast(deliveryTarget, "faxes/s"), 0, note)
}

func benchDeliveryPostgres(t *testing.T, rep *report) {
	name := fmt.Sprintf("delivery %s faxes, simulated provider at 0 delay, PostgreSQL", group(deliveryFaxes, 0))
	url := os.Getenv(storetest.EnvPostgresURL)
	if url == "" {
		rep.skipped(name, storetest.EnvPostgresURL+" is not set (make bench sets it)")
		t.Skip(storetest.EnvPostgresURL + " is not set")
	}
	rate, note := deliveryRate(t, url)
	rep.add(name, "faxes/s", rate, nan, noTarget(), 0, note)
	if sqlite, ok := rep.figure(deliverySQLiteName()); ok {
		rep.add("delivery PostgreSQL against SQLite", "faxes/s", rate, sqlite, ratioAtLeast(0.5), 0,
			"delivery PostgreSQL / SQLite: one process either way, on the 2-core machine where PostgreSQL runs beside it; "+
				"SQLite commits in-process through one writer, PostgreSQL over a socket to another process. "+
				"On PostgreSQL several replicas share one queue's deliveries, which SQLite's one process cannot.")
	}
}

// deliveryRate creates deliveryFaxes faxes with faxes.Service.Send (not
// timed), then starts a queue with workers on the same database and times
// until every fax is delivered: no River job pending and every fax in
// status delivered.
func deliveryRate(t *testing.T, postgres string) (float64, string) {
	ctx := t.Context()
	env := benchEnv(t, postgres, nil)
	db := env.DB.SQL()
	p := env.Principal(t, env.KeyATest)
	doc := benchDocument(t, env, p)

	// The faxes, from a few goroutines (one per fax would only queue on
	// the SQLite writer).
	cctx, cancel := context.WithTimeout(ctx, deliveryTimeout)
	defer cancel()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, deliveryCreators)
	for range deliveryCreators {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > deliveryFaxes {
					return
				}
				if _, _, err := env.Svc.Faxes.Send(cctx, p, fmt.Sprintf("delivery-%d", i), faxes.SendRequest{To: "+12125550100", DocumentID: doc}); err != nil {
					errs <- fmt.Errorf("create fax %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	created := time.Since(start)
	pending, err := testenv.PendingJobs(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if pending != deliveryFaxes {
		t.Fatalf("%d jobs pending after creating %d faxes", pending, deliveryFaxes)
	}
	t.Logf("created %d faxes in %s (not timed)", deliveryFaxes, created.Round(time.Millisecond))

	// Deliveries are counted as they return so that the database is polled
	// only at the end: on SQLite db is the single writer connection, and
	// polling it would take turns from the workers.
	var returned atomic.Int64
	deliver := func(ctx context.Context, faxID string) error {
		err := env.Svc.Faxes.Deliver(ctx, faxID)
		if err == nil {
			returned.Add(1)
		}
		return err
	}
	dctx, dcancel := context.WithTimeout(ctx, deliveryTimeout)
	defer dcancel()
	start = time.Now()
	defer startQueue(t, dctx, env, deliver)()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	wait := func(what string, done func() (bool, error)) {
		for {
			ok, err := done()
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				return
			}
			select {
			case <-tick.C:
			case <-dctx.Done():
				t.Fatalf("%s not reached after %s: %d deliveries returned; faxes by status: %s", what, deliveryTimeout, returned.Load(), statusCounts(context.WithoutCancel(ctx), db))
			}
		}
	}
	wait("every delivery returned", func() (bool, error) { return returned.Load() >= deliveryFaxes, nil })
	allReturned := time.Since(start)
	wait("no job pending and every fax delivered", func() (bool, error) {
		n, err := testenv.PendingJobs(dctx, db)
		if err != nil || n > 0 {
			return false, err
		}
		var delivered int
		if err := db.QueryRowContext(dctx, "SELECT count(*) FROM faxes WHERE status = 'delivered'").Scan(&delivered); err != nil {
			return false, err
		}
		return delivered == deliveryFaxes, nil
	})
	elapsed := time.Since(start)
	rate := deliveryFaxes / elapsed.Seconds()
	t.Logf("delivered %d faxes in %s = %.0f/s (last delivery returned at %s); faxes by status: %s",
		deliveryFaxes, elapsed.Round(time.Millisecond), rate, allReturned.Round(time.Millisecond), statusCounts(ctx, db))
	return rate, fmt.Sprintf("delivery (%s): %s faxes delivered in %s by a queue with default options, timed until no River job is pending "+
		"and every fax is delivered; creating them with SendFax took %s and is not counted.",
		env.DB.Dialect(), group(deliveryFaxes, 0), elapsed.Round(time.Millisecond), created.Round(100*time.Millisecond))
}

// benchDocument uploads a one-page PDF for p and returns its document id.
func benchDocument(t *testing.T, env *testenv.Env, p core.Principal) string {
	t.Helper()
	up, err := env.Svc.Documents.CreateUpload(t.Context(), p, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := env.Svc.Documents.ReceiveUpload(t.Context(), up.UploadToken, bytes.NewReader(testenv.MinimalPDF(1)))
	if err != nil {
		t.Fatal(err)
	}
	return doc.ID
}

// startQueue starts a queue with default options on env's database, deliver
// its delivery handler, until ctx ends; it returns the function that stops it.
func startQueue(t *testing.T, ctx context.Context, env *testenv.Env, deliver func(context.Context, string) error) (stop func()) {
	t.Helper()
	q, err := queue.New(env.DB.QueuePool(), env.DB.Dialect(), queue.Handlers{Deliver: deliver, Outcome: env.Svc.Faxes.RecordProviderOutcome}, queue.Options{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := q.Stop(sctx); err != nil {
			t.Errorf("stop queue: %v", err)
		}
	}
}

// statusCounts lists how many faxes are in each status.
func statusCounts(ctx context.Context, db *sql.DB) string {
	rows, err := db.QueryContext(ctx, "SELECT status, count(*) FROM faxes GROUP BY status ORDER BY status")
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return err.Error()
		}
		parts = append(parts, fmt.Sprintf("%s %d", status, n))
	}
	if err := rows.Err(); err != nil {
		return err.Error()
	}
	return strings.Join(parts, ", ")
}
