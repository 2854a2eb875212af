//go:build bench

package bench

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/telnyxstandin"
	"github.com/faxhub/faxhub/internal/testenv"
)

const (
	telnyxEvents  = 1000
	telnyxClients = 8
)

// benchTelnyxWebhooks measures Telnyx webhook events applied per second on
// SQLite: the stand-in (internal/telnyxstandin, in this process, over real
// HTTP) signs each fax.received with Ed25519 and posts it to
// /webhooks/telnyx; faxhub verifies the signature and the timestamp and
// records the received fax with its processing job in one transaction.
// The queue's workers are off, so the figure is the webhook's own, not
// the reading of the faxes (benchInbound measures that). Reported with the
// process's RSS; no baseline (the signing and the HTTP are the stand-in's
// share of the same figure).
func benchTelnyxWebhooks(t *testing.T, rep *report) {
	ctx := t.Context()
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	var handler atomic.Pointer[http.Handler]
	st := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }))
	defer st.Close()
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithTelnyx(app.TelnyxOptions{
		APIKey: "KEYbench", ConnectionID: "conn", APIURL: st.URL, From: "+12125550199",
		PublicKey: base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)),
	}))
	srv := e.Serve(e.App.Handler())
	toFaxhub := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: 64,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
		},
	}}
	s, err := telnyxstandin.New(telnyxstandin.Options{
		Seed: seed, APIKey: "KEYbench", WebhookURL: "http://faxhub.test/webhooks/telnyx", BaseURL: st.URL, HTTPClient: toFaxhub,
		Step: time.Millisecond, OrderDelay: 10 * time.Millisecond, RetryBase: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	handler.Store(&h)
	defer s.Close()

	if _, err := e.Svc.Credits.Grant(ctx, e.OwnerA.ID, core.ModeLive, 20*core.MicrosPerDollar, "bench"); err != nil {
		t.Fatal(err)
	}
	p := e.Principal(t, e.KeyALive)
	n, err := e.Svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: "+14155550150", PayWithCredits: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Numbers.PlaceOrder(ctx, n.ID); err != nil { // no workers: order it here
		t.Fatal(err)
	}
	waitUntil(t, "the number active", func() bool {
		got, err := e.Svc.Numbers.Get(ctx, p, n.ID)
		return err == nil && got.Status == numbers.Active
	})

	body, _ := json.Marshal(map[string]any{"to": n.E164, "from": "+12125550100", "pdf": testenv.MinimalPDF(1)})
	_ = resetPeakRSS()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range telnyxClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= telnyxEvents {
				resp, err := http.Post(st.URL+"/standin/inbound", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	applied := func() int {
		var c int
		if err := e.DB.SQL().QueryRowContext(ctx, "SELECT count(*) FROM inbound_faxes").Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	waitUntil(t, "every event applied", func() bool { return applied() >= telnyxEvents })
	elapsed := time.Since(start)
	if got := applied(); got != telnyxEvents {
		t.Fatalf("%d received faxes recorded for %d events", got, telnyxEvents)
	}
	hwm, _ := procStatusKB("VmHWM")
	rep.add("Telnyx webhook events/s (fax.received, SQLite)", "events/s", telnyxEvents/elapsed.Seconds(), nan, noTarget(), 0,
		"signed by the stand-in, verified and recorded with their job; workers off; peak RSS "+group(float64(hwm)/1024, 0)+" MB")
}

// waitUntil polls cond for up to 60 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
