package stripetest_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/internal/stripetest"
)

var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

type answer struct {
	status   int
	replayed bool
	body     map[string]any
}

func (a answer) errField(k string) string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e[k].(string)
	return s
}

func do(t *testing.T, h http.Handler, method, path, key string, form url.Values, hdr map[string]string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", "Bearer sk_test_123")
	req.Header.Set("Stripe-Version", "2026-07-29.preview")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s %s: not JSON: %q", method, path, rec.Body.String())
	}
	return answer{rec.Code, rec.Header().Get("Idempotent-Replayed") == "true", body}
}

func piForm(spt string, amount string) url.Values {
	return url.Values{"amount": {amount}, "currency": {"usd"}, "shared_payment_granted_token": {spt}, "confirm": {"true"},
		"automatic_payment_methods[enabled]": {"true"}, "automatic_payment_methods[allow_redirects]": {"never"}, "metadata[challenge_id]": {"ch1"}}
}

func TestMintEndpoint(t *testing.T) { eachBackend(t, testMintEndpoint) }

func testMintEndpoint(t *testing.T, open opener) {
	s := open(t, stripetest.WithClock((&clock{t0}).now))
	for _, tc := range []struct {
		name   string
		form   url.Values
		hdr    map[string]string
		status int
		code   string
	}{
		{"visa", url.Values{"payment_method": {"pm_card_visa"}, "usage_limits[currency]": {"usd"}, "usage_limits[max_amount]": {"100"}, "usage_limits[expires_at]": {strconv.FormatInt(t0.Add(time.Hour).Unix(), 10)}, "seller_details[network_id]": {"profile_1"}}, nil, 200, ""},
		{"no expiry", url.Values{"payment_method": {"pm_card_chargeDeclined"}, "usage_limits[currency]": {"usd"}, "usage_limits[max_amount]": {"100"}}, nil, 200, ""},
		{"unknown method", url.Values{"payment_method": {"pm_card_amex"}, "usage_limits[currency]": {"usd"}, "usage_limits[max_amount]": {"100"}}, nil, 400, "resource_missing"},
		{"no limits", url.Values{"payment_method": {"pm_card_visa"}}, nil, 400, "parameter_missing"},
		{"bad amount", url.Values{"payment_method": {"pm_card_visa"}, "usage_limits[currency]": {"usd"}, "usage_limits[max_amount]": {"-1"}}, nil, 400, "parameter_invalid_integer"},
		{"expired", url.Values{"payment_method": {"pm_card_visa"}, "usage_limits[currency]": {"usd"}, "usage_limits[max_amount]": {"1"}, "usage_limits[expires_at]": {"1000"}}, nil, 400, "parameter_invalid_integer"},
		{"unknown param", url.Values{"payment_method": {"pm_card_visa"}, "usage_limits[currency]": {"usd"}, "usage_limits[max_amount]": {"1"}, "colour": {"red"}}, nil, 400, "parameter_unknown"},
		{"basic auth, as mppx", url.Values{"payment_method": {"pm_card_visa"}, "usage_limits[currency]": {"usd"}, "usage_limits[max_amount]": {"100"}}, map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("sk_test_123:"))}, 200, ""},
		{"metadata is unknown here", url.Values{"payment_method": {"pm_card_visa"}, "usage_limits[currency]": {"usd"}, "usage_limits[max_amount]": {"50"}, "metadata[a]": {"b"}}, nil, 400, "parameter_unknown"},
		{"basic auth with a password", url.Values{}, map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("sk_test_123:pw"))}, 401, ""},
		{"no key", url.Values{}, map[string]string{"Authorization": ""}, 401, ""},
		{"live key", url.Values{}, map[string]string{"Authorization": "Bearer sk_live_1"}, 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := do(t, s, "POST", "/v1/test_helpers/shared_payment/granted_tokens", "", tc.form, tc.hdr)
			if a.status != tc.status || a.errField("code") != tc.code {
				t.Fatalf("status %d code %q, want %d %q: %v", a.status, a.errField("code"), tc.status, tc.code, a.body)
			}
			if a.status != 200 {
				if a.errField("type") == "" || a.errField("message") == "" {
					t.Errorf("error shape: %v", a.body)
				}
				return
			}
			id, _ := a.body["id"].(string)
			if !strings.HasPrefix(id, "spt_test_") || a.body["object"] != "shared_payment.granted_token" || a.body["livemode"] != false {
				t.Errorf("token: %v", a.body)
			}
			lim, _ := a.body["usage_limits"].(map[string]any)
			if lim["currency"] != "usd" || lim["max_amount"] != float64(100) {
				t.Errorf("usage_limits: %v", lim)
			}
		})
	}
}

func TestPaymentIntents(t *testing.T) { eachBackend(t, testPaymentIntents) }

func testPaymentIntents(t *testing.T, open opener) {
	clk := &clock{t0}
	s := open(t, stripetest.WithClock(clk.now))
	mint := func(pm string, max int64, cur string) string {
		id, err := s.Mint(pm, max, cur)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	used := mint("pm_card_visa", 100, "usd")
	if a := do(t, s, "POST", "/v1/payment_intents", "k-used", piForm(used, "100"), nil); a.status != 200 {
		t.Fatalf("first use: %v", a.body)
	}
	expiring := mint("pm_card_visa", 100, "usd")
	for _, tc := range []struct {
		name       string
		form       url.Values
		hdr        map[string]string
		status     int
		typ, code  string
		wantStatus string
	}{
		{"succeeds", piForm(mint("pm_card_visa", 100, "usd"), "100"), nil, 200, "", "", "succeeded"},
		{"under the limit", piForm(mint("pm_card_mastercard", 100, "usd"), "60"), nil, 200, "", "", "succeeded"},
		{"requires action", piForm(mint("pm_card_authenticationRequired", 100, "usd"), "100"), nil, 200, "", "", "requires_action"},
		{"declined", piForm(mint("pm_card_chargeDeclined", 100, "usd"), "100"), nil, 402, "card_error", "card_declined", ""},
		{"insufficient funds", piForm(mint("pm_card_insufficientFunds", 100, "usd"), "100"), nil, 402, "card_error", "card_declined", ""},
		{"over max_amount", piForm(mint("pm_card_visa", 100, "usd"), "101"), nil, 400, "invalid_request_error", "shared_payment_granted_token_usage_limit_exceeded", ""},
		{"other currency", func() url.Values { f := piForm(mint("pm_card_visa", 100, "eur"), "100"); return f }(), nil, 400, "invalid_request_error", "shared_payment_granted_token_usage_limit_exceeded", ""},
		{"used up", piForm(used, "100"), nil, 400, "invalid_request_error", "shared_payment_granted_token_consumed", ""},
		{"unknown token", piForm("spt_test_nope", "100"), nil, 400, "invalid_request_error", "resource_missing", ""},
		{"under Stripe's minimum", piForm(mint("pm_card_visa", 100, "usd"), "49"), nil, 400, "invalid_request_error", "amount_too_small", ""},
		{"no version", piForm(expiring, "100"), map[string]string{"Stripe-Version": ""}, 400, "invalid_request_error", "", ""},
		{"bad key", piForm(expiring, "100"), map[string]string{"Authorization": "Bearer nope"}, 401, "invalid_request_error", "", ""},
		{"no amount", func() url.Values { f := piForm(expiring, "100"); f.Del("amount"); return f }(), nil, 400, "invalid_request_error", "parameter_missing", ""},
		{"unknown param", func() url.Values { f := piForm(expiring, "100"); f.Set("customer", "cus_1"); return f }(), nil, 400, "invalid_request_error", "parameter_unknown", ""},
		{"redirects without return_url", func() url.Values {
			f := piForm(expiring, "100")
			f.Del("automatic_payment_methods[allow_redirects]")
			return f
		}(), nil, 400, "invalid_request_error", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := do(t, s, "POST", "/v1/payment_intents", "", tc.form, tc.hdr)
			if a.status != tc.status || a.errField("type") != tc.typ || a.errField("code") != tc.code {
				t.Fatalf("got %d %s/%s, want %d %s/%s: %v", a.status, a.errField("type"), a.errField("code"), tc.status, tc.typ, tc.code, a.body)
			}
			if tc.wantStatus != "" && a.body["status"] != tc.wantStatus {
				t.Fatalf("status %v, want %s", a.body["status"], tc.wantStatus)
			}
			if tc.status == 402 {
				e := a.body["error"].(map[string]any)
				if e["decline_code"] == "" || e["payment_intent"] == nil {
					t.Errorf("a decline lacks decline_code or payment_intent: %v", e)
				}
			}
		})
	}
	clk.t = clk.t.Add(2 * time.Hour)
	if a := do(t, s, "POST", "/v1/payment_intents", "", piForm(expiring, "100"), nil); a.errField("code") != "shared_payment_granted_token_expired" {
		t.Errorf("expired token: %v", a.body)
	}
	if s.Charges() != 3 {
		t.Errorf("Charges = %d, want 3", s.Charges())
	}
}

func TestIdempotency(t *testing.T) { eachBackend(t, testIdempotency) }

func testIdempotency(t *testing.T, open opener) {
	s := open(t)
	spt, _ := s.Mint("pm_card_visa", 100, "usd")
	first := do(t, s, "POST", "/v1/payment_intents", "key1", piForm(spt, "100"), nil)
	again := do(t, s, "POST", "/v1/payment_intents", "key1", piForm(spt, "100"), nil)
	if first.status != 200 || first.replayed || again.status != 200 || !again.replayed || again.body["id"] != first.body["id"] {
		t.Fatalf("first %v %v, again %v %v", first.replayed, first.body, again.replayed, again.body)
	}
	other := do(t, s, "POST", "/v1/payment_intents", "key1", piForm(spt, "99"), nil)
	if other.status != 400 || other.errField("type") != "idempotency_error" {
		t.Fatalf("other params: %v", other.body)
	}
	// A declined attempt is saved too; a validation failure is not.
	bad, _ := s.Mint("pm_card_chargeDeclined", 100, "usd")
	d1 := do(t, s, "POST", "/v1/payment_intents", "key2", piForm(bad, "100"), nil)
	d2 := do(t, s, "POST", "/v1/payment_intents", "key2", piForm(bad, "100"), nil)
	if d1.status != 402 || d2.status != 402 || !d2.replayed {
		t.Fatalf("decline replay: %d %d %v", d1.status, d2.status, d2.replayed)
	}
	v1 := do(t, s, "POST", "/v1/payment_intents", "key3", piForm("spt_test_missing", "100"), nil)
	v2 := do(t, s, "POST", "/v1/payment_intents", "key3", piForm(spt, "100"), nil)
	if v1.status != 400 || v2.status != 400 || v2.replayed || v2.errField("code") != "shared_payment_granted_token_consumed" {
		t.Fatalf("validation failure saved: %v / %v", v1.body, v2.body)
	}
	if s.Charges() != 1 {
		t.Errorf("Charges = %d", s.Charges())
	}
}

func TestRefundsAndRetrieve(t *testing.T) { eachBackend(t, testRefundsAndRetrieve) }

func testRefundsAndRetrieve(t *testing.T, open opener) {
	s := open(t)
	spt, _ := s.Mint("pm_card_visa", 500, "usd")
	pi := do(t, s, "POST", "/v1/payment_intents", "", piForm(spt, "500"), nil)
	id := pi.body["id"].(string)
	if g := do(t, s, "GET", "/v1/payment_intents/"+id, "", nil, nil); g.status != 200 || g.body["status"] != "succeeded" {
		t.Fatalf("retrieve: %v", g.body)
	}
	if g := do(t, s, "GET", "/v1/payment_intents/pi_nope", "", nil, nil); g.status != 404 || g.errField("code") != "resource_missing" {
		t.Fatalf("retrieve missing: %v", g.body)
	}
	declined, _ := s.Mint("pm_card_chargeDeclined", 500, "usd")
	dpi := do(t, s, "POST", "/v1/payment_intents", "", piForm(declined, "500"), nil)
	did := dpi.body["error"].(map[string]any)["payment_intent"].(map[string]any)["id"].(string)
	for _, tc := range []struct {
		name   string
		form   url.Values
		key    string
		status int
		code   string
	}{
		{"too much", url.Values{"payment_intent": {id}, "amount": {"501"}}, "", 400, "amount_too_large"},
		{"bad reason", url.Values{"payment_intent": {id}, "reason": {"fax failed"}}, "", 400, "parameter_invalid_string"},
		{"unknown intent", url.Values{"payment_intent": {"pi_nope"}}, "", 400, "resource_missing"},
		{"not succeeded", url.Values{"payment_intent": {did}}, "", 400, ""},
		{"partial", url.Values{"payment_intent": {id}, "amount": {"200"}, "reason": {"requested_by_customer"}, "metadata[reason]": {"fax failed"}}, "r1", 200, ""},
		{"partial replayed", url.Values{"payment_intent": {id}, "amount": {"200"}, "reason": {"requested_by_customer"}, "metadata[reason]": {"fax failed"}}, "r1", 200, ""},
		{"the rest", url.Values{"payment_intent": {id}}, "r2", 200, ""},
		{"nothing left", url.Values{"payment_intent": {id}}, "r3", 400, "charge_already_refunded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := do(t, s, "POST", "/v1/refunds", tc.key, tc.form, nil)
			if a.status != tc.status || a.errField("code") != tc.code {
				t.Fatalf("got %d %q, want %d %q: %v", a.status, a.errField("code"), tc.status, tc.code, a.body)
			}
			if a.status == 200 && (!strings.HasPrefix(a.body["id"].(string), "re_") || a.body["status"] != "succeeded" || a.body["payment_intent"] != id) {
				t.Errorf("refund: %v", a.body)
			}
		})
	}
	if a := do(t, s, "GET", "/v1/nothing", "", nil, nil); a.status != 404 || a.errField("type") != "invalid_request_error" {
		t.Errorf("unknown URL: %v", a.body)
	}
}

// TestTokenBoundToProfile: a shared payment token is granted to one
// seller, named by its network business profile (seller_details[network_id]),
// and only that seller's account can settle it, as at Stripe; a token
// granted to another profile, or to none, is unknown to this account
// (issue 26, defect 9: the stand-in settled both).
func TestTokenBoundToProfile(t *testing.T) { eachBackend(t, testTokenBoundToProfile) }

func testTokenBoundToProfile(t *testing.T, open opener) {
	s := open(t, stripetest.WithProfile("profile_seller"))
	mint := func(network string) string {
		t.Helper()
		form := url.Values{"payment_method": {"pm_card_visa"}, "usage_limits[currency]": {"usd"}, "usage_limits[max_amount]": {"100"}}
		if network != "" {
			form.Set("seller_details[network_id]", network)
		}
		a := do(t, s, "POST", "/v1/test_helpers/shared_payment/granted_tokens", "", form, nil)
		if a.status != 200 {
			t.Fatalf("mint for %q: %v", network, a.body)
		}
		return a.body["id"].(string)
	}
	for name, network := range map[string]string{"another profile": "profile_other", "no profile": ""} {
		t.Run(name, func(t *testing.T) {
			spt := mint(network)
			a := do(t, s, "POST", "/v1/payment_intents", "k-"+spt, piForm(spt, "100"), nil)
			if a.status != 400 || a.errField("type") != "invalid_request_error" || a.errField("code") != "resource_missing" || a.errField("param") != "shared_payment_granted_token" {
				t.Fatalf("settled a token granted to %q: %d %v", network, a.status, a.body)
			}
		})
	}
	if s.Charges() != 0 {
		t.Fatalf("charges = %d", s.Charges())
	}
	spt := mint("profile_seller")
	if a := do(t, s, "POST", "/v1/payment_intents", "k-mine", piForm(spt, "100"), nil); a.status != 200 || a.body["status"] != "succeeded" {
		t.Fatalf("own token: %d %v", a.status, a.body)
	}
	// Mint (for Go tests) grants to the server's own profile.
	own, err := s.Mint("pm_card_visa", 100, "usd")
	if err != nil {
		t.Fatal(err)
	}
	if a := do(t, s, "POST", "/v1/payment_intents", "k-own", piForm(own, "100"), nil); a.status != 200 {
		t.Fatalf("Mint's token: %d %v", a.status, a.body)
	}
}
