package stripe_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faxhub/faxhub/core/payments"
	"github.com/faxhub/faxhub/core/payments/stripe"
	"github.com/faxhub/faxhub/internal/stripetest"
)

const secret = "sk_test_SECRETsecretSECRET42"

func newMethod(t *testing.T, base string, mod ...func(*stripe.Options)) *stripe.Method {
	t.Helper()
	o := stripe.Options{SecretKey: secret, BaseURL: base, NetworkID: "profile_test"}
	for _, f := range mod {
		f(&o)
	}
	m, err := stripe.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// backend is the stand-in behind httptest, with the requests it saw.
type backend struct {
	st  *stripetest.Server
	srv *httptest.Server
	mu  sync.Mutex
	got []*http.Request
	frm []url.Values
}

func newBackend(t *testing.T) *backend {
	b := &backend{st: stripetest.New()}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		b.mu.Lock()
		b.got = append(b.got, r)
		b.frm = append(b.frm, r.PostForm)
		b.mu.Unlock()
		b.st.ServeHTTP(w, r)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *backend) mint(t *testing.T, pm string, max int64, cur string) string {
	t.Helper()
	id, err := b.st.Mint(pm, max, cur)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func cred(spt string) json.RawMessage {
	return json.RawMessage(`{"spt":"` + spt + `","externalId":"req_1"}`)
}

func charge(key string, amount int64, c json.RawMessage) payments.ChargeRequest {
	return payments.ChargeRequest{IdempotencyKey: key, Amount: amount, Currency: "usd", Credential: c, Description: "fax to +12025550100", Metadata: map[string]string{"challenge_id": "ch_1"}}
}

// noSecrets fails when a text carries the secret key or a token.
func noSecrets(t *testing.T, s string, spts ...string) {
	t.Helper()
	if strings.Contains(s, secret) || strings.Contains(s, "SECRETsecret") {
		t.Errorf("the secret key leaked: %q", s)
	}
	for _, spt := range spts {
		if strings.Contains(s, spt) {
			t.Errorf("the SPT leaked: %q", s)
		}
	}
}

func TestNew(t *testing.T) {
	for _, o := range []stripe.Options{{}, {SecretKey: "sk test"}, {SecretKey: "sk_test_1", BaseURL: "ftp://x"}, {SecretKey: "sk_test_1", BaseURL: "/relative"}} {
		if _, err := stripe.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		} else {
			noSecrets(t, err.Error())
		}
	}
	m, err := stripe.New(stripe.Options{SecretKey: "sk_test_1", NetworkID: "profile_1"})
	if err != nil || m.Name() != "stripe" || m.NetworkID() != "profile_1" {
		t.Fatalf("New = %v, %v", m, err)
	}
}

func TestChargeRequestShape(t *testing.T) {
	b := newBackend(t)
	m := newMethod(t, b.srv.URL)
	spt := b.mint(t, "pm_card_visa", 500, "usd")
	res, err := m.Charge(context.Background(), charge("mpp_ch1_"+spt, 500, cred(spt)))
	if err != nil || res.Status != payments.StatusSucceeded {
		t.Fatalf("charge = %+v, %v", res, err)
	}
	if len(b.got) != 1 {
		t.Fatalf("%d calls to Stripe, want 1", len(b.got))
	}
	r, f := b.got[0], b.frm[0]
	for h, want := range map[string]string{"Authorization": "Bearer " + secret, "Stripe-Version": "2026-07-29.preview", "Idempotency-Key": "mpp_ch1_" + spt, "Content-Type": "application/x-www-form-urlencoded"} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	want := url.Values{"amount": {"500"}, "currency": {"usd"}, "shared_payment_granted_token": {spt}, "confirm": {"true"},
		"automatic_payment_methods[enabled]": {"true"}, "automatic_payment_methods[allow_redirects]": {"never"},
		"metadata[challenge_id]": {"ch_1"}, "description": {"fax to +12025550100"}}
	if f.Encode() != want.Encode() {
		t.Errorf("form\n got %s\nwant %s", f.Encode(), want.Encode())
	}
	if r.Method != "POST" || r.URL.Path != "/v1/payment_intents" {
		t.Errorf("%s %s", r.Method, r.URL.Path)
	}
}

func TestChargeOutcomes(t *testing.T) {
	b := newBackend(t)
	m := newMethod(t, b.srv.URL)
	used := b.mint(t, "pm_card_visa", 100, "usd")
	if res, err := m.Charge(context.Background(), charge("k-used", 100, cred(used))); err != nil || res.Status != payments.StatusSucceeded {
		t.Fatalf("first use: %+v %v", res, err)
	}
	for _, tc := range []struct {
		name   string
		cred   json.RawMessage
		amount int64
		want   payments.Status
		msg    string
	}{
		{"visa", cred(b.mint(t, "pm_card_visa", 100, "usd")), 100, payments.StatusSucceeded, ""},
		{"declined", cred(b.mint(t, "pm_card_chargeDeclined", 100, "usd")), 100, payments.StatusDeclined, "declined"},
		{"insufficient funds", cred(b.mint(t, "pm_card_insufficientFunds", 100, "usd")), 100, payments.StatusDeclined, "insufficient funds"},
		{"requires action", cred(b.mint(t, "pm_card_authenticationRequired", 100, "usd")), 100, payments.StatusRequiresAction, "3-D Secure"},
		{"unknown token", cred("spt_test_unknown123"), 100, payments.StatusInvalid, "No such"},
		{"used up", cred(used), 100, payments.StatusInvalid, "consumed"},
		{"over the limit", cred(b.mint(t, "pm_card_visa", 100, "usd")), 101, payments.StatusInvalid, "exceeds"},
		{"other currency", cred(b.mint(t, "pm_card_visa", 100, "eur")), 100, payments.StatusInvalid, "limited to eur"},
		{"not spt", json.RawMessage(`{"spt":"tok_visa"}`), 100, payments.StatusInvalid, "spt_"},
		{"bad chars", json.RawMessage(`{"spt":"spt_a&amount=1"}`), 100, payments.StatusInvalid, "spt_"},
		{"too long", json.RawMessage(`{"spt":"spt_` + strings.Repeat("a", 300) + `"}`), 100, payments.StatusInvalid, "spt_"},
		{"unknown member", json.RawMessage(`{"spt":"spt_abc","amount":1}`), 100, payments.StatusInvalid, "spt_"},
		{"two objects", json.RawMessage(`{"spt":"spt_abc"}{}`), 100, payments.StatusInvalid, "spt_"},
		{"empty", nil, 100, payments.StatusInvalid, "spt_"},
		{"not an object", json.RawMessage(`"spt_abc"`), 100, payments.StatusInvalid, "spt_"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spt struct{ SPT string }
			_ = json.Unmarshal(tc.cred, &spt)
			res, err := m.Charge(context.Background(), charge("k-"+strings.ReplaceAll(tc.name, " ", "_"), tc.amount, tc.cred))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.want || !strings.Contains(res.Message, tc.msg) {
				t.Fatalf("= %+v, want %s with %q", res, tc.want, tc.msg)
			}
			if tc.want == payments.StatusSucceeded != strings.HasPrefix(res.Reference, "pi_") {
				t.Errorf("reference %q", res.Reference)
			}
			if len(spt.SPT) > len("spt_") {
				noSecrets(t, res.Message, spt.SPT)
			}
		})
	}
	// Under Stripe's minimum is our pricing's bug, not the payer's: an
	// error, no verdict.
	if res, err := m.Charge(context.Background(), charge("k-small", 49, cred(b.mint(t, "pm_card_visa", 100, "usd")))); err == nil || !strings.Contains(err.Error(), "amount_too_small") {
		t.Errorf("49 cents = %+v, %v", res, err)
	}
	if n := b.st.Charges(); n != 2 {
		t.Errorf("charges = %d, want 2", n)
	}
}

func TestChargeIdempotent(t *testing.T) {
	b := newBackend(t)
	m := newMethod(t, b.srv.URL)
	ctx := context.Background()
	spt := b.mint(t, "pm_card_visa", 500, "usd")
	r1, err1 := m.Charge(ctx, charge("mpp_a_"+spt, 500, cred(spt)))
	r2, err2 := m.Charge(ctx, charge("mpp_a_"+spt, 500, cred(spt)))
	if err1 != nil || err2 != nil || r1.Status != payments.StatusSucceeded || r2 != r1 {
		t.Fatalf("retry: %+v %v / %+v %v", r1, err1, r2, err2)
	}
	// A replayed refusal stays a refusal.
	bad := b.mint(t, "pm_card_chargeDeclined", 500, "usd")
	d1, _ := m.Charge(ctx, charge("mpp_b_"+bad, 500, cred(bad)))
	d2, _ := m.Charge(ctx, charge("mpp_b_"+bad, 500, cred(bad)))
	if d1.Status != payments.StatusDeclined || d2 != d1 {
		t.Fatalf("replayed decline: %+v / %+v", d1, d2)
	}
	// The key with other parameters: no verdict, and nothing charged.
	_, err := m.Charge(ctx, charge("mpp_a_"+spt, 400, cred(spt)))
	if err == nil || !strings.Contains(err.Error(), "idempotency") {
		t.Fatalf("other params, same key: %v", err)
	}
	noSecrets(t, err.Error(), spt)
	if n := b.st.Charges(); n != 1 {
		t.Errorf("charges = %d, want 1", n)
	}
}

func TestChargeConcurrentOneKey(t *testing.T) {
	b := newBackend(t)
	m := newMethod(t, b.srv.URL)
	spt := b.mint(t, "pm_card_visa", 500, "usd")
	const n = 30
	results := make([]payments.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = m.Charge(context.Background(), charge("mpp_c_"+spt, 500, cred(spt))) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || results[i] != results[0] || results[0].Status != payments.StatusSucceeded {
			t.Fatalf("call %d: %+v %v (first %+v)", i, results[i], errs[i], results[0])
		}
	}
	if c := b.st.Charges(); c != 1 {
		t.Errorf("charges = %d, want 1", c)
	}
}

func TestRefund(t *testing.T) {
	b := newBackend(t)
	m := newMethod(t, b.srv.URL)
	ctx := context.Background()
	spt := b.mint(t, "pm_card_visa", 500, "usd")
	ch, err := m.Charge(ctx, charge("k1", 500, cred(spt)))
	if err != nil || ch.Status != payments.StatusSucceeded {
		t.Fatal(ch, err)
	}
	r1, err := m.Refund(ctx, payments.RefundRequest{IdempotencyKey: "refund_1", Reference: ch.Reference, Amount: 500, Reason: "fax failed: busy"})
	if err != nil || r1.Status != payments.StatusSucceeded || !strings.HasPrefix(r1.Reference, "re_") {
		t.Fatalf("refund = %+v, %v", r1, err)
	}
	f := b.frm[len(b.frm)-1]
	if f.Get("payment_intent") != ch.Reference || f.Get("amount") != "500" || f.Get("reason") != "" || f.Get("metadata[reason]") != "fax failed: busy" {
		t.Errorf("refund form %v", f)
	}
	r2, err := m.Refund(ctx, payments.RefundRequest{IdempotencyKey: "refund_1", Reference: ch.Reference, Amount: 500, Reason: "fax failed: busy"})
	if err != nil || r2 != r1 {
		t.Fatalf("retried refund = %+v, %v; first %+v", r2, err, r1)
	}
	r3, err := m.Refund(ctx, payments.RefundRequest{IdempotencyKey: "refund_2", Reference: ch.Reference, Reason: "duplicate"})
	if err != nil || r3.Status != payments.StatusDeclined || !strings.Contains(r3.Message, "already been refunded") {
		t.Fatalf("second refund = %+v, %v", r3, err)
	}
	if b.frm[len(b.frm)-1].Get("reason") != "duplicate" {
		t.Errorf("reason not mapped: %v", b.frm[len(b.frm)-1])
	}
	for _, r := range []payments.RefundRequest{
		{IdempotencyKey: "x", Reference: "ch_123"},
		{IdempotencyKey: "", Reference: ch.Reference},
		{IdempotencyKey: "x", Reference: "pi_a&b=c"},
		{IdempotencyKey: "x", Reference: ch.Reference, Amount: -1},
	} {
		if _, err := m.Refund(ctx, r); err == nil {
			t.Errorf("Refund(%+v) accepted", r)
		}
	}
	if _, err := m.Refund(ctx, payments.RefundRequest{IdempotencyKey: "refund_3", Reference: "pi_unknown"}); err == nil {
		t.Error("refund of an unknown intent: no error")
	}
}

func TestChargeInputErrors(t *testing.T) {
	m := newMethod(t, "http://127.0.0.1:1")
	c := cred("spt_test_abc")
	for _, r := range []payments.ChargeRequest{
		{Amount: 100, Currency: "usd", Credential: c},
		{IdempotencyKey: strings.Repeat("k", 256), Amount: 100, Currency: "usd", Credential: c},
		{IdempotencyKey: "has space", Amount: 100, Currency: "usd", Credential: c},
		{IdempotencyKey: "k", Amount: 0, Currency: "usd", Credential: c},
		{IdempotencyKey: "k", Amount: 100, Currency: "USD", Credential: c},
		{IdempotencyKey: "k", Amount: 100, Currency: "usd", Credential: c, Metadata: map[string]string{"a[b]": "x"}},
		{IdempotencyKey: "k", Amount: 100, Currency: "usd", Credential: c, Metadata: map[string]string{"k": strings.Repeat("v", 501)}},
	} {
		if _, err := m.Charge(context.Background(), r); err == nil {
			t.Errorf("Charge(%+v) accepted", r)
		}
	}
}

// stub answers every call with one status and body.
func stub(t *testing.T, status int, body string, hdr ...string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestNoVerdict: what Stripe did not decide is an error (retry with the
// same key), never a refusal or a success, and no error carries the secret
// or the token even when the answer quotes them.
func TestNoVerdict(t *testing.T) {
	const spt = "spt_test_LEAKYtoken99"
	echo := `{"error":{"type":"api_error","message":"key ` + secret + ` token ` + spt + `"}}`
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, tc := range []struct {
		name string
		base string
		want string
	}{
		{"500 quoting secrets", stub(t, 500, echo), "500"},
		{"503", stub(t, 503, `{"error":{"type":"api_error","message":"down"}}`), "retry"},
		{"429", stub(t, 429, `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests"}}`), "retry"},
		{"409 in flight", stub(t, 409, `{"error":{"type":"idempotency_error","message":"another request with this key is in progress"}}`), "retry"},
		{"401 quoting the key", stub(t, 401, `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided: `+secret+`"}}`), "401"},
		{"200 not JSON", stub(t, 200, `<html>`), "not a payment intent"},
		{"200 processing", stub(t, 200, `{"id":"pi_1","object":"payment_intent","status":"processing"}`), "processing"},
		{"200 requires_capture", stub(t, 200, `{"id":"pi_1","object":"payment_intent","status":"requires_capture"}`), "unexpected"},
		{"huge answer", stub(t, 200, `{"id":"pi_1","x":"`+strings.Repeat("a", 2<<20)+`"}`), "larger"},
		{"400 unrelated param", stub(t, 400, `{"error":{"type":"invalid_request_error","code":"parameter_unknown","param":"foo","message":"Received unknown parameter: foo"}}`), "parameter_unknown"},
		{"connection refused", closed.URL, "calling Stripe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMethod(t, tc.base)
			res, err := m.Charge(context.Background(), charge("mpp_x_"+spt, 100, cred(spt)))
			if err == nil || res != (payments.Result{}) {
				t.Fatalf("= %+v, %v; want an error and no verdict", res, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			noSecrets(t, err.Error(), spt)
			_, err = m.Refund(context.Background(), payments.RefundRequest{IdempotencyKey: "r", Reference: "pi_1"})
			if err == nil && !strings.HasPrefix(tc.name, "200") {
				t.Errorf("refund: no error")
			}
			if err != nil {
				noSecrets(t, err.Error(), spt)
			}
		})
	}
}

// blocking is a transport that never answers, until the request's context
// ends.
type blocking struct{}

func (blocking) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

func TestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMethod(t, "https://api.stripe.test", func(o *stripe.Options) {
			o.HTTPClient = &http.Client{Transport: blocking{}}
			o.Timeout = 5 * time.Second
		})
		start := time.Now()
		res, err := m.Charge(context.Background(), charge("k", 100, cred("spt_test_abc")))
		if err == nil || res != (payments.Result{}) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("= %+v, %v", res, err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("gave up after %v", d)
		}
		noSecrets(t, err.Error(), "spt_test_abc")
	})
}

// TestInProcess: the stand-in's Transport serves the method without a
// listener, as test mode may wire it.
func TestInProcess(t *testing.T) {
	st := stripetest.New()
	m := newMethod(t, "https://api.stripe.test", func(o *stripe.Options) { o.HTTPClient = &http.Client{Transport: st.Transport()} })
	spt, err := st.Mint("pm_card_visa", 100, "usd")
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Charge(context.Background(), charge("k", 100, cred(spt)))
	if err != nil || res.Status != payments.StatusSucceeded {
		t.Fatalf("= %+v, %v", res, err)
	}
	re, err := m.Refund(context.Background(), payments.RefundRequest{IdempotencyKey: "r", Reference: res.Reference})
	if err != nil || re.Status != payments.StatusSucceeded {
		t.Fatalf("refund = %+v, %v", re, err)
	}
}
