package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/mail"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/webhooks"
	"github.com/faxhub/faxhub/internal/testenv"
)

// clocked is a service without workers on a test clock, whose webhooks
// reach loopback receivers, without jitter: the test runs every step.
func clocked(t *testing.T, cfg ...func(*services.Config)) (*testenv.Env, *testenv.Clock) {
	return testenv.Clocked(t, testenv.WithConfig(func(c *services.Config) {
		c.Webhooks.AllowPrivate, c.Webhooks.NoJitter = true, true
		for _, f := range cfg {
			f(c)
		}
	}))
}

// sendFax queues a fax for p: its fax.queued event is in the log (no
// worker delivers it further).
func sendFax(t *testing.T, e *testenv.Env, p core.Principal, key string) *faxes.Fax {
	t.Helper()
	f, _, err := e.Svc.Faxes.Send(ctx, p, key, faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// dispatchAll fans every marked event out.
func dispatchAll(t *testing.T, e *testenv.Env) {
	t.Helper()
	for {
		n, err := e.Svc.Webhooks.Dispatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// log is an endpoint's delivery log, newest first.
func logOf(t *testing.T, e *testenv.Env, p core.Principal, endpointID string) []webhooks.Delivery {
	t.Helper()
	page, err := e.Svc.Webhooks.Deliveries(ctx, p, endpointID, "", "", core.MaxListLimit)
	if err != nil {
		t.Fatal(err)
	}
	return page.Data
}

// deliver runs a delivery's job once and returns its wait (nil: done).
func deliver(t *testing.T, e *testenv.Env, id string) *webhooks.WaitError {
	t.Helper()
	err := e.Svc.Webhooks.Deliver(ctx, id)
	var w *webhooks.WaitError
	if errors.As(err, &w) {
		return w
	}
	if err != nil {
		t.Fatalf("deliver %s: %v", id, err)
	}
	return nil
}

func endpoint(t *testing.T, e *testenv.Env, p core.Principal, r webhooks.CreateRequest) *webhooks.WithSecret {
	t.Helper()
	ep, err := e.Svc.Webhooks.Create(ctx, p, r)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func getEndpoint(t *testing.T, e *testenv.Env, p core.Principal, id string) *webhooks.Endpoint {
	t.Helper()
	ep, err := e.Svc.Webhooks.Get(ctx, p, id)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// noticeJobs counts the mails of disabled endpoints the queue holds.
func noticeJobs(t *testing.T, e *testenv.Env) int {
	t.Helper()
	var n int
	if err := e.DB.SQL().QueryRowContext(ctx, "SELECT count(*) FROM river_job WHERE kind = 'webhook_notice'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mailbox(t *testing.T, e *testenv.Env) []mail.Message {
	t.Helper()
	mb, ok := e.App.Mailer.(*mail.Mailbox)
	if !ok {
		t.Fatalf("the mailer is %T, not the dev mailbox", e.App.Mailer)
	}
	return mb.Messages()
}

// TestRetriesFollowTheSchedule: an endpoint that keeps answering 500 gets
// each attempt at the schedule's time (the job's wait says so; an early
// run sends nothing), the log records every attempt, and after the last
// the delivery fails. One delivery's schedule (about 70 hours) stays under
// the three days that disable an endpoint.
func TestRetriesFollowTheSchedule(t *testing.T) {
	e, clk := clocked(t)
	p := e.Principal(t, e.KeyATest)
	r := newReceiver(t)
	r.status = func(int) int { return 500 }
	ep := endpoint(t, e, p, webhooks.CreateRequest{URL: r.URL})
	r.trust(ep.Secret)
	sendFax(t, e, p, "k1")
	dispatchAll(t, e)
	list := logOf(t, e, p, ep.ID)
	if len(list) != 1 || list[0].EventType != events.FaxQueued || list[0].Status != webhooks.DeliveryPending {
		t.Fatalf("log after dispatch: %+v", list)
	}
	id := list[0].ID
	start := clk.Now()
	for i, wait := range append([]time.Duration{0}, webhooks.DefaultSchedule...) {
		clk.Advance(wait)
		w := deliver(t, e, id)
		if got := len(r.deliveries()); got != i+1 {
			t.Fatalf("attempt %d: the receiver has %d requests", i+1, got)
		}
		if i == len(webhooks.DefaultSchedule) {
			if w != nil {
				t.Fatalf("after the last attempt the job waits %v", w.After)
			}
			break
		}
		if w == nil || w.After != webhooks.DefaultSchedule[i] {
			t.Fatalf("attempt %d: wait %v, want %v", i+1, w, webhooks.DefaultSchedule[i])
		}
		// Run early: nothing is sent, the job waits out the rest.
		clk.Advance(time.Second)
		if w := deliver(t, e, id); w == nil || w.After != webhooks.DefaultSchedule[i]-time.Second {
			t.Fatalf("an early run: wait %v", w)
		}
		clk.Advance(-time.Second)
		if got := len(r.deliveries()); got != i+1 {
			t.Fatalf("an early run sent (%d requests)", got)
		}
	}
	d := logOf(t, e, p, ep.ID)[0]
	if d.Status != webhooks.DeliveryFailed || d.Attempts != 13 || len(d.AttemptLog) != 13 || d.LastStatusCode != 500 {
		t.Fatalf("delivery: status %s, %d attempts (%d logged), last %d", d.Status, d.Attempts, len(d.AttemptLog), d.LastStatusCode)
	}
	for i, a := range d.AttemptLog {
		if a.Number != i+1 || a.Status != webhooks.AttemptFailed || a.StatusCode != 500 || a.Response != `{"received":`+strconv.Itoa(i+1)+`}` {
			t.Errorf("attempt %d: %+v", i+1, a)
		}
	}
	if total := clk.Now().Sub(start); total < 69*time.Hour || total > 72*time.Hour {
		t.Errorf("the schedule spans %v, want about three days", total)
	}
	// Every request carried the same webhook-id.
	for _, got := range r.deliveries() {
		if got.ID != d.EventID || len(got.V1) != 1 {
			t.Fatalf("request with webhook-id %s, verified %v", got.ID, got.V1)
		}
	}
	if ep := getEndpoint(t, e, p, ep.ID); !ep.Enabled || ep.FailingSince == nil || !ep.FailingSince.Equal(start) {
		t.Fatalf("endpoint after one failed delivery: enabled %v, failing since %v", ep.Enabled, ep.FailingSince)
	}
}

// TestGoneDisablesAtOnce: a 410 ends the delivery without retries,
// disables the endpoint (reason gone), and its owner is told by mail, in
// a job written with the disabling. Nothing more is dispatched to it.
func TestGoneDisablesAtOnce(t *testing.T) {
	e, clk := clocked(t)
	p := e.Principal(t, e.KeyATest)
	r := newReceiver(t)
	r.status = func(int) int { return 410 }
	ep := endpoint(t, e, p, webhooks.CreateRequest{URL: r.URL + "/gone", Description: "old receiver"})
	sendFax(t, e, p, "k1")
	dispatchAll(t, e)
	id := logOf(t, e, p, ep.ID)[0].ID
	if w := deliver(t, e, id); w != nil {
		t.Fatalf("a 410 is retried (wait %v)", w.After)
	}
	d := logOf(t, e, p, ep.ID)[0]
	if d.Status != webhooks.DeliveryFailed || d.Attempts != 1 || d.LastStatusCode != 410 {
		t.Fatalf("delivery %+v", d)
	}
	got := getEndpoint(t, e, p, ep.ID)
	if got.Enabled || got.DisabledReason != webhooks.DisabledGone || got.DisabledAt == nil || !got.DisabledAt.Equal(clk.Now()) {
		t.Fatalf("endpoint: enabled %v, reason %q, at %v", got.Enabled, got.DisabledReason, got.DisabledAt)
	}
	if n := noticeJobs(t, e); n != 1 {
		t.Fatalf("%d notice jobs, want 1", n)
	}
	if err := e.Svc.Webhooks.NotifyDisabled(ctx, ep.ID); err != nil {
		t.Fatal(err)
	}
	msgs := mailbox(t, e)
	if len(msgs) != 1 || msgs[0].To != e.OwnerA.Email || !strings.Contains(msgs[0].Text, "410 Gone") ||
		!strings.Contains(msgs[0].Text, r.URL+"/gone") || !strings.Contains(msgs[0].Text, "/console/webhooks/"+ep.ID+"?mode=test") {
		t.Fatalf("mail: %+v", msgs)
	}
	// Disabled: the next event has nowhere to go.
	sendFax(t, e, p, "k2")
	dispatchAll(t, e)
	if n := len(logOf(t, e, p, ep.ID)); n != 1 {
		t.Fatalf("%d deliveries after the endpoint was disabled, want the first only", n)
	}
	// Re-enabled by its owner, it gets new events and starts afresh.
	on := true
	got, err := e.Svc.Webhooks.Update(ctx, p, ep.ID, webhooks.UpdateRequest{Enabled: &on})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Enabled || got.DisabledReason != "" || got.DisabledAt != nil || got.FailingSince != nil {
		t.Fatalf("re-enabled endpoint %+v", got)
	}
	// Its notice, if its job ran only now, says nothing.
	if err := e.Svc.Webhooks.NotifyDisabled(ctx, ep.ID); err != nil || len(mailbox(t, e)) != 1 {
		t.Fatalf("a notice for an endpoint enabled again: %v, %d mails", err, len(mailbox(t, e)))
	}
}

// TestFailingForThreeDaysDisablesAndMails: an endpoint whose every attempt
// fails, delivery after delivery, is disabled when the streak reaches
// DisableAfter, and its owner gets one mail; a delivered attempt before
// that ends the streak.
func TestFailingForThreeDaysDisablesAndMails(t *testing.T) {
	e, clk := clocked(t)
	p := e.Principal(t, e.KeyATest)
	r := newReceiver(t)
	var fail atomic.Bool
	fail.Store(true)
	r.status = func(int) int {
		if fail.Load() {
			return 503
		}
		return 204
	}
	ep := endpoint(t, e, p, webhooks.CreateRequest{URL: r.URL})
	start := clk.Now()
	sendFax(t, e, p, "k1")
	dispatchAll(t, e)
	first := logOf(t, e, p, ep.ID)[0].ID
	deliver(t, e, first)

	// A success two days in ends the streak.
	clk.Advance(48 * time.Hour)
	fail.Store(false)
	sendFax(t, e, p, "k2")
	dispatchAll(t, e)
	deliver(t, e, logOf(t, e, p, ep.ID)[0].ID)
	if got := getEndpoint(t, e, p, ep.ID); got.FailingSince != nil || got.LastSuccessAt == nil {
		t.Fatalf("after a delivered attempt: failing since %v, last success %v", got.FailingSince, got.LastSuccessAt)
	}

	// Failing again from now: each attempt of the first delivery (still
	// retrying) and of new ones fails; three days on, it is disabled.
	fail.Store(true)
	streak := clk.Now()
	for i := 0; clk.Now().Sub(streak) < 72*time.Hour; i++ {
		sendFax(t, e, p, "k-"+strconv.Itoa(i))
		dispatchAll(t, e)
		for _, d := range logOf(t, e, p, ep.ID) {
			if d.Status == webhooks.DeliveryPending {
				deliver(t, e, d.ID)
			}
		}
		if got := getEndpoint(t, e, p, ep.ID); !got.Enabled {
			t.Fatalf("disabled after %v of failures", clk.Now().Sub(streak))
		}
		clk.Advance(6 * time.Hour)
	}
	sendFax(t, e, p, "k-last")
	dispatchAll(t, e)
	deliver(t, e, logOf(t, e, p, ep.ID)[0].ID)
	got := getEndpoint(t, e, p, ep.ID)
	if got.Enabled || got.DisabledReason != webhooks.DisabledFailing || !got.FailingSince.Equal(streak) {
		t.Fatalf("after three days of failures: enabled %v, reason %q, failing since %v (streak from %v; first failure %v)",
			got.Enabled, got.DisabledReason, got.FailingSince, streak, start)
	}
	// The deliveries still pending end at their next run, unsent.
	before := len(r.deliveries())
	for _, d := range logOf(t, e, p, ep.ID) {
		if d.Status == webhooks.DeliveryPending {
			clk.Advance(25 * time.Hour)
			if w := deliver(t, e, d.ID); w != nil {
				t.Fatalf("a delivery to a disabled endpoint waits %v", w.After)
			}
		}
	}
	if n := len(r.deliveries()); n != before {
		t.Fatalf("%d requests sent to a disabled endpoint", n-before)
	}
	for _, d := range logOf(t, e, p, ep.ID) {
		if d.Status == webhooks.DeliveryPending {
			t.Fatalf("delivery %s still pending", d.ID)
		}
	}
	if n := noticeJobs(t, e); n != 1 {
		t.Fatalf("%d notice jobs, want 1", n)
	}
	if err := e.Svc.Webhooks.NotifyDisabled(ctx, ep.ID); err != nil {
		t.Fatal(err)
	}
	if msgs := mailbox(t, e); len(msgs) != 1 || !strings.Contains(msgs[0].Text, "failed for 3 days") {
		t.Fatalf("mail: %+v", msgs)
	}
}

// TestRotationOverlap: after a rotation every delivery is signed under
// the new secret and the replaced one until the overlap ends, then under
// the new one only; the old secret verifies nothing after that.
func TestRotationOverlap(t *testing.T) {
	e, clk := clocked(t)
	p := e.Principal(t, e.KeyATest)
	r := newReceiver(t)
	ep := endpoint(t, e, p, webhooks.CreateRequest{URL: r.URL, Signing: []string{"v1", "v1a"}})
	old := ep.Secret
	r.trust(old)
	r.trustKey(t, e.Svc)
	rotated, err := e.Svc.Webhooks.RotateSecret(ctx, p, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Secret == old || !strings.HasPrefix(rotated.Secret, webhooks.SecretPrefix) || rotated.PreviousSecretUntil == nil ||
		!rotated.PreviousSecretUntil.Equal(clk.Now().Add(24*time.Hour)) {
		t.Fatalf("rotation: %+v", rotated)
	}
	r.trust(rotated.Secret)
	test := func() delivery {
		t.Helper()
		d, err := e.Svc.Webhooks.SendTest(ctx, p, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		deliver(t, e, d.ID)
		got := r.deliveries()
		return got[len(got)-1]
	}
	during := test()
	if len(during.V1) != 2 || !during.V1a || len(strings.Fields(during.Signature)) != 3 {
		t.Fatalf("during the overlap: verified by %d secrets, v1a %v (%q)", len(during.V1), during.V1a, during.Signature)
	}
	clk.Advance(24*time.Hour + time.Second)
	after := test()
	if len(after.V1) != 1 || after.V1[0] != rotated.Secret || !after.V1a || len(strings.Fields(after.Signature)) != 2 {
		t.Fatalf("after the overlap: verified by %v, v1a %v (%q)", after.V1, after.V1a, after.Signature)
	}
	// Neither listing nor reading the endpoint shows a secret again.
	got := getEndpoint(t, e, p, ep.ID)
	if b, _ := json.Marshal(got); strings.Contains(string(b), "whsec_") {
		t.Fatalf("the endpoint shows a secret: %s", b)
	}
}

// TestRedeliver: an event delivered already is sent again as a new
// delivery with the same webhook-id; a test event too. An unknown event,
// another owner's, or a disabled endpoint are refused.
func TestRedeliver(t *testing.T) {
	e, _ := clocked(t)
	p := e.Principal(t, e.KeyATest)
	r := newReceiver(t)
	ep := endpoint(t, e, p, webhooks.CreateRequest{URL: r.URL})
	r.trust(ep.Secret)
	sendFax(t, e, p, "k1")
	dispatchAll(t, e)
	first := logOf(t, e, p, ep.ID)[0]
	deliver(t, e, first.ID)
	again, err := e.Svc.Webhooks.Redeliver(ctx, p, ep.ID, first.EventID)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == first.ID || again.Origin != webhooks.OriginRedeliver || again.EventID != first.EventID || again.EventType != events.FaxQueued {
		t.Fatalf("redelivery %+v", again)
	}
	deliver(t, e, again.ID)
	got := r.deliveries()
	if len(got) != 2 || got[0].ID != got[1].ID || string(got[0].Body) != string(got[1].Body) || len(got[1].V1) != 1 {
		t.Fatalf("receiver got %d requests: ids %v", len(got), typesOf(got))
	}

	test, err := e.Svc.Webhooks.SendTest(ctx, p, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	deliver(t, e, test.ID)
	re, err := e.Svc.Webhooks.Redeliver(ctx, p, ep.ID, test.EventID)
	if err != nil {
		t.Fatal(err)
	}
	deliver(t, e, re.ID)
	got = r.deliveries()
	if n := len(got); n != 4 || got[2].ID != got[3].ID || got[3].Event.Type != events.WebhookTest || string(got[2].Body) != string(got[3].Body) {
		t.Fatalf("test event redelivered: %d requests, %v", n, typesOf(got))
	}

	testenv.WantCode(t, errOf(e.Svc.Webhooks.Redeliver(ctx, p, ep.ID, "evt_nosuchevent")), core.CodeNotFound)
	b := e.Principal(t, e.KeyBTest)
	bep := endpoint(t, e, b, webhooks.CreateRequest{URL: r.URL})
	testenv.WantCode(t, errOf(e.Svc.Webhooks.Redeliver(ctx, b, bep.ID, first.EventID)), core.CodeNotFound)
	testenv.WantCode(t, errOf(e.Svc.Webhooks.Redeliver(ctx, b, ep.ID, first.EventID)), core.CodeNotFound)
	off := false
	if _, err := e.Svc.Webhooks.Update(ctx, p, ep.ID, webhooks.UpdateRequest{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	testenv.WantCode(t, errOf(e.Svc.Webhooks.Redeliver(ctx, p, ep.ID, first.EventID)), webhooks.CodeEndpointDisabled)
}

func errOf[T any](_ T, err error) error { return err }

// TestTestEvent: a webhook.test event goes to that endpoint only (enabled
// or not), once: a failure is not retried and says nothing of the
// endpoint's health; the event is not in the log.
func TestTestEvent(t *testing.T) {
	e, _ := clocked(t)
	p := e.Principal(t, e.KeyATest)
	r, other := newReceiver(t), newReceiver(t)
	r.status = func(int) int { return 500 }
	ep := endpoint(t, e, p, webhooks.CreateRequest{URL: r.URL, EventTypes: []string{"fax.delivered"}})
	endpoint(t, e, p, webhooks.CreateRequest{URL: other.URL})
	r.trust(ep.Secret)
	off := false
	if _, err := e.Svc.Webhooks.Update(ctx, p, ep.ID, webhooks.UpdateRequest{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	d, err := e.Svc.Webhooks.SendTest(ctx, p, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w := deliver(t, e, d.ID); w != nil {
		t.Fatalf("a failed test is retried (wait %v)", w.After)
	}
	got := r.deliveries()
	if len(got) != 1 || got[0].Event.Type != events.WebhookTest || got[0].ID != d.EventID || len(got[0].V1) != 1 ||
		!strings.Contains(string(got[0].Event.Data), ep.ID) {
		t.Fatalf("test delivery: %+v", got)
	}
	dispatchAll(t, e)
	if n := len(other.deliveries()); n != 0 {
		t.Fatalf("another endpoint got %d requests", n)
	}
	log := logOf(t, e, p, ep.ID)
	if len(log) != 1 || log[0].Status != webhooks.DeliveryFailed || log[0].Origin != webhooks.OriginTest {
		t.Fatalf("log %+v", log)
	}
	if got := getEndpoint(t, e, p, ep.ID); got.FailingSince != nil || got.DisabledReason != webhooks.DisabledByOwner {
		t.Fatalf("a test changed the endpoint: %+v", got)
	}
	page, err := e.Svc.Events.List(ctx, p, nil, "", core.MaxListLimit)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range page.Data {
		if ev.Type == events.WebhookTest || ev.ID == d.EventID {
			t.Fatalf("the test event is in the log: %+v", ev)
		}
	}
}

// TestCrashSafety: a dispatcher whose transaction rolls back leaves the
// event marked and writes nothing; a dispatcher that ran after a commit
// (the event marked again, as after a crash between the commit and
// anything else) writes no second delivery. A delivery job run twice at
// once sends once: the second run waits while the first's attempt is in
// flight; once the attempt's lease has passed (its process presumed
// dead) it closes it as interrupted and sends the next; the first run's
// late answer then changes nothing. The receiver got one request per
// attempt, and the log says what happened.
func TestCrashSafety(t *testing.T) {
	e, clk := clocked(t)
	p := e.Principal(t, e.KeyATest)
	r := newReceiver(t)
	ep := endpoint(t, e, p, webhooks.CreateRequest{URL: r.URL})
	sendFax(t, e, p, "k1")

	broken := webhooks.New(e.Svc.Kernel.Config(), e.Svc.Webhooks.Config(), webhooks.Deps{
		Store: e.Store, Queue: failingQueue{}, Sender: blockedSender{}, Kernel: e.Svc.Kernel,
	})
	if _, err := broken.Dispatch(ctx); err == nil {
		t.Fatal("the dispatch that could not enqueue its jobs succeeded")
	}
	marked, err := e.Store.EventsToDispatch(ctx, 10)
	if err != nil || len(marked) != 1 {
		t.Fatalf("after a rolled-back dispatch %d events are marked (%v), want 1", len(marked), err)
	}
	if n := len(logOf(t, e, p, ep.ID)); n != 0 {
		t.Fatalf("a rolled-back dispatch left %d deliveries", n)
	}
	dispatchAll(t, e)
	if _, err := e.DB.SQL().ExecContext(ctx, "UPDATE events SET dispatch = "+boolSQL(e)); err != nil {
		t.Fatal(err)
	}
	dispatchAll(t, e)
	list := logOf(t, e, p, ep.ID)
	if len(list) != 1 {
		t.Fatalf("%d deliveries of one event, want 1", len(list))
	}
	var jobs int
	if err := e.DB.SQL().QueryRowContext(ctx, "SELECT count(*) FROM river_job WHERE kind = 'deliver_webhook'").Scan(&jobs); err != nil || jobs != 1 {
		t.Fatalf("%d delivery jobs (%v), want 1", jobs, err)
	}

	// Two runs of the job.
	s := &stallingSender{release: make(chan struct{}), sent: make(chan struct{}, 4)}
	svc := webhooks.New(e.Svc.Kernel.Config(), e.Svc.Webhooks.Config(), webhooks.Deps{
		Store: e.Store, Queue: e.Queue, Sender: s, Kernel: e.Svc.Kernel,
	})
	id := list[0].ID
	first := make(chan error, 1)
	go func() { first <- svc.Deliver(ctx, id) }()
	<-s.sent
	err = svc.Deliver(ctx, id)
	var w *webhooks.WaitError
	if !errors.As(err, &w) || w.After != time.Minute {
		t.Fatalf("a second run while the first sends: %v, want to wait the attempt's lease", err)
	}
	clk.Advance(time.Minute)
	if err := svc.Deliver(ctx, id); err != nil {
		t.Fatalf("the run after the lease: %v", err)
	}
	close(s.release)
	if err := <-first; err != nil {
		t.Fatalf("the first run, answered late: %v", err)
	}
	if n := s.calls.Load(); n != 2 {
		t.Fatalf("%d requests for 2 attempts", n)
	}
	d := logOf(t, e, p, ep.ID)[0]
	if d.Status != webhooks.DeliveryDelivered || len(d.AttemptLog) != 2 ||
		d.AttemptLog[0].Status != webhooks.AttemptInterrupted || !strings.Contains(d.AttemptLog[0].Error, "interrupted") ||
		d.AttemptLog[1].Status != webhooks.AttemptSucceeded {
		t.Fatalf("log: %+v", d)
	}
}

func boolSQL(e *testenv.Env) string {
	if e.DB.Dialect() == "postgres" {
		return "TRUE"
	}
	return "1"
}

// failingQueue cannot enqueue: a dispatcher with it must roll back.
type failingQueue struct{}

func (failingQueue) EnqueueWebhookDeliveries(context.Context, core.Tx, []string) error {
	return errors.New("the queue is down")
}

func (failingQueue) EnqueueWebhookNotice(context.Context, core.Tx, string) error {
	return errors.New("the queue is down")
}

type blockedSender struct{}

func (blockedSender) Send(context.Context, *webhooks.Request) (*webhooks.Response, error) {
	return nil, errors.New("not used")
}

// stallingSender holds its first request until release (a process that
// died while sending, as far as the others can tell) and answers the rest
// at once.
type stallingSender struct {
	calls   atomic.Int32
	release chan struct{}
	sent    chan struct{}
}

func (s *stallingSender) Send(ctx context.Context, r *webhooks.Request) (*webhooks.Response, error) {
	n := s.calls.Add(1)
	s.sent <- struct{}{}
	if n == 1 {
		<-s.release
		return &webhooks.Response{StatusCode: 500}, nil
	}
	return &webhooks.Response{StatusCode: 200, Body: []byte("ok")}, nil
}

// deliveryJobs counts the jobs the queue holds for delivery id.
func deliveryJobs(t *testing.T, e *testenv.Env, id string) int {
	t.Helper()
	var n int
	if err := e.DB.SQL().QueryRowContext(ctx, "SELECT count(*) FROM river_job WHERE kind = 'deliver_webhook' AND CAST(args AS TEXT) LIKE '%"+id+"%'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRescueStalledDeliveries: a pending delivery that has not moved for
// StallAfter past its due time (its job lost) gets a new job, once per
// StallAfter; one that moves, or ended, gets none.
func TestRescueStalledDeliveries(t *testing.T) {
	e, clk := clocked(t)
	p := e.Principal(t, e.KeyATest)
	r := newReceiver(t)
	ep := endpoint(t, e, p, webhooks.CreateRequest{URL: r.URL})
	r.trust(ep.Secret)
	sendFax(t, e, p, "k1")
	dispatchAll(t, e)
	d := logOf(t, e, p, ep.ID)[0]
	rescue := func() int {
		t.Helper()
		n, err := e.Svc.Webhooks.Rescue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rescue(); n != 0 || deliveryJobs(t, e, d.ID) != 1 {
		t.Fatalf("a fresh delivery was rescued (%d) or has %d jobs", n, deliveryJobs(t, e, d.ID))
	}
	clk.Advance(59 * time.Minute)
	if n := rescue(); n != 0 {
		t.Fatalf("rescued %d before an hour", n)
	}
	clk.Advance(2 * time.Minute)
	if n := rescue(); n != 1 || deliveryJobs(t, e, d.ID) != 2 {
		t.Fatalf("rescued %d; the delivery has %d jobs, want 2", n, deliveryJobs(t, e, d.ID))
	}
	if n := rescue(); n != 0 {
		t.Fatalf("rescued %d again at once", n)
	}
	// Both jobs run: one attempt is sent.
	deliver(t, e, d.ID)
	deliver(t, e, d.ID)
	if got := r.deliveries(); len(got) != 1 {
		t.Fatalf("the receiver got %d requests", len(got))
	}
	clk.Advance(3 * time.Hour)
	if n := rescue(); n != 0 {
		t.Fatalf("a delivered delivery was rescued (%d)", n)
	}
}
