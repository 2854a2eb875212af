package webhooks_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/webhooks"
)

// TestFaxEventsReachAVerifyingReceiver: a fax goes queued → sending →
// delivered, and a fax to the busy number retries and fails; each of
// their events reaches the owner's endpoint once, signed v1 (checked by
// the Standard Webhooks library, timestamp included) and v1a (checked
// with crypto/ed25519 and the published key), with the event's id as
// webhook-id.
func TestFaxEventsReachAVerifyingReceiver(t *testing.T) {
	e := privateEnv(t)
	p := e.Principal(t, e.KeyATest)
	r := newReceiver(t)
	ep, err := e.Svc.Webhooks.Create(ctx, p, webhooks.CreateRequest{URL: r.URL + "/hooks", Signing: []string{"v1", "v1a"}, EventTypes: []string{"fax.*"}})
	if err != nil {
		t.Fatal(err)
	}
	r.trust(ep.Secret)
	r.trustKey(t, e.Svc)

	ok, _, err := e.Svc.Faxes.Send(ctx, p, "k1", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1)})
	if err != nil {
		t.Fatal(err)
	}
	busy, _, err := e.Svc.Faxes.Send(ctx, p, "k2", faxes.SendRequest{To: "+12125550101", UploadToken: e.Upload(t, p, 1)})
	if err != nil {
		t.Fatal(err)
	}
	e.DrainQueue(t)
	byFax := func(ds []delivery, id string) []events.Type {
		var out []events.Type
		for _, d := range ds {
			var f faxes.Fax
			_ = jsonUnmarshal(d.Event.Data, &f)
			if f.ID == id {
				out = append(out, d.Event.Type)
			}
		}
		return out
	}
	got := r.waitFor(t, "both faxes' last events", func(ds []delivery) bool {
		return slices.Contains(byFax(ds, ok.ID), events.FaxDelivered) && slices.Contains(byFax(ds, busy.ID), events.FaxFailed)
	})
	e.DrainQueue(t)
	got = r.deliveries()
	// Deliveries are concurrent: compare as sets, each exactly once.
	wantSet := func(id string, want []events.Type) {
		have := byFax(got, id)
		slices.Sort(have)
		slices.Sort(want)
		if !slices.Equal(have, want) {
			t.Errorf("fax %s: delivered %v, want %v", id, have, want)
		}
	}
	q, s, rt := events.FaxQueued, events.FaxSending, events.FaxRetrying
	wantSet(ok.ID, []events.Type{q, s, events.FaxDelivered})
	wantSet(busy.ID, []events.Type{q, s, rt, s, rt, s, events.FaxFailed})

	seen := map[string]bool{}
	for _, d := range got {
		if seen[d.ID] {
			t.Errorf("webhook-id %s delivered twice", d.ID)
		}
		seen[d.ID] = true
		if d.ID != d.Event.ID {
			t.Errorf("webhook-id %s, event id %s", d.ID, d.Event.ID)
		}
		if len(d.V1) != 1 || !d.V1a {
			t.Errorf("%s %s: v1 verified with %d secrets, v1a %v (signature %q)", d.Event.Type, d.ID, len(d.V1), d.V1a, d.Signature)
		}
		wh, _ := standardwebhooks.NewWebhook(ep.Secret)
		h := http.Header{}
		h.Set("webhook-id", d.ID)
		h.Set("webhook-timestamp", d.Timestamp)
		h.Set("webhook-signature", d.Signature)
		if err := wh.Verify(d.Body, h); err != nil {
			t.Errorf("the library's full verification (timestamp within 5 min) refused %s: %v", d.ID, err)
		}
		if ts := unixOf(t, d.Timestamp); time.Since(ts) > time.Minute {
			t.Errorf("webhook-timestamp %s is not the attempt's time", d.Timestamp)
		}
	}
}
