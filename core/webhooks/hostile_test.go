package webhooks_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/egress"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/webhooks"
	"github.com/faxhub/faxhub/core/webhooks/httpsender"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/dnstest"
	"github.com/faxhub/faxhub/internal/testenv"
)

// appendEvents writes n events of type t for p, as a feature would, in
// one transaction.
func appendEvents(t *testing.T, e *testenv.Env, p core.Principal, typ events.Type, n int) {
	t.Helper()
	err := e.Store.InTx(ctx, func(tx core.Tx) error {
		for i := range n {
			if err := events.Append(ctx, tx.(events.Queries), p.OwnerID, p.Mode, typ, fmt.Sprintf("sub_%d", i), map[string]int{"n": i}, time.Now()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSlowEndpointDoesNotDelayOthers: one owner's two endpoints hang on
// every request until the test ends, with a backlog of events. At most
// MaxInFlightPerOwner of its attempts are in flight at once (and
// MaxInFlightPerEndpoint per endpoint), and another owner's event is
// delivered while every one of them still hangs: no attempt of the slow
// owner ever finishes in this test, so the other delivery cannot have
// waited for one. (That an attempt ends at its time limit is
// TestHangingEndpointTimesOut.)
func TestSlowEndpointDoesNotDelayOthers(t *testing.T) {
	e := privateEnv(t, testenv.WithConfig(func(c *services.Config) {
		c.Webhooks.AttemptTimeout = time.Hour
		c.Webhooks.MaxInFlightPerEndpoint = 4
		c.Webhooks.MaxInFlightPerOwner = 6
	}))
	a, b := e.Principal(t, e.KeyATest), e.Principal(t, e.KeyBTest)
	var inFlight, most, finished atomic.Int32
	var perPath sync.Map // path → *atomic.Int32 in flight, and its most under "most"+path
	stop := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		raise(&most, inFlight.Add(1))
		defer inFlight.Add(-1)
		cur, _ := perPath.LoadOrStore(r.URL.Path, new(atomic.Int32))
		top, _ := perPath.LoadOrStore("most"+r.URL.Path, new(atomic.Int32))
		raise(top.(*atomic.Int32), cur.(*atomic.Int32).Add(1))
		defer cur.(*atomic.Int32).Add(-1)
		select { // hang until the test ends
		case <-r.Context().Done():
		case <-stop:
		}
		finished.Add(1)
	}))
	defer slow.Close()
	defer close(stop)
	fast := newReceiver(t)
	endpoint(t, e, a, webhooks.CreateRequest{URL: slow.URL + "/1"})
	endpoint(t, e, a, webhooks.CreateRequest{URL: slow.URL + "/2"})
	endpoint(t, e, b, webhooks.CreateRequest{URL: fast.URL})

	appendEvents(t, e, a, events.FaxQueued, 40)
	// Liveness only: the slow owner's backlog takes its slots.
	deadline := time.Now().Add(30 * time.Second)
	for inFlight.Load() < 6 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if inFlight.Load() < 6 {
		t.Fatalf("the slow endpoints have %d attempts in flight, want their owner's cap", inFlight.Load())
	}
	appendEvents(t, e, b, events.FaxDelivered, 1)
	fast.waitFor(t, "the other owner's event", func(ds []delivery) bool { return len(ds) == 1 })
	if n := finished.Load(); n != 0 {
		t.Fatalf("%d of the slow owner's attempts ended: the test proves nothing", n)
	}
	if m := most.Load(); m > 6 {
		t.Errorf("%d attempts in flight to one owner's endpoints at once, cap 6", m)
	}
	for _, path := range []string{"/1", "/2"} {
		if m, ok := perPath.Load("most" + path); ok && m.(*atomic.Int32).Load() > 4 {
			t.Errorf("%d attempts in flight to one endpoint at once, cap 4", m.(*atomic.Int32).Load())
		}
	}
}

// TestHangingEndpointTimesOut: an attempt to an endpoint that never
// answers ends at the attempt's time limit and is logged as timed out (a
// test event has one attempt: nothing is due after it).
func TestHangingEndpointTimesOut(t *testing.T) {
	e, _ := clocked(t, func(c *services.Config) { c.Webhooks.AttemptTimeout = 300 * time.Millisecond })
	p := e.Principal(t, e.KeyATest)
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop)
	ep := endpoint(t, e, p, webhooks.CreateRequest{URL: hang.URL})
	d, err := e.Svc.Webhooks.SendTest(ctx, p, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w := deliver(t, e, d.ID); w != nil {
		t.Fatalf("a test event is due again: %v", w)
	}
	a := logOf(t, e, p, ep.ID)[0].AttemptLog[0]
	if a.Status != webhooks.AttemptFailed || !strings.Contains(a.Error, "timed out") {
		t.Fatalf("attempt %+v", a)
	}
}

// raise sets top to n if n is larger.
func raise(top *atomic.Int32, n int32) {
	for {
		m := top.Load()
		if n <= m || top.CompareAndSwap(m, n) {
			return
		}
	}
}

// TestHostileAnswers: a huge answer is read only so far (the log keeps
// its first KiB); a redirect, here to another local server, is a failed
// attempt and never followed.
func TestHostileAnswers(t *testing.T) {
	e, _ := clocked(t)
	p := e.Principal(t, e.KeyATest)
	var written atomic.Int64
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 1600 { // 100 MiB
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer huge.Close()
	var followed atomic.Int32
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed.Add(1) }))
	defer inside.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inside.URL+"/internal/admin", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()

	for _, tc := range []struct {
		name  string
		url   string
		check func(t *testing.T, d webhooks.Delivery)
	}{
		{"huge answer", huge.URL, func(t *testing.T, d webhooks.Delivery) {
			a := d.AttemptLog[0]
			if a.Status != webhooks.AttemptSucceeded || len(a.Response) != webhooks.MaxResponseExcerpt {
				t.Fatalf("attempt %+v (response %d bytes)", a.Status, len(a.Response))
			}
		}},
		{"redirect", redirect.URL, func(t *testing.T, d webhooks.Delivery) {
			a := d.AttemptLog[0]
			if a.Status != webhooks.AttemptFailed || a.StatusCode != 307 || !strings.Contains(a.Error, "redirects are not followed") ||
				!strings.Contains(a.Error, "/internal/admin") {
				t.Fatalf("attempt %+v", a)
			}
			if followed.Load() != 0 {
				t.Fatal("the redirect was followed")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := endpoint(t, e, p, webhooks.CreateRequest{URL: tc.url})
			d, err := e.Svc.Webhooks.SendTest(ctx, p, ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			deliver(t, e, d.ID)
			got := logOf(t, e, p, ep.ID)[0]
			tc.check(t, got)
		})
	}
	if w := written.Load(); w > 16<<20 {
		t.Errorf("the huge answer was read on: %d bytes written", w)
	}
}

// TestPrivateAddressesRefusedAtDialTime: without --webhooks-allow-private,
// a URL whose host NAME resolves to loopback or to the metadata service is
// accepted (names are checked when dialed, not when saved), and every
// attempt is refused at dial time: nothing reaches the address, and the
// log says why without naming it. A literal private address is refused
// when the endpoint is saved.
func TestPrivateAddressesRefusedAtDialTime(t *testing.T) {
	var hits atomic.Int32
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer local.Close()
	_, port, _ := net.SplitHostPort(local.Listener.Addr().String())
	dns := dnstest.New(t, map[string][]string{"receiver.example": {"127.0.0.1"}, "metadata.example": {"169.254.169.254"}})
	sender := httpsender.New(httpsender.Options{Policy: egress.Policy{}, Timeout: 2 * time.Second, Resolver: dns.Resolver()})
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithWebhooks(app.WebhookOptions{Sender: sender}))
	p := e.Principal(t, e.KeyATest)
	for _, tc := range []struct{ host, kind string }{{"receiver.example", "loopback"}, {"metadata.example", "metadata"}} {
		t.Run(tc.host, func(t *testing.T) {
			ep := endpoint(t, e, p, webhooks.CreateRequest{URL: "https://" + tc.host + ":" + port + "/hook"})
			d, err := e.Svc.Webhooks.SendTest(ctx, p, ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			deliver(t, e, d.ID)
			a := logOf(t, e, p, ep.ID)[0].AttemptLog[0]
			if a.Status != webhooks.AttemptFailed || !strings.Contains(a.Error, "refused") || !strings.Contains(a.Error, tc.kind) ||
				strings.Contains(a.Error, "127.0.0.1") || strings.Contains(a.Error, "169.254") {
				t.Fatalf("attempt: %+v", a)
			}
		})
	}
	if hits.Load() != 0 {
		t.Fatalf("%d requests reached the private address", hits.Load())
	}
	for _, u := range []string{"https://127.0.0.1:" + port + "/", "https://[::1]/", "https://169.254.169.254/latest/meta-data", "https://10.0.0.8/", "http://localhost:" + port + "/"} {
		testenv.WantCode(t, errOf(e.Svc.Webhooks.Create(ctx, p, webhooks.CreateRequest{URL: u})), webhooks.CodeInvalidURL)
	}
}

// TestCheckURL: the endpoint URL rules under each policy.
func TestCheckURL(t *testing.T) {
	public := webhooks.New(core.Config{}, webhooks.Config{}, webhooks.Deps{})
	dev := webhooks.New(core.Config{}, webhooks.Config{AllowLoopback: true}, webhooks.Deps{})
	private := webhooks.New(core.Config{}, webhooks.Config{AllowPrivate: true}, webhooks.Deps{})
	long := "https://example.com/" + strings.Repeat("a", webhooks.MaxURLBytes)
	for _, tc := range []struct {
		url                  string
		public, dev, private bool
	}{
		{"https://example.com/hooks", true, true, true},
		{"https://example.com:8443/hooks?token=abc", true, true, true},
		{"https://xn--bcher-kva.example/", true, true, true},
		{"https://93.184.215.14/hooks", true, true, true},
		{"http://example.com/hooks", false, false, false},
		{"http://localhost:8080/hooks", false, true, true},
		{"http://127.0.0.1:8080/hooks", false, true, true},
		{"http://[::1]:8080/hooks", false, true, true},
		{"https://localhost/hooks", false, true, true},
		{"http://10.0.0.8/hooks", false, false, false},
		{"https://10.0.0.8/hooks", false, false, true},
		{"https://169.254.169.254/latest", false, false, false},
		{"https://[fd00:ec2::254]/", false, false, false},
		{"https://0.0.0.0/", false, false, false},
		{"https://user:pass@example.com/", false, false, false},
		{"https://example.com/#frag", false, false, false},
		{"https://example.com:0/", false, false, false},
		{"https://example.com:99999/", false, false, false},
		{"https://bücher.example/", false, false, false},
		{"ftp://example.com/", false, false, false},
		{"example.com/hooks", false, false, false},
		{"https:///hooks", false, false, false},
		{"", false, false, false},
		{long, false, false, false},
		{"https://[fe80::1%25eth0]/", false, false, false},
	} {
		for _, c := range []struct {
			name string
			s    *webhooks.Service
			want bool
		}{{"public", public, tc.public}, {"dev", dev, tc.dev}, {"private", private, tc.private}} {
			err := c.s.CheckURL(tc.url)
			if (err == nil) != c.want {
				t.Errorf("%s under %s: %v, want accepted %v", tc.url[:min(len(tc.url), 60)], c.name, err, c.want)
			}
			if err != nil && core.ErrorCode(err) != webhooks.CodeInvalidURL {
				t.Errorf("%s: code %s", tc.url[:min(len(tc.url), 60)], core.ErrorCode(err))
			}
		}
	}
}

// TestEventFilterOwnersAndModes: an endpoint gets the events of its owner
// and mode that its filter takes, and nothing else: not another owner's,
// not the other mode's, not the types it did not ask for.
func TestEventFilterOwnersAndModes(t *testing.T) {
	e := privateEnv(t)
	a, aLive, b := e.Principal(t, e.KeyATest), e.Principal(t, e.KeyALive), e.Principal(t, e.KeyBTest)
	all, onlyDelivered, wildcard, live, other := newReceiver(t), newReceiver(t), newReceiver(t), newReceiver(t), newReceiver(t)
	endpoint(t, e, a, webhooks.CreateRequest{URL: all.URL})
	endpoint(t, e, a, webhooks.CreateRequest{URL: onlyDelivered.URL, EventTypes: []string{"fax.delivered"}})
	endpoint(t, e, a, webhooks.CreateRequest{URL: wildcard.URL, EventTypes: []string{"fax.*", "credits.low"}})
	endpoint(t, e, aLive, webhooks.CreateRequest{URL: live.URL})
	endpoint(t, e, b, webhooks.CreateRequest{URL: other.URL})
	sendFax(t, e, a, "k1")
	e.DrainQueue(t)
	all.waitFor(t, "every event", func(ds []delivery) bool { return len(ds) == 3 })
	onlyDelivered.waitFor(t, "fax.delivered", func(ds []delivery) bool { return len(ds) == 1 })
	wildcard.waitFor(t, "fax.*", func(ds []delivery) bool { return len(ds) == 3 })
	e.DrainQueue(t)
	if got := onlyDelivered.deliveries(); len(got) != 1 || got[0].Event.Type != events.FaxDelivered {
		t.Fatalf("the fax.delivered endpoint got %v", typesOf(got))
	}
	if n := len(all.deliveries()); n != 3 {
		t.Fatalf("the catch-all endpoint got %d", n)
	}
	if n, m := len(live.deliveries()), len(other.deliveries()); n != 0 || m != 0 {
		t.Fatalf("the live-mode endpoint got %d, another owner's %d", n, m)
	}
	for _, d := range all.deliveries() {
		if d.Event.Mode != core.ModeTest {
			t.Fatalf("event of mode %s", d.Event.Mode)
		}
	}
	// Neither another owner nor the other mode sees the endpoints.
	if list, err := e.Svc.Webhooks.List(ctx, b); err != nil || len(list) != 1 {
		t.Fatalf("owner B lists %d endpoints (%v)", len(list), err)
	}
	aList, _ := e.Svc.Webhooks.List(ctx, a)
	testenv.WantCode(t, errOf(e.Svc.Webhooks.Get(ctx, b, aList[0].ID)), core.CodeNotFound)
	testenv.WantCode(t, errOf(e.Svc.Webhooks.Get(ctx, aLive, aList[0].ID)), core.CodeNotFound)
	testenv.WantCode(t, e.Svc.Webhooks.Delete(ctx, b, aList[0].ID), core.CodeNotFound)
}

// TestEndpointRules: the per-mode limit, the filter's and the schemes'
// validation, updates, and who may manage endpoints (API keys and the
// console, never an agent's token).
func TestEndpointRules(t *testing.T) {
	e, _ := clocked(t)
	p := e.Principal(t, e.KeyATest)
	for i := range webhooks.MaxEndpoints {
		endpoint(t, e, p, webhooks.CreateRequest{URL: fmt.Sprintf("https://example.com/%d", i)})
	}
	testenv.WantCode(t, errOf(e.Svc.Webhooks.Create(ctx, p, webhooks.CreateRequest{URL: "https://example.com/17"})), webhooks.CodeTooManyEndpoints)
	// The other mode has its own limit.
	endpoint(t, e, e.Principal(t, e.KeyALive), webhooks.CreateRequest{URL: "https://example.com/live"})

	b := e.Principal(t, e.KeyBTest)
	for _, tc := range []struct {
		r    webhooks.CreateRequest
		code string
	}{
		{webhooks.CreateRequest{URL: "https://example.com", EventTypes: []string{"fax.exploded"}}, core.CodeInvalidRequest},
		{webhooks.CreateRequest{URL: "https://example.com", EventTypes: []string{"webhook.test"}}, core.CodeInvalidRequest},
		{webhooks.CreateRequest{URL: "https://example.com", Signing: []string{"v2"}}, core.CodeInvalidRequest},
		{webhooks.CreateRequest{URL: "https://example.com", Description: "line\nbreak"}, core.CodeInvalidRequest},
		{webhooks.CreateRequest{URL: "https://example.com", Description: strings.Repeat("é", webhooks.MaxDescriptionRunes+1)}, core.CodeInvalidRequest},
		{webhooks.CreateRequest{URL: "http://example.com"}, webhooks.CodeInvalidURL},
	} {
		testenv.WantCode(t, errOf(e.Svc.Webhooks.Create(ctx, b, tc.r)), tc.code)
	}
	ep := endpoint(t, e, b, webhooks.CreateRequest{URL: "https://example.com/b", EventTypes: []string{"fax.*", "number.active,fax.*"}, Signing: []string{"v1a", "v1", "v1a"}})
	if len(ep.Signing) != 2 || ep.Signing[0] != webhooks.SchemeV1 || fmt.Sprint(ep.EventTypes) != "[fax.* number.active]" || !ep.Enabled {
		t.Fatalf("created %+v", ep.Endpoint)
	}
	// The wildcard is kept: it takes every fax type, today's and later ones.
	for typ, want := range map[events.Type]bool{events.FaxDelivered: true, "fax.added_later": true, events.NumberActive: true, events.NumberReleased: false, "faxes.x": false} {
		if got := ep.Matches(typ); got != want {
			t.Errorf("Matches(%s) = %v, want %v", typ, got, want)
		}
	}
	url, desc, types := "https://example.org/new", "new", []string{}
	got, err := e.Svc.Webhooks.Update(ctx, b, ep.ID, webhooks.UpdateRequest{URL: &url, Description: &desc, EventTypes: &types})
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != url || got.Description != desc || len(got.EventTypes) != 0 || len(got.Signing) != 2 {
		t.Fatalf("updated %+v", got)
	}
	none := []string{}
	testenv.WantCode(t, errOf(e.Svc.Webhooks.Update(ctx, b, ep.ID, webhooks.UpdateRequest{Signing: &none})), core.CodeInvalidRequest)
	bad := "https://169.254.169.254/"
	testenv.WantCode(t, errOf(e.Svc.Webhooks.Update(ctx, b, ep.ID, webhooks.UpdateRequest{URL: &bad})), webhooks.CodeInvalidURL)

	// An agent's token (even with every product scope) may not manage
	// webhooks; the owner's console may.
	agent := core.Principal{OwnerID: e.OwnerB.ID, Kind: core.PrincipalOAuthGrant, Mode: core.ModeTest, Scopes: core.FaxScopes()}
	testenv.WantCode(t, errOf(e.Svc.Webhooks.List(ctx, agent)), core.CodeInsufficientScope)
	testenv.WantCode(t, errOf(e.Svc.Webhooks.Create(ctx, agent, webhooks.CreateRequest{URL: "https://example.com"})), core.CodeInsufficientScope)
	if list, err := e.Svc.Webhooks.List(ctx, core.OwnerPrincipal(e.OwnerB.ID, core.ModeTest)); err != nil || len(list) != 1 {
		t.Fatalf("the console lists %d (%v)", len(list), err)
	}
	if err := e.Svc.Webhooks.Delete(ctx, b, ep.ID); err != nil {
		t.Fatal(err)
	}
	testenv.WantCode(t, errOf(e.Svc.Webhooks.Get(ctx, b, ep.ID)), core.CodeNotFound)
}

// TestDeliveriesArePurged: the garbage collector deletes deliveries (and
// their attempts) older than the retention.
func TestDeliveriesArePurged(t *testing.T) {
	e, clk := clocked(t)
	p := e.Principal(t, e.KeyATest)
	r := newReceiver(t)
	ep := endpoint(t, e, p, webhooks.CreateRequest{URL: r.URL})
	sendFax(t, e, p, "k1")
	dispatchAll(t, e)
	deliver(t, e, logOf(t, e, p, ep.ID)[0].ID)
	clk.Advance(29 * 24 * time.Hour)
	sendFax(t, e, p, "k2")
	dispatchAll(t, e)
	clk.Advance(24*time.Hour + time.Minute)
	counts, err := e.Svc.Retention.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := testenv.PurgeCounts(counts)["webhook_deliveries"]; n != 1 {
		t.Fatalf("purged %d deliveries, want the one older than 30 days", n)
	}
	if list := logOf(t, e, p, ep.ID); len(list) != 1 {
		t.Fatalf("%d deliveries left", len(list))
	}
}
