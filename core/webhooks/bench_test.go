//go:build bench

package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/webhooks"
	"github.com/faxhub/faxhub/internal/testenv"
)

// TestBenchSendWithEndpoint measures the two figures on this
// machine (go test -tags bench -run TestBenchSendWithEndpoint
// ./core/webhooks/ -v): sends per second with one webhook endpoint
// against none, workers and the dispatcher running (so deliveries share
// the database with the sends), and events delivered per second to a
// local receiver. FAXHUB_TESTENV_POSTGRES runs it on PostgreSQL.
func TestBenchSendWithEndpoint(t *testing.T) {
	const clients, dur = 16, 5 * time.Second
	var received atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	run := func(withEndpoint, workers bool) (sends float64, delivered float64) {
		opts := []testenv.Option{testenv.WithConfig(func(c *services.Config) {
			c.SetLimit(core.LimitSend, core.Rate{Interval: time.Microsecond, Burst: 1 << 30})
			c.Webhooks.AllowPrivate = true
		})}
		if !workers {
			opts = append(opts, testenv.WithoutWorkers())
		}
		e := testenv.New(t, opts...)
		p := e.Principal(t, e.KeyATest)
		if _, err := e.Svc.Credits.Grant(ctx, e.OwnerA.ID, core.ModeTest, 1_000_000*core.MicrosPerDollar, "bench"); err != nil {
			t.Fatal(err)
		}
		if withEndpoint {
			if _, err := e.Svc.Webhooks.Create(ctx, p, webhooks.CreateRequest{URL: rcv.URL}); err != nil {
				t.Fatal(err)
			}
		}
		tok := e.Upload(t, p, 1)
		first, _, err := e.Svc.Faxes.Send(ctx, p, "warm", faxes.SendRequest{To: "+12125550100", UploadToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		received.Store(0)
		var n atomic.Int64
		var wg sync.WaitGroup
		cctx, cancel := context.WithTimeout(ctx, dur)
		defer cancel()
		start := time.Now()
		for c := range clients {
			wg.Go(func() {
				for i := 0; cctx.Err() == nil; i++ {
					_, _, err := e.Svc.Faxes.Send(cctx, p, fmt.Sprintf("b-%d-%d", c, i), faxes.SendRequest{To: "+12125550100", DocumentID: first.DocumentID})
					if err == nil {
						n.Add(1)
					} else if cctx.Err() == nil {
						t.Errorf("send: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		el := time.Since(start)
		sends = float64(n.Load()) / el.Seconds()
		got := received.Load()
		delivered = float64(got) / el.Seconds()
		t.Logf("workers=%v endpoint=%v: %d sends in %v (%.0f/s); %d events delivered meanwhile (%.0f/s)", workers, withEndpoint, n.Load(), el.Round(time.Millisecond), sends, got, delivered)
		if withEndpoint && workers {
			// The backlog: how long until every event is delivered.
			drained := time.Now()
			e.DrainQueue(t)
			t.Logf("backlog drained in %v; %d events delivered in all", time.Since(drained).Round(time.Millisecond), received.Load())
		}
		return sends, delivered
	}
	// The send path alone (no workers: the dispatcher and deliveries do
	// not run), then the whole process.
	base, _ := run(false, false)
	with, _ := run(true, false)
	t.Logf("send path only: ratio (one endpoint / none) %.2f", with/base)
	base, _ = run(false, true)
	with, delivered := run(true, true)
	t.Logf("with workers: ratio (one endpoint / none) %.2f; delivered %.0f events/s meanwhile (%s)", with/base, delivered, os.Getenv(testenv.EnvPostgres))
}
