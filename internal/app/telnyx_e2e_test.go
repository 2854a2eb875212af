package app_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/telnyxstandin"
	"github.com/faxhub/faxhub/internal/testenv"
)

// telnyxEnv is a live-mode faxhub wired to the Telnyx stand-in, both in
// this process, talking over real HTTP: the stand-in reaches faxhub's
// base URL (http://faxhub.test) through a dialer to its test server.
type telnyxEnv struct {
	*testenv.Env
	standin string
	p       core.Principal
}

func newTelnyxEnv(t *testing.T) *telnyxEnv {
	t.Helper()
	seed := bytes.Repeat([]byte{5}, ed25519.SeedSize)
	var handler atomic.Pointer[http.Handler]
	st := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }))
	t.Cleanup(st.Close)
	env := testenv.New(t, testenv.WithTelnyx(app.TelnyxOptions{
		APIKey: "KEYinprocess", ConnectionID: "conn", APIURL: st.URL, From: "+12125550199",
		PublicKey: base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)),
	}))
	srv := env.Serve(env.App.Handler())
	toFaxhub := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
		},
	}}
	s, err := telnyxstandin.New(telnyxstandin.Options{
		Seed: seed, APIKey: "KEYinprocess", WebhookURL: "http://faxhub.test/webhooks/telnyx", BaseURL: st.URL, HTTPClient: toFaxhub,
		Step: 5 * time.Millisecond, OrderDelay: 50 * time.Millisecond, RetryBase: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	handler.Store(&h)
	t.Cleanup(s.Close)
	ctx := context.Background()
	if _, err := env.Svc.Credits.Grant(ctx, env.OwnerA.ID, core.ModeLive, 20*core.MicrosPerDollar, "telnyx test"); err != nil {
		t.Fatal(err)
	}
	return &telnyxEnv{Env: env, standin: st.URL, p: env.Principal(t, env.KeyALive)}
}

func (e *telnyxEnv) post(t *testing.T, path string, body any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(e.standin+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %v", path, resp.StatusCode, m)
	}
	return m
}

// eventually polls cond every 20 ms for up to 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTelnyxNumbersAndInbox: a live number is found, bought with credits,
// ordered at Telnyx and made active by the signed number_order.complete
// webhook; a fax.received on it becomes one inbox entry however often it
// is delivered; releasing the number deletes it at Telnyx. An order
// Telnyx fails credits the month back.
func TestTelnyxNumbersAndInbox(t *testing.T) {
	e := newTelnyxEnv(t)
	ctx := context.Background()
	found, err := e.Svc.Numbers.Search(ctx, e.p, numbers.Search{AreaCode: "212", Limit: 3})
	if err != nil || len(found) != 3 || found[0].E164 != "+12125550150" || found[0].Locality != "New York" {
		t.Fatalf("search: %+v %v", found, err)
	}
	n, err := e.Svc.Numbers.Buy(ctx, e.p, numbers.BuyRequest{Number: found[0].E164, PayWithCredits: true})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the number active", func() bool {
		got, err := e.Svc.Numbers.Get(ctx, e.p, n.ID)
		if err == nil && got.Status == numbers.Failed {
			t.Fatalf("the order failed: %+v", got)
		}
		return err == nil && got.Status == numbers.Active
	})
	got, _ := e.Svc.Numbers.Get(ctx, e.p, n.ID)
	if got.Provider != "telnyx" || got.ProviderRef == "" || got.OrderRef == "" {
		t.Errorf("number %+v", got)
	}

	in := e.post(t, "/standin/inbound", map[string]any{"to": n.E164, "from": "+12125550100", "pdf": testenv.MinimalPDF(2)})
	// A duplicate of the notice, as Telnyx may send.
	e.post(t, "/standin/events/"+in["event_id"].(string)+"/redeliver", nil)
	var received []inbox.InboundFax
	eventually(t, "the fax received", func() bool {
		page, err := e.Svc.Inbox.List(ctx, e.p, inbox.Query{})
		if err != nil {
			t.Fatal(err)
		}
		received = page.Data
		return len(received) >= 1 && received[0].Status != inbox.Receiving
	})
	if len(received) != 1 || received[0].Status != inbox.Received || received[0].Pages != 2 || received[0].To != n.E164 || received[0].Provider != "telnyx" {
		t.Fatalf("inbox %+v", received)
	}
	e.post(t, "/standin/events/"+in["event_id"].(string)+"/redeliver", nil)
	if page, _ := e.Svc.Inbox.List(ctx, e.p, inbox.Query{}); len(page.Data) != 1 {
		t.Errorf("a duplicate notice made %d entries", len(page.Data))
	}

	if _, err := e.Svc.Numbers.Release(ctx, e.p, n.ID); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(e.standin + "/standin/state")
	if err != nil {
		t.Fatal(err)
	}
	var st telnyxstandin.State
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if _, held := st.Numbers[n.E164]; held {
		t.Errorf("the released number is still on the Telnyx account: %v", st.Numbers)
	}

	bad, err := e.Svc.Numbers.Buy(ctx, e.p, numbers.BuyRequest{Number: telnyxstandin.FailingNumber, PayWithCredits: true})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the failing order failed", func() bool {
		got, err := e.Svc.Numbers.Get(ctx, e.p, bad.ID)
		return err == nil && got.Status == numbers.Failed
	})
}
