package telnyxstandin_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/provider/telnyx"
	"github.com/faxhub/faxhub/internal/telnyxstandin"
	"github.com/faxhub/faxhub/internal/testenv"
	telnyxhook "github.com/faxhub/faxhub/rest/webhooks/telnyx"
)

// sink hands every core call to a channel.
type sink struct {
	outcomes chan faxes.ProviderResult
	orders   chan numbers.OrderResult
	inbound  chan inbox.InboundNotice
}

func (s *sink) RecordProviderOutcome(_ context.Context, _, _ string, res faxes.ProviderResult) error {
	s.outcomes <- res
	return nil
}

func (s *sink) RecordOrder(_ context.Context, _, ref string, res numbers.OrderResult) error {
	res.OrderRef = ref
	s.orders <- res
	return nil
}

func (s *sink) ReceiveFax(_ context.Context, n inbox.InboundNotice) (*inbox.InboundFax, error) {
	s.inbound <- n
	return &inbox.InboundFax{ID: "inb_1"}, nil
}

type rig struct {
	p      *telnyx.Provider
	sink   *sink
	api    string
	media  string
	redirs string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	sk := &sink{outcomes: make(chan faxes.ProviderResult, 16), orders: make(chan numbers.OrderResult, 16), inbound: make(chan inbox.InboundNotice, 16)}
	seed := bytes.Repeat([]byte{3}, ed25519.SeedSize)
	hook := httptest.NewServer(telnyxhook.NewWebhook(telnyxhook.WebhookConfig{PublicKey: ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey), Faxes: sk, Numbers: sk, Inbox: sk}))
	t.Cleanup(hook.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("/doc.pdf", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(testenv.MinimalPDF(4)) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/doc.pdf", http.StatusFound) })
	media := httptest.NewServer(mux)
	t.Cleanup(media.Close)

	// The stand-in serves inbound media at its own origin, known once
	// its server listens.
	var h http.Handler
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	st2, err := telnyxstandin.New(telnyxstandin.Options{Seed: seed, APIKey: "KEYtest", WebhookURL: hook.URL, BaseURL: api.URL, Step: time.Millisecond, SlowCall: time.Minute, OrderDelay: time.Millisecond, RetryBase: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h = st2.Handler()
	t.Cleanup(func() { api.Close(); st2.Close() })
	if st2.PublicKey() != base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)) {
		t.Fatal("the public key is not the seed's")
	}
	p, err := telnyx.New(telnyx.Config{APIKey: "KEYtest", ConnectionID: "conn", DefaultFrom: "+12125550199", APIURL: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{p: p, sink: sk, api: api.URL, media: media.URL + "/doc.pdf", redirs: media.URL + "/redirect"}
}

func (r *rig) send(t *testing.T, to, media string) string {
	t.Helper()
	res, err := r.p.Send(context.Background(), faxes.ProviderRequest{FaxID: "fax_1", AttemptID: "att_1", To: to, MediaURL: media})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != faxes.AttemptSending || res.ProviderRef == "" {
		t.Fatalf("send: %+v", res)
	}
	return res.ProviderRef
}

func wait[T any](t *testing.T, ch chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived in 10 s")
	}
	panic("unreachable")
}

func TestOutcomesByDestination(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		to, media string
		status    faxes.AttemptStatus
		code      string
		pages     int
	}{
		{"+12125550100", r.media, faxes.AttemptDelivered, "", 4},
		{"+12125550101", r.media, faxes.AttemptFailed, faxes.FailureBusy, 0},
		{"+12125550102", r.media, faxes.AttemptFailed, faxes.FailureNoAnswer, 0},
		{"+12125550103", r.media, faxes.AttemptFailed, faxes.FailureNotAFax, 0},
		{"+12125550104", r.media, faxes.AttemptPartial, faxes.FailureCallDropped, 2},
		{"+12125550105", r.media, faxes.AttemptFailed, faxes.FailureSignaling, 0},
		{"+12125550108", r.media, faxes.AttemptFailed, faxes.FailureInvalidNumber, 0},
		{"+12125550100", r.redirs, faxes.AttemptFailed, faxes.FailureMedia, 0},
	} {
		ref := r.send(t, tc.to, tc.media)
		got := wait(t, r.sink.outcomes)
		if got.Status != tc.status || got.FailureCode != tc.code || got.PagesSent != tc.pages || got.ProviderRef != ref {
			t.Errorf("%s %s: %+v", tc.to, tc.media, got)
		}
	}
}

func TestSendRefusals(t *testing.T) {
	r := newRig(t)
	res, err := r.p.Send(context.Background(), faxes.ProviderRequest{FaxID: "fax_1", AttemptID: "att_1", To: "+12125550107", MediaURL: r.media})
	if err != nil || res.FailureCode != faxes.FailureInvalidNumber {
		t.Errorf("invalid number: %+v %v", res, err)
	}
	if _, err := r.p.Send(context.Background(), faxes.ProviderRequest{FaxID: "fax_1", AttemptID: "att_1", To: "+12125550106", MediaURL: r.media}); err == nil {
		t.Error("an API error was not an error")
	}
	bad, _ := telnyx.New(telnyx.Config{APIKey: "KEYwrong", ConnectionID: "conn", DefaultFrom: "+12125550199", APIURL: r.api})
	if _, err := bad.Send(context.Background(), faxes.ProviderRequest{FaxID: "fax_1", AttemptID: "att_1", To: "+12125550100", MediaURL: r.media}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong key: %v", err)
	}
}

func TestCancel(t *testing.T) {
	r := newRig(t)
	ref := r.send(t, "+12125550109", r.media)
	// The cancel may land before the call starts or while it rings:
	// either way the outcome is canceled.
	if err := r.p.CancelSend(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	if got := wait(t, r.sink.outcomes); got.FailureCode != faxes.FailureCanceled {
		t.Errorf("outcome %+v", got)
	}
	if err := r.p.CancelSend(context.Background(), ref); err == nil {
		t.Error("a second cancel was accepted")
	}
}

func TestNumbers(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	got, err := r.p.SearchNumbers(ctx, numbers.Search{AreaCode: "415", Limit: 3})
	if err != nil || len(got) != 3 || got[0].E164 != "+14155550150" || got[0].Region != "CA" || got[0].Locality != "San Francisco" {
		t.Fatalf("search: %+v %v", got, err)
	}
	res, err := r.p.OrderNumber(ctx, numbers.Order{NumberID: "num_1", E164: got[0].E164})
	if err != nil || res.Status != numbers.Pending || res.OrderRef == "" {
		t.Fatalf("order: %+v %v", res, err)
	}
	done := wait(t, r.sink.orders)
	if done.Status != numbers.Active || done.OrderRef != res.OrderRef || done.ProviderRef == "" {
		t.Fatalf("order complete: %+v", done)
	}
	// Ordering again under the same number id reuses the order.
	again, err := r.p.OrderNumber(ctx, numbers.Order{NumberID: "num_1", E164: got[0].E164})
	if err != nil || again.OrderRef != res.OrderRef || again.Status != numbers.Active || again.ProviderRef != done.ProviderRef {
		t.Errorf("reorder: %+v %v", again, err)
	}
	// The number left the inventory.
	if after, _ := r.p.SearchNumbers(ctx, numbers.Search{AreaCode: "415", Limit: 1}); len(after) != 1 || after[0].E164 == got[0].E164 {
		t.Errorf("after the order: %+v", after)
	}
	if err := r.p.ReleaseNumber(ctx, &numbers.Number{E164: got[0].E164, ProviderRef: done.ProviderRef}); err != nil {
		t.Fatal(err)
	}
	if err := r.p.ReleaseNumber(ctx, &numbers.Number{E164: got[0].E164, ProviderRef: done.ProviderRef}); err != nil {
		t.Errorf("releasing twice: %v", err)
	}
	if _, err := r.p.OrderNumber(ctx, numbers.Order{NumberID: "num_2", E164: telnyxstandin.FailingNumber}); err != nil {
		t.Fatal(err)
	}
	if f := wait(t, r.sink.orders); f.Status != numbers.Failed {
		t.Errorf("failing number: %+v", f)
	}
}

func TestInboundAndHold(t *testing.T) {
	r := newRig(t)
	post := func(path string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := http.Post(r.api+path, "application/json", bytes.NewReader(b))
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
	post("/standin/media/hold", map[string]bool{"hold": true})
	in := post("/standin/inbound", map[string]any{"to": "+12125550150", "from": "+12125550100", "pdf": testenv.MinimalPDF(2)})
	n := wait(t, r.sink.inbound)
	if n.Provider != "telnyx" || n.ProviderRef != in["fax_id"] || n.To != "+12125550150" || n.Pages != 2 || !strings.HasPrefix(n.MediaURL, r.api+"/media/") {
		t.Fatalf("notice %+v", n)
	}
	fetched := make(chan error, 1)
	go func() {
		rc, err := r.p.FetchInbound(context.Background(), &inbox.InboundFax{ID: "inb_1", MediaURL: n.MediaURL})
		if err == nil {
			rc.Close()
		}
		fetched <- err
	}()
	// The download is waiting at the stand-in, and has not finished.
	for deadline := time.Now().Add(10 * time.Second); waiting(t, r.api) != 1; {
		if time.Now().After(deadline) {
			t.Fatal("the download never reached the stand-in")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-fetched:
		t.Fatalf("the download was not held: %v", err)
	default:
	}
	post("/standin/media/hold", map[string]bool{"hold": false})
	if err := wait(t, fetched); err != nil {
		t.Fatal(err)
	}
	// A duplicate of the notice arrives with the same data.
	post("/standin/events/"+in["event_id"].(string)+"/redeliver", nil)
	if dup := wait(t, r.sink.inbound); dup != n {
		t.Errorf("duplicate %+v, want %+v", dup, n)
	}
	// Forged events are refused by the webhook.
	for _, forge := range []string{"bad_signature", "old_timestamp"} {
		m := post("/standin/faxes/"+in["fax_id"].(string)+"/events", map[string]any{"event_type": "fax.received", "forge": forge})
		if m["status"] != float64(401) {
			t.Errorf("%s: faxhub answered %v", forge, m["status"])
		}
	}
}

// waiting reads how many media downloads the stand-in holds.
func waiting(t *testing.T, api string) int {
	t.Helper()
	resp, err := http.Get(api + "/standin/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st telnyxstandin.State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.MediaWaiting
}
