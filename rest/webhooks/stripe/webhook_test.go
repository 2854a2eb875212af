package stripe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/testenv"
	stripehook "github.com/faxhub/faxhub/rest/webhooks/stripe"
)

const whsec = "whsec_faxhub_test_secret"

var ctx = context.Background()

// fakeStripe answers POST /v1/checkout/sessions like Stripe (the fields
// the gateway reads), so the webhook tests run without stripe-mock; the
// gateway's request itself is proven against stripe-mock in
// core/payments/stripecheckout/gateway_test.go.
type fakeStripe struct{ n atomic.Int64 }

func (f *fakeStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/checkout/sessions" {
		http.Error(w, `{"error":{"message":"unexpected call"}}`, http.StatusNotFound)
		return
	}
	id := fmt.Sprintf("cs_test_fake%d", f.n.Add(1))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "checkout.session", "url": "https://checkout.stripe.com/c/pay/" + id})
}

// clock is a movable service clock.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

type env struct {
	*testenv.Env
	url   string
	clock *clock
}

func newEnv(t *testing.T) *env {
	t.Helper()
	fs := httptest.NewServer(&fakeStripe{})
	t.Cleanup(fs.Close)
	clk := &clock{}
	e := testenv.New(t, testenv.WithoutWorkers(),
		testenv.WithConfig(func(c *services.Config) { c.Now = clk.Now }),
		testenv.WithStripe(app.StripeOptions{SecretKey: "sk_test_faxhub", WebhookSecret: whsec, APIURL: fs.URL}))
	srv := e.Serve(e.App.Handler())
	return &env{Env: e, url: srv.URL, clock: clk}
}

func (e *env) live() core.Principal { return core.OwnerPrincipal(e.OwnerA.ID, core.ModeLive) }

// pack starts a live credit-pack checkout through the gateway.
func (e *env) pack(t *testing.T) *checkout.Checkout {
	t.Helper()
	cs, err := e.Svc.Checkout.StartCreditPack(ctx, e.live(), e.Svc.Credits.Packs()[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cs.CheckoutURL, "https://checkout.stripe.com/") {
		t.Fatalf("checkout URL = %q, want Stripe's", cs.CheckoutURL)
	}
	return e.checkout(t, cs.ID)
}

func (e *env) checkout(t *testing.T, id string) *checkout.Checkout {
	t.Helper()
	c, err := e.Svc.Checkout.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// draft makes a live draft (stored directly: live drafts need a live fax
// provider, which tests do not have) and starts its checkout.
func (e *env) draft(t *testing.T) (*faxes.Draft, *checkout.Checkout) {
	t.Helper()
	capa, err := e.Svc.Documents.CreateUpload(ctx, e.live(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := e.Svc.Documents.ReceiveUpload(ctx, capa.UploadToken, bytes.NewReader(testenv.MinimalPDF(1)))
	if err != nil {
		t.Fatal(err)
	}
	now := e.Svc.Kernel.Now()
	d := &faxes.Draft{
		ID: core.NewID(core.PrefixDraft), OwnerID: e.OwnerA.ID, Mode: core.ModeLive, DocumentID: doc.ID, To: "+12125550100", Country: "US",
		Pages: doc.Pages, PriceMicros: 210_000, Status: faxes.DraftOpen, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour),
	}
	err = e.Store.InTx(ctx, func(ktx core.Tx) error {
		tx := ktx.(services.Tx)
		if err := tx.UseDocument(ctx, d.DocumentID, now); err != nil {
			return err
		}
		return tx.CreateDraft(ctx, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := e.Svc.Checkout.StartDraft(ctx, e.live(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	return d, e.checkout(t, cs.ID)
}

var evtSeq atomic.Int64

// event is a Stripe event of typ carrying obj.
func event(typ stripe.EventType, obj map[string]any) []byte {
	b, err := json.Marshal(map[string]any{
		"id": fmt.Sprintf("evt_test_%d", evtSeq.Add(1)), "object": "event", "api_version": stripe.APIVersion,
		"type": string(typ), "created": time.Now().Unix(), "livemode": false, "data": map[string]any{"object": obj},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// sessionEvent is a checkout.session.* event for c as Stripe sends it when
// c was paid in full; edit changes the session object.
func sessionEvent(typ stripe.EventType, c *checkout.Checkout, edit func(map[string]any)) []byte {
	obj := map[string]any{
		"id": c.ExternalID, "object": "checkout.session", "mode": "payment", "status": "complete",
		"client_reference_id": c.ID, "metadata": map[string]any{"checkout_id": c.ID},
		"amount_total": core.CentsUp(c.AmountMicros), "currency": "usd", "payment_status": "paid",
		"payment_intent": "pi_" + c.ID,
	}
	if edit != nil {
		edit(obj)
	}
	return event(typ, obj)
}

func refundEvent(c *checkout.Checkout, refundedCents int64) []byte {
	return event(stripe.EventTypeChargeRefunded, map[string]any{
		"id": "ch_" + c.ID, "object": "charge", "payment_intent": "pi_" + c.ID, "currency": "usd",
		"amount": core.CentsUp(c.AmountMicros), "amount_refunded": refundedCents, "refunded": refundedCents == core.CentsUp(c.AmountMicros),
	})
}

func sign(body []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at}).Header
}

// post sends body to the webhook with the signature header sig (none if
// empty) and returns the status and the decoded answer.
func (e *env) post(t *testing.T, body []byte, sig string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+stripehook.WebhookPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if sig != "" {
		req.Header.Set("Stripe-Signature", sig)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("answer %d is not JSON: %q", res.StatusCode, raw)
	}
	return res.StatusCode, out
}

// deliver sends a validly signed event and wants 200.
func (e *env) deliver(t *testing.T, body []byte) map[string]any {
	t.Helper()
	st, out := e.post(t, body, sign(body, whsec, time.Now()))
	if st != http.StatusOK {
		t.Fatalf("webhook answered %d %v, want 200", st, out)
	}
	return out
}

func (e *env) ledger(t *testing.T) map[credits.LedgerKind][]credits.LedgerEntry {
	t.Helper()
	entries, err := e.Store.ListLedger(ctx, credits.LedgerFilter{OwnerID: e.OwnerA.ID, Mode: core.ModeLive, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	m := map[credits.LedgerKind][]credits.LedgerEntry{}
	for _, x := range entries {
		m[x.Kind] = append(m[x.Kind], x)
	}
	return m
}

func (e *env) available(t *testing.T) int64 {
	t.Helper()
	b, err := e.Svc.Credits.Balance(ctx, e.OwnerA.ID, core.ModeLive)
	if err != nil {
		t.Fatal(err)
	}
	return b.AvailableMicros
}

func (e *env) liveFaxes(t *testing.T) []faxes.Fax {
	t.Helper()
	fs, err := e.Store.ListFaxes(ctx, faxes.Filter{OwnerID: e.OwnerA.ID, Mode: core.ModeLive, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func wantStatus(t *testing.T, e *env, id string, want checkout.Status) *checkout.Checkout {
	t.Helper()
	c := e.checkout(t, id)
	if c.Status != want {
		t.Fatalf("checkout %s is %s, want %s", id, c.Status, want)
	}
	return c
}

// wantGranted checks the pack was granted exactly n times.
func wantGranted(t *testing.T, e *env, c *checkout.Checkout, n int) {
	t.Helper()
	if got := len(e.ledger(t)[credits.LedgerPurchase]); got != n {
		t.Fatalf("%d purchase entries, want %d", got, n)
	}
	if got, want := e.available(t), int64(n)*c.CreditMicros; got != want {
		t.Fatalf("live balance %d, want %d", got, want)
	}
}

func TestWebhookPackCompletedOnce(t *testing.T) {
	e := newEnv(t)
	c := e.pack(t)
	ev := sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, nil)
	e.deliver(t, ev)
	e.deliver(t, ev) // Stripe delivers an event at least once
	// The same payment reported by the async event too.
	e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionAsyncPaymentSucceeded, c, nil))
	got := wantStatus(t, e, c.ID, checkout.Paid)
	if got.PaymentRef != "pi_"+c.ID {
		t.Errorf("payment ref = %q, want the payment intent", got.PaymentRef)
	}
	wantGranted(t, e, c, 1)
}

func TestWebhookOutOfOrder(t *testing.T) {
	t.Run("expired then completed: the money was taken, so the pack is granted", func(t *testing.T) {
		e := newEnv(t)
		c := e.pack(t)
		e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionExpired, c, nil))
		wantStatus(t, e, c.ID, checkout.Expired)
		e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, nil))
		wantStatus(t, e, c.ID, checkout.Paid)
		wantGranted(t, e, c, 1)
	})
	t.Run("completed then expired: it stays paid", func(t *testing.T) {
		e := newEnv(t)
		c := e.pack(t)
		e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, nil))
		e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionExpired, c, nil))
		e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionAsyncPaymentFailed, c, nil))
		wantStatus(t, e, c.ID, checkout.Paid)
		wantGranted(t, e, c, 1)
	})
	t.Run("completed after the local expiry: still granted", func(t *testing.T) {
		e := newEnv(t)
		c := e.pack(t)
		e.clock.Advance(3 * time.Hour)
		e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, nil))
		wantStatus(t, e, c.ID, checkout.Paid)
		wantGranted(t, e, c, 1)
	})
	t.Run("async payment failed: failed, nothing granted", func(t *testing.T) {
		e := newEnv(t)
		c := e.pack(t)
		e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, func(o map[string]any) { o["payment_status"] = "unpaid" }))
		wantStatus(t, e, c.ID, checkout.Open)
		e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionAsyncPaymentFailed, c, func(o map[string]any) { o["payment_status"] = "unpaid" }))
		wantStatus(t, e, c.ID, checkout.Failed)
		wantGranted(t, e, c, 0)
	})
}

func TestWebhookRefusesMismatchedPayments(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
	}{
		{"amount", func(o map[string]any) { o["amount_total"] = o["amount_total"].(int64) - 1 }},
		{"currency", func(o map[string]any) { o["currency"] = "eur" }},
		{"another session", func(o map[string]any) { o["id"] = "cs_test_someone_else" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.pack(t)
			// 200: a retry cannot make it match, so Stripe must not retry
			// for days; the refusal is logged for a refund by hand.
			out := e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, tc.edit))
			if o, _ := out["outcome"].(string); !strings.HasPrefix(o, "refused") {
				t.Errorf("outcome = %q, want refused", o)
			}
			wantStatus(t, e, c.ID, checkout.Open)
			wantGranted(t, e, c, 0)
		})
	}
}

func TestWebhookRefusesBadSignatures(t *testing.T) {
	e := newEnv(t)
	c := e.pack(t)
	ev := sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, nil)
	other := sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, func(o map[string]any) { o["amount_total"] = 1 })
	for _, tc := range []struct {
		name string
		body []byte
		sig  string
	}{
		{"no signature", ev, ""},
		{"another secret", ev, sign(ev, "whsec_not_ours", time.Now())},
		{"too old", ev, sign(ev, whsec, time.Now().Add(-stripehook.SignatureTolerance-time.Minute))},
		{"signature of another body", ev, sign(other, whsec, time.Now())},
		{"malformed header", ev, "t=abc,v1=zz"},
		{"not an event", []byte(`{"object":"charge"}`), sign([]byte(`{"object":"charge"}`), whsec, time.Now())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, out := e.post(t, tc.body, tc.sig)
			if st != http.StatusBadRequest || out["code"] != stripehook.CodeWebhookSignature {
				t.Fatalf("answer %d %v, want 400 %s", st, out, stripehook.CodeWebhookSignature)
			}
			wantStatus(t, e, c.ID, checkout.Open)
			wantGranted(t, e, c, 0)
		})
	}
	t.Run("too large", func(t *testing.T) {
		big := bytes.Repeat([]byte("x"), stripehook.MaxWebhookBytes+1)
		st, out := e.post(t, big, sign(big, whsec, time.Now()))
		if st != http.StatusRequestEntityTooLarge {
			t.Fatalf("answer %d %v, want 413", st, out)
		}
	})
}

func TestWebhookIgnoresWhatIsNotOurs(t *testing.T) {
	e := newEnv(t)
	c := e.pack(t)
	for _, body := range [][]byte{
		event("customer.created", map[string]any{"id": "cus_1", "object": "customer"}),
		event(stripe.EventTypeCheckoutSessionCompleted, map[string]any{"id": "cs_other", "object": "checkout.session", "payment_status": "paid", "amount_total": 100, "currency": "usd"}),
		sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, func(o map[string]any) {
			o["metadata"] = map[string]any{"checkout_id": "chk_unknown"}
		}),
		event(stripe.EventTypeChargeRefunded, map[string]any{"id": "ch_x", "object": "charge", "payment_intent": "pi_unknown", "amount_refunded": 100}),
	} {
		e.deliver(t, body)
	}
	wantStatus(t, e, c.ID, checkout.Open)
	wantGranted(t, e, c, 0)
}

func TestWebhookRefundedPack(t *testing.T) {
	t.Run("reversed once", func(t *testing.T) {
		e := newEnv(t)
		c := e.pack(t)
		e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, nil))
		full := core.CentsUp(c.AmountMicros)
		e.deliver(t, refundEvent(c, full))
		e.deliver(t, refundEvent(c, full))
		e.deliver(t, refundEvent(c, full/2)) // an older, partial refund arriving late
		rev := e.ledger(t)[credits.LedgerReversal]
		if len(rev) != 1 || rev[0].AmountMicros != -c.CreditMicros {
			t.Fatalf("reversals %+v, want one of %d", rev, -c.CreditMicros)
		}
		if got := e.available(t); got != 0 {
			t.Fatalf("balance %d after the refund, want 0", got)
		}
		got := wantStatus(t, e, c.ID, checkout.Paid)
		if got.RefundedCents != full || got.ReversedMicros != c.CreditMicros || got.RefundedAt == nil {
			t.Errorf("checkout after refund: refunded %d cents, reversed %d, at %v", got.RefundedCents, got.ReversedMicros, got.RefundedAt)
		}
	})
	t.Run("some credits spent: what is left is taken back, the rest stays spent", func(t *testing.T) {
		e := newEnv(t)
		c := e.pack(t)
		e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, nil))
		// A fax in flight holds 40% of the pack.
		held := c.CreditMicros * 4 / 10
		if err := e.Store.PlaceHold(ctx, &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: e.OwnerA.ID, Mode: core.ModeLive,
			Kind: credits.LedgerHold, AmountMicros: -held, Reason: "a fax", CreatedAt: e.Svc.Kernel.Now()}); err != nil {
			t.Fatal(err)
		}
		e.deliver(t, refundEvent(c, core.CentsUp(c.AmountMicros)))
		e.deliver(t, refundEvent(c, core.CentsUp(c.AmountMicros)))
		rev := e.ledger(t)[credits.LedgerReversal]
		if len(rev) != 1 || rev[0].AmountMicros != -(c.CreditMicros-held) {
			t.Fatalf("reversals %+v, want one of %d", rev, -(c.CreditMicros - held))
		}
		if got := e.available(t); got != 0 {
			t.Fatalf("available %d, want 0", got)
		}
		if got := e.checkout(t, c.ID); got.ReversedMicros != c.CreditMicros-held {
			t.Errorf("reversed %d recorded, want %d", got.ReversedMicros, c.CreditMicros-held)
		}
	})
	t.Run("partial then full: reversed in proportion", func(t *testing.T) {
		e := newEnv(t)
		c := e.pack(t)
		e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, nil))
		full := core.CentsUp(c.AmountMicros)
		e.deliver(t, refundEvent(c, full/2))
		if got, want := e.available(t), c.CreditMicros-c.CreditMicros*(full/2)/full; got != want {
			t.Fatalf("balance %d after half the refund, want %d", got, want)
		}
		e.deliver(t, refundEvent(c, full))
		if got := e.available(t); got != 0 {
			t.Fatalf("balance %d after the whole refund, want 0", got)
		}
		if n := len(e.ledger(t)[credits.LedgerReversal]); n != 2 {
			t.Fatalf("%d reversals, want 2", n)
		}
	})
}

func TestWebhookDraft(t *testing.T) {
	t.Run("paid: one fax queued", func(t *testing.T) {
		e := newEnv(t)
		d, c := e.draft(t)
		ev := sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, nil)
		e.deliver(t, ev)
		e.deliver(t, ev)
		wantStatus(t, e, c.ID, checkout.Paid)
		fs := e.liveFaxes(t)
		if len(fs) != 1 || fs[0].Status != faxes.Queued || fs[0].DraftID == nil || *fs[0].DraftID != d.ID || fs[0].PaymentMethod != faxes.PayCheckout {
			t.Fatalf("live faxes %+v, want one queued fax of draft %s paid by checkout", fs, d.ID)
		}
		if n, err := testenv.PendingJobs(ctx, e.DB.SQL()); err != nil || n != 1 {
			t.Fatalf("%d delivery jobs (%v), want 1", n, err)
		}
		// A refund of a draft's payment is recorded; the fax went out.
		e.deliver(t, refundEvent(c, core.CentsUp(c.AmountMicros)))
		if got := e.checkout(t, c.ID); got.RefundedCents != core.CentsUp(c.AmountMicros) || got.ReversedMicros != 0 {
			t.Errorf("draft refund recorded as %d cents, %d reversed", got.RefundedCents, got.ReversedMicros)
		}
		if n := len(e.ledger(t)[credits.LedgerReversal]); n != 0 {
			t.Errorf("%d reversals for a draft, want none", n)
		}
	})
	t.Run("paid after the draft expired: credited, no fax", func(t *testing.T) {
		e := newEnv(t)
		_, c := e.draft(t)
		e.clock.Advance(25 * time.Hour)
		e.deliver(t, sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, nil))
		wantStatus(t, e, c.ID, checkout.Paid)
		if fs := e.liveFaxes(t); len(fs) != 0 {
			t.Fatalf("%d faxes, want none", len(fs))
		}
		ref := e.ledger(t)[credits.LedgerRefund]
		if len(ref) != 1 || ref[0].AmountMicros != core.CentsUp(c.AmountMicros)*core.MicrosPerCent {
			t.Fatalf("refund entries %+v, want the payment credited once", ref)
		}
	})
}

func TestWebhookConcurrentDuplicates(t *testing.T) {
	e := newEnv(t)
	c := e.pack(t)
	ev := sessionEvent(stripe.EventTypeCheckoutSessionCompleted, c, nil)
	sig := sign(ev, whsec, time.Now())
	var wg sync.WaitGroup
	errs := make(chan string, 20)
	for range 20 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, e.url+stripehook.WebhookPath, bytes.NewReader(ev))
			req.Header.Set("Stripe-Signature", sig)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				errs <- fmt.Sprintf("%d %s", res.StatusCode, b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	wantGranted(t, e, c, 1)
}
