//go:build bench

package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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

const (
	// webhookBurstFaxes faxes, each writing fax.queued, fax.sending and
	// fax.delivered, make the burst of events the delivery rate is timed on.
	webhookBurstFaxes   = 500
	webhookBurstTimeout = 5 * time.Minute
)

// hookReceiver counts deliveries by webhook-id, answering 204 at once.
type hookReceiver struct {
	mu    sync.Mutex
	ids   map[string]struct{}
	total atomic.Int64
	last  atomic.Int64 // unix nanoseconds of the latest new id
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("webhook-id")
	h.total.Add(1)
	h.mu.Lock()
	if _, ok := h.ids[id]; !ok {
		h.ids[id] = struct{}{}
		h.last.Store(time.Now().UnixNano())
	}
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (h *hookReceiver) distinct() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ids)
}

// webhookEnv is benchEnv's service (SQLite, a rate limit that never
// refuses, a million USD of test credits) with delivery workers and the
// webhook dispatcher running when workers is set, and deliveries to
// loopback allowed.
func webhookEnv(t *testing.T, workers bool) *testenv.Env {
	opts := []testenv.Option{testenv.WithPostgres(""), testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitSend, core.Rate{Interval: time.Microsecond, Burst: 1 << 30})
		c.Webhooks.AllowPrivate = true
	})}
	if !workers {
		opts = append(opts, testenv.WithoutWorkers())
	}
	env := testenv.New(t, opts...)
	if _, err := env.Svc.Credits.Grant(t.Context(), env.OwnerA.ID, core.ModeTest, 1_000_000*core.MicrosPerDollar, "benchmark"); err != nil {
		t.Fatal(err)
	}
	return env
}

// sendPhase runs the send row's benchmark (POST /api/v1/faxes over HTTP,
// httpClients clients, sendDuration) against a fresh service, with one
// webhook endpoint of the owner's (every event type) or none.
// Each phase is a subtest: its service (and its workers' backlog) stops
// when it ends, before the next phase starts.
func sendPhase(t *testing.T, workers, endpoint bool, rcvURL string) loadResult {
	var res loadResult
	t.Run(fmt.Sprintf("workers=%v,endpoint=%v", workers, endpoint), func(t *testing.T) { res = sendPhaseIn(t, workers, endpoint, rcvURL) })
	return res
}

func sendPhaseIn(t *testing.T, workers, endpoint bool, rcvURL string) loadResult {
	ctx := t.Context()
	env := webhookEnv(t, workers)
	if endpoint {
		if _, err := env.Svc.Webhooks.Create(ctx, env.Principal(t, env.KeyATest), webhooks.CreateRequest{URL: rcvURL}); err != nil {
			t.Fatal(err)
		}
	}
	srv := apiServer(t, env)
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
	var seq atomic.Int64
	res, err := hammer(ctx, httpClients, warmUp, sendDuration, func(ctx context.Context, c int) error {
		req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/v1/faxes", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+env.KeyATest)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("hooks-%d", seq.Add(1)))
		return call(client, req, nil)
	})
	if err != nil {
		t.Fatalf("sendFax (workers %v, endpoint %v): %v", workers, endpoint, err)
	}
	t.Logf("sendFax workers=%v endpoint=%v: %d requests in %s (%.0f/s)", workers, endpoint, res.requests, res.elapsed.Round(time.Millisecond), res.perSecond())
	return res
}

// benchWebhooks: (a) the send path with one webhook endpoint configured
// against none, delivery workers off (what the send itself pays: marking
// its events for dispatch); (b) the same with workers, the dispatcher and
// deliveries running (they share SQLite's writer with the sends); (c)
// events delivered per second to a local receiver, from the first commit
// of a burst to the last delivery.
func benchWebhooks(t *testing.T, rep *report) {
	rcv := &hookReceiver{ids: map[string]struct{}{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()

	without := sendPhase(t, false, false, srv.URL)
	with := sendPhase(t, false, true, srv.URL)
	rep.add(fmt.Sprintf("sendFax  with one webhook endpoint, no workers, SQLite, %d clients, %s", httpClients, sendDuration), "req/s",
		with.perSecond(), without.perSecond(), ratioAtLeast(0.9), 0,
		"sendFax with one webhook endpoint (every event type) against none, the send row's benchmark, delivery workers and the webhook dispatcher off: "+
			"what the send path pays for webhooks (its event insert marks the event for dispatch: one indexed EXISTS on the owner's endpoints). "+
			"Each side on a fresh service; the machine's 2 CPUs were shared with other work.")

	rcv.total.Store(0)
	withoutW := sendPhase(t, true, false, srv.URL)
	withW := sendPhase(t, true, true, srv.URL)
	rep.add(fmt.Sprintf("sendFax  with one webhook endpoint, deliveries running, SQLite, %d clients, %s", httpClients, sendDuration), "req/s",
		withW.perSecond(), withoutW.perSecond(), noTarget(), 0,
		fmt.Sprintf("The same with workers on both sides (faxes delivered by the simulated provider at 0 delay) and, with the endpoint, the dispatcher "+
			"and webhook deliveries running at the same time (%d deliveries during the phase): each delivery costs SQLite writer time "+
			"(its River job inserted, run and completed; the delivery row; the attempt written before the request and recorded after), "+
			"taken from the sends. Reported, not a target.", rcv.total.Load()))

	rate, note := webhookBurst(t, srv.URL, rcv)
	rep.add(fmt.Sprintf("webhooks events delivered, burst of %s faxes (%s events), SQLite", group(webhookBurstFaxes, 0), group(3*webhookBurstFaxes, 0)), "events/s",
		rate, nan, noTarget(), 0, note)
}

// webhookBurst creates webhookBurstFaxes faxes as fast as 8 senders can,
// with workers and the dispatcher running and one endpoint subscribed to
// every type, and times from just before the first send to the last of
// the 3 × webhookBurstFaxes events reaching the receiver.
func webhookBurst(t *testing.T, rcvURL string, rcv *hookReceiver) (float64, string) {
	ctx := t.Context()
	env := webhookEnv(t, true)
	p := env.Principal(t, env.KeyATest)
	if _, err := env.Svc.Webhooks.Create(ctx, p, webhooks.CreateRequest{URL: rcvURL}); err != nil {
		t.Fatal(err)
	}
	tok := env.Upload(t, p, 1)
	first, _, err := env.Svc.Faxes.Send(ctx, p, "burst-0", faxes.SendRequest{To: "+12125550100", UploadToken: tok})
	if err != nil {
		t.Fatal(err)
	}
	// The warm-up fax's events are not counted: wait for them, then reset.
	deadline := time.Now().Add(webhookBurstTimeout)
	for rcv.distinct() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the warm-up fax's events were not delivered: %d", rcv.distinct())
		}
		time.Sleep(10 * time.Millisecond)
	}
	rcv.mu.Lock()
	rcv.ids = map[string]struct{}{}
	rcv.mu.Unlock()
	rcv.total.Store(0)

	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > webhookBurstFaxes {
					return
				}
				if _, _, err := env.Svc.Faxes.Send(ctx, p, fmt.Sprintf("burst-%d", i), faxes.SendRequest{To: "+12125550100", DocumentID: first.DocumentID}); err != nil {
					t.Errorf("send %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	created := time.Since(start)
	want := 3 * webhookBurstFaxes
	deadline = start.Add(webhookBurstTimeout)
	for rcv.distinct() < want {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events delivered after %s", rcv.distinct(), want, webhookBurstTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Unix(0, rcv.last.Load()).Sub(start)
	rate := float64(want) / elapsed.Seconds()
	t.Logf("webhooks: %d events (%d faxes created in %s) delivered in %s = %.0f events/s; %d requests in all",
		want, webhookBurstFaxes, created.Round(time.Millisecond), elapsed.Round(time.Millisecond), rate, rcv.total.Load())
	return rate, fmt.Sprintf("webhooks: %s faxes sent by 8 in-process senders (creating them took %s), each writing fax.queued, fax.sending and "+
		"fax.delivered, with one endpoint of every type on a loopback receiver answering 204; timed from before the first send to the last "+
		"event's first delivery (%s), the faxes' own deliveries running meanwhile. %d requests reached the receiver for %d events.",
		group(webhookBurstFaxes, 0), created.Round(100*time.Millisecond), elapsed.Round(time.Millisecond), rcv.total.Load(), want)
}
